/**
 * The upstream's state as `/health` shows it, per supplier and for the whole relay, pure (CONTRACT §5,
 * §10): what a ping's failure means, how a supplier's ping and its key's block combine, which of
 * several suppliers' states is the worst, and the age of the reconciliation's backlog.
 */

/**
 * A supplier's upstream: `up`; `auth_failed` when the upstream refused our credentials (HTTP 401/403:
 * a wrong key or secret, a disabled API user; only an operator mends it); `down` when it could not be
 * reached or failed otherwise; `rate_limited` while a 429 keeps its key blocked; `unknown` before any
 * ping.
 */
export type UpstreamState = 'up' | 'down' | 'unknown' | 'rate_limited' | 'auth_failed';

/** What a ping found: reached, refused our credentials, or failed. */
export type PingStatus = 'up' | 'down' | 'auth_failed';

/** How bad each state is: the relay's `upstream` is the enabled suppliers' highest. */
export const UPSTREAM_RANK: Readonly<Record<UpstreamState, number>> = {
  up: 0,
  unknown: 1,
  rate_limited: 2,
  down: 3,
  auth_failed: 4,
};

/** Whether an upstream's HTTP status refuses our credentials (a wrong key or secret, a disabled API user). */
export const refusesCredentials = (httpStatus: number | null | undefined): boolean => httpStatus === 401 || httpStatus === 403;

/** A failed ping's status: `auth_failed` for a refusal of our credentials, `down` otherwise. */
export const failedPingStatus = (httpStatus: number | null | undefined): PingStatus =>
  refusesCredentials(httpStatus) ? 'auth_failed' : 'down';

/**
 * A supplier's state from its last ping (null: none yet) and its key's block: a blocked key is
 * `rate_limited` whatever the ping saw, except a refusal of our credentials, which stays the worse news.
 */
export function supplierUpstreamState(ping: PingStatus | null, blocked: boolean): UpstreamState {
  if (ping === 'auth_failed') return 'auth_failed';
  if (blocked) return 'rate_limited';
  return ping ?? 'unknown';
}

/**
 * The index of the worst of `states` (the first of equals), or -1 for none: the relay's `upstream` is
 * that supplier's.
 */
export function worstIndex(states: readonly UpstreamState[]): number {
  let worst = -1;
  states.forEach((s, i) => {
    if (worst < 0 || UPSTREAM_RANK[s] > UPSTREAM_RANK[states[worst]]) worst = i;
  });
  return worst;
}

/** Whole seconds since the oldest due read (0 when it is not due yet or in the future), null without one. */
export function backlogAgeSeconds(oldestDue: Date | null, now: Date): number | null {
  if (oldestDue === null) return null;
  return Math.max(0, Math.floor((now.getTime() - oldestDue.getTime()) / 1000));
}
