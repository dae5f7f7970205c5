/**
 * The retry schedule of shop webhooks (CONTRACT §7). Pure.
 *
 * After the n-th failed attempt the next one is due after base·2^(n−1), capped at `maxMs`, minus a
 * random part of up to `jitter` of it (so replicas and many events do not retry in lockstep). With a
 * jitter below one half, each delay is strictly longer than the one before until the cap.
 * The defaults: 10 s, 20 s, 40 s, … 1 h; 12 attempts span about 3.5 hours.
 */
import { backoffMs } from '../common/backoff.js';

export interface BackoffPolicy {
  baseMs: number;
  maxMs: number;
  /** Fraction of the delay that may be taken off at random, 0 ≤ jitter < 0.5. */
  jitter: number;
}

export const WEBHOOK_BACKOFF: BackoffPolicy = { baseMs: 10_000, maxMs: 3_600_000, jitter: 0.25 };

/** The delay before the next attempt after `failures` failed attempts (failures ≥ 1). */
export function backoffDelayMs(failures: number, policy: BackoffPolicy = WEBHOOK_BACKOFF, random: () => number = Math.random): number {
  const n = Math.max(1, Math.floor(failures));
  const full = backoffMs(n - 1, policy);
  const r = Math.min(1, Math.max(0, random()));
  return Math.max(1, Math.round(full * (1 - policy.jitter * r)));
}

export type AttemptOutcome = { status: 'delivered' } | { status: 'pending'; retryInMs: number } | { status: 'dead' };

/**
 * What becomes of an event after an attempt: delivered on a 2xx; otherwise retried with backoff, or
 * `dead` once `maxAttempts` attempts have failed.
 */
export function attemptOutcome(
  succeeded: boolean,
  attemptsSoFar: number,
  maxAttempts: number,
  policy: BackoffPolicy = WEBHOOK_BACKOFF,
  random: () => number = Math.random,
): AttemptOutcome {
  if (succeeded) return { status: 'delivered' };
  if (attemptsSoFar >= maxAttempts) return { status: 'dead' };
  return { status: 'pending', retryInMs: backoffDelayMs(attemptsSoFar, policy, random) };
}

/** A 2xx answer. */
export function isDelivered(httpStatus: number | null): boolean {
  return httpStatus !== null && httpStatus >= 200 && httpStatus < 300;
}
