import {
  classifyHttpAnswer,
  classifyTransportError,
  genericBodyMessage,
  parseJsonBody,
  parseRetryAfter,
  transportErrorCode,
  type HttpClassification,
  transportFailure,
} from './upstream-http.classification.js';
import { UpstreamDefinitiveError, UpstreamRetryableError, UpstreamUnknownError } from './upstream.errors.js';

const NOW = Date.UTC(2025, 0, 15, 12, 0, 0);

/** The error of a failed classification, checked to be of the class. */
function errorOf<T>(c: HttpClassification, cls: abstract new (...args: never[]) => T): T {
  if (c.ok) throw new Error('expected a failure');
  expect(c.error).toBeInstanceOf(cls);
  return c.error as T;
}

function sysErr(code: string, message = code): Error {
  return Object.assign(new Error(message), { code });
}

describe('parseRetryAfter', () => {
  it.each([
    ['120', 120_000],
    [' 3 ', 3_000],
    ['0', 0],
    ['1.5', 1_500],
    ['2024', 2_024_000],
  ])('reads delay-seconds %p as %p ms', (header, ms) => {
    expect(parseRetryAfter(header, NOW)).toBe(ms);
  });

  it('reads an HTTP date as the time left until it', () => {
    expect(parseRetryAfter('Wed, 15 Jan 2025 12:00:30 GMT', NOW)).toBe(30_000);
  });

  it('gives 0 for an HTTP date in the past', () => {
    expect(parseRetryAfter('Wed, 15 Jan 2025 11:59:00 GMT', NOW)).toBe(0);
  });

  it('takes the first value of a repeated header', () => {
    expect(parseRetryAfter(['7', '9'], NOW)).toBe(7_000);
  });

  it.each([[undefined], [null], [''], ['  '], ['soon'], ['-5'], ['1e3'], ['12abc'], ['Not, a date GMT']])(
    'gives undefined for %p',
    (header) => {
      expect(parseRetryAfter(header, NOW)).toBeUndefined();
    },
  );
});

describe('transportErrorCode', () => {
  it('reads the code of the error, or of its cause when the wrapper has none', () => {
    expect(transportErrorCode(sysErr('EPIPE'))).toBe('EPIPE');
    expect(transportErrorCode({ message: 'wrapped', cause: sysErr('ECONNRESET') })).toBe('ECONNRESET');
    expect(transportErrorCode(new Error('no code'))).toBeUndefined();
    expect(transportErrorCode('boom')).toBeUndefined();
  });
});

describe('classifyTransportError', () => {
  it.each([
    ['ECONNREFUSED'],
    ['ENOTFOUND'],
    ['EAI_AGAIN'],
    ['EHOSTUNREACH'],
    ['ENETUNREACH'],
    // a reset during the TCP/TLS handshake: the request was never sent either
    ['ECONNRESET'],
  ])('%s before the connection exists is retryable', (code) => {
    expect(classifyTransportError(sysErr(code), { connected: false, requestWritten: false })).toEqual({
      failureClass: 'retryable',
      reason: code,
    });
  });

  it('our connect timer firing before the socket connected is a retryable connect_timeout', () => {
    expect(classifyTransportError(new Error('canceled'), { connected: false, requestWritten: false, timedOut: 'connect' })).toEqual({
      failureClass: 'retryable',
      reason: 'connect_timeout',
    });
  });

  it('the response timer firing while still not connected is a connect timeout too', () => {
    expect(classifyTransportError(new Error('canceled'), { connected: false, requestWritten: false, timedOut: 'response' })).toEqual({
      failureClass: 'retryable',
      reason: 'connect_timeout',
    });
  });

  it('the response timer firing after the connection is an unknown response_timeout', () => {
    expect(classifyTransportError(new Error('canceled'), { connected: true, requestWritten: true, timedOut: 'response' })).toEqual({
      failureClass: 'unknown',
      reason: 'response_timeout',
    });
    // even if nothing was proven written: a timeout after connecting is never retried blindly
    expect(classifyTransportError(new Error('canceled'), { connected: true, requestWritten: false, timedOut: 'response' })).toEqual({
      failureClass: 'unknown',
      reason: 'response_timeout',
    });
  });

  it.each([['ECONNRESET'], ['EPIPE'], ['ETIMEDOUT'], ['ERR_BAD_RESPONSE']])('%s after the request was written is unknown', (code) => {
    expect(classifyTransportError(sysErr(code), { connected: true, requestWritten: true })).toEqual({
      failureClass: 'unknown',
      reason: code,
    });
  });

  it('a reset on a connected socket is retryable only when nothing was written', () => {
    expect(classifyTransportError(sysErr('ECONNRESET'), { connected: true, requestWritten: false })).toEqual({
      failureClass: 'retryable',
      reason: 'ECONNRESET_before_write',
    });
  });

  it('an error without a code after sending is still unknown', () => {
    expect(classifyTransportError(new Error('weird'), { connected: true, requestWritten: true })).toEqual({
      failureClass: 'unknown',
      reason: 'transport_error',
    });
  });

  it('transportFailure builds the matching error class with the operation', () => {
    const r = transportFailure('createOrder', sysErr('ECONNREFUSED'), { connected: false, requestWritten: false });
    expect(r).toBeInstanceOf(UpstreamRetryableError);
    expect(r.operation).toBe('createOrder');
    const u = transportFailure('createOrder', sysErr('ECONNRESET'), { connected: true, requestWritten: true });
    expect(u).toBeInstanceOf(UpstreamUnknownError);
    expect((u as UpstreamUnknownError).reason).toBe('ECONNRESET');
  });
});

describe('parseJsonBody', () => {
  it('parses JSON bytes (with a BOM) and gives undefined for anything else', () => {
    expect(parseJsonBody(Buffer.from('{"ok":true}'))).toEqual({ ok: true });
    expect(parseJsonBody(Buffer.from('\ufeff{"ok":true}'))).toEqual({ ok: true });
    expect(parseJsonBody(Buffer.from('<html>'))).toBeUndefined();
    expect(parseJsonBody(Buffer.alloc(0))).toBeUndefined();
    expect(parseJsonBody(Buffer.from(' \r\n\t'))).toBeUndefined();
    expect(parseJsonBody(Buffer.from('\ufeff'))).toBeUndefined();
    expect(parseJsonBody(undefined)).toBeUndefined();
  });
});

describe('classifyHttpAnswer', () => {
  const json = (v: unknown): Buffer => Buffer.from(JSON.stringify(v));
  const refusal = (code: string): Buffer => json({ ok: false, error_code: code, error_message: `msg ${code}` });

  it('passes a 200 with ok true through', () => {
    expect(classifyHttpAnswer('ping', { status: 200, body: json({ ok: true, x: 1 }) }, NOW)).toEqual({
      ok: true,
      body: { ok: true, x: 1 },
    });
  });

  it('a 200 with ok false and a code is a definitive refusal (payment_failed)', () => {
    const e = errorOf(classifyHttpAnswer('createOrder', { status: 200, body: refusal('payment_failed') }, NOW), UpstreamDefinitiveError);
    expect([e.errorCode, e.httpStatus, e.upstreamMessage]).toEqual(['payment_failed', 200, 'msg payment_failed']);
  });

  it.each([
    [400, 'sku_unavailable'],
    [401, 'invalid_signature'],
    [402, 'insufficient_balance'],
    [403, 'forbidden'],
    [404, 'product_not_found'],
    [409, 'cancel_not_allowed'],
  ])('a %p with a coded body is definitive with that code', (status, code) => {
    const e = errorOf(classifyHttpAnswer('op', { status, body: refusal(code) }, NOW), UpstreamDefinitiveError);
    expect([e.errorCode, e.httpStatus]).toEqual([code, status]);
  });

  it.each([
    [404, Buffer.from('Not Found')],
    [401, Buffer.alloc(0)],
    [400, json({ ok: false })],
    [409, json({ ok: false, error_code: '' })],
  ])('a %p without a usable code is definitive http_<status>', (status, body) => {
    const e = errorOf(classifyHttpAnswer('op', { status, body }, NOW), UpstreamDefinitiveError);
    expect([e.errorCode, e.httpStatus]).toEqual([`http_${status}`, status]);
  });

  it('a 429 is retryable with Retry-After, coded body or not', () => {
    const e = errorOf(classifyHttpAnswer('op', { status: 429, retryAfter: '2', body: refusal('too_many') }, NOW), UpstreamRetryableError);
    expect([e.reason, e.retryAfterMs, e.httpStatus]).toEqual(['rate_limited', 2000, 429]);
    const noHeader = errorOf(classifyHttpAnswer('op', { status: 429, body: undefined }, NOW), UpstreamRetryableError);
    expect(noHeader.retryAfterMs).toBeUndefined();
  });

  // Dujiao-Next's limiter answers before authentication and before any work, in its generic shape
  const dujiao429 = json({ status_code: 429, msg: 'too many requests, try again later', data: { request_id: 'req-1' } });

  it('a 429 in the generic {status_code,msg,data} shape without Retry-After is retryable rate_limited, its msg in the message', () => {
    const e = errorOf(classifyHttpAnswer('createOrder', { status: 429, body: dujiao429 }, NOW), UpstreamRetryableError);
    expect([e.reason, e.retryAfterMs, e.httpStatus]).toEqual(['rate_limited', undefined, 429]);
    expect(e.message).toBe('upstream createOrder not delivered: rate_limited (upstream said: too many requests, try again later)');
  });

  it.each([
    ['HTML', Buffer.from('<html>429</html>')],
    ['empty', Buffer.alloc(0)],
    ['an envelope', json({ ok: false, error_code: 'too_many_requests', error_message: 'slow down' })],
    ['ok true', json({ ok: true })],
  ])('a 429 with a body that is %s is retryable rate_limited too', (_what, body) => {
    const e = errorOf(classifyHttpAnswer('getOrder', { status: 429, body }, NOW), UpstreamRetryableError);
    expect(e.reason).toBe('rate_limited');
  });

  it.each([400, 401, 403, 404, 405, 409, 413, 422])(
    'a %p in the generic shape is a definitive refusal (never unknown) carrying its msg',
    (status) => {
      const body = json({ status_code: status, msg: `refused with ${status}\nsecond line`, data: { request_id: 'r' } });
      const e = errorOf(classifyHttpAnswer('createOrder', { status, body }, NOW), UpstreamDefinitiveError);
      expect([e.errorCode, e.httpStatus, e.upstreamMessage]).toEqual([`http_${status}`, status, `refused with ${status} second line`]);
      expect(e.message).toContain(`refused with ${status}`);
    },
  );

  it('a 5xx in the generic shape stays unknown, with its msg in the message', () => {
    const e = errorOf(
      classifyHttpAnswer('createOrder', { status: 500, body: json({ status_code: 500, msg: 'internal error', data: null }) }, NOW),
      UpstreamUnknownError,
    );
    expect([e.reason, e.httpStatus]).toEqual(['http_500', 500]);
    expect(e.message).toContain('upstream said: internal error');
  });

  it("reads only the generic shape's msg", () => {
    expect(genericBodyMessage({ status_code: 429, msg: 'x' })).toBe('x');
    expect(genericBodyMessage({ msg: 'no status_code' })).toBeUndefined();
    expect(genericBodyMessage({ status_code: 429, msg: '  ' })).toBeUndefined();
    expect(genericBodyMessage({ status_code: 429, msg: 'y'.repeat(500) })).toHaveLength(200);
    expect(genericBodyMessage('text')).toBeUndefined();
  });

  it.each([500, 502, 503, 504])('a %p is unknown, even with a coded body', (status) => {
    const e = errorOf(classifyHttpAnswer('op', { status, body: refusal('x') }, NOW), UpstreamUnknownError);
    expect([e.reason, e.httpStatus]).toEqual([`http_${status}`, status]);
  });

  it.each([
    ['not JSON', Buffer.from('{"ok":tr'), 'unparsable_body'],
    ['empty', Buffer.alloc(0), 'unparsable_body'],
    ['ok false without a code', json({ ok: false }), 'malformed_body'],
    ['no ok at all', json({ order_id: 1 }), 'malformed_body'],
    ['ok as a string', json({ ok: 'true' }), 'malformed_body'],
    ['an array', json([1]), 'malformed_body'],
  ])('a 200 that is %s is unknown', (_what, body, reason) => {
    const e = errorOf(classifyHttpAnswer('op', { status: 200, body }, NOW), UpstreamUnknownError);
    expect(e.reason).toBe(reason);
  });

  it('a redirect is unknown (not followed)', () => {
    const e = errorOf(classifyHttpAnswer('op', { status: 302, body: undefined }, NOW), UpstreamUnknownError);
    expect(e.reason).toBe('http_302');
  });
});
