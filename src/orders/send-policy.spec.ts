import { MAX_SEND_TRIES, planSendFailure, sendLeaseMs, type SendFailure, type SendTry } from './send-policy.js';

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
