/**
 * CONTRACT §7 for the catalog: a change of price, stock or listing found by a sync reaches the
 * shop as a signed webhook from the outbox, written in the sync's own transaction; a sync that
 * changes nothing sends nothing.
 */
import { createServer, type Server } from 'node:http';
import type { SandboxServer } from '../src/sandbox/sandbox.server.js';
import { verifySignature } from '../src/signing/signing.js';
import { WEBHOOK_API_KEY, WEBHOOK_SIGNATURE_TEMPLATE } from '../src/notifications/webhook-request.js';
import { seedCatalog } from './support/child-app.js';
import { openTestDatabase, startSandbox, startTestApp, type TestApp, type TestDatabase } from './support/test-app.js';
import { waitFor } from './support/wait.js';

const SECRET = 'catalog-webhook-secret';

interface Hook {
  event: string;
  subject: string;
  body: string;
  headers: Record<string, string | string[] | undefined>;
}

describe('catalog changes as shop webhooks', () => {
  let db: TestDatabase;
  let sandbox: SandboxServer;
  let app: TestApp;
  let shop: Server;
  const hooks: Hook[] = [];
  const pending = async () => (await db.query<{ n: number }>("SELECT count(*)::int AS n FROM outbox_events WHERE status = 'pending'"))[0].n;
  const outboxCount = async () => (await db.query<{ n: number }>("SELECT count(*)::int AS n FROM outbox_events WHERE event_type LIKE 'sku.%'"))[0].n;

  beforeAll(async () => {
    shop = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        const body = Buffer.concat(chunks).toString('utf8');
        const parsed = JSON.parse(body) as { event: string; subject: string };
        hooks.push({ event: parsed.event, subject: parsed.subject, body, headers: req.headers });
        res.writeHead(200, { 'content-type': 'application/json' }).end('{"ok":true}');
      });
    });
    await new Promise<void>((r) => shop.listen(0, '127.0.0.1', r));
    const { port } = shop.address() as { port: number };
    db = await openTestDatabase();
    sandbox = await startSandbox({ catalog: { products: 12 } });
    app = await startTestApp(db, sandbox, { SHOP_WEBHOOK_URL: `http://127.0.0.1:${port}/shop/hooks`, SHOP_WEBHOOK_SECRET: SECRET });
    await seedCatalog(app.http);
  });
  afterAll(async () => {
    await app.close();
    await sandbox.stop();
    await db.close();
    shop.closeAllConnections();
    await new Promise<void>((r) => shop.close(() => r()));
  });

  it('delivers a price change and a delisting, signed, and nothing for a sync without change', async () => {
    const { sku, product } = sandbox.catalog.findSku({ fulfillmentType: 'auto' })!;
    const other = sandbox.catalog.findSku({ skip: 3 })!;
    expect(other.product.id).not.toBe(product.id); // the delisted product is another one
    // The first sync's own events (SKUs created) are all delivered before the change.
    await waitFor(pending, (n) => n === 0, 'the first sync\'s webhooks');
    const mark = hooks.length;
    const since = () => hooks.slice(mark);
    sandbox.catalog.setPrice(sku.sku_code, '987.65');
    sandbox.catalog.delistProduct(other.product.id);
    await seedCatalog(app.http);

    const price = await waitFor(() => since().find((h) => h.event === 'sku.price_changed' && h.subject === sku.sku_code), Boolean, 'the price webhook');
    expect(JSON.parse(price!.body)).toMatchObject({ event: 'sku.price_changed', subject: sku.sku_code });
    expect(price!.body).toContain('987.65');
    const delisted = other.product.skus.map((s) => s.sku_code);
    await waitFor(() => since().filter((h) => h.event === 'sku.listing_changed' && delisted.includes(h.subject)).length, (n) => n === delisted.length, 'the listing webhooks');

    const verified = verifySignature({
      secret: SECRET,
      template: WEBHOOK_SIGNATURE_TEMPLATE,
      expectedApiKey: WEBHOOK_API_KEY,
      method: 'POST',
      path: '/shop/hooks',
      body: Buffer.from(price!.body),
      apiKey: price!.headers['relay-api-key'] as string,
      timestamp: price!.headers['relay-timestamp'] as string,
      signature: price!.headers['relay-signature'] as string,
      nowSeconds: Math.floor(Date.now() / 1000),
      toleranceSeconds: 300,
    });
    expect(verified).toEqual({ ok: true });

    const before = await outboxCount();
    await seedCatalog(app.http);
    expect(await outboxCount()).toBe(before);
  });
});
