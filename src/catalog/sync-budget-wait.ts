/**
 * How long a sync run's requests waited for the upstream request budget (the run's `budget_wait_ms`).
 *
 * The budgeted upstream client takes a token for every request and the budget service records each
 * grant's wait in the `relay_upstream_budget_wait_seconds` histogram, by class. Every request of class
 * `sync` of a supplier's key in a process is a sync run's (its pages, its categories, its ping and its
 * own product reads), and a process runs one sync of a supplier at a time: the growth of that histogram's sum over the run is the
 * total its requests waited, waits through a 429 block included (the token after a 429 waits for the
 * block's end). Summed over the requests: pages fetched at once that wait together each count.
 * With the budget off no token is taken and the total stays 0.
 */
import type { Metrics } from '../ops/metrics.service.js';
import type { ActiveRun } from './sync-run-state.js';

const WAIT_SUM = 'relay_upstream_budget_wait_seconds_sum';

/**
 * Milliseconds the `sync` requests of this process have waited for the budget since it started: of
 * one supplier's key when `supplier` is given, else of every key.
 */
export async function syncBudgetWaitedMs(metrics: Metrics, supplier?: string): Promise<number> {
  const { values } = await metrics.budgetWait.get();
  let seconds = 0;
  for (const v of values) {
    if (v.metricName === WAIT_SUM && v.labels.class === 'sync' && (supplier === undefined || v.labels.supplier === supplier))
      seconds += v.value;
  }
  return seconds * 1000;
}

/** Sets the run's `budgetWaitMs` counter to what its requests have waited so far. */
export async function updateBudgetWait(run: ActiveRun, metrics: Metrics): Promise<void> {
  run.counters.budgetWaitMs = Math.max(0, (await syncBudgetWaitedMs(metrics, run.supplier)) - run.budgetWaitFromMs);
}
