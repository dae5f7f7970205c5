import {
  FOLLOWED,
  ORDER_STATUSES,
  RANK,
  TRANSITIONS,
  UPSTREAM_STATUSES,
  canTransition,
  isStuck,
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
