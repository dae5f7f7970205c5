import { canceledQueuedAttempt, cancelRoute, LOCAL_CANCEL_FROM, LOCAL_CANCEL_TO, planLocalCancel } from './cancel-plan.js';
import { canTransition, ORDER_STATUSES, UPSTREAM_ORDER_EXISTS } from './order-state.js';

describe('the local cancel moves', () => {
  it("are the state table's local_cancel moves: rejected or queued to canceled", () => {
    expect([...LOCAL_CANCEL_FROM].sort()).toEqual(['queued', 'rejected']);
    expect(LOCAL_CANCEL_TO).toBe('canceled');
    for (const from of ORDER_STATUSES) expect(canTransition('local_cancel', from, LOCAL_CANCEL_TO)).toBe(LOCAL_CANCEL_FROM.has(from));
  });
});

describe('cancelRoute', () => {
  it('refuses an order whose outcome is unknown, is done for a canceled one, cancels here what nothing upstream has', () => {
    expect(cancelRoute('submitting')).toBe('outcome_unknown');
    expect(cancelRoute('submit_unknown')).toBe('outcome_unknown');
    expect(cancelRoute('canceled')).toBe('already');
    expect(cancelRoute('rejected')).toBe('local');
    expect(cancelRoute('queued')).toBe('local');
  });

  it('asks the upstream first for every order it has', () => {
    for (const s of ['pending_payment', 'paid', 'fulfilling', 'partially_delivered', 'delivered', 'completed', 'refunded'] as const)
      expect(cancelRoute(s)).toBe('upstream');
  });
});

describe('planLocalCancel', () => {
  it('moves a rejected order to canceled, and a queued one with its queued attempt closed', () => {
    expect(planLocalCancel({ status: 'rejected', anomaly: null })).toEqual({ kind: 'move', to: 'canceled', closeQueuedAttempt: false });
    expect(planLocalCancel({ status: 'queued', anomaly: null })).toEqual({ kind: 'move', to: 'canceled', closeQueuedAttempt: true });
  });

  it('refuses when the upstream showed an order for the attempt, whatever the status', () => {
    expect(planLocalCancel({ status: 'rejected', anomaly: UPSTREAM_ORDER_EXISTS })).toEqual({ kind: 'refuse_upstream_order_exists' });
    expect(planLocalCancel({ status: 'canceled', anomaly: UPSTREAM_ORDER_EXISTS })).toEqual({ kind: 'refuse_upstream_order_exists' });
  });

  it('is done for an order canceled meanwhile, and decides again for one that moved elsewhere', () => {
    expect(planLocalCancel({ status: 'canceled', anomaly: null })).toEqual({ kind: 'already' });
    expect(planLocalCancel({ status: 'submitting', anomaly: null })).toEqual({ kind: 'decide_again' });
    expect(planLocalCancel({ status: 'paid', anomaly: 'other' })).toEqual({ kind: 'decide_again' });
  });
});

describe('canceledQueuedAttempt', () => {
  it('closes the attempt as rejected with the code canceled, never to be sent', () => {
    const now = new Date('2026-01-01T00:00:00Z');
    expect(canceledQueuedAttempt(now)).toEqual({
      status: 'rejected',
      finished_at: now,
      error_code: 'canceled',
      error_message: 'canceled before it was sent',
    });
  });
});
