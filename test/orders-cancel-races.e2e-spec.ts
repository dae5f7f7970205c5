/**
 * Cancel, refund and operator actions at their edges (CONTRACT §5):
 * - `resolve` takes either `{upstream_order_id}` or `{not_placed: true, reason}`: anything else
 *   (both, a `not_placed` that is not `true` beside a bad id) is 400 `bad_request` and changes nothing;
 * - an operator `refresh` during a cancel answers after reading the upstream, not the state from before;
 * - a cancel or refund of a `rejected` order whose new attempt lands meanwhile judges the order again
 *   under its lock: the upstream order of the new attempt is canceled there first (never a 200 for an
 *   order that was not canceled, never a refusal the upstream did not make).
 */
import { jest } from '@jest/globals';
import { OrderReads } from '../src/orders/order-reads.repository.js';
import { useAppSuite } from './support/app-suite.js';
import { getOrder, waitFor, type OrderView } from './support/child-app.js';

describe('cancel, refund and resolve at their edges', () => {
  // no CALLBACK_PUBLIC_URL: orders are followed by polling alone, so a submit_unknown order (no
  // upstream id) stays submit_unknown until an operator settles it (profile spec: no re-send)
  const t = useAppSuite({
    sandbox: { profile: 'spec', dedupeDownstreamOrderNo: false, catalog: { products: 1 }, timetable: { paidMs: null } },
    prepare: (sandbox) => sandbox.catalog.addProduct({ skus: [{ skuCode: 'RV-AUTO', price: '4.00' }] }),
    env: { UPSTREAM_PROFILE: 'spec', UPSTREAM_TIMEOUT_MS: '800', ORDER_POLL_BASE_MS: '50', ORDER_POLL_MAX_MS: '200' },
    seed: true,
  });
  let n = 0;
  const no = (tag: string) => `RV-${tag}-${++n}`;

  /** A submit_unknown order whose create the upstream did execute (answered 500 after acting). */
  const unknownOrder = async (tag: string): Promise<{ shopNo: string; upstreamId: number }> => {
    t.sandbox.faults.set({ rules: [{ operation: 'createOrder', kind: 'error_after', status: 500, times: 1 }] });
    const shopNo = no(tag);
    const r = await t.app.http.post('/internal/orders', { shop_order_no: shopNo, sku_code: 'RV-AUTO', quantity: 1 });
    expect(r.status).toBe(202);
    expect((r.data as { order: OrderView }).order.status).toBe('submit_unknown');
    const upstream = t.sandbox.orders().find((o) => o.downstream_order_no === shopNo);
    expect(upstream).toBeDefined();
    t.sandbox.faults.reset();
    return { shopNo, upstreamId: upstream!.id };
  };

  describe('resolve: bad input gets 400 bad_request and changes nothing', () => {
    it('`{not_placed: false, upstream_order_id: "abc"}` is 400 bad_request (not a 503)', async () => {
      const { shopNo } = await unknownOrder('BADID');
      const r = await t.app.http.post(`/internal/orders/${shopNo}/resolve`, { not_placed: false, upstream_order_id: 'abc' });
      expect({ status: r.status, data: r.data }).toMatchObject({ status: 400, data: { ok: false, error_code: 'bad_request' } });
      expect(await getOrder(t.app.http, shopNo)).toMatchObject({ status: 'submit_unknown' });
    });

    it('`{not_placed: null, upstream_order_id: -5}` is 400 bad_request', async () => {
      const { shopNo } = await unknownOrder('NEGID');
      const r = await t.app.http.post(`/internal/orders/${shopNo}/resolve`, { not_placed: null, upstream_order_id: -5 });
      expect({ status: r.status, data: r.data }).toMatchObject({ status: 400, data: { ok: false, error_code: 'bad_request' } });
    });

    it('both `upstream_order_id` and `not_placed: true` (contradictory) is 400, not silently "never placed"', async () => {
      const { shopNo, upstreamId } = await unknownOrder('BOTH');
      // the upstream does have this attempt's order (it executed the create)
      expect(t.sandbox.order(upstreamId)?.status).toBe('pending_payment');
      const r = await t.app.http.post(`/internal/orders/${shopNo}/resolve`, {
        upstream_order_id: upstreamId,
        not_placed: true,
        reason: 'ops',
      });
      const after = await getOrder(t.app.http, shopNo);
      // what the service did with it: the order settled as never placed although the upstream has it
      // (it can then be submitted again under a new number and paid twice)
      expect({ status: r.status, after: after?.status }).toEqual({ status: 400, after: 'submit_unknown' });
      expect((r.data as { fields?: Record<string, string[]> }).fields?.upstream_order_id).toEqual([
        'give either upstream_order_id or not_placed, not both',
      ]);
    });
  });

  describe('operator refresh while a cancel is in progress', () => {
    it('answers only after reading the order from the upstream (CONTRACT: `{ok, order}` after reading it)', async () => {
      const shopNo = no('REFR');
      const placed = await t.app.http.post('/internal/orders', { shop_order_no: shopNo, sku_code: 'RV-AUTO', quantity: 1 });
      expect(placed.status).toBe(201);
      t.sandbox.faults.set({ rules: [{ operation: 'cancelOrder', kind: 'delay', delayMs: 600, times: 1 }] });
      const cancels = t.sandbox.stats.requests.cancelOrder;
      const cancelling = t.app.http.post(`/internal/orders/${shopNo}/cancel`);
      // the cancel is in progress: its request has reached the upstream, which answers 600 ms later
      await waitFor(
        () => t.sandbox.stats.requests.cancelOrder,
        (n) => n > cancels,
        'the cancel at the upstream',
      );
      const before = t.sandbox.stats.requests.getOrder;
      const r = await t.app.http.post(`/internal/orders/${shopNo}/refresh`);
      const readsDuring = t.sandbox.stats.requests.getOrder - before;
      expect((await cancelling).status).toBe(200);
      expect({ status: r.status, readsDuring: readsDuring > 0, order: (r.data as { order?: OrderView }).order?.status }).toEqual({
        status: 200,
        readsDuring: true,
        order: 'canceled',
      });
    });
  });

  describe('cancel and refund of a rejected order racing a new attempt', () => {
    /**
     * A rejected order (refused upstream), and `call` made with a new accepted attempt landing between
     * its first read and its locked write.
     */
    const racing = async (tag: string, call: (shopNo: string) => Promise<{ status: number; data: unknown }>) => {
      t.sandbox.faults.set({
        rules: [{ operation: 'createOrder', kind: 'coded_error', status: 409, errorCode: 'insufficient_stock', times: 1 }],
      });
      const shopNo = no(tag);
      const body = { shop_order_no: shopNo, sku_code: 'RV-AUTO', quantity: 1 };
      const first = await t.app.http.post('/internal/orders', body);
      expect(first.status).toBe(409);
      expect((first.data as { order: OrderView }).order.status).toBe('rejected');
      t.sandbox.faults.reset();

      const repo = t.app.relay.app.get(OrderReads);
      const real = repo.findByShopOrderNo.bind(repo);
      let resubmitted: { status: number; data: unknown } | undefined;
      // the call reads the order (rejected); the shop's new attempt lands before the locked write
      const spy = jest.spyOn(repo, 'findByShopOrderNo').mockImplementationOnce(async (no: string) => {
        const seen = await real(no);
        const r = await t.app.http.post('/internal/orders', body);
        resubmitted = { status: r.status, data: r.data };
        return seen;
      });
      let answer;
      try {
        answer = await call(shopNo);
      } finally {
        spy.mockRestore();
      }
      expect(resubmitted?.status).toBe(201);
      const upstreamId = (resubmitted!.data as { order: OrderView }).order.upstream_order_id as number;
      return { shopNo, upstreamId, answer };
    };

    it('a cancel cancels the new attempt upstream first, then here (never a 200 for an order not canceled)', async () => {
      const { shopNo, upstreamId, answer } = await racing('RACE', (shopNo) => t.app.http.post(`/internal/orders/${shopNo}/cancel`));
      expect(answer.status).toBe(200);
      expect((answer.data as { order: OrderView }).order.status).toBe('canceled');
      expect(t.sandbox.order(upstreamId)?.status).toBe('canceled');
      expect((await getOrder(t.app.http, shopNo))!.status).toBe('canceled');
    });

    it('a refund cancels the new attempt upstream first, then records the refund (never a refusal the upstream did not make)', async () => {
      const { shopNo, upstreamId, answer } = await racing('RACEREF', (shopNo) => t.app.http.post(`/internal/orders/${shopNo}/refund`));
      expect(answer.status).toBe(200);
      expect(t.sandbox.order(upstreamId)?.status).toBe('canceled');
      expect(await getOrder(t.app.http, shopNo)).toMatchObject({ status: 'canceled', refund_state: 'refunded' });
    });
  });
});
