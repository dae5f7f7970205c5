/**
 * An attempt's send and its outcome (CONTRACT §5), pure: `OrderSubmitter.send` asks `planSendFailure`
 * after each failed try, and `OrderSubmitter.record` carries out `planOutcome`. No Nest, no I/O.
 *
 * 1. The send-retry policy and the sending lease (`planSendFailure`, `sendLeaseMs`). A send is a few
 *    quick tries within the first half of UPSTREAM_TIMEOUT_MS: a try that reached nothing (`retryable`)
 *    goes again after a short delay while tries and time are left; a refusal of our callback address
 *    goes again at once without it; a 429 or a budget wait that ran out queues the attempt (the
 *    upstream processed nothing); a definitive refusal and an unknown failure end the send.
 * 2. The attempt lifecycle (`ATTEMPT_MOVES`, `attemptMove`): what the outcome of a send does to the
 *    attempt that was sent and to its order. An attempt is open while `submitting` (its first send in
 *    flight) or `submit_unknown` (sent, outcome unknown; re-sent under the same number where the
 *    upstream deduplicates), and while it is the order's current attempt. The order's move is made
 *    through the state table (order-state.ts, trigger `submit_outcome` or `requeue`). An outcome that
 *    arrives when the attempt is no longer open (closed meanwhile by the sweep and an operator, or a
 *    later attempt took over) is not taken: the attempt is left as it is but for its sending lease,
 *    which ends; an acceptance is an upstream order the order may not follow, kept as its anomaly
 *    (`OrderSubmitter.lateAcceptance`).
 *
 * | outcome of the send | attempt `submitting`                      | attempt `submit_unknown`                                      |
 * |---------------------|-------------------------------------------|---------------------------------------------------------------|
 * | accepted            | accepted; the order takes the report      | accepted; the order takes the report                          |
 * | rejected (a code)   | rejected; order `rejected`                | rejected when it answers the only send; else still unknown   |
 * | unavailable         | rejected (`upstream_unavailable`); order `rejected` | still unknown, sent again later                      |
 * | unknown             | submit_unknown; order `submit_unknown`    | still unknown, sent again later                               |
 * | queued (budget)     | queued; order `queued`                    | still unknown, sent again later                               |
 * | any, the attempt no longer open | left (its lease ends); order unchanged, or an acceptance's upstream order `untracked` | the same |
 *
 *    A refusal of a re-send proves nothing of the earlier send, which may have been placed (an upstream
 *    may check a signature, stock or the balance before it looks the number up): only a refusal of the
 *    one send an unknown attempt had (its outcome arriving after the sweep took the sender for gone)
 *    closes it.
 * 3. The outcome's plan (`planOutcome`): a row of the table turned into the whole plan the submitter
 *    carries out: the attempt's fields, the order's move (its trigger, patch and event detail), the
 *    placement counted and the log.
 */
import type { AttemptPatch, AttemptRequest, AttemptStatus } from './order.records.js';

// ------------------------------------------------------------------------------- 1. the send's retries

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

// ------------------------------------------------------------------------------- 2. the outcome's move

export type SendOutcomeKind = 'accepted' | 'rejected' | 'unavailable' | 'unknown' | 'queued';

export type AttemptMove =
  /** accepted upstream: the order takes the upstream's report */
  | { attempt: 'accepted'; order: 'report' }
  /** closed: nothing was placed (a refusal, or nothing reached the upstream) */
  | { attempt: 'rejected'; order: 'rejected' }
  | { attempt: 'submit_unknown'; order: 'submit_unknown' }
  /** held back by the request budget: nothing was sent or processed */
  | { attempt: 'queued'; order: 'queued' }
  /** an unknown attempt stays unknown and is sent again later under the same number */
  | { attempt: 'resend_later'; order: 'unchanged' }
  /**
   * the attempt is no longer open: left as it is (its sending lease ends); an acceptance is an upstream
   * order the order may not follow (`untracked`), anything else leaves the order unchanged
   */
  | { attempt: 'left'; order: 'untracked' | 'unchanged' };

/** The attempt an outcome is for, as the locked rows have it. */
export interface AttemptFacts {
  status: AttemptStatus;
  /** Sends made under its number so far, this one included. */
  sends: number;
  /** It is the order's current attempt. */
  current: boolean;
}

const ACCEPTED: AttemptMove = { attempt: 'accepted', order: 'report' };
const REJECTED: AttemptMove = { attempt: 'rejected', order: 'rejected' };
const RESEND: AttemptMove = { attempt: 'resend_later', order: 'unchanged' };

const LEFT: AttemptMove = { attempt: 'left', order: 'unchanged' };

/** The table above: [outcome] → [from `submitting`, from `submit_unknown`, no longer open]. */
export const ATTEMPT_MOVES: Readonly<Record<SendOutcomeKind, readonly [AttemptMove, AttemptMove, AttemptMove]>> = {
  accepted: [ACCEPTED, ACCEPTED, { attempt: 'left', order: 'untracked' }],
  rejected: [REJECTED, RESEND, LEFT],
  unavailable: [REJECTED, RESEND, LEFT],
  unknown: [{ attempt: 'submit_unknown', order: 'submit_unknown' }, RESEND, LEFT],
  queued: [{ attempt: 'queued', order: 'queued' }, RESEND, LEFT],
};

/**
 * Whether an outcome can close its order `rejected` (by the table: only then is there a refusal for an
 * offer order's failover to follow, so its route is planned only for these).
 */
export function mayCloseRejected(outcome: SendOutcomeKind): boolean {
  return ATTEMPT_MOVES[outcome].some((m) => m.order === 'rejected');
}

export function attemptMove(outcome: SendOutcomeKind, attempt: AttemptFacts): AttemptMove {
  if (!attempt.current || (attempt.status !== 'submitting' && attempt.status !== 'submit_unknown')) return ATTEMPT_MOVES[outcome][2];
  if (attempt.status === 'submitting') return ATTEMPT_MOVES[outcome][0];
  // the refusal answers the one send the unknown attempt had: it was not placed
  if (outcome === 'rejected' && attempt.sends <= 1) return REJECTED;
  return ATTEMPT_MOVES[outcome][1];
}

// ------------------------------------------------------------------------------- 3. the outcome's plan

/** What the plan needs of a send's outcome (order-submitter.service.ts SendOutcome). */
export type OutcomeFacts =
  /** `changedRequest`: the request as sent when it differs from the attempt's (sent again without callback_url). */
  | { kind: 'accepted'; upstreamOrderId: number; changedRequest: AttemptRequest | null }
  | { kind: 'rejected'; errorCode: string; httpStatus: number; message: string; upstreamOrderId?: number | null }
  | { kind: 'unavailable' | 'unknown' | 'queued'; reason: string };

/** The order's side of an outcome. */
export type OrderOutcomeMove =
  /** the order takes the upstream's report (OrderUpdater.applyReport) */
  | { kind: 'report' }
  | { kind: 'unchanged' }
  /** an acceptance of an attempt no longer open: the upstream order, unless the order follows it, is kept as its anomaly */
  | { kind: 'untracked' }
  /** a local move through the state table (OrderUpdater.moveLocal) */
  | {
      kind: 'move';
      trigger: 'submit_outcome' | 'requeue';
      to: 'rejected' | 'submit_unknown' | 'queued';
      patch: { error_code: string | null; error_message: string | null };
      detail: Record<string, unknown>;
    };

/** The placement counted (`relay_order_placements_total{outcome}`). */
export type PlacementMetric = 'accepted' | 'deduplicated' | 'rejected' | 'unavailable' | 'queued' | 'unknown';

export interface OutcomePlan {
  /** The outcome was taken; false: the attempt was no longer open and is left as it is. */
  taken: boolean;
  /** Written on the attempt (nothing when empty). */
  attempt: AttemptPatch;
  order: OrderOutcomeMove;
  /** Counted once committed; null: nothing settled (a re-send still unknown). */
  metric: PlacementMetric | null;
  /** Logged once committed: a re-send refused (the attempt stays unknown), or an unknown outcome. */
  log: 'resend_refused' | 'unknown' | null;
}

/**
 * The whole of what an outcome does to the attempt and its order (the table above), as data the
 * submitter carries out in one transaction. `leased`: the attempt's sending lease is set. `resendAt`:
 * when an attempt left unknown is sent again.
 */
export function planOutcome(
  outcome: OutcomeFacts,
  attempt: AttemptFacts & { attemptNo: number; downstreamOrderNo: string; leased: boolean },
  at: { now: Date; resendAt: Date },
): OutcomePlan {
  const move = attemptMove(outcome.kind, attempt);
  const detail = { attempt: attempt.attemptNo, downstream_order_no: attempt.downstreamOrderNo };
  if (move.attempt === 'left') {
    // not taken: nothing settles and nothing is counted; its send is over, so its sending lease ends
    return { taken: false, attempt: attempt.leased ? { sending_until: null } : {}, order: { kind: move.order }, metric: null, log: null };
  }
  if (move.attempt === 'resend_later') {
    // still unknown, sent again later under the same number; a callback or an operator may settle it first
    const refusal =
      outcome.kind === 'rejected' ? { http_status: outcome.httpStatus, error_code: outcome.errorCode, error_message: outcome.message } : {};
    return {
      taken: true,
      attempt: { sending_until: null, next_resend_at: at.resendAt, ...refusal },
      order: { kind: 'unchanged' },
      metric: null,
      log: outcome.kind === 'rejected' ? 'resend_refused' : null,
    };
  }
  switch (outcome.kind) {
    case 'accepted':
      return {
        taken: true,
        attempt: {
          status: 'accepted',
          sending_until: null,
          upstream_order_id: outcome.upstreamOrderId,
          finished_at: at.now,
          http_status: 200,
          ...(outcome.changedRequest ? { request: outcome.changedRequest } : {}),
        },
        order: { kind: 'report' },
        metric: attempt.status === 'submit_unknown' ? 'deduplicated' : 'accepted',
        log: null,
      };
    case 'rejected': {
      // what the upstream kept of it, for an operator (a payment_failed order, canceled there)
      const kept = outcome.upstreamOrderId ? { upstream_order_id: outcome.upstreamOrderId } : {};
      return {
        taken: true,
        attempt: {
          status: 'rejected',
          sending_until: null,
          finished_at: at.now,
          ...kept,
          http_status: outcome.httpStatus,
          error_code: outcome.errorCode,
          error_message: outcome.message,
        },
        order: {
          kind: 'move',
          trigger: 'submit_outcome',
          to: 'rejected',
          patch: { error_code: outcome.errorCode, error_message: outcome.message },
          detail: { ...detail, error_code: outcome.errorCode, ...kept },
        },
        metric: 'rejected',
        log: null,
      };
    }
    case 'unavailable':
      return {
        taken: true,
        attempt: {
          status: 'rejected',
          sending_until: null,
          finished_at: at.now,
          error_code: 'upstream_unavailable',
          error_message: outcome.reason,
        },
        order: {
          kind: 'move',
          trigger: 'submit_outcome',
          to: 'rejected',
          patch: { error_code: 'upstream_unavailable', error_message: `the upstream could not be reached (${outcome.reason})` },
          detail: { ...detail, error_code: 'upstream_unavailable' },
        },
        metric: 'unavailable',
        log: null,
      };
    case 'queued':
      return {
        taken: true,
        attempt: { status: 'queued', sending_until: null },
        order: {
          kind: 'move',
          trigger: 'requeue',
          to: 'queued',
          patch: { error_code: null, error_message: null },
          detail: { ...detail, reason: outcome.reason },
        },
        metric: 'queued',
        log: null,
      };
    case 'unknown':
      return {
        taken: true,
        attempt: { status: 'submit_unknown', sending_until: null, unknown_since: at.now, next_resend_at: at.resendAt },
        order: {
          kind: 'move',
          trigger: 'submit_outcome',
          to: 'submit_unknown',
          patch: { error_code: null, error_message: `outcome unknown: ${outcome.reason}` },
          detail: { ...detail, reason: outcome.reason },
        },
        metric: 'unknown',
        log: 'unknown',
      };
  }
}
