/**
 * What `RelayApp.close()` (the SIGTERM path of main.ts) does while work is in flight, through the drain
 * (app.factory.ts, installDrain) and the upstream client's sockets closing last
 * (UpstreamHttpClient.onApplicationShutdown): a create already sent runs to its answer (not cut off
 * into 202 `submit_unknown` while the upstream charges and delivers it), and during the drain
 * /health/ready says not ready and no new order is placed. A callback arriving during the drain is
 * still verified and stored, not refused 503.
 * README "Shutdown": "the service stops taking requests, finishes the work in flight (… an order create
 * or cancel already sent runs to its answer) …"; README "Health": "/health/ready: … the instance is not
 * shutting down, else 503".
 */
import axios from 'axios';
import type { SandboxServer } from '../src/sandbox/sandbox.server.js';
import type { SandboxRequestEvent } from '../src/sandbox/sandbox.types.js';
import { callbackHeaders, seedCatalog, waitFor } from './support/child-app.js';
import { FakeShop } from './support/fake-shop.js';
import { openTestDatabase, startSandbox, startTestApp, TEST_TOKEN, type TestApp, type TestDatabase } from './support/test-app.js';

describe('shutdown with work in flight', () => {
  let db: TestDatabase;
  let sandbox: SandboxServer;
  const shop = new FakeShop();

  beforeAll(async () => {
    db = await openTestDatabase();
    sandbox = await startSandbox({
      catalog: { products: 2 },
      timetable: { paidMs: 30, fulfillingMs: 60, deliveredMs: 100, completedMs: null },
    });
    sandbox.catalog.addProduct({ skus: [{ skuCode: 'SD-1', price: '1.00' }] });
    await shop.start();
  });
  afterEach(() => {
    sandbox.faults.reset();
    sandbox.events.removeAllListeners('request');
  });
  afterAll(async () => {
    await shop.stop();
    await sandbox.stop();
    await db.close();
  });

  it('an order create already sent when the shutdown starts runs to its answer', async () => {
    const app: TestApp = await startTestApp(db, sandbox, { UPSTREAM_TIMEOUT_MS: '20000' });
    let closed = false;
    try {
      await seedCatalog(app.http);
      let creates = 0;
      sandbox.events.on('request', (e: SandboxRequestEvent) => {
        if (e.operation === 'createOrder' && e.phase === 'received') creates++;
      });
      // the upstream takes 2 s to answer the create
      sandbox.faults.set({ rules: [{ operation: 'createOrder', kind: 'delay', delayMs: 2000 }] });
      const placing = app.http.post('/internal/orders', { shop_order_no: 'SD-ORDER', sku_code: 'SD-1', quantity: 1 });
      await waitFor(
        () => creates,
        (n) => n > 0,
        'the create reaching the upstream',
      );
      const closing = app.close();
      closed = true;
      const placed = await placing;
      await closing;
      const [row] = await db.query<{ status: string; upstream_order_id: string | null }>(
        `SELECT status, upstream_order_id::text AS upstream_order_id FROM orders WHERE shop_order_no = 'SD-ORDER'`,
      );
      const upstream = sandbox.orders().filter((o) => o.downstream_order_no === 'SD-ORDER');
      // README: the create runs to its answer (201, accepted upstream), recorded with its upstream order
      expect({ http: placed.status, status: row.status }).toEqual({
        http: 201,
        status: expect.not.stringMatching(/^(submit_unknown|submitting|rejected)$/),
      });
      expect(upstream.map((o) => String(o.id))).toEqual([row.upstream_order_id]);
    } finally {
      if (!closed) await app.close();
    }
  }, 60_000);

  it('while the shutdown drains a webhook delivery, /health/ready is 503, no new order is taken, a callback is still stored', async () => {
    const app: TestApp = await startTestApp(db, sandbox, { SHOP_WEBHOOK_URL: shop.url, SHOP_WEBHOOK_SECRET: 'sd-shop-secret' });
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    let atShop = 0;
    shop.respond = async (r) => {
      if (r.subject === 'SD-HOLD') atShop++;
      await gate;
      return 200;
    };
    let closing: Promise<void> | null = null;
    try {
      await seedCatalog(app.http);
      await db.query(
        `INSERT INTO outbox_events (event_type, subject, payload) VALUES ('sku.price_changed', 'SD-HOLD', ` +
          `'{"event":"sku.price_changed"}'::jsonb)`,
      );
      // the delivery is at the shop, held
      await waitFor(
        () => atShop,
        (n) => n === 1,
        'the delivery of SD-HOLD at the shop',
      );
      // close() begins the drain before it awaits anything: from here on the instance drains, and
      // stays draining until the held delivery is let go
      closing = app.close();
      const direct = axios.create({
        baseURL: app.url,
        validateStatus: () => true,
        timeout: 5000,
        headers: { authorization: `Bearer ${TEST_TOKEN}` },
      });
      const ready = await direct.get('/health/ready').catch((e: Error) => ({ status: `refused: ${e.message}`, data: null }));
      const order = await direct
        .post('/internal/orders', { shop_order_no: 'SD-DRAIN', sku_code: 'SD-1', quantity: 1 })
        .catch((e: Error) => ({ status: `refused: ${e.message}`, data: null }));
      // CONTRACT §6: a verified callback is answered 200 once stored (a 5xx only when it could not be);
      // the database is still open, so it is stored, to be applied after the restart
      const body = JSON.stringify({
        event: 'order.status_changed',
        order_id: 987654,
        order_no: 'UP-SD',
        status: 'paid',
        timestamp: Math.floor(Date.now() / 1000),
      });
      const callback = await axios
        .post(`${app.url}/callbacks/upstream`, body, {
          headers: callbackHeaders(body),
          validateStatus: () => true,
          transformRequest: [(d: unknown) => d],
          timeout: 5000,
        })
        .catch((e: Error) => ({ status: `refused: ${e.message}`, data: null }));
      release();
      await closing;
      closing = null;
      expect([callback.status, callback.data]).toEqual([200, { ok: true }]);
      expect(await db.query(`SELECT upstream_order_id::text AS id FROM callback_inbox WHERE upstream_order_id = 987654`)).toHaveLength(1);
      expect([ready.status, ready.data?.shutting_down]).toEqual([503, true]);
      expect([order.status, order.data?.error_code]).toEqual([503, 'service_unavailable']);
      // nothing of that order was recorded or sent
      expect(await db.query(`SELECT id FROM orders WHERE shop_order_no = 'SD-DRAIN'`)).toEqual([]);
      expect(sandbox.orders().filter((o) => o.downstream_order_no === 'SD-DRAIN')).toEqual([]);
    } finally {
      release();
      if (closing) await closing;
    }
  }, 60_000);
});
