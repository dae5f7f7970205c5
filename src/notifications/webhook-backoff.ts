/**
 * The retry schedule of shop webhooks (CONTRACT §7), and the sender's wait between its delivery
 * cycles. Pure.
 *
 * After the n-th failed attempt the next one is due after base·2^(n−1), capped at `maxMs`, minus a
 * random part of up to `jitter` of it (so replicas and many events do not retry in lockstep). With a
 * jitter below one half, each delay is strictly longer than the one before until the cap.
 * The defaults: 10 s, 20 s, 40 s, … 1 h; 12 attempts span about 3.5 hours.
 */
import { backoffMs, type Backoff } from '../common/backoff.js';

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

/** What one delivery cycle of the sender did: events claimed, and how many of them the shop took. */
export interface DeliveryCycle {
  claimed: number;
  delivered: number;
}

/** The sender's cadence: the look at an idle outbox, the size of a claim, the rest given to a failing shop. */
export interface CycleCadence {
  idleMs: number;
  batch: number;
  /** The rest after failed cycles in a row (the first after one, doubling): `baseMs` × 2^(failed − 1), up to `maxMs`. */
  pause: Backoff;
}

/**
 * The wait before the sender's next cycle. A cycle that claimed events and delivered none counts as
 * failed; after `failedCycles` of them in a row (this one included) the shop is given a rest instead of
 * the next due events, so that a shop that is down is not flooded. Otherwise a full claim is followed
 * at once (more may be due), a partial or empty one after `idleMs`. A kick during the cycle (`kicked`)
 * runs the next one at once, failing shop or not.
 */
export function nextCycleMs(cycle: DeliveryCycle, failedCycles: number, kicked: boolean, cadence: CycleCadence): number {
  if (kicked) return 0;
  if (failedCycles > 0) return backoffMs(failedCycles - 1, cadence.pause);
  return cycle.claimed < cadence.batch ? cadence.idleMs : 0;
}

/** The failed cycles in a row after `cycle`, `before` being the count up to it. */
export function failedCyclesAfter(before: number, cycle: DeliveryCycle): number {
  return cycle.claimed > 0 && cycle.delivered === 0 ? before + 1 : 0;
}
