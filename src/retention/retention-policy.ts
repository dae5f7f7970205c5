/**
 * What the retention job may delete, and when (pure). Four tables grow with every sync, callback and
 * shop notification, and `relay_state` with every stuck order and failed sync (their alert keys); their
 * rows are deleted once they are final and older than RETENTION_DAYS:
 *
 * - `catalog_sku_changes`: every row is final (history only: `GET /internal/catalog/skus/{code}/changes`
 *   and the console show it; `changed_since` reads the SKU rows' own `updated_at`); its age from
 *   `changed_at`; never deleted: a SKU's `created` entry, kept on the SKU row since migration
 *   20261122008000.
 * - `catalog_sync_runs`: final `succeeded`, `failed`; age from `finished_at`; never deleted: `running`,
 *   and the four runs that planning and `/health` read, per supplier (RetentionRepository).
 * - `callback_inbox`: final `applied`, `unknown_order`, `read_failed`, `ignored`; age from
 *   `processed_at` (else `received_at`); never deleted: `pending` (waiting for its order: an attempt in
 *   flight, a cancel, a retry), and any callback of an order whose attempt is still `submitting` or
 *   `submit_unknown` (it may be the only record of its upstream order).
 * - `outbox_events`: final `delivered`, `dead`; age from the last attempt (else `delivered_at`, else
 *   `created_at`); never deleted: `pending` (a replayed event is pending again).
 * - `relay_state`: final: the alert keys of stuck orders and failed syncs (`alert:order_stuck:…`,
 *   `alert:sync_failed:…`: one per order or run, deduplicating an alert for an hour); age from
 *   `updated_at`; never deleted: every other key (the wallet alert's key says that alert is active;
 *   claims, snapshots).
 *
 * Orders, their attempts, events and refunds are never deleted: they are the money's audit trail.
 */

/** The tables the job cleans, in the order it cleans them. */
export const RETENTION_TABLES = ['catalog_sku_changes', 'catalog_sync_runs', 'callback_inbox', 'outbox_events', 'relay_state'] as const;
export type RetentionTable = (typeof RETENTION_TABLES)[number];
export type RetentionCounts = Record<RetentionTable, number>;

/**
 * The final states of the tables that have a lifecycle (their CHECK constraints list the rest). A state
 * added later is kept until it is listed here. The partial indexes of migration
 * `20261122005000_retention` carry the same lists (retention-policy.spec.ts checks it).
 */
export const FINAL_STATES = {
  catalog_sync_runs: ['succeeded', 'failed'],
  callback_inbox: ['applied', 'unknown_order', 'read_failed', 'ignored'],
  outbox_events: ['delivered', 'dead'],
} as const satisfies Partial<Record<RetentionTable, readonly string[]>>;

/** Rows one statement deletes at most: each batch is its own short transaction. */
export const RETENTION_BATCH_SIZE = 5_000;
/** The first run after the start, then one every interval. */
export const RETENTION_FIRST_RUN_DELAY_MS = 60_000;
export const RETENTION_INTERVAL_MS = 3_600_000;
/**
 * A claim on the job not renewed for this long is taken over by another instance (its process died).
 * The holder renews it before every batch, and a batch takes well under a second.
 */
export const RETENTION_CLAIM_STALE_MS = 10 * 60_000;

const DAY_MS = 86_400_000;

/** Rows older than this are deleted: `days` whole days of 24 h before the database's `now()`. */
export function retentionCutoff(databaseNow: Date, days: number): Date {
  if (!Number.isInteger(days) || days < 1) throw new RangeError(`retention days must be a whole number of at least 1, got ${days}`);
  return new Date(databaseNow.getTime() - days * DAY_MS);
}

export function noneDeleted(): RetentionCounts {
  return { catalog_sku_changes: 0, catalog_sync_runs: 0, callback_inbox: 0, outbox_events: 0, relay_state: 0 };
}

export function totalDeleted(counts: RetentionCounts): number {
  return RETENTION_TABLES.reduce((sum, t) => sum + counts[t], 0);
}

/** `catalog_sku_changes 12, outbox_events 3`: the tables with deleted rows, for a log line. */
export function describeDeleted(counts: RetentionCounts): string {
  const parts = RETENTION_TABLES.filter((t) => counts[t] > 0).map((t) => `${t} ${counts[t]}`);
  return parts.length > 0 ? parts.join(', ') : 'nothing';
}

export type DrainEnd = 'drained' | 'stopped';

/**
 * Calls `deleteBatch(limit)` until a batch deletes fewer than `limit` rows, or `proceed()` says no
 * before a batch (a shutdown, a lost claim). Each deleted count is reported to `onBatch` as it comes.
 */
export async function drain(
  deleteBatch: (limit: number) => Promise<number>,
  options: { limit: number; proceed: () => boolean | Promise<boolean>; onBatch?: (deleted: number) => void },
): Promise<DrainEnd> {
  for (;;) {
    if (!(await options.proceed())) return 'stopped';
    const deleted = await deleteBatch(options.limit);
    if (deleted > 0) options.onBatch?.(deleted);
    if (deleted < options.limit) return 'drained';
  }
}
