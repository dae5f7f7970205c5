/**
 * Several replicas on one database (CONTRACT §9): two app instances place the same 30 orders at once,
 * cancel half of them at once, and follow the rest. No upstream order is created twice, none is
 * canceled twice, and no order is polled by both at the same time.
 */
import type { SandboxServer } from '../src/sandbox/sandbox.server.js';
import type { SandboxRequestEvent } from '../src/sandbox/sandbox.types.js';
import { seedCatalog, waitFor, type OrderView } from './support/child-app.js';
import { openTestDatabase, startSandbox, startTestApp, type TestApp, type TestDatabase } from './support/test-app.js';

describe('two replicas on one database', () => {
  let db: TestDatabase;
  let sandbox: SandboxServer;
  let a: TestApp;
  let b: TestApp;

  beforeAll(async () => {
    db = await openTestDatabase();
    sandbox = await startSandbox({
      dedupeDownstreamOrderNo: false,
      catalog: { products: 2 },
      // orders stop at paid (cancelable) until the test delivers them
      timetable: { paidMs: 50, fulfillingMs: null, deliveredMs: null, completedMs: null },
    });
    sandbox.catalog.addProduct({ skus: [{ skuCode: 'REP', price: '2.00' }] });
    const env = { ORDER_POLL_BASE_MS: '50', ORDER_POLL_MAX_MS: '100', UPSTREAM_TIMEOUT_MS: '2000' };
    a = await startTestApp(db, sandbox, env);
    b = await startTestApp(db, sandbox, env);
    await seedCatalog(a.http);
  });

  afterAll(async () => {
    await a?.close();
    await b?.close();
    await sandbox?.stop();
    await db?.close();
  });

  it('30 orders placed through both at once, half canceled through both at once: one create and at most one cancel each', async () => {
    sandbox.faults.set({ latencyMs: 20 });
    // getOrder calls in flight per upstream order: a poll by both replicas at once would show as 2
    const inFlight = new Map<string, number>();
    let overlaps = 0;
    const watch = (e: SandboxRequestEvent) => {
      if (e.operation !== 'getOrder') return;
      const n = (inFlight.get(e.path) ?? 0) + (e.phase === 'received' ? 1 : -1);
      inFlight.set(e.path, n);
      if (n > 1) overlaps++;
    };
    sandbox.events.on('request', watch);
    try {
      const nos = Array.from({ length: 30 }, (_, i) => `REP-${i}`);
      const placed = await Promise.all(
        nos.flatMap((shopNo) => [a, b].map((app) => app.http.post('/internal/orders', { shop_order_no: shopNo, sku_code: 'REP', quantity: 1 }))),
      );
      for (const r of placed) expect([200, 201]).toContain(r.status);
      expect(sandbox.stats.createsReceived).toBe(30);
      expect(sandbox.stats.createsExecuted).toBe(30);
      for (const shopNo of nos) expect(sandbox.orders().filter((o) => o.downstream_order_no === shopNo)).toHaveLength(1);

      const toCancel = nos.slice(0, 15);
      const canceled = await Promise.all(toCancel.flatMap((shopNo) => [a, b].map((app) => app.http.post(`/internal/orders/${shopNo}/cancel`))));
      for (const r of canceled) {
        expect({ status: r.status, order_status: (r.data as { order?: OrderView }).order?.status }).toEqual({ status: 200, order_status: 'canceled' });
      }
      expect(sandbox.stats.requests.cancelOrder).toBe(15);
      expect(sandbox.stats.cancelsExecuted).toBe(15);

      const rest = nos.slice(15);
      for (const shopNo of rest) sandbox.setOrderStatus(sandbox.orders().find((o) => o.downstream_order_no === shopNo)!.id, 'delivered');
      const orders = await waitFor(
        async () => ((await b.http.get('/internal/orders', { params: { page_size: 500 } })).data as { items: OrderView[] }).items,
        (items) => rest.every((shopNo) => items.find((o) => o.shop_order_no === shopNo)?.status === 'delivered'),
        'the other 15 orders to be delivered',
        30_000,
      );
      for (const shopNo of toCancel) expect(orders.find((o) => o.shop_order_no === shopNo)?.status).toBe('canceled');
      const sources = await db.query<{ n: number }>("SELECT count(*)::int AS n FROM order_events WHERE source = 'poll' AND new_status = 'delivered'");
      expect(sources[0].n).toBe(15);
      expect(overlaps).toBe(0);
    } finally {
      sandbox.events.off('request', watch);
    }
  });
});
