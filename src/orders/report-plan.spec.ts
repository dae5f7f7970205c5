import { ANOMALIES, CANCELED_AFTER_DELIVERY, DELIVERED_AFTER_CANCEL, ORDER_STATUSES, type OrderStatus } from './order-state.js';
import type { OrderPatch } from './order.records.js';
import {
  decideReport,
  itemsFollowUp,
  mergeItems,
  planReport,
  reportTakesItems,
  withoutItems,
  type DeliveredItems,
  type ReportedOrder,
  type ReportPlanInput,
  type UpstreamReport,
} from './report-plan.js';

const NOW = new Date('2026-12-01T10:00:00Z');
const DELIVERED_AT = new Date('2026-12-01T09:59:00Z');

const order = (o: Partial<ReportedOrder> = {}): ReportedOrder => ({
  status: 'pending_payment',
  upstreamOrderId: 7,
  upstreamOrderNo: 'UP-7',
  amount: '20.00',
  currency: 'CNY',
  refundedAmount: null,
  refundRecords: null,
  deliveredAt: null,
  errorCode: null,
  errorMessage: null,
  anomaly: null,
  ...o,
});

/** The sealed items as OrderUpdater.delivery gives them. */
const sealed: OrderPatch = { delivery_sealed: Buffer.from('sealed'), delivered_at: DELIVERED_AT, fulfillment_type: 'auto' };

const plan = (o: ReportedOrder, report: UpstreamReport, input: Partial<ReportPlanInput> = {}) =>
  planReport(o, report, decideReport(o.status, report.status), { kind: 'read', delivery: null, now: NOW, ...input });

describe('decideReport: the verdict on a reported status', () => {
  it('applies a report that ranks higher, skipping steps', () => {
    expect(decideReport('submitting', 'pending_payment')).toEqual({ kind: 'apply', to: 'pending_payment' });
    expect(decideReport('submit_unknown', 'delivered')).toEqual({ kind: 'apply', to: 'delivered' });
    expect(decideReport('pending_payment', 'completed')).toEqual({ kind: 'apply', to: 'completed' });
    expect(decideReport('paid', 'canceled')).toEqual({ kind: 'apply', to: 'canceled' });
    expect(decideReport('canceled', 'refunded')).toEqual({ kind: 'apply', to: 'refunded' });
    expect(decideReport('delivered', 'partially_refunded')).toEqual({ kind: 'apply', to: 'partially_refunded' });
    expect(decideReport('partially_refunded', 'refunded')).toEqual({ kind: 'apply', to: 'refunded' });
  });

  it('never moves an order back: a lower rank is a regression', () => {
    expect(decideReport('delivered', 'paid')).toEqual({ kind: 'regression' });
    expect(decideReport('completed', 'delivered')).toEqual({ kind: 'regression' });
    expect(decideReport('canceled', 'pending_payment')).toEqual({ kind: 'regression' });
    expect(decideReport('refunded', 'partially_refunded')).toEqual({ kind: 'regression' });
    expect(decideReport('refunded', 'canceled')).toEqual({ kind: 'regression' });
  });

  it('keeps the same status as "same" (data may still change)', () => {
    expect(decideReport('paid', 'paid')).toEqual({ kind: 'same' });
    expect(decideReport('partially_refunded', 'partially_refunded')).toEqual({ kind: 'same' });
  });

  it('keeps contradictions as anomalies: canceled after items were delivered, items delivered after a cancel', () => {
    expect(ANOMALIES.length).toBeGreaterThan(0);
    for (const s of ['partially_delivered', 'delivered', 'completed'] as const) {
      expect(decideReport(s, 'canceled')).toEqual({ kind: 'anomaly', reason: 'canceled_after_delivery' });
    }
    // and the reverse: items delivered for an order the upstream canceled
    for (const s of ['partially_delivered', 'delivered', 'completed'] as const) {
      expect(decideReport('canceled', s)).toEqual({ kind: 'anomaly', reason: 'delivered_after_cancel' });
    }
    // a refund after a cancel is no contradiction (a regression, as before)
    expect(decideReport('canceled', 'paid')).toEqual({ kind: 'regression' });
    expect(decideReport('paid', 'shipped')).toEqual({ kind: 'anomaly', reason: 'unknown_status' });
    expect(decideReport('rejected', 'paid')).toEqual({ kind: 'anomaly', reason: 'report_for_rejected' });
  });
});

describe('a delivered status without its fulfillment is not a delivery', () => {
  const DELIVERING: OrderStatus[] = ['partially_delivered', 'delivered', 'completed'];

  it('an answer that is not a read (a create or cancel answer) names a delivered state without items: read the order now', () => {
    for (const s of DELIVERING) expect(itemsFollowUp(s, false, 'answer')).toBe('read_now');
  });

  it('a read that names such a state without items keeps the order followed at the poll pace (no read loop)', () => {
    for (const s of DELIVERING) expect(itemsFollowUp(s, false, 'read')).toBe('follow');
  });

  it('stored items end it: only a report that carries the fulfillment stores them', () => {
    for (const s of DELIVERING) {
      expect(itemsFollowUp(s, true, 'answer')).toBe('none');
      expect(itemsFollowUp(s, true, 'read')).toBe('none');
    }
  });

  it('statuses that hand over no items ask for none', () => {
    for (const s of ORDER_STATUSES.filter((x) => !DELIVERING.includes(x))) {
      expect(itemsFollowUp(s, false, 'answer')).toBe('none');
      expect(itemsFollowUp(s, false, 'read')).toBe('none');
    }
  });
});

describe('planReport: the status move', () => {
  it('applies a higher status: the status, its time, the progress marks, a status event', () => {
    const p = plan(order(), { status: 'paid', order_no: 'UP-7', amount: '20.00', currency: 'CNY' });
    expect(p.decision).toEqual({ kind: 'apply', to: 'paid' });
    expect([p.from, p.to]).toEqual(['pending_payment', 'paid']);
    expect(p.patch).toEqual({ status: 'paid', status_changed_at: NOW, progress_at: NOW, stuck_since: null, updated_at: NOW });
    expect(p.event).toEqual({ kind: 'status', from: 'pending_payment', to: 'paid' });
    expect(p.progressed).toBe(true);
    expect(p.regression).toBe(false);
  });

  it('clears an earlier error with an applied status, unless the caller sets one', () => {
    const erred = order({ status: 'submit_unknown', errorCode: null, errorMessage: 'outcome unknown: timeout' });
    expect(plan(erred, { status: 'pending_payment' }).patch).toMatchObject({ error_code: null, error_message: null });
    const kept = plan(erred, { status: 'pending_payment' }, { patch: { error_code: 'x', error_message: 'y' } });
    expect(kept.patch).toMatchObject({ error_code: 'x', error_message: 'y' });
  });

  it('ignores and counts a report that would move the order back: nothing to write, no event', () => {
    const p = plan(order({ status: 'delivered', deliveredAt: DELIVERED_AT }), { status: 'paid', amount: '99.00' });
    expect(p.regression).toBe(true);
    expect(p.to).toBe('delivered');
    expect(p.patch).toEqual({});
    expect(p.event).toBeNull();
    expect(p.progressed).toBe(false);
  });

  it('keeps a contradiction as the anomaly once: a column and an event the first time, nothing when already kept', () => {
    const first = plan(order({ status: 'delivered', deliveredAt: DELIVERED_AT }), { status: 'canceled' });
    expect(first.to).toBe('delivered');
    expect(first.patch).toEqual({ anomaly: CANCELED_AFTER_DELIVERY, updated_at: NOW });
    expect(first.event).toEqual({ kind: 'anomaly', reason: CANCELED_AFTER_DELIVERY, reported: 'canceled' });
    const again = plan(order({ status: 'delivered', deliveredAt: DELIVERED_AT, anomaly: CANCELED_AFTER_DELIVERY }), { status: 'canceled' });
    expect(again.patch).toEqual({});
    expect(again.event).toBeNull();
  });
});

describe('planReport: the data of the report', () => {
  it('takes the amount, the currency and the order number when they changed; an equal amount at another scale is no change', () => {
    const same = plan(order({ status: 'paid' }), { status: 'paid', amount: '20', currency: 'CNY', order_no: 'UP-7' });
    expect(same.patch).toEqual({});
    expect(same.event).toBeNull();
    const moved = plan(order({ status: 'paid' }), { status: 'paid', amount: '22.00', currency: 'USD', order_no: 'UP-7b' });
    // data the API shows changed: updated_at moves, but the order did not progress
    expect(moved.patch).toEqual({ upstream_order_no: 'UP-7b', amount: '22.00', currency: 'USD', updated_at: NOW });
    expect(moved.progressed).toBe(false);
  });

  it('a new refunded amount is progress; the refunds are kept as the last read lists them', () => {
    const o = order({ status: 'partially_refunded', refundedAmount: '5.00' });
    expect(plan(o, { status: 'partially_refunded', refunded_amount: '5' }).patch).toEqual({});
    const p = plan(o, {
      status: 'partially_refunded',
      refunded_amount: '8.00',
      refund_records: [{ order_id: 7, type: 'wallet', amount: 8, created_at: '2026-12-01T09:00:00Z' }],
    });
    expect(p.progressed).toBe(true);
    expect(p.patch).toMatchObject({ refunded_amount: '8.00', progress_at: NOW, stuck_since: null, updated_at: NOW });
    expect(JSON.parse(p.patch.refund_records!)).toEqual([
      { upstream_order_id: 7, type: 'wallet', amount: '8.00', currency: null, remark: null, created_at: '2026-12-01T09:00:00.000Z' },
    ]);
  });

  it('takes no data from a report whose status is not taken', () => {
    expect(
      plan(order({ status: 'completed', deliveredAt: DELIVERED_AT }), { status: 'paid', amount: '1.00', refunded_amount: '1.00' }).patch,
    ).toEqual({});
    expect(plan(order({ status: 'rejected' }), { status: 'paid', amount: '1.00' }).patch).toEqual({
      anomaly: 'report_for_rejected',
      updated_at: NOW,
    });
  });

  it('keeps the columns the caller sets with the report', () => {
    const p = plan(
      order({ status: 'submitting', upstreamOrderId: null }),
      { status: 'pending_payment' },
      { kind: 'answer', patch: { upstream_order_id: 8, callbacks_expected: true } },
    );
    expect(p.patch).toMatchObject({ upstream_order_id: 8, callbacks_expected: true, status: 'pending_payment' });
  });
});

describe('planReport: the items', () => {
  it('takes the items with a taken status and with a delivery reported for a canceled order, never otherwise', () => {
    expect(reportTakesItems({ kind: 'apply', to: 'delivered' })).toBe(true);
    expect(reportTakesItems({ kind: 'same' })).toBe(true);
    expect(reportTakesItems({ kind: 'anomaly', reason: DELIVERED_AFTER_CANCEL })).toBe(true);
    expect(reportTakesItems({ kind: 'anomaly', reason: CANCELED_AFTER_DELIVERY })).toBe(false);
    expect(reportTakesItems({ kind: 'anomaly', reason: 'report_for_rejected' })).toBe(false);
    expect(reportTakesItems({ kind: 'regression' })).toBe(false);
    // a plan never writes items its decision does not take
    const rejected = plan(order({ status: 'rejected' }), { status: 'delivered' }, { delivery: sealed });
    expect(rejected.patch.delivery_sealed).toBeUndefined();
  });

  it('a delivery with its items: stored, progress, the first delivery observed, nothing left to follow', () => {
    const p = plan(order({ status: 'fulfilling' }), { status: 'delivered' }, { delivery: sealed });
    expect(p.patch).toMatchObject({ ...sealed, status: 'delivered' });
    expect(p.items).toBe('none');
    expect(p.follow).toBe(false);
    expect(p.firstDelivery).toBe(true);
    // more items for an order that had some: stored, not a first delivery
    const more = plan(order({ status: 'partially_delivered', deliveredAt: DELIVERED_AT }), { status: 'delivered' }, { delivery: sealed });
    expect(more.firstDelivery).toBe(false);
  });

  it('items delivered for a canceled order: stored under the anomaly, the order stays canceled', () => {
    const p = plan(order({ status: 'canceled' }), { status: 'delivered' }, { delivery: sealed });
    expect(p.to).toBe('canceled');
    expect(p.patch).toMatchObject({ ...sealed, anomaly: DELIVERED_AFTER_CANCEL, progress_at: NOW });
    expect(p.event).toEqual({ kind: 'anomaly', reason: DELIVERED_AFTER_CANCEL, reported: 'delivered' });
    expect(p.firstDelivery).toBe(false);
  });

  it(
    'a delivering status without its items is held back: the order keeps its status, stays followed, ' +
      'read at once after an answer, at the poll pace after a read',
    () => {
      for (const status of ['partially_delivered', 'delivered', 'completed'] as const) {
        for (const kind of ['answer', 'read'] as const) {
          const p = plan(order({ status: 'paid' }), { status, order_no: 'UP-8' }, { kind });
          expect([p.from, p.to, p.held]).toEqual(['paid', 'paid', status]);
          expect(p.patch.status).toBeUndefined();
          expect(p.event).toBeNull();
          // the report's other data is taken
          expect(p.patch.upstream_order_no).toBe('UP-8');
          expect(p.items).toBe(itemsFollowUp(status, false, kind));
          expect(p.follow).toBe(true);
          expect(p.firstDelivery).toBe(false);
        }
      }
      expect(plan(order({ status: 'paid' }), { status: 'delivered' }, { kind: 'answer' }).items).toBe('read_now');
      // an unknown attempt settled by such an answer stays as it was, with its upstream order, read at once
      const unknown = plan(
        order({ status: 'submit_unknown', upstreamOrderId: null }),
        { status: 'completed' },
        { kind: 'answer', patch: { upstream_order_id: 9 } },
      );
      expect([unknown.to, unknown.held, unknown.items, unknown.follow]).toEqual(['submit_unknown', 'completed', 'read_now', true]);
      expect(unknown.patch).toMatchObject({ upstream_order_id: 9 });
      expect(unknown.patch.status).toBeUndefined();
    },
  );

  it('the status and its items move together in one plan', () => {
    const p = plan(order({ status: 'submit_unknown' }), { status: 'completed' }, { delivery: sealed });
    expect(p.held).toBeNull();
    expect(p.patch).toMatchObject({ ...sealed, status: 'completed' });
    expect(p.event).toEqual({ kind: 'status', from: 'submit_unknown', to: 'completed' });
    expect(p.firstDelivery).toBe(true);
  });

  it('a delivered order takes a later delivering status without more items', () => {
    const p = plan(order({ status: 'delivered', deliveredAt: DELIVERED_AT }), { status: 'completed' });
    expect([p.to, p.held, p.items, p.follow]).toEqual(['completed', null, 'none', false]);
  });

  it('a partially delivered order does not take delivered or completed without the rest of its items', () => {
    for (const status of ['delivered', 'completed'] as const) {
      for (const kind of ['answer', 'read'] as const) {
        const p = plan(order({ status: 'partially_delivered', deliveredAt: DELIVERED_AT }), { status }, { kind });
        expect([p.to, p.held, p.items, p.follow]).toEqual(['partially_delivered', status, kind === 'answer' ? 'read_now' : 'follow', true]);
        expect(p.patch.status).toBeUndefined();
        expect(p.event).toBeNull();
      }
      const full = plan(order({ status: 'partially_delivered', deliveredAt: DELIVERED_AT }), { status }, { delivery: sealed });
      expect([full.to, full.held]).toEqual([status, null]);
    }
  });
});

describe('planReport: a status we do not know', () => {
  it('keeps following an order known upstream (by its id, or the id set with the report), not one unknown there', () => {
    const statuses: OrderStatus[] = ['submitting', 'pending_payment'];
    for (const status of statuses) {
      expect(plan(order({ status }), { status: 'on_hold' }).follow).toBe(true);
      expect(plan(order({ status, upstreamOrderId: null }), { status: 'on_hold' }).follow).toBe(false);
      expect(plan(order({ status, upstreamOrderId: null }), { status: 'on_hold' }, { patch: { upstream_order_id: 9 } }).follow).toBe(true);
    }
    expect(plan(order(), { status: 'on_hold' }).event).toEqual({ kind: 'anomaly', reason: 'unknown_status', reported: 'on_hold' });
  });
});

const d = (items: string[], delivery_data: Record<string, unknown> | null = null): DeliveredItems => ({ items, delivery_data });

describe('withoutItems', () => {
  it('is a multiset difference: an item missing twice is listed twice', () => {
    expect(withoutItems(['a', 'b', 'a', 'c'], ['a', 'c'])).toEqual(['b', 'a']);
    expect(withoutItems(['a'], ['a', 'a'])).toEqual([]);
  });
});

describe('mergeItems', () => {
  it('stores the report as it is when nothing is stored (or the stored items cannot be opened)', () => {
    expect(mergeItems(null, d(['a']))).toEqual({ kind: 'store', data: d(['a']), kept: 0, storedCount: 0 });
    expect(mergeItems(null, d([]))).toEqual({ kind: 'store', data: d([]), kept: 0, storedCount: 0 });
  });

  it('takes a report that has every stored item as it is', () => {
    expect(mergeItems(d(['a']), d(['a', 'b'], { k: 1 }))).toEqual({
      kind: 'store',
      data: d(['a', 'b'], { k: 1 }),
      kept: 0,
      storedCount: 1,
    });
  });

  it('keeps the stored items a report lacks and adds its new ones after them', () => {
    expect(mergeItems(d(['a', 'b']), d(['b', 'c']))).toEqual({ kind: 'store', data: d(['a', 'b', 'c']), kept: 1, storedCount: 2 });
    // duplicates count: two stored `a`, one reported, one kept
    expect(mergeItems(d(['a', 'a']), d(['a', 'z']))).toEqual({ kind: 'store', data: d(['a', 'a', 'z']), kept: 1, storedCount: 2 });
  });

  it("keeps the stored delivery data when a report lacking items brings none, and takes the report's when it does", () => {
    expect(mergeItems(d(['a'], { code: 'x' }), d(['b']))).toMatchObject({ kind: 'store', data: d(['a', 'b'], { code: 'x' }) });
    expect(mergeItems(d(['a'], { code: 'x' }), d(['b'], { code: 'y' }))).toMatchObject({
      kind: 'store',
      data: d(['a', 'b'], { code: 'y' }),
    });
  });

  it('writes nothing when the merge equals what is stored, still counting what a stale report lacked', () => {
    expect(mergeItems(d(['a', 'b']), d(['a', 'b']))).toEqual({ kind: 'unchanged', kept: 0, storedCount: 2 });
    expect(mergeItems(d(['a', 'b'], { code: 'x' }), d([]))).toEqual({ kind: 'unchanged', kept: 2, storedCount: 2 });
  });
});
