/**
 * Polling of an unfinished order (CONTRACT §3 `ORDER_POLL_BASE_MS` / `ORDER_POLL_MAX_MS`): the wait
 * before the next poll. A poll that brought progress starts again from the base; one that brought
 * none (or failed) doubles the last wait, never below the base nor above the max.
 */
export function nextPollInterval(lastMs: number | null, progressed: boolean, orders: { pollBaseMs: number; pollMaxMs: number }): number {
  if (progressed) return orders.pollBaseMs;
  return Math.min(orders.pollMaxMs, Math.max(orders.pollBaseMs, (lastMs ?? orders.pollBaseMs) * 2));
}
