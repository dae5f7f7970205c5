/**
 * Callbacks of orders the poller no longer follows (CONTRACT §6), and callbacks that cannot be stored
 * as they are:
 * - a callback for a `delivered` order (not polled any more) whose confirming `GET /orders/{id}` fails
 *   leaves the order to the poller, which reads it once the upstream answers again (the upstream was
 *   answered 200 and does not retry): a refund announced that way is not lost; a `completed` callback
 *   carries its fulfillment and is applied as it stands (CALLBACK_TRUST=verified), with no read;
 * - a verified callback whose kept text fields carry a NUL character (which PostgreSQL's text refuses)
 *   is stored without that field and answered 200, not failed with a 5xx on every retry.
 */
import axios from 'axios';
import { CallbackProcessor } from '../src/callbacks/callback-processor.service.js';
import { OrderPoller } from '../src/orders/order-poller.service.js';
import { useAppSuite } from './support/app-suite.js';
import { callbackHeaders, freePort, getOrder, waitFor, waitForOrder, type OrderView } from './support/child-app.js';
import { passesRun } from './support/wait.js';

describe('callbacks of orders the poller does not follow', () => {
  const t = useAppSuite({
    sandbox: {
      catalog: { products: 2 },
      // no completedMs: the upstream order rests at `delivered` until the test moves it
      timetable: { paidMs: 30, fulfillingMs: 60, deliveredMs: 100 },
      callbackRetryDelaysMs: [100, 200, 400, 800],
    },
    prepare: (sandbox) => sandbox.catalog.addProduct({ skus: [{ skuCode: 'RV-AUTO', price: '4.00' }] }),
    env: async () => {
      const port = await freePort();
      return {
        PORT: String(port),
        CALLBACK_PUBLIC_URL: `http://127.0.0.1:${port}/callbacks/upstream`,
        ORDER_POLL_BASE_MS: '200',
        ORDER_POLL_MAX_MS: '400',
        UPSTREAM_TIMEOUT_MS: '800',
      };
    },
    seed: true,
  });
  let n = 0;
  const place = async (tag: string): Promise<OrderView> => {
    const r = await t.app.http.post('/internal/orders', { shop_order_no: `${tag}-${++n}`, sku_code: 'RV-AUTO', quantity: 1 });
    expect(r.status).toBe(201);
    return (r.data as { order: OrderView }).order;
  };
  const inbox = (upstreamId: number, status: string) =>
    t.db.query<{ state: string; outcome: string | null }>(
      'SELECT state, outcome FROM callback_inbox WHERE upstream_order_id = $1 AND reported_status = $2',
      [upstreamId, status],
    );

  /**
   * A delivered order whose own callbacks were all taken; then, while `GET /orders/{id}` fails, the
   * upstream moves it (`move`) and calls back with `status`: that callback ends `read_failed`. The
   * outage then ends.
   */
  const movedWhileUnreadable = async (tag: string, status: string, move: (upstreamId: number) => void): Promise<OrderView> => {
    const o = await place(tag);
    const upstreamId = o.upstream_order_id!;
    await waitForOrder(t.app.http, o.shop_order_no, (x) => x.status === 'delivered');
    await waitFor(
      () => inbox(upstreamId, 'delivered'),
      (rows) => rows.length > 0 && rows.every((r) => r.state !== 'pending'),
    );
    t.sandbox.faults.set({ rules: [{ operation: 'getOrder', kind: 'error_before', status: 503 }] });
    move(upstreamId);
    const [row] = await waitFor(
      () => inbox(upstreamId, status),
      (rows) => rows.length === 1 && rows[0].state !== 'pending',
      `the ${status} callback to be processed`,
    );
    expect(row.state).toBe('read_failed');
    // still delivered here while the upstream cannot be read
    expect((await getOrder(t.app.http, o.shop_order_no))!.status).toBe('delivered');
    t.sandbox.faults.set({ rules: [] });
    return o;
  };

  it("the upstream's refund callback of a delivered order, whose confirming read fails, is read again by the poller", async () => {
    const o = await movedWhileUnreadable('UF-REFUND', 'refunded', (id) => t.sandbox.refundOrder(id));
    // the poller reads the order (nothing else would: the upstream got its 200)
    const after = await waitForOrder(t.app.http, o.shop_order_no, (x) => x.status === 'refunded', 10_000);
    expect(after.refund_state).toBe('refundable');
    // read once, then no longer followed
    const [{ next_poll_at }] = await t.db.query<{ next_poll_at: Date | null }>('SELECT next_poll_at FROM orders WHERE shop_order_no = $1', [
      o.shop_order_no,
    ]);
    expect(next_poll_at).toBeNull();
    const reads = t.sandbox.stats.requests.getOrder;
    // two whole passes of the poller (and drains of the inbox) begun after: neither read it again
    await passesRun(t.app.relay.app.get(OrderPoller).passes, 2, 'poller passes');
    await passesRun(t.app.relay.app.get(CallbackProcessor).drains, 2, 'inbox drains');
    expect(t.sandbox.stats.requests.getOrder).toBe(reads);
  });

  it('delivered → completed: the callback carries its fulfillment, applied as is with no read while GET /orders/{id} fails', async () => {
    const o = await place('UF-COMPLETE');
    const upstreamId = o.upstream_order_id!;
    await waitForOrder(t.app.http, o.shop_order_no, (x) => x.status === 'delivered');
    await waitFor(
      () => inbox(upstreamId, 'delivered'),
      (rows) => rows.length > 0 && rows.every((r) => r.state !== 'pending'),
    );
    t.sandbox.faults.set({ rules: [{ operation: 'getOrder', kind: 'error_before', status: 503 }] });
    const reads = t.sandbox.stats.requests.getOrder;
    t.sandbox.setOrderStatus(upstreamId, 'completed');
    const [row] = await waitFor(
      () => inbox(upstreamId, 'completed'),
      (rows) => rows.length === 1 && rows[0].state !== 'pending',
      'the completed callback to be processed',
    );
    expect(row.state).toBe('applied');
    const after = (await getOrder(t.app.http, o.shop_order_no))!;
    expect(after.status).toBe('completed');
    expect(after.items).toHaveLength(1);
    expect(t.sandbox.stats.requests.getOrder).toBe(reads);
    t.sandbox.faults.set({ rules: [] });
  });

  it('a verified callback with a NUL in a kept field is stored without that field (not a 5xx the upstream retries in vain)', async () => {
    const body = JSON.stringify({
      event: 'order.status_changed',
      order_id: 987_999,
      order_no: 'DJ\u0000X',
      status: 'paid',
      timestamp: Math.floor(Date.now() / 1000),
    });
    const r = await axios.post(`${t.app.url}/callbacks/upstream`, body, {
      headers: callbackHeaders(body),
      validateStatus: () => true,
      transformRequest: [(d: unknown) => d],
    });
    expect([r.status, r.data]).toEqual([200, { ok: true }]);
    const stored = await t.db.query<{ upstream_order_no: string | null; reported_status: string | null }>(
      'SELECT upstream_order_no, reported_status FROM callback_inbox WHERE upstream_order_id = $1',
      [987_999],
    );
    expect(stored).toEqual([{ upstream_order_no: null, reported_status: 'paid' }]);
  });
});
