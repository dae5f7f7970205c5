import {
  ANOMALIES,
  FOLLOWED,
  ORDER_STATUSES,
  RANK,
  TRANSITIONS,
  UPSTREAM_STATUSES,
  canResubmit,
  canTransition,
  decideReport,
  isStuck,
  itemsFollowUp,
  refundEligibility,
  type OrderStatus,
} from './order-state.js';

describe('order state machine', () => {
  it('gives every status a rank, local in-flight states below every upstream state', () => {
    for (const s of ORDER_STATUSES) expect(typeof RANK[s]).toBe('number');
    for (const u of UPSTREAM_STATUSES) {
      expect(RANK[u]).toBeGreaterThan(RANK.submitting);
      expect(RANK[u]).toBeGreaterThan(RANK.submit_unknown);
    }
    const chain: OrderStatus[] = ['pending_payment', 'paid', 'fulfilling', 'partially_delivered', 'delivered', 'completed'];
    for (let i = 1; i < chain.length; i++) expect(RANK[chain[i]]).toBeGreaterThan(RANK[chain[i - 1]]);
    expect(RANK.refunded).toBeGreaterThan(RANK.partially_refunded);
  });

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

  it('allows local moves only where the table lists them', () => {
    expect(canTransition('submit', null, 'submitting')).toBe(true);
    expect(canTransition('submit_outcome', 'submitting', 'rejected')).toBe(true);
    expect(canTransition('submit_outcome', 'submitting', 'submit_unknown')).toBe(true);
    expect(canTransition('submit_outcome', 'submit_unknown', 'paid')).toBe(true);
    expect(canTransition('submit_outcome', 'submit_unknown', 'submitting')).toBe(false);
    expect(canTransition('resubmit', 'rejected', 'submitting')).toBe(true);
    expect(canTransition('resubmit', 'canceled', 'submitting')).toBe(false);
    expect(canTransition('resubmit', 'submit_unknown', 'submitting')).toBe(false);
    expect(canTransition('local_cancel', 'rejected', 'canceled')).toBe(true);
    expect(canTransition('local_cancel', 'paid', 'canceled')).toBe(false);
    expect(canTransition('not_placed', 'submit_unknown', 'rejected')).toBe(true);
    expect(canTransition('not_placed', 'paid', 'rejected')).toBe(false);
    expect(canTransition('sweep', 'submitting', 'submit_unknown')).toBe(true);
    expect(canTransition('sweep', 'paid', 'submit_unknown')).toBe(false);
    // the operator's adoption of the upstream order of a rejected order: from rejected only, into an upstream state
    expect(canTransition('adopt', 'rejected', 'completed')).toBe(true);
    expect(canTransition('adopt', 'rejected', 'canceled')).toBe(true);
    expect(canTransition('adopt', 'rejected', 'submitting')).toBe(false);
    expect(canTransition('adopt', 'paid', 'delivered')).toBe(false);
    expect(Object.keys(TRANSITIONS).sort()).toEqual([
      'adopt',
      'dequeue',
      'local_cancel',
      'not_placed',
      'requeue',
      'resubmit',
      'submit',
      'submit_outcome',
      'sweep',
    ]);
  });

  it('queues an order for the request budget before anything is sent, and takes it from the queue', () => {
    expect(canTransition('submit', null, 'queued')).toBe(true);
    expect(canTransition('resubmit', 'rejected', 'queued')).toBe(true);
    // a create held back by the budget (no token, or a 429: nothing processed)
    expect(canTransition('requeue', 'submitting', 'queued')).toBe(true);
    expect(canTransition('requeue', 'submit_unknown', 'queued')).toBe(false);
    expect(canTransition('dequeue', 'queued', 'submitting')).toBe(true);
    expect(canTransition('dequeue', 'queued', 'rejected')).toBe(true);
    expect(canTransition('dequeue', 'queued', 'paid')).toBe(false);
    // nothing was sent: canceled here, and no report moves it (it ranks below every upstream state)
    expect(canTransition('local_cancel', 'queued', 'canceled')).toBe(true);
    expect(RANK.queued).toBeLessThan(RANK.submitting);
    expect(isStuck({ status: 'queued', progressAt: new Date(0), statusChangedAt: new Date(0) }, new Date(100_000_000), 86_400)).toBe(true);
  });

  it('follows only unfinished upstream states', () => {
    expect([...FOLLOWED].sort()).toEqual(['fulfilling', 'paid', 'partially_delivered', 'pending_payment']);
  });

  it('flags stuck orders: no progress for the alert time, submit_unknown after 10 minutes', () => {
    const now = new Date('2026-01-02T00:00:00Z');
    const ago = (s: number) => new Date(now.getTime() - s * 1000);
    const day = 86_400;
    expect(isStuck({ status: 'paid', progressAt: ago(day + 1), statusChangedAt: ago(day + 1) }, now, day)).toBe(true);
    expect(isStuck({ status: 'paid', progressAt: ago(day - 1), statusChangedAt: ago(day + 1) }, now, day)).toBe(false);
    expect(isStuck({ status: 'delivered', progressAt: ago(10 * day), statusChangedAt: ago(10 * day) }, now, day)).toBe(false);
    expect(isStuck({ status: 'submit_unknown', progressAt: ago(601), statusChangedAt: ago(601) }, now, day)).toBe(true);
    expect(isStuck({ status: 'submit_unknown', progressAt: ago(599), statusChangedAt: ago(599) }, now, day)).toBe(false);
    expect(isStuck({ status: 'submit_unknown', progressAt: ago(5), statusChangedAt: ago(5) }, now, 2)).toBe(true);
  });
});

describe('refund eligibility', () => {
  const facts = (status: OrderStatus, extra: Partial<Parameters<typeof refundEligibility>[0]> = {}) => ({
    status,
    amount: '20.00',
    expectedAmount: '20.00',
    refundedAmount: null,
    refundRecorded: false,
    ...extra,
  });

  it('makes rejected, canceled and refunded orders refundable for the whole amount', () => {
    expect(refundEligibility(facts('canceled'))).toEqual({ state: 'refundable', amount: '20.00' });
    expect(refundEligibility(facts('refunded', { refundedAmount: '20.00' }))).toEqual({ state: 'refundable', amount: '20.00' });
    expect(refundEligibility(facts('rejected', { amount: null, expectedAmount: '30.00' }))).toEqual({
      state: 'refundable',
      amount: '30.00',
    });
  });

  it('makes a partially refunded order refundable for the refunded amount', () => {
    expect(refundEligibility(facts('partially_refunded', { refundedAmount: '5.00' }))).toEqual({ state: 'refundable', amount: '5.00' });
  });

  it('refuses every other status: no refund unless the upstream canceled', () => {
    for (const s of [
      'submitting',
      'submit_unknown',
      'pending_payment',
      'paid',
      'fulfilling',
      'partially_delivered',
      'delivered',
      'completed',
    ] as const) {
      expect(refundEligibility(facts(s))).toEqual({ state: 'not_refundable', amount: null });
    }
  });

  it('is refunded once recorded', () => {
    expect(refundEligibility(facts('canceled', { refundRecorded: true }))).toEqual({ state: 'refunded', amount: '20.00' });
    expect(refundEligibility(facts('partially_refunded', { refundedAmount: '5.00', refundRecorded: true }))).toEqual({
      state: 'refunded',
      amount: '5.00',
    });
  });

  it('shows the amount a refund was recorded with, whatever the upstream reports after it', () => {
    // 5.00 recorded while partially refunded; the upstream then refunds the rest
    expect(refundEligibility(facts('refunded', { refundedAmount: '20.00', refundRecorded: true, recordedAmount: '5.00' }))).toEqual({
      state: 'refunded',
      amount: '5.00',
    });
  });

  it('never offers more than the order cost, nor a refund of nothing or less', () => {
    expect(refundEligibility(facts('partially_refunded', { refundedAmount: '25.00' }))).toEqual({ state: 'refundable', amount: '20.00' });
    expect(refundEligibility(facts('partially_refunded', { refundedAmount: '0.00' }))).toEqual({ state: 'not_refundable', amount: null });
    expect(refundEligibility(facts('partially_refunded', { refundedAmount: '-3.00' }))).toEqual({ state: 'not_refundable', amount: null });
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

describe('who may make a new attempt', () => {
  it('only a rejected order, not once refunded, not while the upstream showed an order for a closed attempt', () => {
    expect(canResubmit({ status: 'rejected', refundRecorded: false, anomaly: null })).toBe(true);
    expect(canResubmit({ status: 'rejected', refundRecorded: true, anomaly: null })).toBe(false);
    expect(canResubmit({ status: 'rejected', refundRecorded: false, anomaly: 'upstream_order_exists' })).toBe(false);
    for (const s of ORDER_STATUSES.filter((x) => x !== 'rejected'))
      expect(canResubmit({ status: s, refundRecorded: false, anomaly: null })).toBe(false);
  });
});
