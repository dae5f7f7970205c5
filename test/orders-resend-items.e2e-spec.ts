/**
 * A create's answer never carries the fulfillment: an order whose outcome the upstream gives as
 * already delivered or completed (a deduplicated re-send after the first send's answer was lost, the
 * upstream having delivered meanwhile) is read once more, so that its items reach the shop even with
 * no callback.
 */
import { OrderPoller } from '../src/orders/order-poller.service.js';
import { useAppSuite } from './support/app-suite.js';
import { freePort, waitForOrder } from './support/child-app.js';
import { passesRun } from './support/wait.js';

describe('orders: items of an order settled by a re-send answered as delivered', () => {
  const suite = useAppSuite({
    sandbox: {
      profile: 'dujiao-next',
      dedupeDownstreamOrderNo: true,
      catalog: { products: 2 },
      timetable: { paidMs: 50, fulfillingMs: 100, deliveredMs: 150, completedMs: 200 },
    },
    prepare: (sandbox) => sandbox.catalog.addProduct({ skus: [{ skuCode: 'X-ONCE', price: '7.00' }] }),
    env: async () => ({
      UPSTREAM_PROFILE: 'dujiao-next',
      UPSTREAM_ORDER_NO_IDEMPOTENT: 'true',
      SUBMIT_UNKNOWN_RECHECK_S: '1',
      UPSTREAM_TIMEOUT_MS: '1000',
      ORDER_POLL_BASE_MS: '50',
      ORDER_POLL_MAX_MS: '300',
      PORT: String(await freePort()),
      // no CALLBACK_PUBLIC_URL: polling alone follows the order
    }),
    seed: true,
  });

  it('the re-send is answered completed (no fulfillment in a create answer): the order is read again and its items stored', async () => {
    const { app, db, sandbox } = suite;
    sandbox.faults.set({ rules: [{ operation: 'createOrder', kind: 'error_after', status: 502, times: 1 }] });
    const r = await app.http.post('/internal/orders', { shop_order_no: 'RS-1', sku_code: 'X-ONCE', quantity: 1 });
    expect(r.status).toBe(202);
    const upstream = () => sandbox.orders().filter((o) => o.downstream_order_no === 'RS-1');
    // the first send was placed; the re-send comes after the upstream completed it
    await waitForOrder(app.http, 'RS-1', (o) => ['delivered', 'completed'].includes(o.status), 30_000);
    expect(upstream()).toHaveLength(1);
    expect(upstream()[0].status).toBe('completed');
    const order = await waitForOrder(app.http, 'RS-1', (o) => (o.items as unknown[]).length > 0, 10_000);
    // the unknown outcome's message goes with it
    expect(order).toMatchObject({ status: 'completed', items: [expect.any(String)], error_code: null, error_message: null });
    expect(order.fulfillment).toMatchObject({ status: 'delivered' });
    // then no longer followed: a completed order with its items is not read again
    const [row] = await db.query<{ next_poll_at: Date | null }>('SELECT next_poll_at FROM orders WHERE shop_order_no = $1', ['RS-1']);
    expect(row.next_poll_at).toBeNull();
    const reads = sandbox.stats.requests.getOrder;
    // two whole passes of the poller begun after: neither read it
    await passesRun(app.relay.app.get(OrderPoller).passes, 2, 'poller passes');
    expect(sandbox.stats.requests.getOrder).toBe(reads);
  });
});
