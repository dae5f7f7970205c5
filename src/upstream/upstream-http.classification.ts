/**
 * Pure classification of what came back from (or failed on the way to) the upstream, for the HTTP
 * adapter. No I/O, no clock of its own: every input is a value.
 *
 * - definitive: a coded refusal; nothing happened upstream;
 * - retryable: nothing reached the upstream (it never connected), or it asked us to slow down (429);
 * - unknown: the request may have been acted on and no trustworthy answer came back.
 */
import { UpstreamDefinitiveError, UpstreamRetryableError, UpstreamUnknownError, type UpstreamError } from './upstream.errors.js';

/** Error codes that can only happen before a connection exists (so nothing was sent). */
export const PRE_CONNECT_ERROR_CODES: ReadonlySet<string> = new Set([
  'ECONNREFUSED',
  'ENOTFOUND',
  'EAI_AGAIN',
  'EAI_FAIL',
  'EAI_NODATA',
  'EAI_NONAME',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'ENETDOWN',
  'EHOSTDOWN',
  'EADDRNOTAVAIL',
]);

/** What the adapter observed of one request before it failed. */
export interface TransportState {
  /**
   * The connection to the upstream was established (TCP connected; for TLS, the handshake done) or a
   * kept-alive connection was reused. Until then no byte of the request can have reached the server.
   */
  connected: boolean;
  /**
   * Some byte of this request was handed to the socket. `false` only when that is proven; when in
   * doubt the adapter passes `true`.
   */
  requestWritten: boolean;
  /** Which of the adapter's own timers aborted the request, if one did. */
  timedOut?: 'connect' | 'response';
}

export type TransportClassification = { failureClass: 'retryable'; reason: string } | { failureClass: 'unknown'; reason: string };

/** The Node / axios error code of a transport error (`ECONNRESET`, `ETIMEDOUT`, …), if any. */
export function transportErrorCode(err: unknown): string | undefined {
  let e: unknown = err;
  for (let depth = 0; depth < 5 && typeof e === 'object' && e !== null; depth++) {
    const code = (e as { code?: unknown }).code;
    if (typeof code === 'string' && code !== '') return code;
    e = (e as { cause?: unknown }).cause;
  }
  return undefined;
}

/**
 * Classifies a request that got no HTTP answer at all.
 *
 * | state                                   | class     | reason                           |
 * |-----------------------------------------|-----------|----------------------------------|
 * | our connect timer fired, not connected  | retryable | `connect_timeout`                |
 * | our response timer fired, not connected | retryable | `connect_timeout`                |
 * | our response timer fired, connected     | unknown   | `response_timeout`               |
 * | any error, never connected              | retryable | the code (`ECONNREFUSED`, …)     |
 * | connected, proven nothing written       | retryable | `<code>_before_write`            |
 * | connected, (maybe) written              | unknown   | the code (`ECONNRESET`, `EPIPE`) |
 */
export function classifyTransportError(err: unknown, state: TransportState): TransportClassification {
  if (state.timedOut !== undefined) {
    if (!state.connected) return { failureClass: 'retryable', reason: 'connect_timeout' };
    return { failureClass: 'unknown', reason: 'response_timeout' };
  }
  const code = transportErrorCode(err) ?? 'transport_error';
  if (!state.connected) return { failureClass: 'retryable', reason: code };
  if (!state.requestWritten) return { failureClass: 'retryable', reason: `${code}_before_write` };
  return { failureClass: 'unknown', reason: code };
}

/** Builds the error of the port for a transport failure. */
export function transportFailure(operation: string, err: unknown, state: TransportState): UpstreamError {
  const c = classifyTransportError(err, state);
  return c.failureClass === 'retryable' ? new UpstreamRetryableError(operation, c.reason) : new UpstreamUnknownError(operation, c.reason);
}

const DELAY_SECONDS_RE = /^\d+(?:\.\d+)?$/;

/**
 * `Retry-After` in milliseconds from `nowMs`: delay-seconds (`120`) or an HTTP date
 * (`Wed, 21 Oct 2015 07:28:00 GMT`); a date in the past gives 0. Absent or unreadable: undefined.
 */
export function parseRetryAfter(header: string | readonly string[] | null | undefined, nowMs: number): number | undefined {
  const raw = Array.isArray(header) ? header[0] : header;
  if (typeof raw !== 'string') return undefined;
  const value = raw.trim();
  if (value === '') return undefined;
  if (DELAY_SECONDS_RE.test(value)) {
    const ms = Math.round(Number(value) * 1000);
    return Number.isSafeInteger(ms) ? ms : undefined;
  }
  // Only an HTTP date: it names a weekday or a month (Date.parse alone accepts far too much).
  if (!/[a-z]{3}/i.test(value)) return undefined;
  const at = Date.parse(value);
  if (Number.isNaN(at)) return undefined;
  return Math.max(0, at - nowMs);
}

/** A JSON value parsed from the body, or `undefined` when the bytes are not JSON. */
export function parseJsonBody(body: Buffer | Uint8Array | string | null | undefined): unknown {
  if (body == null) return undefined;
  const text = typeof body === 'string' ? body : Buffer.from(body.buffer, body.byteOffset, body.byteLength).toString('utf8');
  // (an empty or blank body is not JSON either: JSON.parse throws on it, without a copy of the text)
  try {
    return JSON.parse(text.charCodeAt(0) === 0xfeff ? text.slice(1) : text) as unknown;
  } catch {
    return undefined;
  }
}

function isRecord(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** The `{ok:false, error_code, error_message}` envelope, when the body is one with a usable code. */
function errorEnvelope(body: unknown): { code: string; message: string; orderId: number | null } | undefined {
  if (!isRecord(body) || body.ok !== false) return undefined;
  if (typeof body.error_code !== 'string' || body.error_code.trim() === '') return undefined;
  const orderId = typeof body.order_id === 'number' && Number.isSafeInteger(body.order_id) && body.order_id > 0 ? body.order_id : null;
  return { code: body.error_code, message: typeof body.error_message === 'string' ? body.error_message : '', orderId };
}

/**
 * The `msg` of the server's generic body `{status_code, msg, data}` (Dujiao-Next answers its 429s, and
 * other errors its framework raises before the handler, so: no `ok`, no `error_code`), cut to 200
 * characters without control characters, for the log. Undefined for any other body.
 */
export function genericBodyMessage(body: unknown): string | undefined {
  if (!isRecord(body) || !('status_code' in body) || typeof body.msg !== 'string') return undefined;
  // eslint-disable-next-line no-control-regex
  const msg = body.msg.replace(/[\u0000-\u001f\u007f]+/g, ' ').trim();
  return msg === '' ? undefined : msg.slice(0, 200);
}

/** Appends what the upstream said to the error's message (the log shows it; the class is unchanged). */
function withUpstreamMessage<E extends UpstreamError>(error: E, said: string | undefined): E {
  if (said !== undefined) error.message = `${error.message} (upstream said: ${said})`;
  return error;
}

export interface HttpAnswer {
  status: number;
  /** The `Retry-After` header as received. */
  retryAfter?: string | readonly string[] | null;
  body: Buffer | Uint8Array | string | null | undefined;
}

export type HttpClassification = { ok: true; body: Record<string, unknown> } | { ok: false; error: UpstreamError };

/**
 * Classifies a complete HTTP answer. On success returns the parsed `{ok:true,…}` object; the shape of
 * the operation's answer is checked by the caller.
 *
 * | answer                                            | class      | code / reason             |
 * |---------------------------------------------------|------------|---------------------------|
 * | 429, whatever its body, Retry-After or not        | retryable  | `rate_limited` (+ Retry-After) |
 * | 5xx                                               | unknown    | `http_<status>`           |
 * | 4xx with `{ok:false,error_code}`                  | definitive | its `error_code`          |
 * | 4xx without a usable code (any body, or none)     | definitive | `http_<status>`           |
 * | 2xx with `{ok:false,error_code}`                  | definitive | its `error_code`          |
 * | 2xx not JSON                                      | unknown    | `unparsable_body`         |
 * | 2xx JSON but `ok` not `true` (and no usable code) | unknown    | `malformed_body`          |
 * | 1xx / 3xx                                         | unknown    | `http_<status>`           |
 *
 * A 4xx is a refusal whatever its body: the upstream answered before acting (never an unknown
 * outcome). An error answer in the server's generic shape `{status_code, msg, data}` has its `msg` in
 * the error's message (as the `upstreamMessage` of a definitive refusal).
 */
export function classifyHttpAnswer(operation: string, answer: HttpAnswer, nowMs: number): HttpClassification {
  const { status } = answer;
  if (status === 429) {
    const error = new UpstreamRetryableError(operation, 'rate_limited', parseRetryAfter(answer.retryAfter, nowMs), 429);
    return { ok: false, error: withUpstreamMessage(error, genericBodyMessage(parseJsonBody(answer.body))) };
  }
  if (status >= 500) {
    return {
      ok: false,
      error: withUpstreamMessage(
        new UpstreamUnknownError(operation, `http_${status}`, status),
        genericBodyMessage(parseJsonBody(answer.body)),
      ),
    };
  }
  if (status >= 400) {
    const body = parseJsonBody(answer.body);
    const env = errorEnvelope(body);
    return {
      ok: false,
      error: env
        ? new UpstreamDefinitiveError(operation, env.code, status, env.message)
        : new UpstreamDefinitiveError(operation, `http_${status}`, status, genericBodyMessage(body) ?? ''),
    };
  }
  if (status < 200 || status >= 300) {
    return { ok: false, error: new UpstreamUnknownError(operation, `http_${status}`, status) };
  }
  const parsed = parseJsonBody(answer.body);
  if (parsed === undefined) return { ok: false, error: new UpstreamUnknownError(operation, 'unparsable_body', status) };
  const env = errorEnvelope(parsed);
  if (env) return { ok: false, error: new UpstreamDefinitiveError(operation, env.code, status, env.message, env.orderId) };
  if (!isRecord(parsed) || parsed.ok !== true) {
    return { ok: false, error: new UpstreamUnknownError(operation, 'malformed_body', status) };
  }
  return { ok: true, body: parsed };
}
