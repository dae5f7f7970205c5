/**
 * Placing orders at two edges (CONTRACT §5):
 * - an optional field sent as `null` (`max_unit_cost`, `trace_id`, `manual_form_data`), as many
 *   serializers write an absent one, counts as absent: the same order as without it (never a 500);
 * - a 2xx create answer that is no valid acceptance (an `order_id` below 1, a negative `amount`) is an
 *   unknown outcome (202 `submit_unknown`), not an order followed under an id that can never be read.
 */
import type { OrderView } from './support/child-app.js';
import { useAppSuite } from './support/app-suite.js';

describe('placing orders: null optional fields, odd create answers', () => {
  const t = useAppSuite({
    sandbox: { catalog: { products: 1 }, timetable: { paidMs: 30, fulfillingMs: 60, deliveredMs: 100, completedMs: null } },
    prepare: (sandbox) => {
      sandbox.catalog.addProduct({ skus: [{ skuCode: 'R-AUTO', price: '10.00' }] });
    },
    env: { ORDER_POLL_BASE_MS: '50', ORDER_POLL_MAX_MS: '200', UPSTREAM_TIMEOUT_MS: '800' },
    seed: true,
  });
  let n = 0;
  const no = (tag: string) => `RV-${tag}-${++n}`;
  const place = (body: Record<string, unknown>) => t.app.http.post('/internal/orders', body);

  it('optional fields sent as null count as absent: 201, and the body without them is the same order', async () => {
    const shopNo = no('NULLS');
    const r = await place({
      shop_order_no: shopNo,
      sku_code: 'R-AUTO',
      quantity: 1,
      max_unit_cost: null,
      trace_id: null,
      manual_form_data: null,
    });
    expect(r.status).toBe(201);
    expect((r.data as { order: OrderView & { trace_id: string } }).order.trace_id).toEqual(expect.any(String));
    const replay = await place({ shop_order_no: shopNo, sku_code: 'R-AUTO', quantity: 1 });
    expect(replay.status).toBe(200);
    expect((replay.data as { order: OrderView }).order.upstream_order_id).toBe((r.data as { order: OrderView }).order.upstream_order_id);
  });

  it.each([
    ['order_id 0 (ids are ≥ 1)', { order_id: 0, amount: '10.00' }],
    ['a negative amount', { order_id: 987_654, amount: '-10.00' }],
  ])('a 2xx create answer with %s is no valid acceptance: outcome unknown, not accepted', async (_what, odd) => {
    const shopNo = no('ODD');
    const executed = t.sandbox.stats.createsExecuted;
    t.sandbox.faults.set({
      rules: [
        {
          operation: 'createOrder',
          kind: 'garbage_after',
          times: 1,
          body: JSON.stringify({ ok: true, order_no: 'X', status: 'pending_payment', currency: 'CNY', ...odd }),
        },
      ],
    });
    const r = await place({ shop_order_no: shopNo, sku_code: 'R-AUTO', quantity: 1 });
    expect(t.sandbox.stats.createsExecuted).toBe(executed + 1); // the upstream has a real order
    const order = (r.data as { order?: OrderView }).order;
    // accepted, the order would be followed under an id that can never be read (GET /orders/0 is
    // refused before it is sent) nor canceled, and the real upstream order lost
    expect(order?.upstream_order_id).toBeNull();
    expect(r.status).toBe(202);
    expect(order).toMatchObject({ status: 'submit_unknown' });
  });
});
