/**
 * The send-retry policy and the sending lease, pure. A send is a few quick tries within the first half
 * of UPSTREAM_TIMEOUT_MS: a try that reached nothing (`retryable`) goes again after a short delay while
 * tries and time are left; a refusal of our callback address goes again at once without it; a 429 or
 * a budget wait that ran out queues the attempt (the upstream processed nothing); a definitive refusal
 * and an unknown failure end the send. `OrderSubmitter.send` classifies each failed try, asks
 * `planSendFailure`, and carries the plan out.
 */

/** Quick tries when nothing reached the upstream (the first one included). */
export const MAX_SEND_TRIES = 3;
/** The delays before the second and third tries, unless the upstream names one (capped at MAX_RETRY_DELAY_MS). */
export const RETRY_DELAYS_MS: readonly number[] = [100, 300];
export const MAX_RETRY_DELAY_MS = 1000;

/** A failed try, as the submitter classifies the upstream client's error. */
export type SendFailure =
  /** The upstream refused the order (its code); `upstreamOrderId`: the order the refusal names. */
  | { kind: 'definitive'; errorCode: string; httpStatus: number; message: string; upstreamOrderId?: number | null }
  /** Nothing reached the upstream, or it processed nothing: `rateLimited` a 429, `retryAfterMs` the delay it named. */
  | { kind: 'retryable'; reason: string; rateLimited: boolean; retryAfterMs?: number }
  /** Whether the upstream took the order is not known. */
  | { kind: 'unknown'; reason: string };

/** What a send ends with when it does not go again (the submitter's SendOutcome other than `accepted`). */
export type FailedSend =
  | { kind: 'rejected'; errorCode: string; httpStatus: number; message: string; upstreamOrderId?: number | null }
  | { kind: 'unavailable'; reason: string }
  | { kind: 'unknown'; reason: string }
  | { kind: 'queued'; reason: string };

/**
 * Try again after `delayMs`, or stop with `outcome`. `callbackRefused`: the upstream refused our callback
 * address; this and later attempts go without it (orders are then followed by polling alone).
 */
export type SendStep =
  { kind: 'retry'; delayMs: number; callbackRefused: boolean } | { kind: 'stop'; outcome: FailedSend; callbackRefused: boolean };

export interface SendTry {
  /** The try that failed, from 0. */
  tryNo: number;
  /** Milliseconds since the send began. */
  elapsedMs: number;
  /** UPSTREAM_TIMEOUT_MS: new tries start only within its first half. */
  timeoutMs: number;
  /** The failed try carried our callback address. */
  withCallback: boolean;
}

function stop(outcome: FailedSend): SendStep {
  return { kind: 'stop', outcome, callbackRefused: false };
}

export function planSendFailure(failure: SendFailure, at: SendTry): SendStep {
  const budget = at.timeoutMs / 2;
  switch (failure.kind) {
    case 'definitive':
      if (failure.errorCode === 'invalid_callback_url' && at.withCallback) {
        // not a refusal of the order: the same attempt goes again at once without the callback address
        if (at.elapsedMs < budget) return { kind: 'retry', delayMs: 0, callbackRefused: true };
        return { kind: 'stop', outcome: { kind: 'unavailable', reason: 'invalid_callback_url_retry_out_of_time' }, callbackRefused: true };
      }
      return stop({
        kind: 'rejected',
        errorCode: failure.errorCode,
        httpStatus: failure.httpStatus,
        message: failure.message,
        upstreamOrderId: failure.upstreamOrderId,
      });
    case 'retryable': {
      // the upstream processed nothing (no token in time, or its 429): the attempt waits in the queue
      if (failure.rateLimited) return stop({ kind: 'queued', reason: 'rate_limited' });
      if (failure.reason === 'budget_wait_exceeded') return stop({ kind: 'queued', reason: failure.reason });
      const delayMs = Math.min(
        failure.retryAfterMs ?? RETRY_DELAYS_MS[at.tryNo] ?? RETRY_DELAYS_MS[RETRY_DELAYS_MS.length - 1],
        MAX_RETRY_DELAY_MS,
      );
      if (at.tryNo + 1 < MAX_SEND_TRIES && at.elapsedMs + delayMs < budget) return { kind: 'retry', delayMs, callbackRefused: false };
      return stop({ kind: 'unavailable', reason: failure.reason });
    }
    case 'unknown':
      return stop({ kind: 'unknown', reason: failure.reason });
  }
}

/**
 * How long an attempt's sending lease lasts: new tries start only within the first half of
 * UPSTREAM_TIMEOUT_MS and each ends within it, so a live sender is done by 1.5 × the timeout; the
 * sweeper then turns a leftover `submitting` into `submit_unknown` within 2 × the timeout.
 */
export function sendLeaseMs(timeoutMs: number): number {
  return Math.ceil(timeoutMs * 1.5 + Math.min(timeoutMs / 4, 1000));
}
