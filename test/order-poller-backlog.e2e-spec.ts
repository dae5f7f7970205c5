/**
 * The poller's pass claims at most 10 batches of 20 due orders; an instance with more due than that
 * must not wait a tick (up to 1 s) before the next pass, or it would follow at most ~200 orders a
 * second whatever the load. `OrderPoller.tick` says when its last claim was full, and the next pass
 * then follows at once.
 */
import { OrderPoller } from '../src/orders/order-poller.service.js';
import { useAppSuite } from './support/app-suite.js';

describe('order poller: a backlog of due orders', () => {
  const suite = useAppSuite({
    sandbox: { catalog: { products: 1 }, timetable: { paidMs: 600_000, fulfillingMs: 600_000, deliveredMs: 600_000, completedMs: null } },
    prepare: (sandbox) => sandbox.catalog.addProduct({ skus: [{ skuCode: 'BL-1', price: '1.00' }] }),
    // no background work: the test runs the poller's passes itself
    env: { ORDER_POLL_BASE_MS: '3600000', ORDER_POLL_MAX_MS: '3600000' },
    workers: false,
    seed: true,
  });

  it('a pass of 10 full batches says more may be due; the pass that empties the backlog says not', async () => {
    const { app, db, sandbox } = suite;
    const total = 205;
    for (let i = 0; i < total; i += 25) {
      await Promise.all(
        Array.from({ length: Math.min(25, total - i) }, async (_, k) => {
          const r = await app.http.post('/internal/orders', { shop_order_no: `BL-${i + k}`, sku_code: 'BL-1', quantity: 1 });
          expect(r.status).toBe(201);
        }),
      );
    }
    await db.query("UPDATE orders SET next_poll_at = now() - interval '1 second' WHERE shop_order_no LIKE 'BL-%'");
    const due = async () =>
      Number(
        (await db.query<{ n: string }>("SELECT count(*) AS n FROM orders WHERE shop_order_no LIKE 'BL-%' AND next_poll_at <= now()"))[0].n,
      );
    const reads = sandbox.stats.requests.getOrder;
    const polled = async () => sandbox.stats.requests.getOrder - reads; // each poll reads its order upstream once
    expect(await due()).toBe(total);

    const poller = app.relay.app.get(OrderPoller);
    expect(await poller.tick()).toBe(true);
    expect(await polled()).toBe(200);
    expect(await due()).toBe(5);

    expect(await poller.tick()).toBe(false);
    expect(await polled()).toBe(total);
    expect(await due()).toBe(0);
    expect(await poller.tick()).toBe(false); // nothing due
  });

  it('an upstream failing its reads is read a batch a tick, not as fast as the backlog allows', async () => {
    const { app, db, sandbox } = suite;
    await db.query("UPDATE orders SET next_poll_at = now() - interval '1 second' WHERE shop_order_no LIKE 'BL-%'");
    sandbox.faults.set({ rules: [{ operation: 'getOrder', kind: 'error_before', status: 503 }] });
    try {
      const reads = sandbox.stats.requests.getOrder;
      const poller = app.relay.app.get(OrderPoller);
      expect(await poller.tick()).toBe(false);
      expect(sandbox.stats.requests.getOrder - reads).toBe(20); // one batch, then the pass ended
    } finally {
      sandbox.faults.reset();
    }
  });

  it('a few orders whose reads fail do not slow the others', async () => {
    const { app, db, sandbox } = suite;
    // due in a fixed order; every 7th names an upstream order that does not exist (its read fails):
    // at most 3 in any batch of 20
    await db.query(
      `WITH o AS (SELECT id, row_number() OVER (ORDER BY shop_order_no) AS n FROM orders WHERE shop_order_no LIKE 'BL-%')
       UPDATE orders SET next_poll_at = now() - o.n * interval '1 second',
                         upstream_order_id = CASE WHEN o.n % 7 = 0 THEN 900000000 + o.n ELSE orders.upstream_order_id END
         FROM o WHERE orders.id = o.id`,
    );
    const reads = sandbox.stats.requests.getOrder;
    expect(await app.relay.app.get(OrderPoller).tick()).toBe(true);
    expect(sandbox.stats.requests.getOrder - reads).toBe(200);
  });
});
