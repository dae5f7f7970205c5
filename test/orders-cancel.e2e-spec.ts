/**
 * Cancel and refund, cancel-upstream-first (CONTRACT §5): a pending order, a delivered one, an
 * unknown one, the upstream unreachable, a rejected one, refunds by the upstream, refund twice, a
 * callback arriving while a cancel is in progress, and an attempt still in flight (`submitting`).
 */
import type { SandboxServer } from '../src/sandbox/sandbox.server.js';
import { useAppSuite } from './support/app-suite.js';
import { freePort, getOrder, waitFor, waitForOrder, type OrderView } from './support/child-app.js';

describe('orders: cancel and refund', () => {
  let n = 0;
  const no = (tag: string) => `${tag}-${++n}`;
  const sandboxOptions = { catalog: { products: 2 }, timetable: { paidMs: null }, callbackRetryDelaysMs: [100, 200, 400] };
  const addProduct = (sandbox: SandboxServer) => {
    sandbox.catalog.addProduct({ skus: [{ skuCode: 'C-AUTO', price: '8.00' }] });
  };
  const t = useAppSuite({
    // orders stay in pending_payment until a test moves them
    sandbox: sandboxOptions,
    prepare: addProduct,
    env: async () => {
      const port = await freePort();
      return {
        PORT: String(port),
        CALLBACK_PUBLIC_URL: `http://127.0.0.1:${port}/callbacks/upstream`,
        ORDER_POLL_BASE_MS: '50',
        ORDER_POLL_MAX_MS: '200',
        UPSTREAM_TIMEOUT_MS: '800',
      };
    },
    seed: true,
  });

  afterEach(async () => {
    await t.sandbox.acceptConnections();
  });

  const placed = async (tag: string): Promise<OrderView> => {
    const r = await t.app.http.post('/internal/orders', { shop_order_no: no(tag), sku_code: 'C-AUTO', quantity: 2 });
    expect(r.status).toBe(201);
    return (r.data as { order: OrderView }).order;
  };
  const cancel = (o: { shop_order_no: string }) => t.app.http.post(`/internal/orders/${o.shop_order_no}/cancel`);
  const refund = (o: { shop_order_no: string }) => t.app.http.post(`/internal/orders/${o.shop_order_no}/refund`);

  it('cancels a pending order upstream first, then locally (refundable); again answers the same', async () => {
    const o = await placed('CXL');
    const cancels = t.sandbox.stats.cancelsExecuted;
    const r = await cancel(o);
    expect(r.status).toBe(200);
    expect((r.data as { order: OrderView }).order).toMatchObject({
      status: 'canceled',
      refund_state: 'refundable',
      refundable_amount: '16.00',
    });
    expect(t.sandbox.order(o.upstream_order_id as number)?.status).toBe('canceled');
    const again = await cancel(o);
    expect(again.status).toBe(200);
    expect(t.sandbox.stats.cancelsExecuted).toBe(cancels + 1);
  });

  it('refuses to cancel or refund a delivered order (409 cancel_not_allowed), leaving it as it was', async () => {
    const o = await placed('DLV');
    t.sandbox.setOrderStatus(o.upstream_order_id as number, 'delivered', { payload: 'CODE-A\nCODE-B' });
    await waitForOrder(t.app.http, o.shop_order_no, (x) => x.status === 'delivered');
    for (const call of [cancel, refund]) {
      const r = await call(o);
      expect(r.status).toBe(409);
      expect(r.data).toMatchObject({ ok: false, error_code: 'cancel_not_allowed' });
    }
    const after = await waitForOrder(t.app.http, o.shop_order_no, () => true);
    expect(after).toMatchObject({ status: 'delivered', refund_state: 'not_refundable', items: ['CODE-A', 'CODE-B'] });
  });

  it('keeps "canceled after delivery" as an anomaly: the order stays delivered and not refundable', async () => {
    const o = await placed('ANOM');
    t.sandbox.setOrderStatus(o.upstream_order_id as number, 'delivered', { payload: 'CODE-X' });
    await waitForOrder(t.app.http, o.shop_order_no, (x) => x.status === 'delivered');
    t.sandbox.setOrderStatus(o.upstream_order_id as number, 'canceled');
    const after = await waitForOrder(t.app.http, o.shop_order_no, (x) => x.anomaly !== null);
    expect(after).toMatchObject({
      status: 'delivered',
      anomaly: 'canceled_after_delivery',
      refund_state: 'not_refundable',
      items: ['CODE-X'],
    });
    const evs = (await t.app.http.get(`/internal/orders/${o.shop_order_no}/events`)).data as {
      events: Array<{ kind: string; detail: Record<string, unknown> | null }>;
    };
    expect(evs.events.filter((e) => e.kind === 'anomaly')).toEqual([
      expect.objectContaining({ detail: { reason: 'canceled_after_delivery', reported: 'canceled' } }),
    ]);
    expect((await refund(o)).status).toBe(409);
  });

  it('keeps "delivered after a cancel" as an anomaly: the order stays canceled (refundable), the items reported are kept', async () => {
    const o = await placed('DLVX');
    expect((await cancel(o)).status).toBe(200);
    t.sandbox.setOrderStatus(o.upstream_order_id as number, 'delivered', { payload: 'CODE-Y\nCODE-Z' });
    const after = await waitForOrder(t.app.http, o.shop_order_no, (x) => x.anomaly !== null);
    expect(after).toMatchObject({
      status: 'canceled',
      anomaly: 'delivered_after_cancel',
      refund_state: 'refundable',
      items: ['CODE-Y', 'CODE-Z'],
    });
    const evs = (await t.app.http.get(`/internal/orders/${o.shop_order_no}/events`)).data as {
      events: Array<{ kind: string; detail: Record<string, unknown> | null }>;
    };
    expect(evs.events.filter((e) => e.kind === 'anomaly')).toEqual([
      expect.objectContaining({ detail: { reason: 'delivered_after_cancel', reported: 'delivered' } }),
    ]);
  });

  it('a cancel answered ok but not `canceled` is no yes: 409 cancel_not_allowed, the order unchanged and not refundable', async () => {
    const o = await placed('NOTYES');
    const id = o.upstream_order_id as number;
    const body = JSON.stringify({ ok: true, order_id: id, order_no: t.sandbox.order(id)?.order_no, status: 'pending_payment' });
    t.sandbox.faults.set({ rules: [{ operation: 'cancelOrder', kind: 'error_before', status: 200, body, times: 1 }] });
    for (const call of [cancel, refund]) {
      const r = await call(o);
      expect(r.status).toBe(409);
      expect(r.data).toMatchObject({
        ok: false,
        error_code: 'cancel_not_allowed',
        order: { status: 'pending_payment', refund_state: 'not_refundable' },
      });
      t.sandbox.faults.set({ rules: [{ operation: 'cancelOrder', kind: 'error_before', status: 200, body, times: 1 }] });
    }
    expect(t.sandbox.order(id)?.status).toBe('pending_payment');
    expect(await getOrder(t.app.http, o.shop_order_no)).toMatchObject({ status: 'pending_payment', refund_state: 'not_refundable' });
    const [{ refunds }] = await t.db.query<{ refunds: number }>(
      'SELECT count(*)::int AS refunds FROM order_refunds r JOIN orders o ON o.id = r.order_id WHERE o.shop_order_no = $1',
      [o.shop_order_no],
    );
    expect(refunds).toBe(0);
  });

  it('a cancel the upstream accepts for an order with delivered items: 409 cancel_not_allowed, an anomaly, not refundable', async () => {
    const o = await placed('LATEYES');
    const id = o.upstream_order_id as number;
    t.sandbox.setOrderStatus(id, 'delivered', { payload: 'CODE-L' });
    await waitForOrder(t.app.http, o.shop_order_no, (x) => x.status === 'delivered');
    // an upstream that cancels what it delivered
    const body = JSON.stringify({ ok: true, order_id: id, order_no: t.sandbox.order(id)?.order_no, status: 'canceled' });
    t.sandbox.faults.set({ rules: [{ operation: 'cancelOrder', kind: 'error_before', status: 200, body, times: 1 }] });
    const r = await cancel(o);
    expect(r.status).toBe(409);
    expect(r.data).toMatchObject({
      ok: false,
      error_code: 'cancel_not_allowed',
      order: { status: 'delivered', anomaly: 'canceled_after_delivery', refund_state: 'not_refundable' },
    });
    expect(await getOrder(t.app.http, o.shop_order_no)).toMatchObject({
      status: 'delivered',
      items: ['CODE-L'],
      refund_state: 'not_refundable',
    });
  });

  it('answers 503 upstream_unavailable when the upstream cannot be reached, the order unchanged', async () => {
    const o = await placed('UNREACH');
    // (a 429 on the cancel: test/orders-429-budget-off.e2e-spec.ts)
    await t.sandbox.refuseConnections();
    const r = await cancel(o);
    expect(r.status).toBe(503);
    expect(r.data).toMatchObject({ error_code: 'upstream_unavailable', order: { status: 'pending_payment' } });
    const refused = await refund(o);
    expect(refused.status).toBe(503);
    expect(refused.data).toMatchObject({ error_code: 'upstream_unavailable' });
    await t.sandbox.acceptConnections();
    t.sandbox.faults.reset();
    expect(t.sandbox.order(o.upstream_order_id as number)?.status).toBe('pending_payment');
    expect((await cancel(o)).status).toBe(200);
  });

  it('a cancel whose answer is lost: 503, then the truth is learned and a retry answers canceled', async () => {
    const o = await placed('LOST');
    t.sandbox.faults.set({ rules: [{ operation: 'cancelOrder', kind: 'reset_after', times: 1 }] });
    const r = await cancel(o);
    expect(r.status).toBe(503);
    expect(t.sandbox.order(o.upstream_order_id as number)?.status).toBe('canceled');
    const again = await cancel(o);
    expect(again.status).toBe(200);
    expect((again.data as { order: OrderView }).order.status).toBe('canceled');
  });

  it('cannot cancel an order whose outcome is unknown (409 outcome_unknown)', async () => {
    t.sandbox.faults.set({
      rules: [
        { operation: 'createOrder', kind: 'error_after', status: 500, times: 1 },
        { operation: 'getOrder', kind: 'error_before', status: 500 },
      ],
    });
    const shopNo = no('UNK');
    const r = await t.app.http.post('/internal/orders', { shop_order_no: shopNo, sku_code: 'C-AUTO', quantity: 1 });
    expect(r.status).toBe(202);
    for (const call of [cancel, refund]) {
      const c = await call({ shop_order_no: shopNo });
      expect(c.status).toBe(409);
      expect(c.data).toMatchObject({ error_code: 'outcome_unknown' });
    }
  });

  it('cancels a rejected order locally (still refundable), refunds it once; refunding twice answers the same', async () => {
    t.sandbox.faults.set({
      rules: [{ operation: 'createOrder', kind: 'coded_error', status: 409, errorCode: 'insufficient_stock', times: 1 }],
    });
    const shopNo = no('REJ');
    const r = await t.app.http.post('/internal/orders', { shop_order_no: shopNo, sku_code: 'C-AUTO', quantity: 1 });
    expect(r.status).toBe(409);
    expect(r.data).toMatchObject({ error_code: 'insufficient_stock', order: { status: 'rejected' } });
    const cancels = t.sandbox.stats.requests.cancelOrder;
    const c = await cancel({ shop_order_no: shopNo });
    expect(c.status).toBe(200);
    expect((c.data as { order: OrderView }).order).toMatchObject({
      status: 'canceled',
      refund_state: 'refundable',
      refundable_amount: '8.00',
    });
    expect(t.sandbox.stats.requests.cancelOrder).toBe(cancels);
    const first = await refund({ shop_order_no: shopNo });
    const second = await refund({ shop_order_no: shopNo });
    expect(first.status).toBe(200);
    expect(second.status).toBe(200);
    expect((first.data as { order: OrderView }).order).toMatchObject({ refund_state: 'refunded', refundable_amount: '8.00' });
    expect((second.data as { order: OrderView }).order).toEqual((first.data as { order: OrderView }).order);
    expect(
      await t.db.query('SELECT o.shop_order_no FROM order_refunds r JOIN orders o ON o.id = r.order_id WHERE o.shop_order_no = $1', [
        shopNo,
      ]),
    ).toHaveLength(1);
    // a refunded order is final: the same key does not start a new attempt
    const replay = await t.app.http.post('/internal/orders', { shop_order_no: shopNo, sku_code: 'C-AUTO', quantity: 1 });
    expect(replay.status).toBe(200);
  });

  it('refund of a pending order: cancel upstream first, then recorded; twice answers the same, one cancel sent', async () => {
    const o = await placed('RFD');
    const cancels = t.sandbox.stats.cancelsExecuted;
    const [a, b] = await Promise.all([refund(o), refund(o)]);
    expect(a.status).toBe(200);
    expect(b.status).toBe(200);
    expect((a.data as { order: OrderView }).order).toMatchObject({
      status: 'canceled',
      refund_state: 'refunded',
      refundable_amount: '16.00',
    });
    expect((b.data as { order: OrderView }).order.refund_state).toBe('refunded');
    expect(t.sandbox.stats.cancelsExecuted).toBe(cancels + 1);
  });

  it('stores refunded and partially_refunded from the upstream, with the refundable amount', async () => {
    const full = await placed('UPREF');
    t.sandbox.setOrderStatus(full.upstream_order_id as number, 'delivered');
    await waitForOrder(t.app.http, full.shop_order_no, (x) => x.status === 'delivered');
    t.sandbox.refundOrder(full.upstream_order_id as number);
    const refunded = await waitForOrder(t.app.http, full.shop_order_no, (x) => x.status === 'refunded');
    expect(refunded).toMatchObject({ refund_state: 'refundable', refundable_amount: '16.00' });

    const part = await placed('UPPART');
    t.sandbox.setOrderStatus(part.upstream_order_id as number, 'delivered');
    await waitForOrder(t.app.http, part.shop_order_no, (x) => x.status === 'delivered');
    t.sandbox.refundOrder(part.upstream_order_id as number, '5.00');
    const partial = await waitForOrder(t.app.http, part.shop_order_no, (x) => x.status === 'partially_refunded');
    expect(partial).toMatchObject({ refund_state: 'refundable', refundable_amount: '5.00', refunded_amount: '5.00' });
    const r = await refund(part);
    expect(r.status).toBe(200);
    expect((r.data as { order: OrderView }).order).toMatchObject({
      status: 'partially_refunded',
      refund_state: 'refunded',
      refundable_amount: '5.00',
    });
  });

  it('a callback arriving while a cancel is in progress waits in the inbox and is applied after it', async () => {
    const o = await placed('HOLD');
    const id = o.upstream_order_id as number;
    t.sandbox.faults.set({ rules: [{ operation: 'cancelOrder', kind: 'delay', delayMs: 600, times: 1 }] });
    const cancelling = cancel(o);
    await waitFor(
      () => t.db.query<{ op_token: string | null }>('SELECT op_token FROM orders WHERE shop_order_no = $1', [o.shop_order_no]),
      (rows) => rows[0]?.op_token !== null,
    );
    t.sandbox.setOrderStatus(id, 'paid'); // sends a callback while the cancel is in flight
    const held = await waitFor(
      () =>
        t.db.query<{ state: string; outcome: string | null }>(
          "SELECT state, outcome FROM callback_inbox WHERE upstream_order_id = $1 AND reported_status = 'paid'",
          [id],
        ),
      (rows) => rows.length === 1 && rows[0].outcome === 'operation_in_progress',
    );
    expect(held[0].state).toBe('pending');
    const r = await cancelling;
    expect(r.status).toBe(200);
    expect((r.data as { order: OrderView }).order.status).toBe('canceled');
    const applied = await waitFor(
      () =>
        t.db.query<{ state: string; outcome: string }>(
          "SELECT state, outcome FROM callback_inbox WHERE upstream_order_id = $1 AND reported_status = 'paid'",
          [id],
        ),
      (rows) => rows[0]?.state === 'applied',
    );
    // taken up after the cancel, never before it: the paid claim is applied as the upstream's word
    // (CALLBACK_TRUST=verified) to an order already past it, or (under confirm) reads nothing or a read
    // shows it canceled; either way the order never moves back to paid (the sandbox's callback of the
    // cancel may be taken up in the same batch)
    expect([
      `verified paid: order canceled`,
      `verified paid, canceled: order canceled`,
      `late: order ${o.shop_order_no} is canceled here (claimed paid); not read`,
      'applied canceled',
      'applied canceled (shared read)',
    ]).toContain(applied[0].outcome);
    const events = (await t.app.http.get(`/internal/orders/${o.shop_order_no}/events`)).data as { events: Array<{ to: string | null }> };
    expect(events.events.map((e) => e.to)).not.toContain('paid');
  });

  describe('an attempt still in flight (submitting)', () => {
    // An instance of its own, whose upstream timeout leaves room for a slow create call: the create is
    // held by the sandbox well within it, so the attempt stays `submitting` and then gets its answer.
    const slow = useAppSuite({
      sandbox: sandboxOptions,
      prepare: addProduct,
      env: { ORDER_POLL_BASE_MS: '50', ORDER_POLL_MAX_MS: '200', UPSTREAM_TIMEOUT_MS: '6000' },
      seed: true,
    });

    it('cancel and refund while the create is unanswered: 409 outcome_unknown with the order, nothing kept; then it proceeds', async () => {
      const shopNo = no('INFLIGHT');
      const path = `/internal/orders/${shopNo}`;
      const refundRows = () =>
        slow.db.query('SELECT r.order_id FROM order_refunds r JOIN orders o ON o.id = r.order_id WHERE o.shop_order_no = $1', [shopNo]);
      const received = slow.sandbox.stats.createsReceived;
      const executed = slow.sandbox.stats.createsExecuted;
      const cancelCalls = slow.sandbox.stats.requests.cancelOrder;
      const cancels = slow.sandbox.stats.cancelsExecuted;
      slow.sandbox.faults.set({ rules: [{ operation: 'createOrder', kind: 'delay', delayMs: 2000, times: 1 }] });

      const placing = slow.app.http.post('/internal/orders', { shop_order_no: shopNo, sku_code: 'C-AUTO', quantity: 2 });
      const submitting = await waitForOrder(slow.app.http, shopNo, (o) => o.status === 'submitting');
      expect(submitting).toMatchObject({
        attempt: 1,
        downstream_order_no: shopNo,
        upstream_order_id: null,
        refund_state: 'not_refundable',
      });
      // the create call has been sent and is not answered yet
      await waitFor(
        () => slow.sandbox.stats.createsReceived,
        (c) => c === received + 1,
        'the create call at the sandbox',
      );

      for (const action of ['cancel', 'refund']) {
        const r = await slow.app.http.post(`${path}/${action}`);
        expect({ action, status: r.status }).toEqual({ action, status: 409 });
        expect(r.data).toMatchObject({
          ok: false,
          error_code: 'outcome_unknown',
          error_message: expect.any(String),
          order: { shop_order_no: shopNo, status: 'submitting', attempt: 1, upstream_order_id: null, refund_state: 'not_refundable' },
        });
      }
      // all of the above happened while the create was still in flight
      expect(slow.sandbox.stats.createsExecuted).toBe(executed);
      const during = await getOrder(slow.app.http, shopNo);
      expect(during).toMatchObject({ status: 'submitting', refund_state: 'not_refundable' });
      const events = (await slow.app.http.get(`${path}/events`)).data as {
        events: Array<{ kind: string; from: string | null; to: string | null }>;
      };
      expect(events.events).toEqual([expect.objectContaining({ from: null, to: 'submitting' })]);
      expect(await refundRows()).toHaveLength(0);
      expect(await slow.db.query('SELECT op_token FROM orders WHERE shop_order_no = $1', [shopNo])).toEqual([{ op_token: null }]);
      expect(slow.sandbox.stats.requests.cancelOrder).toBe(cancelCalls);

      // the create answers: the order proceeds normally, untouched by the refused cancel and refund
      const placed = await placing;
      expect(placed.status).toBe(201);
      const order = (placed.data as { order: OrderView }).order;
      expect(order).toMatchObject({
        shop_order_no: shopNo,
        status: 'pending_payment',
        attempt: 1,
        downstream_order_no: shopNo,
        amount: '16.00',
        refund_state: 'not_refundable',
      });
      expect(order.upstream_order_id).toEqual(expect.any(Number));
      expect(slow.sandbox.stats.createsExecuted).toBe(executed + 1);
      expect(slow.sandbox.order(order.upstream_order_id as number)?.status).toBe('pending_payment');
      expect(slow.sandbox.stats.requests.cancelOrder).toBe(cancelCalls);
      expect(slow.sandbox.stats.cancelsExecuted).toBe(cancels);
      expect(await refundRows()).toHaveLength(0);

      // and can now be canceled (upstream first) and refunded as any pending order
      const c = await slow.app.http.post(`${path}/cancel`);
      expect(c.status).toBe(200);
      expect((c.data as { order: OrderView }).order).toMatchObject({
        status: 'canceled',
        refund_state: 'refundable',
        refundable_amount: '16.00',
      });
      expect(slow.sandbox.order(order.upstream_order_id as number)?.status).toBe('canceled');
      expect(slow.sandbox.stats.cancelsExecuted).toBe(cancels + 1);
      const rf = await slow.app.http.post(`${path}/refund`);
      expect(rf.status).toBe(200);
      expect((rf.data as { order: OrderView }).order).toMatchObject({ status: 'canceled', refund_state: 'refunded' });
      expect(await refundRows()).toHaveLength(1);
    });
  });
});
