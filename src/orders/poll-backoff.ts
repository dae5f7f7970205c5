/**
 * Polling of an unfinished order (CONTRACT §3 `ORDER_POLL_BASE_MS` / `ORDER_POLL_MAX_MS`): the wait
 * before the next poll. A poll that brought progress starts again from the base; one that brought
 * none (or failed) doubles the last wait, never below the base nor above the max.
 */
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
  return Math.min(orders.pollMaxMs, Math.max(orders.pollBaseMs, (lastMs ?? orders.pollBaseMs) * 2));
}
