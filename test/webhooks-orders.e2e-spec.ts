/**
 * CONTRACT §7 for orders: every status change of an order placed through the API reaches the shop as
 * a signed webhook from the outbox, in order, one per change: the reservation's, the create answer's
 * (written with the outcome in one statement) and the poller's.
 */
import { createServer, type Server } from 'node:http';
import type { SandboxServer } from '../src/sandbox/sandbox.server.js';
import { verifySignature } from '../src/signing/signing.js';
import { WEBHOOK_API_KEY, WEBHOOK_SIGNATURE_TEMPLATE } from '../src/notifications/webhook-request.js';
import { seedCatalog, waitForOrder } from './support/child-app.js';
import { openTestDatabase, startSandbox, startTestApp, type TestApp, type TestDatabase } from './support/test-app.js';
import { waitFor } from './support/wait.js';

const SECRET = 'order-webhook-secret';

interface Hook {
  body: string;
  parsed: { event: string; subject: string; data: { status: string; previous_status: string | null; source: string } };
  headers: Record<string, string | string[] | undefined>;
}

describe('order status changes as shop webhooks', () => {
  let db: TestDatabase;
  let sandbox: SandboxServer;
  let app: TestApp;
  let shop: Server;
  const hooks: Hook[] = [];

  beforeAll(async () => {
    shop = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        const body = Buffer.concat(chunks).toString('utf8');
        hooks.push({ body, parsed: JSON.parse(body) as Hook['parsed'], headers: req.headers });
        res.writeHead(200, { 'content-type': 'application/json' }).end('{"ok":true}');
      });
    });
    await new Promise<void>((r) => shop.listen(0, '127.0.0.1', r));
    const { port } = shop.address() as { port: number };
    db = await openTestDatabase();
    sandbox = await startSandbox({ catalog: { products: 2 }, timetable: { paidMs: 30, fulfillingMs: 60, deliveredMs: 100, completedMs: null } });
    sandbox.catalog.addProduct({ skus: [{ skuCode: 'WH-1', price: '2.00' }] });
    app = await startTestApp(db, sandbox, {
      SHOP_WEBHOOK_URL: `http://127.0.0.1:${port}/shop/hooks`,
      SHOP_WEBHOOK_SECRET: SECRET,
      ORDER_POLL_BASE_MS: '50',
      ORDER_POLL_MAX_MS: '200',
    });
    await seedCatalog(app.http);
  });
  afterAll(async () => {
    await app.close();
    await sandbox.stop();
    await db.close();
    shop.closeAllConnections();
    await new Promise<void>((r) => shop.close(() => r()));
  });

  it('sends each status change of an order, in order, signed', async () => {
    const placed = await app.http.post('/internal/orders', { shop_order_no: 'WH-ORDER', sku_code: 'WH-1', quantity: 1 });
    expect(placed.status).toBe(201);
    await waitForOrder(app.http, 'WH-ORDER', (o) => o.status === 'delivered');

    const events = (await app.http.get('/internal/orders/WH-ORDER/events')).data as { events: Array<{ source: string; from: string | null; to: string | null }> };
    const changes = events.events.filter((e) => e.to !== null && e.from !== e.to);
    const mine = () => hooks.filter((h) => h.parsed.event === 'order.status_changed' && h.parsed.subject === 'WH-ORDER');
    await waitFor(() => mine().length, (n) => n === changes.length, 'one webhook per status change');
    expect(mine().map((h) => [h.parsed.data.previous_status, h.parsed.data.status, h.parsed.data.source])).toEqual(changes.map((e) => [e.from, e.to, e.source]));
    expect(mine()[0].parsed.data).toMatchObject({ previous_status: null, status: 'submitting', source: 'api' });
    expect(mine()[1].parsed.data).toMatchObject({ previous_status: 'submitting', source: 'api' }); // the create answer
    expect(mine().at(-1)!.parsed.data.status).toBe('delivered');

    for (const h of mine()) {
      const verified = verifySignature({
        secret: SECRET,
        template: WEBHOOK_SIGNATURE_TEMPLATE,
        expectedApiKey: WEBHOOK_API_KEY,
        method: 'POST',
        path: '/shop/hooks',
        body: Buffer.from(h.body),
        apiKey: h.headers['relay-api-key'] as string,
        timestamp: h.headers['relay-timestamp'] as string,
        signature: h.headers['relay-signature'] as string,
        nowSeconds: Math.floor(Date.now() / 1000),
        toleranceSeconds: 300,
      });
      expect(verified).toEqual({ ok: true });
    }
  });
});
