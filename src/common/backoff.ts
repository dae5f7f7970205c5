/**
 * The one exponential backoff, pure: the n-th wait (n from 0) is `baseMs` × 2^n, never above `maxMs`;
 * or, where the last wait is stored rather than counted (an order's poll interval), the last wait
 * doubled within the same bounds. Callers add their own jitter to it when replicas or many waiters
 * must not retry in lockstep.
 */
export interface Backoff {
  baseMs: number;
  maxMs: number;
}

/** The wait before try `n + 1` (n = 0: the first wait, `baseMs`); `n` is floored at 0 and the power capped, so it never overflows. */
export function backoffMs(n: number, policy: Backoff): number {
  const k = Math.min(Math.max(0, Math.floor(n)), 40);
  return Math.min(policy.maxMs, policy.baseMs * 2 ** k);
}

/** The wait after `lastMs` (null: none yet, the base): doubled, never below `baseMs` nor above `maxMs`. */
export function doubledMs(lastMs: number | null, policy: Backoff): number {
  return Math.min(policy.maxMs, Math.max(policy.baseMs, (lastMs ?? policy.baseMs) * 2));
}

/**
 * Looking again at a row another request holds (an attempt in flight, a cancel in progress, a re-send's
 * lease): 20 ms, doubling to 200 ms.
 */
export const LOOK_AGAIN: Backoff = { baseMs: 20, maxMs: 200 };
