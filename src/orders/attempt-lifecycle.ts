/**
 * The attempt lifecycle (CONTRACT §5), pure: what the outcome of a send does to the attempt that was
 * sent and to its order. An attempt is open while `submitting` (its first send in flight) or
 * `submit_unknown` (sent, outcome unknown; re-sent under the same number where the upstream
 * deduplicates). The order's move is made through the state table (order-state.ts, trigger
 * `submit_outcome` or `requeue`).
 *
 * | outcome of the send | attempt `submitting`                      | attempt `submit_unknown`                                      |
 * |---------------------|-------------------------------------------|---------------------------------------------------------------|
 * | accepted            | accepted; the order takes the report      | accepted; the order takes the report                          |
 * | rejected (a code)   | rejected; order `rejected`                | rejected when it answers the only send; else still unknown   |
 * | unavailable         | rejected (`upstream_unavailable`); order `rejected` | still unknown, sent again later                      |
 * | unknown             | submit_unknown; order `submit_unknown`    | still unknown, sent again later                               |
 * | queued (budget)     | queued; order `queued`                    | still unknown, sent again later                               |
 *
 * A refusal of a re-send proves nothing of the earlier send, which may have been placed (an upstream
 * may check a signature, stock or the balance before it looks the number up): only a refusal of the
 * one send an unknown attempt had (its outcome arriving after the sweep took the sender for gone)
 * closes it.
 */
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
  | { attempt: 'resend_later'; order: 'unchanged' };

export interface OpenAttempt {
  status: 'submitting' | 'submit_unknown';
  /** Sends made under its number so far, this one included. */
  sends: number;
}

const ACCEPTED: AttemptMove = { attempt: 'accepted', order: 'report' };
const REJECTED: AttemptMove = { attempt: 'rejected', order: 'rejected' };
const RESEND: AttemptMove = { attempt: 'resend_later', order: 'unchanged' };

/** The table above: [outcome] → [from `submitting`, from `submit_unknown`]. */
export const ATTEMPT_MOVES: Readonly<Record<SendOutcomeKind, readonly [AttemptMove, AttemptMove]>> = {
  accepted: [ACCEPTED, ACCEPTED],
  rejected: [REJECTED, RESEND],
  unavailable: [REJECTED, RESEND],
  unknown: [{ attempt: 'submit_unknown', order: 'submit_unknown' }, RESEND],
  queued: [{ attempt: 'queued', order: 'queued' }, RESEND],
};

export function attemptMove(outcome: SendOutcomeKind, attempt: OpenAttempt): AttemptMove {
  if (attempt.status === 'submitting') return ATTEMPT_MOVES[outcome][0];
  // the refusal answers the one send the unknown attempt had: it was not placed
  if (outcome === 'rejected' && attempt.sends <= 1) return REJECTED;
  return ATTEMPT_MOVES[outcome][1];
}
