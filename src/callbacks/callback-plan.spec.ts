import { planCallback, planCallbacks, readShows, type CallbackClaim, type CallbackOrderFacts } from './callback-plan.js';

const FULFILLMENT = {
  type: 'auto',
  status: 'delivered',
  payload: 'CODE-1\nCODE-2',
  delivery_data: null,
  delivered_at: '2026-12-01T10:00:00Z',
};

const claim = (c: Partial<CallbackClaim> = {}): CallbackClaim => ({
  upstreamOrderId: 7,
  upstreamOrderNo: 'UP-7',
  downstreamOrderNo: 'SHOP-1',
  status: 'paid',
  fulfillment: null,
  ...c,
});
const order = (o: Partial<CallbackOrderFacts> = {}): CallbackOrderFacts => ({
  status: 'pending_payment',
  upstreamOrderId: 7,
  attempt: 1,
  operationInProgress: false,
  named: { attemptNo: 1, status: 'accepted' },
  ...o,
});

describe('planCallback: whatever the trust', () => {
  it.each(['verified', 'confirm'] as const)('%s: an unknown order is stored, never applied', (trust) => {
    expect(planCallback(claim(), null, trust)).toEqual({ kind: 'store', reason: 'unknown_order' });
  });

  it.each(['verified', 'confirm'] as const)("%s: another attempt's callback is stored, never applied", (trust) => {
    // an earlier attempt, closed here
    expect(
      planCallback(
        claim({ upstreamOrderId: 8, status: 'delivered', fulfillment: FULFILLMENT }),
        order({ attempt: 2, named: { attemptNo: 1, status: 'rejected' } }),
        trust,
      ),
    ).toEqual({
      kind: 'store',
      reason: 'other_attempt',
    });
    // an upstream order besides the one the order follows
    expect(planCallback(claim({ upstreamOrderId: 8 }), order(), trust)).toEqual({ kind: 'store', reason: 'other_attempt' });
    // the followed upstream order, but another attempt's number
    expect(planCallback(claim({ status: 'canceled' }), order({ attempt: 2, named: { attemptNo: 1, status: 'accepted' } }), trust)).toEqual({
      kind: 'store',
      reason: 'other_attempt',
    });
  });

  it.each(['verified', 'confirm'] as const)('%s: an attempt in flight or a cancel in progress: the callback waits', (trust) => {
    expect(
      planCallback(claim(), order({ status: 'submitting', upstreamOrderId: null, named: { attemptNo: 1, status: 'submitting' } }), trust),
    ).toEqual({
      kind: 'wait',
      reason: 'attempt_in_flight',
    });
    expect(planCallback(claim(), order({ operationInProgress: true }), trust)).toEqual({ kind: 'wait', reason: 'operation_in_progress' });
  });

  it.each(['verified', 'confirm'] as const)('%s: a submit_unknown attempt is resolved by its number, whatever the claim', (trust) => {
    for (const c of [claim(), claim({ status: 'delivered', fulfillment: FULFILLMENT })]) {
      expect(
        planCallback(
          c,
          order({ status: 'submit_unknown', upstreamOrderId: null, named: { attemptNo: 1, status: 'submit_unknown' } }),
          trust,
        ),
      ).toEqual({ kind: 'resolve' });
    }
  });
});

describe('planCallback: verified', () => {
  it('a delivering state with its fulfillment is applied, items included, no read', () => {
    for (const status of ['partially_delivered', 'delivered', 'completed']) {
      expect(planCallback(claim({ status, fulfillment: FULFILLMENT }), order({ status: 'fulfilling' }), 'verified')).toEqual({
        kind: 'apply',
        reports: [{ status, order_no: 'UP-7', fulfillment: FULFILLMENT }],
      });
    }
  });

  it('pending_payment, paid, fulfilling and canceled are status moves, no read', () => {
    for (const status of ['pending_payment', 'paid', 'fulfilling', 'canceled']) {
      expect(planCallback(claim({ status }), order(), 'verified')).toEqual({ kind: 'apply', reports: [{ status, order_no: 'UP-7' }] });
    }
    // a callback without a number names the order by the upstream order it follows
    expect(planCallback(claim({ downstreamOrderNo: null }), order({ named: null }), 'verified')).toMatchObject({ kind: 'apply' });
  });

  it('a delivering state without its fulfillment, a refund state or an unknown status costs a read', () => {
    for (const status of ['partially_delivered', 'delivered', 'completed'])
      expect(planCallback(claim({ status }), order(), 'verified')).toEqual({ kind: 'read', deliver: true });
    for (const status of ['refunded', 'partially_refunded', 'on_hold'])
      expect(planCallback(claim({ status }), order(), 'verified')).toEqual({ kind: 'read', deliver: false });
  });
});

describe('planCallback: confirm', () => {
  it('never applies the claim: an early claim brings the next poll closer, any other is read', () => {
    for (const status of ['pending_payment', 'paid', 'fulfilling'])
      expect(planCallback(claim({ status }), order(), 'confirm')).toEqual({ kind: 'hint' });
    expect(planCallback(claim({ status: 'delivered', fulfillment: FULFILLMENT }), order(), 'confirm')).toEqual({
      kind: 'read',
      deliver: true,
    });
    for (const status of ['canceled', 'refunded'])
      expect(planCallback(claim({ status }), order(), 'confirm')).toEqual({ kind: 'read', deliver: false });
  });
});

describe('planCallbacks: the callbacks of one order claimed together', () => {
  it('applied together when every one can be', () => {
    const p = planCallbacks([claim({ status: 'paid' }), claim({ status: 'delivered', fulfillment: FULFILLMENT })], order(), 'verified');
    expect(p).toEqual({
      kind: 'apply',
      reports: [
        { status: 'paid', order_no: 'UP-7' },
        { status: 'delivered', order_no: 'UP-7', fulfillment: FULFILLMENT },
      ],
    });
  });

  it('one read answers them all when any needs one', () => {
    expect(planCallbacks([claim({ status: 'delivered' }), claim({ status: 'completed' })], order(), 'verified')).toEqual({
      kind: 'read',
      deliver: true,
    });
    expect(planCallbacks([claim({ status: 'paid' }), claim({ status: 'refunded' })], order(), 'verified')).toEqual({
      kind: 'read',
      deliver: false,
    });
    expect(
      planCallbacks(
        [claim({ status: 'paid' }), claim({ status: 'delivered', fulfillment: FULFILLMENT }), claim({ status: 'refunded' })],
        order(),
        'verified',
      ),
    ).toEqual({
      kind: 'read',
      deliver: true,
    });
  });

  it('confirm: a hint only when every claim is early', () => {
    expect(planCallbacks([claim({ status: 'paid' }), claim({ status: 'fulfilling' })], order(), 'confirm')).toEqual({ kind: 'hint' });
    expect(planCallbacks([claim({ status: 'paid' }), claim({ status: 'delivered' })], order(), 'confirm')).toEqual({
      kind: 'read',
      deliver: true,
    });
  });

  it('what the facts decide holds for all', () => {
    expect(planCallbacks([claim(), claim({ status: 'delivered' })], null, 'verified')).toEqual({ kind: 'store', reason: 'unknown_order' });
    expect(planCallbacks([claim(), claim({ status: 'delivered' })], order({ operationInProgress: true }), 'verified')).toEqual({
      kind: 'wait',
      reason: 'operation_in_progress',
    });
  });
});

describe('readShows: a read that answers a callback claimed before it', () => {
  it('shows the same status, or a later one the claim does not contradict, with the items of a delivered state', () => {
    expect(readShows({ status: 'paid', deliveredAt: null }, 'paid')).toBe(true);
    expect(readShows({ status: 'delivered', deliveredAt: new Date() }, 'paid')).toBe(true);
    // a delivered state without its items shows nothing
    expect(readShows({ status: 'delivered', deliveredAt: null }, 'paid')).toBe(false);
    // a partial state may come again with more: never shown by an earlier read of it
    expect(readShows({ status: 'partially_delivered', deliveredAt: new Date() }, 'partially_delivered')).toBe(false);
    // an earlier status does not show a later claim; a claim the current status contradicts is not shown
    expect(readShows({ status: 'paid', deliveredAt: null }, 'delivered')).toBe(false);
    expect(readShows({ status: 'canceled', deliveredAt: null }, 'delivered')).toBe(false);
    expect(readShows({ status: 'paid', deliveredAt: null }, 'no_such_status')).toBe(false);
  });
});
