import { placeAnswer, refusalCode } from './place-answer.js';

const order = (status: string, errorMessage: string | null = null) => ({ status, errorMessage });
const refused = (errorCode: string, httpStatus: number) => ({ kind: 'rejected' as const, errorCode, httpStatus, message: 'no' });

describe('placeAnswer', () => {
  it('202 for an unknown outcome and a queued order; 201 for an upstream state', () => {
    expect(placeAnswer(order('submit_unknown'), { kind: 'unknown' })).toEqual({ kind: 'ok', httpStatus: 202 });
    expect(placeAnswer(order('queued'), { kind: 'queued' })).toEqual({ kind: 'ok', httpStatus: 202 });
    for (const s of ['pending_payment', 'paid', 'delivered', 'completed'])
      expect(placeAnswer(order(s), { kind: 'accepted' })).toEqual({ kind: 'ok', httpStatus: 201 });
  });

  it('a status not known, still submitting: 201 when accepted, else 202', () => {
    expect(placeAnswer(order('submitting'), { kind: 'accepted' })).toEqual({ kind: 'ok', httpStatus: 201 });
    expect(placeAnswer(order('submitting'), { kind: 'unknown' })).toEqual({ kind: 'ok', httpStatus: 202 });
  });

  it("a refusal: the upstream's code and status; 401/403 are 502 upstream_auth_failed; an ok:false answered 200 is 402 payment_failed or 502", () => {
    expect(placeAnswer(order('rejected'), refused('insufficient_balance', 402))).toEqual({
      kind: 'error',
      code: 'insufficient_balance',
      httpStatus: 402,
      message: 'the upstream refused the order: no',
      upstream: true,
    });
    for (const s of [401, 403])
      expect(placeAnswer(order('rejected'), refused('invalid_signature', s))).toMatchObject({
        code: 'upstream_auth_failed',
        httpStatus: 502,
        upstream: false,
      });
    expect(placeAnswer(order('rejected'), refused('payment_failed', 200))).toMatchObject({ code: 'payment_failed', httpStatus: 402 });
    expect(placeAnswer(order('rejected'), refused('sku_disabled', 200))).toMatchObject({ code: 'sku_disabled', httpStatus: 502 });
  });

  it("nothing reached the upstream: 503 upstream_unavailable with the order's message", () => {
    expect(placeAnswer(order('rejected', 'the upstream could not be reached (ECONNREFUSED)'), { kind: 'unavailable' })).toEqual({
      kind: 'error',
      code: 'upstream_unavailable',
      httpStatus: 503,
      message: 'the upstream could not be reached (ECONNREFUSED)',
      upstream: false,
    });
    expect(placeAnswer(order('rejected'), { kind: 'unavailable' })).toMatchObject({ message: 'the upstream could not be reached' });
  });
});

describe('refusalCode', () => {
  it('names a 401/403 upstream_auth_failed whatever the upstream called it, else keeps the upstream code', () => {
    expect(refusalCode({ errorCode: 'invalid_signature', httpStatus: 401 })).toBe('upstream_auth_failed');
    expect(refusalCode({ errorCode: 'forbidden', httpStatus: 403 })).toBe('upstream_auth_failed');
    expect(refusalCode({ errorCode: 'insufficient_stock', httpStatus: 409 })).toBe('insufficient_stock');
    expect(refusalCode({ errorCode: 'payment_failed', httpStatus: 200 })).toBe('payment_failed');
  });
});
