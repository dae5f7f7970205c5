/**
 * Polling of an unfinished order (CONTRACT §3 `ORDER_POLL_BASE_MS` / `ORDER_POLL_MAX_MS`): the wait
 * before the next poll. A poll that brought progress starts again from the base; one that brought
 * none (or failed) doubles the last wait, never below the base nor above the max (`doubledMs`, the
 * one exponential backoff of common/backoff.ts).
 */
import { doubledMs } from '../common/backoff.js';

/**
 * An order whose create carried our callback_url and was accepted expects callbacks for its status
 * changes: it is polled as a safety net, starting CALLBACK_POLL_FACTOR.base times later and backing
 * off to CALLBACK_POLL_FACTOR.max times the usual longest wait (each poll spends the upstream's
 * request budget). An order without callbacks is polled at the configured pace.
 */
export const CALLBACK_POLL_FACTOR = { base: 6, max: 3 } as const;

export function pollPace(
  orders: { pollBaseMs: number; pollMaxMs: number },
  callbacksExpected: boolean,
): { pollBaseMs: number; pollMaxMs: number } {
  if (!callbacksExpected) return orders;
  return { pollBaseMs: orders.pollBaseMs * CALLBACK_POLL_FACTOR.base, pollMaxMs: orders.pollMaxMs * CALLBACK_POLL_FACTOR.max };
}

export function nextPollInterval(lastMs: number | null, progressed: boolean, orders: { pollBaseMs: number; pollMaxMs: number }): number {
  if (progressed) return orders.pollBaseMs;
  return doubledMs(lastMs, { baseMs: orders.pollBaseMs, maxMs: orders.pollMaxMs });
}

/**
 * The share of the wait within which a callback leaves the next poll where it is (see `callbackNextPoll`).
 */
export const CALLBACK_MOVE_SLACK = 1 / 8;

/**
 * The next poll after a callback applied as the upstream's word: `intervalMs` from `now`, so that an
 * order whose callbacks keep arriving is not polled on top of them. A next poll already at most
 * CALLBACK_MOVE_SLACK of the wait short of that is left as it is (null: nothing to write), so that a
 * callback right behind the last move (e.g. `paid` just after the create's answer said `paid`) costs
 * no write of the order's row for a move the poller would not notice.
 */
export function callbackNextPoll(current: Date | null, now: Date, intervalMs: number): Date | null {
  const at = now.getTime() + intervalMs;
  if (current !== null && current.getTime() >= at - intervalMs * CALLBACK_MOVE_SLACK) return null;
  return new Date(at);
}
