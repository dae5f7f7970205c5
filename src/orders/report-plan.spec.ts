import { CANCELED_AFTER_DELIVERY, DELIVERED_AFTER_CANCEL, decideReport, itemsFollowUp, type OrderStatus } from './order-state.js';
import type { OrderPatch } from './order.records.js';
import { planReport, reportTakesItems, type ReportedOrder, type ReportPlanInput, type UpstreamReport } from './report-plan.js';

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

  it('a delivering status without its items is held back: the order keeps its status, stays followed, read at once after an answer, at the poll pace after a read', () => {
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
  });

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
