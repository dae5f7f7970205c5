/**
 * What the API key can carry, pure: from the budget's rule and the grants of the window ending now by
 * class (the ledger's, every replica's), the requests an order costs at the current mix, the orders a
 * minute the rest of the window leaves room for, and what reconciliation takes. No I/O, no clock.
 *
 * - An order's requests are its create, the reads that deliver it, its price read and its polls: the
 *   grants of `create`, `deliver`, `price` and `poll` in the window over its `create` grants (cancels
 *   are creates of the budget too; they are few). No create in the window: not known (null).
 * - Orders a minute: the window less what `sync` and `reconcile` took of it, over the requests an order
 *   costs, scaled from W′ to a minute.
 * - Reconciliation (the `reconcile` class: scheduled re-reads of finished orders, the sync's re-reads
 *   of ordered products, the periodic ping) takes at most `reconcileLimit` of any window
 *   (RECONCILE_BUDGET_SHARE); at that pace, with `steps` scheduled reads per finished order
 *   (RECONCILE_AFTER), it keeps the full schedule of `ordersPerDayFullSchedule` finished orders a day.
 *   A busier day's reads come late, and a read made late replaces the steps it passed (reconcile-plan.ts).
 */
import type { BudgetClass, BudgetRule } from './request-budget.js';

const MINUTE_MS = 60_000;
const DAY_MS = 86_400_000;

export interface KeyCapacity {
  /** Requests the key grants a minute (N′ per W′). */
  requestsPerMinute: number;
  /** Requests a placed order cost in the window ending now; null without a create in it. */
  requestsPerOrder: number | null;
  /**
   * Orders a minute the window leaves room for at that cost, besides the sync and reconciliation of
   * now; null when the cost is not known.
   */
  ordersPerMinute: number | null;
  reconcile: {
    /** `reconcile` grants in the window ending now. */
    lastWindow: number;
    /** The most it takes of any window. */
    limitPerWindow: number;
    /** That, a minute. */
    limitPerMinute: number;
    /** Finished orders a day whose every scheduled read fits in it; null when the schedule is off. */
    ordersPerDayFullSchedule: number | null;
  };
}

/** Rounded to one decimal, as a person reads it. */
const tenth = (n: number): number => Math.round(n * 10) / 10;

export function keyCapacity(
  rule: Pick<BudgetRule, 'limit' | 'windowMs' | 'reconcileLimit'>,
  window: Partial<Record<BudgetClass, number>>,
  steps: number | null,
): KeyCapacity {
  const n = (cls: BudgetClass): number => window[cls] ?? 0;
  const perMinute = MINUTE_MS / rule.windowMs;
  const creates = n('create');
  const orderRequests = creates + n('deliver') + n('price') + n('poll');
  const requestsPerOrder = creates > 0 ? orderRequests / creates : null;
  const room = Math.max(0, rule.limit - n('sync') - n('reconcile'));
  const reconcilePerDay = rule.reconcileLimit * (DAY_MS / rule.windowMs);
  return {
    requestsPerMinute: tenth(rule.limit * perMinute),
    requestsPerOrder: requestsPerOrder === null ? null : Math.round(requestsPerOrder * 100) / 100,
    ordersPerMinute: requestsPerOrder === null ? null : tenth((room / requestsPerOrder) * perMinute),
    reconcile: {
      lastWindow: n('reconcile'),
      limitPerWindow: rule.reconcileLimit,
      limitPerMinute: tenth(rule.reconcileLimit * perMinute),
      ordersPerDayFullSchedule: steps === null || steps === 0 ? null : Math.floor(reconcilePerDay / steps),
    },
  };
}
