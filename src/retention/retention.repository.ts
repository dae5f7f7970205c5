/**
 * The retention job's SQL: its claim, the database's clock, and one bounded delete per table
 * (see retention-policy.ts for what is final in each table).
 *
 * The claim: one instance at a time across replicas runs the job. It is a row of `relay_state`
 * (`retention:claim`) holding a token of the run, taken by one `INSERT … ON CONFLICT DO UPDATE` when
 * the row is absent or was not renewed for `staleMs` (its holder died), renewed by the holder before
 * every batch and deleted at the end. Its times are the database's (`clock_timestamp()`), never a
 * replica's. A row, not an advisory lock: on the embedded database every connection shares one
 * session, where `pg_try_advisory_lock` grants the lock to everyone (docs/architecture.md).
 *
 * Each batch is one statement, so its own short transaction: it picks at most `limit` rows
 * (`FOR UPDATE SKIP LOCKED`: a row another transaction holds, e.g. an outbox event being replayed, is
 * left for the next run instead of waited for; the lock also re-checks the row's latest version, so a
 * row made pending meanwhile is not taken) and deletes them. Every batch of one run uses the cutoff
 * read once at its start.
 */
import { Injectable } from '@nestjs/common';
import { DataSource } from 'typeorm';
import { sqlRows } from '../ops/sql.js';
import { FINAL_STATES, type RetentionTable } from './retention-policy.js';

export const RETENTION_CLAIM_KEY = 'retention:claim';

const quoted = (values: readonly string[]): string => values.map((v) => `'${v}'`).join(', ');

/**
 * Deletes the rows whose `key` the query `pick` returns, and counts them. The picked keys go in as an
 * array (`= ANY`): one primary-key lookup each, whatever their order in the table.
 */
const deletePicked = (table: string, key: string, pick: string): string => `WITH deleted AS (
    DELETE FROM ${table} WHERE ${key} = ANY (ARRAY(${pick})) RETURNING 1)
  SELECT count(*)::int AS n FROM deleted`;

/**
 * $1: the cutoff, $2: the batch size. The picks of the partial indexes are ordered by the indexed age:
 * the planner keeps no statistics for an expression that only a partial index holds and guesses that
 * a third of the rows match, so with a bare LIMIT it chose a sequential scan, and the last batch of
 * every run (which finds nothing) read the whole table (92,000 rows, 26 ms); ordered, it reads the
 * index (0.03 ms).
 */
const DELETE_SQL: Record<RetentionTable, string> = {
  // History only: the SKU's changes API and console page; `changed_since` reads catalog_skus.updated_at.
  catalog_sku_changes: deletePicked(
    'catalog_sku_changes',
    'id',
    `SELECT id FROM catalog_sku_changes WHERE changed_at < $1 LIMIT $2 FOR UPDATE SKIP LOCKED`,
  ),
  // Finished runs, except those that planning and /health read, whatever their age:
  // - the newest succeeded run: where an incremental pass starts (planningFacts), /health's last_success_at;
  // - the newest succeeded full run: when a full pass is due (SYNC_FULL_EVERY);
  // - the newest finished run: /health's and the console's last sync (lastFinished);
  // - the newest finished run planned incremental: whether the upstream refused updated_after last time.
  // "Newest" is by started_at as those readers order them; a run sharing that start is kept too. Each
  // supplier's runs are planned on their own: those four are kept per supplier.
  catalog_sync_runs: deletePicked(
    'catalog_sync_runs',
    'run_id',
    `WITH kept AS (
       SELECT supplier,
              max(started_at) FILTER (WHERE status = 'succeeded') AS succeeded,
              max(started_at) FILTER (WHERE status = 'succeeded' AND mode = 'full') AS succeeded_full,
              max(started_at) FILTER (WHERE status <> 'running') AS finished,
              max(started_at) FILTER (WHERE status <> 'running' AND planned_mode = 'incremental') AS tried_incremental
         FROM catalog_sync_runs GROUP BY supplier)
     SELECT r.run_id FROM catalog_sync_runs r JOIN kept k ON k.supplier = r.supplier
      WHERE r.status IN (${quoted(FINAL_STATES.catalog_sync_runs)}) AND coalesce(r.finished_at, r.started_at) < $1
        AND r.started_at IS DISTINCT FROM k.succeeded AND r.started_at IS DISTINCT FROM k.succeeded_full
        AND r.started_at IS DISTINCT FROM k.finished AND r.started_at IS DISTINCT FROM k.tried_incremental
      ORDER BY r.started_at LIMIT $2 FOR UPDATE OF r SKIP LOCKED`,
  ),
  // Final callbacks (a pending one still waits for its order); the index callback_inbox_final_age. Not
  // those of an order whose attempt is still unknown: a callback that named its upstream order (its
  // confirming reads failed) may be the only record of it an operator can settle the order with.
  callback_inbox: deletePicked(
    'callback_inbox',
    'id',
    `SELECT c.id FROM callback_inbox c
      WHERE c.state IN (${quoted(FINAL_STATES.callback_inbox)}) AND coalesce(c.processed_at, c.received_at) < $1
        AND NOT EXISTS (SELECT 1 FROM orders o WHERE o.id = c.order_id AND o.status IN ('submitting', 'submit_unknown'))
      ORDER BY coalesce(c.processed_at, c.received_at) LIMIT $2 FOR UPDATE OF c SKIP LOCKED`,
  ),
  // Delivered or dead events, aged from their last attempt (a replay makes one pending again, and its
  // new attempts restart the clock); the index outbox_events_final_age.
  outbox_events: deletePicked(
    'outbox_events',
    'id',
    `SELECT id FROM outbox_events
      WHERE status IN (${quoted(FINAL_STATES.outbox_events)}) AND coalesce(last_attempt_at, delivered_at, created_at) < $1
      ORDER BY coalesce(last_attempt_at, delivered_at, created_at) LIMIT $2 FOR UPDATE SKIP LOCKED`,
  ),
  // The dedup keys of per-order and per-run alerts (AlertService): one each, useless an hour after
  // their alert. Not the wallet's (`alert:wallet_low:wallet`: it says the alert is active), nor the
  // job's own claim or any other state. A small table: no index of its own.
  relay_state: deletePicked(
    'relay_state',
    'key',
    `SELECT key FROM relay_state
      WHERE (key LIKE 'alert:order\\_stuck:%' OR key LIKE 'alert:sync\\_failed:%') AND updated_at < $1
      LIMIT $2 FOR UPDATE SKIP LOCKED`,
  ),
};

@Injectable()
export class RetentionRepository {
  constructor(private readonly dataSource: DataSource) {}

  /** The database's clock (every replica's cutoff is measured on it). */
  async databaseNow(): Promise<Date> {
    const [row] = await sqlRows<{ now: Date }>(this.dataSource, 'SELECT now() AS now');
    return new Date(row.now);
  }

  /** Takes the job's claim for the run `token`: false when another live run holds it. */
  async claim(token: string, owner: string, staleMs: number): Promise<boolean> {
    const rows = await sqlRows<{ key: string }>(
      this.dataSource,
      `INSERT INTO relay_state AS s (key, value, updated_at)
       VALUES ($1, jsonb_build_object('token', $2::text, 'owner', $3::text, 'claimed_at', clock_timestamp()), clock_timestamp())
       ON CONFLICT (key) DO UPDATE SET value = EXCLUDED.value, updated_at = EXCLUDED.updated_at
        WHERE s.updated_at < clock_timestamp() - $4::int * interval '1 millisecond'
       RETURNING s.key`,
      [RETENTION_CLAIM_KEY, token, owner, Math.round(staleMs)],
    );
    return rows.length === 1;
  }

  /** Renews the claim of run `token`: false when it is no longer its own (taken over as stale). */
  async renew(token: string): Promise<boolean> {
    const rows = await sqlRows<{ key: string }>(
      this.dataSource,
      `UPDATE relay_state SET updated_at = clock_timestamp() WHERE key = $1 AND value->>'token' = $2 RETURNING key`,
      [RETENTION_CLAIM_KEY, token],
    );
    return rows.length === 1;
  }

  /** Gives the claim of run `token` up (nothing when another run holds it by now). */
  async release(token: string): Promise<void> {
    await this.dataSource.query(`DELETE FROM relay_state WHERE key = $1 AND value->>'token' = $2`, [RETENTION_CLAIM_KEY, token]);
  }

  /** Deletes at most `limit` final rows of `table` older than `cutoff`; returns how many. */
  async deleteBatch(table: RetentionTable, cutoff: Date, limit: number): Promise<number> {
    const [row] = await sqlRows<{ n: number }>(this.dataSource, DELETE_SQL[table], [cutoff, limit]);
    return Number(row.n);
  }
}
