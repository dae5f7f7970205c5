/**
 * Edges of the callback path (CONTRACT §5, §6):
 * - callbacks that arrive while the create call is still in flight wait in the inbox without using up
 *   the tries of their confirming read: once the attempt is `submit_unknown`, a failed read is tried
 *   again and the callback settles it (profile `spec`: nothing else would);
 * - a verified callback whose upstream order the order does not follow, confirmed by the upstream's own
 *   `GET /orders/{id}`: an upstream order for an attempt rejected here, a second upstream order for one
 *   number, and an operator's `not_placed` landing between the read and the record. Each is kept as an
 *   anomaly on the order (event row, metric, error-level log line), the callback stored as
 *   `unknown_order` with an `anomaly …` outcome; an order that follows no upstream order is then not
 *   canceled locally, refunded or submitted again;
 * - never on the callback's own claim: an upstream order that is another attempt's, one the upstream
 *   does not have, and one canceled there (nothing kept) leave the order as it was;
 * - a verified callback the service cannot use: stored as `ignored`, acknowledged, logged at warn
 *   without its body.
 */
import axios from 'axios';
import { jest } from '@jest/globals';
import { Metrics } from '../src/ops/metrics.service.js';
import { OrderSubmitter } from '../src/orders/order-submitter.service.js';
import { UpstreamClient } from '../src/upstream/upstream.client.js';
import { useAppSuite } from './support/app-suite.js';
import { callbackHeaders, freePort, getOrder, waitFor, waitForOrder, type OrderView } from './support/child-app.js';

const TIMEOUT_MS = 1500;

interface InboxRow {
  state: string;
  outcome: string | null;
  tries: number;
  order_id: string | null;
}

interface EventView {
  source: string;
  kind: string;
  from: string | null;
  to: string | null;
  detail: Record<string, unknown> | null;
}

describe('callbacks: edges', () => {
  const t = useAppSuite({
    sandbox: {
      // as the spec says nothing of it: the upstream does not deduplicate downstream_order_no
      profile: 'spec',
      dedupeDownstreamOrderNo: false,
      catalog: { products: 2 },
      timetable: { paidMs: 30, fulfillingMs: 60, deliveredMs: 100, completedMs: 150 },
      callbackRetryDelaysMs: [100, 200, 400, 800],
    },
    prepare: (sandbox) => sandbox.catalog.addProduct({ skus: [{ skuCode: 'EDGE', price: '3.00' }] }),
    env: async () => {
      const port = await freePort();
      return {
        PORT: String(port),
        CALLBACK_PUBLIC_URL: `http://127.0.0.1:${port}/callbacks/upstream`,
        UPSTREAM_PROFILE: 'spec',
        UPSTREAM_TIMEOUT_MS: String(TIMEOUT_MS),
        // the inbox's retry interval is min(ORDER_POLL_BASE_MS, 1 s): a deferred callback is claimed
        // every 50 ms while the create call is in flight, ~30 times
        ORDER_POLL_BASE_MS: '50',
        ORDER_POLL_MAX_MS: '500',
        LOG_LEVEL: 'info',
      };
    },
    seed: true,
    logs: true,
  });
  let n = 0;
  const no = (tag: string) => `EDGE-${tag}-${++n}`;

  const post = (body: string) =>
    axios.post(`${t.app.url}/callbacks/upstream`, body, {
      headers: callbackHeaders(body),
      validateStatus: () => true,
      transformRequest: [(d: unknown) => d],
    });
  const inbox = (upstreamId: number) =>
    t.db.query<InboxRow>(
      'SELECT state, outcome, tries, order_id::text AS order_id FROM callback_inbox WHERE upstream_order_id = $1 ORDER BY id',
      [upstreamId],
    );
  /** The inbox rows of an upstream order once `count` of them are there and none is pending. */
  const processed = (upstreamId: number, count: number) =>
    waitFor(
      () => inbox(upstreamId),
      (rows) => rows.length >= count && rows.every((r) => r.state !== 'pending'),
      `the callbacks of upstream order ${upstreamId} to be processed`,
      20_000,
    );
  const events = async (shopNo: string) =>
    ((await t.app.http.get(`/internal/orders/${shopNo}/events`)).data as { events: EventView[] }).events;
  const anomalyEvents = async (shopNo: string) => (await events(shopNo)).filter((e) => e.kind === 'anomaly');
  const anomaliesCounted = async () => (await t.app.relay.app.get(Metrics).stateAnomalies.get()).values.reduce((s, v) => s + v.value, 0);
  const errorLines = (upstreamId: number) =>
    t.app.logLines().filter((l) => l.level === 'error' && l.upstream_order_id === upstreamId && typeof l.msg === 'string');
  const callbackBody = (upstreamId: number, downstreamOrderNo: string, status: string) => {
    const up = t.sandbox.order(upstreamId);
    return JSON.stringify({
      event: 'order.status_changed',
      order_id: upstreamId,
      ...(up ? { order_no: up.order_no } : {}),
      downstream_order_no: downstreamOrderNo,
      status,
      timestamp: Math.floor(Date.now() / 1000),
    });
  };
  /** Nothing the relay follows is left moving (so that a getOrder fault is taken by the read meant). */
  const quiet = () =>
    waitFor(
      () => t.db.query('SELECT 1 FROM orders WHERE next_poll_at IS NOT NULL'),
      (rows) => rows.length === 0,
      'no followed order',
    );

  it('callbacks deferred while the create call is in flight do not use up the tries of the confirming read', async () => {
    await quiet();
    const shopNo = no('INFLIGHT');
    // the create is done upstream but never answered: `submitting` for UPSTREAM_TIMEOUT_MS, while the
    // upstream calls back for every status (all of them within the first 150 ms); then the first
    // confirming read fails once
    t.sandbox.faults.set({
      rules: [
        { operation: 'createOrder', kind: 'hang_after', times: 1 },
        { operation: 'getOrder', kind: 'error_before', status: 503, times: 1 },
      ],
    });
    const readsBefore = t.sandbox.stats.requests.getOrder;
    const r = await t.app.http.post('/internal/orders', { shop_order_no: shopNo, sku_code: 'EDGE', quantity: 1 });
    expect(r.status).toBe(202);
    expect((r.data as { order: OrderView }).order.status).toBe('submit_unknown');
    const upstream = t.sandbox.orders().find((o) => o.downstream_order_no === shopNo)!;
    expect(upstream).toBeDefined();

    const rows = await processed(upstream.id, 4);
    // settled by the callbacks (spec profile: no re-send would), after the one failed read
    expect(rows.map((x) => x.state)).toEqual(rows.map(() => 'applied'));
    expect(Math.max(...rows.map((x) => x.tries))).toBe(1);
    expect(t.sandbox.faults.rules).toEqual([]); // the failing read did happen
    expect(t.sandbox.stats.requests.getOrder - readsBefore).toBeGreaterThanOrEqual(2);
    const done = await waitForOrder(t.app.http, shopNo, (o) => o.status === 'completed');
    expect(done).toMatchObject({ upstream_order_id: upstream.id, attempt: 1, anomaly: null });
    expect((await events(shopNo)).find((e) => e.from === 'submit_unknown')).toMatchObject({ source: 'callback' });
    expect(t.sandbox.orders().filter((o) => o.downstream_order_no === shopNo)).toHaveLength(1);
  });

  it('an upstream order for an attempt rejected here: kept as an anomaly; no local cancel, refund or new attempt', async () => {
    await quiet();
    const shopNo = no('REJ');
    const anomaliesBefore = await anomaliesCounted();
    // the upstream places the order, then answers with a refusal: rejected here
    t.sandbox.faults.set({
      rules: [{ operation: 'createOrder', kind: 'error_after', status: 409, errorCode: 'insufficient_stock', times: 1 }],
    });
    const r = await t.app.http.post('/internal/orders', { shop_order_no: shopNo, sku_code: 'EDGE', quantity: 1 });
    expect(r.status).toBe(409);
    expect((r.data as { error_code: string; order: OrderView }).order).toMatchObject({ status: 'rejected', refund_state: 'refundable' });
    const upstream = t.sandbox.orders().find((o) => o.downstream_order_no === shopNo)!;
    expect(upstream).toBeDefined();

    // its callbacks (paid … completed) are confirmed by the upstream's read: the order exists there
    const rows = await processed(upstream.id, 4);
    for (const row of rows) {
      expect(row.state).toBe('unknown_order');
      expect(row.outcome).toMatch(
        new RegExp(
          `^anomaly upstream_order_exists: upstream order ${upstream.id} \\(\\w+\\) exists for attempt ${shopNo} \\(rejected here\\)`,
        ),
      );
      expect(row.order_id).not.toBeNull();
    }
    const order = (await getOrder(t.app.http, shopNo))!;
    expect(order).toMatchObject({
      status: 'rejected',
      anomaly: 'upstream_order_exists',
      upstream_order_id: null,
      refund_state: 'not_refundable',
      refundable_amount: null,
    });
    // recorded once: one event, one count, one error-level line naming the order and the upstream order
    const anomalies = await anomalyEvents(shopNo);
    expect(anomalies).toHaveLength(1);
    expect(anomalies[0]).toMatchObject({
      source: 'callback',
      from: 'rejected',
      to: null,
      detail: expect.objectContaining({
        reason: 'upstream_order_exists',
        upstream_order_id: upstream.id,
        downstream_order_no: shopNo,
        attempt_status: 'rejected',
      }),
    });
    expect((await anomaliesCounted()) - anomaliesBefore).toBe(1);
    const errors = errorLines(upstream.id);
    expect(errors).toHaveLength(1);
    expect(errors[0]).toMatchObject({ shop_order_no: shopNo, upstream_order_id: upstream.id, anomaly: 'upstream_order_exists' });
    expect(errors[0].msg).toContain(shopNo);
    expect(errors[0].msg).toContain(String(upstream.id));

    // the upstream may have charged for it: no new attempt, no local cancel, no refund
    const creates = t.sandbox.stats.createsReceived;
    const again = await t.app.http.post('/internal/orders', { shop_order_no: shopNo, sku_code: 'EDGE', quantity: 1 });
    expect(again.status).toBe(200);
    expect((again.data as { order: OrderView }).order).toMatchObject({ status: 'rejected', attempt: 1 });
    expect(t.sandbox.stats.createsReceived).toBe(creates);
    const refund = await t.app.http.post(`/internal/orders/${shopNo}/refund`);
    expect(refund.status).toBe(409);
    expect(refund.data).toMatchObject({ ok: false, error_code: 'cancel_not_allowed' });
    const cancel = await t.app.http.post(`/internal/orders/${shopNo}/cancel`);
    expect(cancel.status).toBe(409);
    expect(cancel.data).toMatchObject({ ok: false, error_code: 'cancel_not_allowed' });
    expect(await getOrder(t.app.http, shopNo)).toMatchObject({
      status: 'rejected',
      refund_state: 'not_refundable',
      anomaly: 'upstream_order_exists',
    });
    expect(
      await t.db.query('SELECT 1 FROM order_refunds r JOIN orders o ON o.id = r.order_id WHERE o.shop_order_no = $1', [shopNo]),
    ).toHaveLength(0);

    // the operator settles it with that upstream order (one the upstream does not have is refused): the order follows it
    const wrong = await t.app.http.post(`/internal/orders/${shopNo}/resolve`, { upstream_order_id: upstream.id + 1000 });
    expect(wrong.status).toBe(409);
    expect(wrong.data).toMatchObject({ ok: false, error_code: 'resolve_mismatch' });
    const resolved = await t.app.http.post(`/internal/orders/${shopNo}/resolve`, { upstream_order_id: upstream.id });
    expect(resolved.status).toBe(200);
    const upstreamNow = t.sandbox.order(upstream.id)!;
    expect((resolved.data as { order: OrderView }).order).toMatchObject({
      status: upstreamNow.status,
      anomaly: null,
      upstream_order_id: upstream.id,
      downstream_order_no: shopNo,
      amount: '3.00',
      refund_state: 'not_refundable',
    });
    expect((resolved.data as { order: OrderView }).order.items.length).toBeGreaterThan(0);
    expect((await events(shopNo)).filter((e) => e.source === 'operator').map((e) => [e.kind, e.from, e.to])).toEqual([
      ['status', 'rejected', upstreamNow.status],
    ]);
    expect(t.sandbox.stats.createsReceived).toBe(creates);
  });

  it('a second upstream order for the same number: kept as an anomaly beside the order followed', async () => {
    await quiet();
    const shopNo = no('TWICE');
    const placed = await t.app.http.post('/internal/orders', { shop_order_no: shopNo, sku_code: 'EDGE', quantity: 1 });
    expect(placed.status).toBe(201);
    const first = await waitForOrder(t.app.http, shopNo, (o) => o.status === 'completed');
    const anomaliesBefore = await anomaliesCounted();
    // the upstream (which does not deduplicate numbers under `spec`) creates a second order under it
    const upstreamFirst = t.sandbox.order(first.upstream_order_id!)!;
    const second = await t.app.relay.app.get(UpstreamClient).createOrder({
      sku_id: upstreamFirst.sku_id,
      quantity: 1,
      downstream_order_no: shopNo,
      callback_url: t.app.config.callbacks.publicUrl!,
    });
    expect(second.order_id).not.toBe(first.upstream_order_id);

    const rows = await processed(second.order_id, 4);
    for (const row of rows) {
      expect(row.state).toBe('unknown_order');
      expect(row.outcome).toMatch(
        new RegExp(`^anomaly duplicate_upstream_order: upstream order ${second.order_id} .* follows ${first.upstream_order_id}$`),
      );
    }
    const after = (await getOrder(t.app.http, shopNo))!;
    expect(after).toMatchObject({
      status: 'completed',
      upstream_order_id: first.upstream_order_id,
      anomaly: 'duplicate_upstream_order',
      items: first.items,
    });
    const anomalies = await anomalyEvents(shopNo);
    expect(anomalies).toHaveLength(1);
    expect(anomalies[0].detail).toMatchObject({
      reason: 'duplicate_upstream_order',
      upstream_order_id: second.order_id,
      followed_upstream_order_id: first.upstream_order_id,
    });
    expect((await anomaliesCounted()) - anomaliesBefore).toBe(1);
    const errors = errorLines(second.order_id);
    expect(errors).toHaveLength(1);
    expect(errors[0]).toMatchObject({ shop_order_no: shopNo, anomaly: 'duplicate_upstream_order' });
    // the order's own callbacks are still applied as before
    expect((await inbox(first.upstream_order_id!)).every((x) => x.state === 'applied')).toBe(true);
  });

  describe("an operator's not_placed settling the order while its callback is confirmed", () => {
    /** A submit_unknown order (the create done upstream, its answer lost); the only callback is ours. */
    const unknownOrder = async (tag: string) => {
      await quiet();
      const shopNo = no(tag);
      t.sandbox.faults.set({ callbacks: 'drop', rules: [{ operation: 'createOrder', kind: 'error_after', status: 502, times: 1 }] });
      const r = await t.app.http.post('/internal/orders', { shop_order_no: shopNo, sku_code: 'EDGE', quantity: 1 });
      expect(r.status).toBe(202);
      const upstream = t.sandbox.orders().find((o) => o.downstream_order_no === shopNo)!;
      await t.sandbox.waitForOrderStatus(upstream.id, 'completed');
      return { shopNo, upstreamId: upstream.id };
    };
    const notPlaced = (shopNo: string) =>
      t.app.http.post(`/internal/orders/${shopNo}/resolve`, { not_placed: true, reason: 'not found upstream by hand' });
    const expectKeptAsAnomaly = async (shopNo: string, upstreamId: number, reads: number) => {
      const [row] = await processed(upstreamId, 1);
      expect(row.state).toBe('unknown_order');
      expect(row.outcome).toMatch(/^anomaly upstream_order_exists: /);
      expect(t.sandbox.stats.requests.getOrder - reads).toBe(1); // the read already made is used
      expect(await getOrder(t.app.http, shopNo)).toMatchObject({
        status: 'rejected',
        upstream_order_id: null,
        anomaly: 'upstream_order_exists',
        refund_state: 'not_refundable',
      });
      expect(await anomalyEvents(shopNo)).toHaveLength(1);
      expect(errorLines(upstreamId)).toHaveLength(1);
    };

    it('between the confirming read and the record: nothing recorded, so not `applied`; kept as an anomaly', async () => {
      const { shopNo, upstreamId } = await unknownOrder('RACE');
      // the record of the resolve is held until the operator's not_placed is in (then it runs as it would)
      const submitter = t.app.relay.app.get(OrderSubmitter);
      const record = submitter.recordOutcome.bind(submitter);
      let operator: Awaited<ReturnType<typeof notPlaced>> | undefined;
      const spy = jest
        .spyOn(submitter, 'recordOutcome')
        .mockImplementationOnce(async (...args: Parameters<OrderSubmitter['recordOutcome']>) => {
          operator = await notPlaced(shopNo);
          return record(...args);
        });
      try {
        const reads = t.sandbox.stats.requests.getOrder;
        expect((await post(callbackBody(upstreamId, shopNo, 'completed'))).status).toBe(200);
        await waitFor(
          () => spy.mock.calls.length,
          (c) => c > 0,
          'the record of the resolve',
        );
        await expectKeptAsAnomaly(shopNo, upstreamId, reads);
        expect(operator?.status).toBe(200);
        const [attempt] = await t.db.query<{ status: string; error_code: string }>(
          'SELECT a.status, a.error_code FROM order_attempts a JOIN orders o ON o.id = a.order_id WHERE o.shop_order_no = $1',
          [shopNo],
        );
        expect(attempt).toEqual({ status: 'rejected', error_code: 'not_placed' });
      } finally {
        spy.mockRestore();
      }
    });

    it('during the confirming read: kept as an anomaly', async () => {
      const { shopNo, upstreamId } = await unknownOrder('SLOWREAD');
      t.sandbox.faults.set({ rules: [{ operation: 'getOrder', kind: 'delay', delayMs: 1000, times: 1 }] });
      const reads = t.sandbox.stats.requests.getOrder;
      expect((await post(callbackBody(upstreamId, shopNo, 'completed'))).status).toBe(200);
      await waitFor(
        () => t.sandbox.stats.requests.getOrder,
        (x) => x > reads,
        'the confirming read',
      );
      const resolved = await notPlaced(shopNo);
      expect(resolved.status).toBe(200);
      expect((resolved.data as { order: OrderView }).order.status).toBe('rejected');
      await expectKeptAsAnomaly(shopNo, upstreamId, reads);
    });
  });

  it("never on the callback's own claim: another attempt's order, an order the upstream does not have, one canceled there", async () => {
    await quiet();
    // a rejected attempt whose upstream order was canceled at once (payment_failed): nothing kept there
    const shopNo = no('PAYFAIL');
    t.sandbox.faults.set({ rules: [{ operation: 'createOrder', kind: 'payment_failed', times: 1 }] });
    const r = await t.app.http.post('/internal/orders', { shop_order_no: shopNo, sku_code: 'EDGE', quantity: 1 });
    expect(r.status).toBe(402);
    const canceled = t.sandbox.orders().find((o) => o.downstream_order_no === shopNo)!;
    expect(canceled.status).toBe('canceled');
    // another order's upstream order: the upstream's read does not show its downstream_order_no (as
    // the real upstream's GET /orders/{id}), and the order that follows it refuses the claim (the
    // refusal by the number a read shows: test/sandbox-fidelity.e2e-spec.ts)
    const otherNo = no('OTHER');
    expect((await t.app.http.post('/internal/orders', { shop_order_no: otherNo, sku_code: 'EDGE', quantity: 1 })).status).toBe(201);
    const other = await waitForOrder(t.app.http, otherNo, (o) => o.status === 'completed');
    const anomaliesBefore = await anomaliesCounted();

    const cases: Array<[number, string, RegExp]> = [
      [canceled.id, 'paid', /is canceled there: nothing kept/],
      [other.upstream_order_id!, 'completed', new RegExp(`upstream order ${other.upstream_order_id} already belongs to order ${otherNo}`)],
      [987_001, 'completed', /the upstream has no order 987001/],
    ];
    for (const [upstreamId, claimed, outcome] of cases) {
      expect((await post(callbackBody(upstreamId, shopNo, claimed))).status).toBe(200);
      const rows = await processed(upstreamId, 1);
      const mine = rows[rows.length - 1];
      expect(mine.state).toBe('ignored');
      expect(mine.outcome).toMatch(outcome);
    }
    expect(await getOrder(t.app.http, shopNo)).toMatchObject({ status: 'rejected', anomaly: null, refund_state: 'refundable' });
    expect(await getOrder(t.app.http, otherNo)).toMatchObject({ status: 'completed', anomaly: null });
    expect(await anomalyEvents(shopNo)).toHaveLength(0);
    expect(await anomaliesCounted()).toBe(anomaliesBefore);
    // still an ordinary rejected order: refundable
    const refund = await t.app.http.post(`/internal/orders/${shopNo}/refund`);
    expect(refund.status).toBe(200);
    expect((refund.data as { order: OrderView }).order).toMatchObject({ status: 'rejected', refund_state: 'refunded' });
  });

  it('a verified callback it cannot use: stored as ignored, 200 {ok:true}, a warning names what is wrong, never its body', async () => {
    const shopNo = no('UNUSABLE');
    const secret = `ITEM-SECRET-${Date.now()}`;
    const body = JSON.stringify({
      event: 'order.fulfilled',
      order_no: 'UP-UNUSABLE',
      downstream_order_no: shopNo,
      status: 'delivered',
      fulfillment: { type: 'auto', status: 'delivered', payload: `${secret}\r\n${secret}-2`, delivered_at: new Date().toISOString() },
      timestamp: Math.floor(Date.now() / 1000),
    });
    const r = await post(body);
    expect([r.status, r.data]).toEqual([200, { ok: true }]);
    const [row] = await t.db.query<{ state: string; outcome: string; downstream_order_no: string; order_id: string | null }>(
      'SELECT state, outcome, downstream_order_no, order_id::text AS order_id FROM callback_inbox WHERE downstream_order_no = $1',
      [shopNo],
    );
    expect(row).toEqual({
      state: 'ignored',
      outcome: expect.stringMatching(/^unusable: no order_id/),
      downstream_order_no: shopNo,
      order_id: null,
    });
    const warnings = await waitFor(
      () => t.app.logLines().filter((l) => l.level === 'warn' && l.downstream_order_no === shopNo),
      (ls) => ls.length > 0,
      'the warning',
      5_000,
    );
    expect(warnings).toHaveLength(1);
    expect(warnings[0]).toMatchObject({
      reason: expect.stringMatching(/^no order_id/),
      msg: expect.stringMatching(/cannot be used .*ignored/),
    });
    expect(JSON.stringify(t.app.logLines())).not.toContain(secret);
    // nothing of it reaches an order: no order has this number
    expect(await getOrder(t.app.http, shopNo)).toBeNull();
  });
});
