import {
  mayCloseRejected,
  ATTEMPT_MOVES,
  MAX_SEND_TRIES,
  attemptMove,
  planOutcome,
  planSendFailure,
  sendLeaseMs,
  type SendFailure,
  type SendOutcomeKind,
  type SendTry,
} from './attempt-plan.js';
import { canTransition } from './order-state.js';

const at = (over: Partial<SendTry> = {}): SendTry => ({ tryNo: 0, elapsedMs: 10, timeoutMs: 4000, withCallback: false, ...over });
const retryable = (over: Partial<Extract<SendFailure, { kind: 'retryable' }>> = {}): SendFailure => ({
  kind: 'retryable',
  reason: 'connect_error',
  rateLimited: false,
  ...over,
});

describe('planSendFailure', () => {
  it('a definitive refusal stops the send as rejected, with the upstream code and the order it names', () => {
    const step = planSendFailure(
      { kind: 'definitive', errorCode: 'payment_failed', httpStatus: 402, message: 'no funds', upstreamOrderId: 7 },
      at(),
    );
    expect(step).toEqual({
      kind: 'stop',
      callbackRefused: false,
      outcome: { kind: 'rejected', errorCode: 'payment_failed', httpStatus: 402, message: 'no funds', upstreamOrderId: 7 },
    });
  });

  it('a refused callback address goes again at once without it while time is left, else stops unavailable', () => {
    const refused: SendFailure = { kind: 'definitive', errorCode: 'invalid_callback_url', httpStatus: 422, message: 'bad url' };
    expect(planSendFailure(refused, at({ withCallback: true, elapsedMs: 1999 }))).toEqual({
      kind: 'retry',
      delayMs: 0,
      callbackRefused: true,
    });
    expect(planSendFailure(refused, at({ withCallback: true, elapsedMs: 2000 }))).toEqual({
      kind: 'stop',
      callbackRefused: true,
      outcome: { kind: 'unavailable', reason: 'invalid_callback_url_retry_out_of_time' },
    });
    // without a callback address it is a refusal of the order like any other
    expect(planSendFailure(refused, at({ withCallback: false }))).toMatchObject({
      kind: 'stop',
      callbackRefused: false,
      outcome: { kind: 'rejected', errorCode: 'invalid_callback_url' },
    });
  });

  it('a 429 or a budget wait that ran out queues the attempt without another try', () => {
    expect(planSendFailure(retryable({ rateLimited: true, reason: 'http_429' }), at())).toEqual({
      kind: 'stop',
      callbackRefused: false,
      outcome: { kind: 'queued', reason: 'rate_limited' },
    });
    expect(planSendFailure(retryable({ reason: 'budget_wait_exceeded' }), at())).toEqual({
      kind: 'stop',
      callbackRefused: false,
      outcome: { kind: 'queued', reason: 'budget_wait_exceeded' },
    });
  });

  it('a try that reached nothing goes again after 100 then 300 ms, or the delay the upstream names, capped at 1 s', () => {
    expect(planSendFailure(retryable(), at({ tryNo: 0 }))).toEqual({ kind: 'retry', delayMs: 100, callbackRefused: false });
    expect(planSendFailure(retryable(), at({ tryNo: 1 }))).toEqual({ kind: 'retry', delayMs: 300, callbackRefused: false });
    expect(planSendFailure(retryable({ retryAfterMs: 250 }), at())).toEqual({ kind: 'retry', delayMs: 250, callbackRefused: false });
    expect(planSendFailure(retryable({ retryAfterMs: 5000 }), at({ timeoutMs: 10_000 }))).toEqual({
      kind: 'retry',
      delayMs: 1000,
      callbackRefused: false,
    });
  });

  it('stops unavailable after MAX_SEND_TRIES tries, or when the delay would pass half the timeout', () => {
    expect(planSendFailure(retryable(), at({ tryNo: MAX_SEND_TRIES - 1 }))).toEqual({
      kind: 'stop',
      callbackRefused: false,
      outcome: { kind: 'unavailable', reason: 'connect_error' },
    });
    expect(planSendFailure(retryable(), at({ elapsedMs: 1899 }))).toMatchObject({ kind: 'retry' });
    expect(planSendFailure(retryable(), at({ elapsedMs: 1900 }))).toMatchObject({ kind: 'stop', outcome: { kind: 'unavailable' } });
  });

  it('an unknown failure stops the send as unknown', () => {
    expect(planSendFailure({ kind: 'unknown', reason: 'timeout' }, at())).toEqual({
      kind: 'stop',
      callbackRefused: false,
      outcome: { kind: 'unknown', reason: 'timeout' },
    });
  });
});

describe('sendLeaseMs', () => {
  it('is 1.5 × the timeout plus a quarter of it, at most 1 s more, rounded up', () => {
    expect(sendLeaseMs(4000)).toBe(7000);
    expect(sendLeaseMs(10_000)).toBe(16_000);
    expect(sendLeaseMs(101)).toBe(Math.ceil(151.5 + 25.25));
  });
});

const OUTCOMES: SendOutcomeKind[] = ['accepted', 'rejected', 'unavailable', 'unknown', 'queued'];

describe('the attempt lifecycle', () => {
  it('a first send: each outcome has its own attempt state and order move', () => {
    const first = { status: 'submitting' as const, sends: 1, current: true };
    expect(OUTCOMES.map((o) => attemptMove(o, first))).toEqual([
      { attempt: 'accepted', order: 'report' },
      { attempt: 'rejected', order: 'rejected' },
      { attempt: 'rejected', order: 'rejected' },
      { attempt: 'submit_unknown', order: 'submit_unknown' },
      { attempt: 'queued', order: 'queued' },
    ]);
  });

  it('a re-send of an unknown attempt: only an acceptance settles it; anything else leaves it unknown, sent again later', () => {
    const resent = { status: 'submit_unknown' as const, sends: 2, current: true };
    expect(attemptMove('accepted', resent)).toEqual({ attempt: 'accepted', order: 'report' });
    for (const o of ['rejected', 'unavailable', 'unknown', 'queued'] as const)
      expect(attemptMove(o, resent)).toEqual({ attempt: 'resend_later', order: 'unchanged' });
  });

  it('a refusal of the only send of an unknown attempt (its late answer) closes it', () => {
    expect(attemptMove('rejected', { status: 'submit_unknown', sends: 1, current: true })).toEqual({
      attempt: 'rejected',
      order: 'rejected',
    });
  });

  it("an attempt no longer open (closed, or no longer the order's attempt) is left; an acceptance is an untracked upstream order", () => {
    const closed = [
      ...(['queued', 'accepted', 'rejected'] as const).map((status) => ({ status, sends: 1, current: true })),
      { status: 'submitting' as const, sends: 1, current: false },
      { status: 'submit_unknown' as const, sends: 1, current: false },
    ];
    for (const attempt of closed) {
      expect(OUTCOMES.map((o) => attemptMove(o, attempt))).toEqual([
        { attempt: 'left', order: 'untracked' },
        ...Array.from({ length: 4 }, () => ({ attempt: 'left', order: 'unchanged' })),
      ]);
    }
  });

  it('every order move it makes is one the state table allows', () => {
    for (const [from, moves] of [['submitting', ATTEMPT_MOVES] as const, ['submit_unknown', ATTEMPT_MOVES] as const]) {
      for (const o of OUTCOMES) {
        const move = attemptMove(o, { status: from, sends: 1, current: true });
        if (move.order === 'rejected' || move.order === 'submit_unknown')
          expect(canTransition('submit_outcome', from, move.order)).toBe(true);
        if (move.order === 'queued') expect(canTransition('requeue', from, 'queued')).toBe(true);
        expect(moves[o]).toBeDefined();
      }
    }
  });
});

describe('planOutcome: everything an outcome does to the attempt and its order', () => {
  const now = new Date('2026-11-29T10:00:00Z');
  const resendAt = new Date('2026-11-29T10:01:00Z');
  const at = { now, resendAt };
  const first = { status: 'submitting' as const, sends: 1, current: true, leased: true, attemptNo: 2, downstreamOrderNo: 'S-1-2' };
  const resent = { status: 'submit_unknown' as const, sends: 2, current: true, leased: true, attemptNo: 2, downstreamOrderNo: 'S-1-2' };
  const detail = { attempt: 2, downstream_order_no: 'S-1-2' };

  it(
    'accepted: the attempt is closed accepted with the upstream order, the order takes the report; ' +
      'a re-send that is accepted counts as deduplicated',
    () => {
      expect(planOutcome({ kind: 'accepted', upstreamOrderId: 7, changedRequest: null }, first, at)).toEqual({
        taken: true,
        attempt: { status: 'accepted', sending_until: null, upstream_order_id: 7, finished_at: now, http_status: 200 },
        order: { kind: 'report' },
        metric: 'accepted',
        log: null,
      });
      const request = { sku_id: 1, quantity: 1, trace_id: 't', with_callback: false };
      expect(planOutcome({ kind: 'accepted', upstreamOrderId: 7, changedRequest: request }, resent, at)).toMatchObject({
        attempt: { request },
        metric: 'deduplicated',
      });
    },
  );

  it('a refusal of a first send: rejected with the upstream code, kept upstream order and the order moved to rejected', () => {
    expect(
      planOutcome({ kind: 'rejected', errorCode: 'payment_failed', httpStatus: 200, message: 'no money', upstreamOrderId: 9 }, first, at),
    ).toEqual({
      taken: true,
      attempt: {
        status: 'rejected',
        sending_until: null,
        finished_at: now,
        upstream_order_id: 9,
        http_status: 200,
        error_code: 'payment_failed',
        error_message: 'no money',
      },
      order: {
        kind: 'move',
        trigger: 'submit_outcome',
        to: 'rejected',
        patch: { error_code: 'payment_failed', error_message: 'no money' },
        detail: { ...detail, error_code: 'payment_failed', upstream_order_id: 9 },
      },
      metric: 'rejected',
      log: null,
    });
  });

  it(
    'nothing reached the upstream: rejected upstream_unavailable; a 429 or no budget: queued; ' +
      'unknown: submit_unknown, sent again at resendAt',
    () => {
      expect(planOutcome({ kind: 'unavailable', reason: 'ECONNREFUSED' }, first, at)).toMatchObject({
        attempt: { status: 'rejected', error_code: 'upstream_unavailable', error_message: 'ECONNREFUSED', finished_at: now },
        order: {
          kind: 'move',
          trigger: 'submit_outcome',
          to: 'rejected',
          patch: { error_code: 'upstream_unavailable', error_message: 'the upstream could not be reached (ECONNREFUSED)' },
        },
        metric: 'unavailable',
      });
      expect(planOutcome({ kind: 'queued', reason: 'rate_limited' }, first, at)).toEqual({
        taken: true,
        attempt: { status: 'queued', sending_until: null },
        order: {
          kind: 'move',
          trigger: 'requeue',
          to: 'queued',
          patch: { error_code: null, error_message: null },
          detail: { ...detail, reason: 'rate_limited' },
        },
        metric: 'queued',
        log: null,
      });
      expect(planOutcome({ kind: 'unknown', reason: 'response_timeout' }, first, at)).toEqual({
        taken: true,
        attempt: { status: 'submit_unknown', sending_until: null, unknown_since: now, next_resend_at: resendAt },
        order: {
          kind: 'move',
          trigger: 'submit_outcome',
          to: 'submit_unknown',
          patch: { error_code: null, error_message: 'outcome unknown: response_timeout' },
          detail: { ...detail, reason: 'response_timeout' },
        },
        metric: 'unknown',
        log: 'unknown',
      });
    },
  );

  it('a re-send that settles nothing: the order unchanged, the attempt sent again later; a refusal of it is kept and logged', () => {
    for (const o of [
      { kind: 'unavailable' as const, reason: 'x' },
      { kind: 'unknown' as const, reason: 'x' },
      { kind: 'queued' as const, reason: 'x' },
    ]) {
      expect(planOutcome(o, resent, at)).toEqual({
        taken: true,
        attempt: { sending_until: null, next_resend_at: resendAt },
        order: { kind: 'unchanged' },
        metric: null,
        log: null,
      });
    }
    expect(planOutcome({ kind: 'rejected', errorCode: 'sku_disabled', httpStatus: 409, message: 'm' }, resent, at)).toEqual({
      taken: true,
      attempt: { sending_until: null, next_resend_at: resendAt, http_status: 409, error_code: 'sku_disabled', error_message: 'm' },
      order: { kind: 'unchanged' },
      metric: null,
      log: 'resend_refused',
    });
  });

  it('an attempt no longer open: not taken, only its sending lease ends; an acceptance is an untracked upstream order', () => {
    const accepted = { kind: 'accepted' as const, upstreamOrderId: 7, changedRequest: null };
    const refused = { kind: 'rejected' as const, errorCode: 'sku_disabled', httpStatus: 409, message: 'm' };
    const closed = { ...first, status: 'rejected' as const };
    expect(planOutcome(accepted, closed, at)).toEqual({
      taken: false,
      attempt: { sending_until: null },
      order: { kind: 'untracked' },
      metric: null,
      log: null,
    });
    expect(planOutcome(refused, { ...closed, leased: false }, at)).toEqual({
      taken: false,
      attempt: {},
      order: { kind: 'unchanged' },
      metric: null,
      log: null,
    });
    // open, but no longer the order's attempt
    for (const attempt of [first, resent])
      expect(planOutcome(refused, { ...attempt, current: false }, at)).toMatchObject({ taken: false, order: { kind: 'unchanged' } });
  });

  it('every order move it plans is one the state table allows', () => {
    const facts = [
      { kind: 'rejected' as const, errorCode: 'e', httpStatus: 409, message: 'm' },
      { kind: 'unavailable' as const, reason: 'r' },
      { kind: 'unknown' as const, reason: 'r' },
      { kind: 'queued' as const, reason: 'r' },
    ];
    for (const attempt of [first, { ...resent, sends: 1 }, resent]) {
      for (const f of facts) {
        const p = planOutcome(f, attempt, at);
        if (p.order.kind === 'move') expect(canTransition(p.order.trigger, attempt.status, p.order.to)).toBe(true);
      }
    }
  });
});

describe("mayCloseRejected: the outcomes an offer order's failover can follow", () => {
  it('is true for a refusal and for a create that reached nothing, false for the rest', () => {
    expect((['accepted', 'rejected', 'unavailable', 'unknown', 'queued'] as const).filter(mayCloseRejected)).toEqual([
      'rejected',
      'unavailable',
    ]);
  });
});
