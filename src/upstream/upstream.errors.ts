/**
 * One classification of upstream failures, used everywhere (orders, sync, health):
 * - definitive: the upstream refused with a code (its `error_code` and HTTP status kept); nothing happened;
 * - retryable: nothing reached the upstream (connection refused, DNS failure, connect timeout) or a 429;
 * - unknown: sent, but no trustworthy answer (response timeout, reset after sending, 5xx, unparsable body).
 */
export type UpstreamFailureClass = 'definitive' | 'retryable' | 'unknown';

export abstract class UpstreamError extends Error {
  abstract readonly failureClass: UpstreamFailureClass;
  constructor(
    message: string,
    /** The upstream operation, e.g. `createOrder`. */
    readonly operation: string,
  ) {
    super(message);
    this.name = new.target.name;
  }
}

/** A coded refusal: `payment_failed` (HTTP 200, ok false), `insufficient_balance` (402), `cancel_not_allowed` (409)… */
export class UpstreamDefinitiveError extends UpstreamError {
  readonly failureClass = 'definitive' as const;
  constructor(
    operation: string,
    readonly errorCode: string,
    readonly httpStatus: number,
    readonly upstreamMessage: string,
    /** The upstream order the refusal names (`payment_failed` names the order it created and canceled). */
    readonly upstreamOrderId: number | null = null,
  ) {
    super(`upstream refused ${operation}: ${errorCode} (HTTP ${httpStatus}): ${upstreamMessage}`, operation);
  }
}

/** Nothing reached the upstream, or it asked us to slow down (429): safe to send again. */
export class UpstreamRetryableError extends UpstreamError {
  readonly failureClass = 'retryable' as const;
  constructor(
    operation: string,
    /** e.g. `ECONNREFUSED`, `ENOTFOUND`, `connect_timeout`, `rate_limited`. */
    readonly reason: string,
    /** From `Retry-After` on a 429, in milliseconds. */
    readonly retryAfterMs?: number,
    readonly httpStatus?: number,
  ) {
    super(`upstream ${operation} not delivered: ${reason}`, operation);
  }
}

/** The request may have been acted on: response timeout, reset after sending, 5xx, unparsable body. */
export class UpstreamUnknownError extends UpstreamError {
  readonly failureClass = 'unknown' as const;
  constructor(
    operation: string,
    /** e.g. `response_timeout`, `ECONNRESET`, `http_502`, `unparsable_body`. */
    readonly reason: string,
    readonly httpStatus?: number,
  ) {
    super(`upstream ${operation} outcome unknown: ${reason}`, operation);
  }
}

export function isUpstreamError(e: unknown): e is UpstreamError {
  return e instanceof UpstreamError;
}
