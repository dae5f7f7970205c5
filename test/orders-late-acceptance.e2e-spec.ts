/**
 * A create's acceptance that arrives after its attempt was closed here (the sweeper took the sender
 * for gone, an operator then settled the order `not_placed`): the upstream order it names is kept as
 * the order's anomaly (`upstream_order_exists`: not refundable, no new attempt), never dropped
 * silently. Driven through the submitter's own recording of an outcome, on a
 * real database; the stalled sender is simulated by recording its answer late.
 */
import { OrderFollowService } from '../src/orders/order-follow.service.js';
import { requestFingerprint } from '../src/orders/order-request.js';
import { OrderSubmitter, type SendOutcome } from '../src/orders/order-submitter.service.js';
import { OrderWrites } from '../src/orders/order-writes.repository.js';
import { useAppSuite } from './support/app-suite.js';
import { reserveOrder } from './support/reserved-order.js';
import { waitFor } from './support/wait.js';

describe('orders: an acceptance recorded after its attempt was closed', () => {
  const suite = useAppSuite({ sandbox: { catalog: { products: 2 } }, workers: false, seed: true });
  /** A real SKU: the orders below are what a shop's body for it would record, so that a resubmission is one. */
  let skuCode: string;
  const body = (shopOrderNo: string) => ({ shop_order_no: shopOrderNo, sku_code: skuCode, quantity: 1 });
  beforeAll(() => {
    skuCode = suite.sandbox.catalog.listedProducts()[0].skus[0].sku_code;
  });

  /** An order whose sender "stalled": swept to submit_unknown, then settled by an operator as not placed. */
  async function settledNotPlaced(shopOrderNo: string): Promise<string> {
    const { app, db } = suite;
    const created = await reserveOrder(app.relay.app.get(OrderWrites), shopOrderNo, 50, {
      skuCode,
      requestFingerprint: requestFingerprint(body(shopOrderNo)),
    });
    // its 50 ms lease over by the database's clock, which the sweep judges it by
    await waitFor(
      async () =>
        (
          await db.query<{ over: boolean }>('SELECT sending_until < now() AS over FROM order_attempts WHERE order_id = $1', [
            created.order.id,
          ])
        )[0].over,
      Boolean,
      "the sender's lease to end",
    );
    await app.relay.app.get(OrderFollowService).sweepStale();
    const r = await app.http.post(`/internal/orders/${shopOrderNo}/resolve`, { not_placed: true, reason: 'operator checked the upstream' });
    expect(r.status).toBe(200);
    expect(r.data.order).toMatchObject({ status: 'rejected', refund_state: 'refundable' });
    return created.order.id;
  }

  const accepted = (orderId: number, status: string): SendOutcome => ({
    kind: 'accepted',
    report: { order_id: orderId, order_no: `DJ-${orderId}`, status, amount: '1.00', currency: 'CNY' } as Extract<
      SendOutcome,
      { kind: 'accepted' }
    >['report'],
    request: { sku_id: 1, quantity: 1, trace_id: 't', with_callback: false },
    reportKind: 'answer',
  });

  it('the upstream order it names is kept as the anomaly upstream_order_exists: not refundable, not resubmittable', async () => {
    const { app, db, sandbox } = suite;
    const id = await settledNotPlaced('LATE-1');
    const recorded = await app.relay.app.get(OrderSubmitter).recordOutcome(id, 1, accepted(900001, 'paid'), 'api');
    expect(recorded.applied).toBe(false);
    const order = (await app.http.get('/internal/orders/LATE-1')).data.order;
    expect(order).toMatchObject({
      status: 'rejected',
      anomaly: 'upstream_order_exists',
      refund_state: 'not_refundable',
      upstream_order_id: null,
    });
    const events = await db.query<{ kind: string; detail: Record<string, unknown> }>(
      "SELECT kind, detail FROM order_events WHERE order_id = $1 AND kind = 'anomaly'",
      [id],
    );
    expect(events).toEqual([
      {
        kind: 'anomaly',
        detail: expect.objectContaining({
          reason: 'upstream_order_exists',
          upstream_order_id: 900001,
          attempt: 1,
          downstream_order_no: 'LATE-1',
        }),
      },
    ]);
    // refused as the contract says for such an order, nothing sent: no refund, and the shop's same body
    // (which would be a new attempt for a plain rejected order) answers the recorded order
    const creates = sandbox.stats.requests.createOrder;
    expect((await app.http.post('/internal/orders/LATE-1/refund', {})).status).toBe(409);
    const again = await app.http.post('/internal/orders', body('LATE-1'));
    expect(again.status).toBe(200);
    expect(again.data.order).toMatchObject({ status: 'rejected', attempt: 1, anomaly: 'upstream_order_exists' });
    expect(sandbox.stats.requests.createOrder).toBe(creates);
  });

  it('an upstream order that keeps nothing (canceled) changes nothing', async () => {
    const { app } = suite;
    const id = await settledNotPlaced('LATE-2');
    await app.relay.app.get(OrderSubmitter).recordOutcome(id, 1, accepted(900002, 'canceled'), 'api');
    const order = (await app.http.get('/internal/orders/LATE-2')).data.order;
    expect(order).toMatchObject({ status: 'rejected', anomaly: null, refund_state: 'refundable' });
  });
});
