/**
 * Sync runs, each of one supplier's catalog. "One run at a time per supplier across replicas" is the
 * partial unique index on `supplier` where `status = 'running'`
 * (advisory and row locks exclude nothing on the embedded database's single session); a running row
 * whose heartbeat stopped is recovered as failed.
 *
 * Heartbeats are written, and judged stale, by the database's clock (`clock_timestamp()`), never a
 * replica's: with replicas' clocks apart by more than the stale delay, a live run would look abandoned
 * to the one ahead. The process that runs a run only touches its row as its owner and while it is
 * `running`; each such write says whether it still held the run (see SyncRunLease).
 */
import { Injectable } from '@nestjs/common';
import { DataSource, type EntityManager } from 'typeorm';
import type { SkippedProduct } from '../upstream/upstream.shapes.js';
import type { SkippedCategory } from '../upstream/upstream.types.js';
import type { ChangeCounts } from './sku-diff.js';
import type { PassMode } from './sync-plan.js';
import { isUniqueViolation } from '../database/pg-errors.js';
import type { CatalogSyncRunsRow } from '../database/rows.generated.js';

type Db = Pick<EntityManager, 'query'>;

export type RunStatus = 'running' | 'succeeded' | 'failed';

/**
 * A run's row (`catalog_sync_runs`, rows.generated.ts): its columns, the text and jsonb ones as the
 * domain names them. `reread_products`: the ordered products an incremental run re-read on its own
 * (SYNC_REREAD_ORDERED); `images_fetched`, `image_bytes`, `media_ms`: the images the run's media pass
 * downloaded, their bytes, and the pass's time.
 */
export interface SyncRunRecord extends Pick<
  CatalogSyncRunsRow,
  | 'run_id'
  | 'requested_mode'
  | 'fallback'
  | 'trigger'
  | 'owner'
  | 'started_at'
  | 'heartbeat_at'
  | 'finished_at'
  | 'updated_after'
  | 'pages_total'
  | 'pages_done'
  | 'products_seen'
  | 'skus_seen'
  | 'skus_created'
  | 'skus_changed'
  | 'skus_delisted'
  | 'skus_relisted'
  | 'conflicts'
  | 'confirmed_live'
  | 'unconfirmed'
  | 'reread_products'
  | 'images_fetched'
  | 'media_ms'
  | 'note'
  | 'error'
> {
  /** The supplier whose catalog the run syncs. */
  supplier: string;
  mode: PassMode;
  planned_mode: PassMode;
  status: RunStatus;
  changes: Partial<ChangeCounts>;
  /**
   * Milliseconds the run's upstream requests waited for the request budget, summed (bigint: text when
   * read, a number in the record of the run a process is running).
   */
  budget_wait_ms: number | string;
  /** Products of the listing left out for their shape (at most MAX_SKIPPED_LISTED). */
  skipped_products: SkippedProduct[];
  /** Categories of the listing left out for their shape (at most MAX_SKIPPED_LISTED). */
  skipped_categories: SkippedCategory[];
  /** Images left out of the run's products, with why (at most MAX_SKIPPED_LISTED). */
  skipped_images: SkippedImage[];
  /** bigint, as budget_wait_ms. */
  image_bytes: number | string;
}

export interface RunCounters {
  pagesTotal: number;
  pagesDone: number;
  productsSeen: number;
  skusSeen: number;
  skusCreated: number;
  skusChanged: number;
  skusDelisted: number;
  skusRelisted: number;
  changes: ChangeCounts;
  conflicts: number;
  confirmedLive: number;
  unconfirmed: number;
  /** Milliseconds the run's upstream requests waited for the request budget, summed over the requests. */
  budgetWaitMs: number;
  /** Products of the listing left out for their shape, by id (null: no usable id), at most MAX_SKIPPED_LISTED. */
  skippedProducts: SkippedProduct[];
  /** Categories left out for their shape (at most MAX_SKIPPED_LISTED). */
  skippedCategories: SkippedCategory[];
  /** Ordered products re-read after an incremental pass (`GET /products/{id}` requests made). */
  rereadProducts: number;
  /** Images left out (refused), with their product and why, at most MAX_SKIPPED_LISTED. */
  skippedImages: SkippedImage[];
  imagesFetched: number;
  imageBytes: number;
  mediaMs: number;
}

/**
 * An image left out of a product, or a category's icon left out (CONTRACT §5: a run's
 * `skipped_images`): an icon's entry has `product_id` null and its `category_id`.
 */
export interface SkippedImage {
  product_id: number | null;
  category_id?: number;
  url: string;
  reason: string;
}

/** The most products left out for their shape that a run lists (the count goes on in the metric). */
export const MAX_SKIPPED_LISTED = 100;

export interface NewRun {
  runId: string;
  supplier: string;
  mode: PassMode;
  requestedMode: string | null;
  trigger: string;
  owner: string;
  startedAt: Date;
  updatedAfter: Date | null;
  note: string | null;
}

const COUNTER_SET = `pages_total = $2, pages_done = $3, products_seen = $4, skus_seen = $5, skus_created = $6,
  skus_changed = $7, skus_delisted = $8, skus_relisted = $9, changes = $10::jsonb, conflicts = $11,
  confirmed_live = $12, unconfirmed = $13, budget_wait_ms = $14, skipped_products = $15::jsonb, reread_products = $16,
  skipped_images = $17::jsonb, images_fetched = $18, image_bytes = $19, media_ms = $20, skipped_categories = $21::jsonb`;

function counterParams(c: RunCounters): unknown[] {
  return [
    c.pagesTotal,
    c.pagesDone,
    c.productsSeen,
    c.skusSeen,
    c.skusCreated,
    c.skusChanged,
    c.skusDelisted,
    c.skusRelisted,
    JSON.stringify(c.changes),
    c.conflicts,
    c.confirmedLive,
    c.unconfirmed,
    Math.max(0, Math.round(c.budgetWaitMs)),
    JSON.stringify(c.skippedProducts),
    c.rereadProducts,
    JSON.stringify(c.skippedImages),
    c.imagesFetched,
    c.imageBytes,
    Math.max(0, Math.round(c.mediaMs)),
    JSON.stringify(c.skippedCategories),
  ];
}

@Injectable()
export class SyncRunRepository {
  constructor(private readonly dataSource: DataSource) {}

  private get db(): Db {
    return this.dataSource.manager;
  }

  /** Inserts a running run; false when another run is running (the unique index refused it). */
  async tryInsertRunning(run: NewRun): Promise<boolean> {
    try {
      await this.db.query(
        `INSERT INTO catalog_sync_runs (run_id, supplier, mode, planned_mode, requested_mode, trigger, status, owner, started_at,
          heartbeat_at, updated_after, note)
         VALUES ($1, $9, $2, $2, $3, $4, 'running', $5, $6, clock_timestamp(), $7, $8)`,
        [run.runId, run.mode, run.requestedMode, run.trigger, run.owner, run.startedAt, run.updatedAfter, run.note, run.supplier],
      );
      return true;
    } catch (e) {
      if (isUniqueViolation(e)) return false;
      throw e;
    }
  }

  /** The running run of a supplier. */
  async running(supplier: string): Promise<SyncRunRecord | null> {
    const rows = (await this.db.query(`SELECT * FROM catalog_sync_runs WHERE status = 'running' AND supplier = $1 LIMIT 1`, [
      supplier,
    ])) as SyncRunRecord[];
    return rows[0] ?? null;
  }

  /**
   * Fails a running run whose heartbeat is older than `staleMs` by the database's clock, unless it is
   * `exceptRunId` (the run the calling process is executing: never its own), in `em`'s transaction
   * when given. Returns the run (id, mode, the error recorded), if any.
   */
  async recoverStale(
    supplier: string,
    staleMs: number,
    now: Date,
    exceptRunId: string | null,
    em: Db = this.db,
  ): Promise<{ runId: string; mode: string; error: string } | null> {
    const rows = (await em.query(
      `WITH u AS (
         UPDATE catalog_sync_runs SET status = 'failed', finished_at = $2,
                error = 'abandoned: no heartbeat since ' || to_char(heartbeat_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"')
                  || ' (the process running it stopped)'
          WHERE status = 'running' AND supplier = $4 AND heartbeat_at < clock_timestamp() - $1::int * interval '1 millisecond'
            AND ($3::text IS NULL OR run_id <> $3::text)
          RETURNING run_id, mode, error)
       SELECT run_id, mode, error FROM u`,
      [Math.round(staleMs), now, exceptRunId, supplier],
    )) as Array<{ run_id: string; mode: string; error: string }>;
    const [row] = rows;
    return row ? { runId: row.run_id, mode: row.mode, error: row.error } : null;
  }

  /**
   * Progress of a running run; also its heartbeat (a run whose heartbeat stops is recovered as failed).
   * Returns the rows updated: 0 when the run is no longer running under this owner (another process
   * recovered it as abandoned): its owner must stop it.
   */
  async heartbeat(runId: string, owner: string, c: RunCounters): Promise<number> {
    return this.count(
      this.db,
      `UPDATE catalog_sync_runs SET ${COUNTER_SET}, heartbeat_at = clock_timestamp()
        WHERE run_id = $1 AND owner = $22 AND status = 'running' RETURNING 1`,
      [runId, ...counterParams(c), owner],
    );
  }

  /** Returns the rows updated (0: the run is no longer running under this owner). */
  async setMode(runId: string, owner: string, mode: PassMode, fallback: string | null): Promise<number> {
    return this.count(
      this.db,
      `UPDATE catalog_sync_runs SET mode = $2, fallback = $3 WHERE run_id = $1 AND owner = $4 AND status = 'running' RETURNING 1`,
      [runId, mode, fallback, owner],
    );
  }

  /** Records the end of a running run of this owner. Returns the rows updated (0: it no longer held the run). */
  async finish(
    em: Db,
    runId: string,
    owner: string,
    r: { status: 'succeeded' | 'failed'; counters: RunCounters; error: string | null; note: string | null; now: Date },
  ): Promise<number> {
    return this.count(
      em,
      `UPDATE catalog_sync_runs SET ${COUNTER_SET}, status = $22, error = $23, note = coalesce($24, note), finished_at = $25,
              heartbeat_at = clock_timestamp()
        WHERE run_id = $1 AND owner = $26 AND status = 'running' RETURNING 1`,
      [runId, ...counterParams(r.counters), r.status, r.error, r.note, r.now, owner],
    );
  }

  /**
   * The end of a run of this owner that another process recovered as abandoned (failed) while it still
   * ran: its counters, and its own error in front of the one the other process wrote. It stays failed.
   * Returns the rows updated.
   */
  async finishLost(
    em: Db,
    runId: string,
    owner: string,
    r: { counters: RunCounters; error: string; note: string | null },
  ): Promise<number> {
    return this.count(
      em,
      `UPDATE catalog_sync_runs SET ${COUNTER_SET}, note = coalesce($23, note),
              error = $22 || coalesce(' (recorded by the other process: ' || error || ')', '')
        WHERE run_id = $1 AND owner = $24 AND status = 'failed' RETURNING 1`,
      [runId, ...counterParams(r.counters), r.error, r.note, owner],
    );
  }

  /** Runs a data-modifying statement with RETURNING and counts its rows (TypeORM's answer to a bare UPDATE varies). */
  private async count(db: Db, sql: string, params: unknown[]): Promise<number> {
    const [{ n }] = (await db.query(`WITH u AS (${sql}) SELECT count(*)::int AS n FROM u`, params)) as Array<{ n: number }>;
    return n;
  }

  async get(runId: string): Promise<SyncRunRecord | null> {
    const rows = (await this.db.query('SELECT * FROM catalog_sync_runs WHERE run_id = $1', [runId])) as SyncRunRecord[];
    return rows[0] ?? null;
  }

  /** Runs, newest first: of one status and of one supplier when given. */
  async list(
    offset: number,
    limit: number,
    filter: { status?: RunStatus; supplier?: string } = {},
  ): Promise<{ items: SyncRunRecord[]; total: number }> {
    const where = `WHERE ($1::text IS NULL OR status = $1::text) AND ($2::text IS NULL OR supplier = $2::text)`;
    const params: unknown[] = [filter.status ?? null, filter.supplier ?? null];
    const items = (await this.db.query(
      `SELECT * FROM catalog_sync_runs ${where} ORDER BY started_at DESC, run_id DESC LIMIT $3 OFFSET $4`,
      [...params, limit, offset],
    )) as SyncRunRecord[];
    const [{ n }] = (await this.db.query(`SELECT count(*)::int AS n FROM catalog_sync_runs ${where}`, params)) as Array<{ n: number }>;
    return { items, total: n };
  }

  /**
   * What planning needs: the last complete run, the last complete full pass, and, when the last run that
   * tried the filter (planned incremental) found it refused, when that run started.
   */
  async planningFacts(supplier: string): Promise<{ lastCompleteAt: Date | null; lastFullAt: Date | null; filterRefusedAt: Date | null }> {
    const [row] = (await this.db.query(
      `SELECT
         (SELECT max(started_at) FROM catalog_sync_runs WHERE supplier = $1 AND status = 'succeeded') AS last_complete,
         (SELECT max(started_at) FROM catalog_sync_runs WHERE supplier = $1 AND status = 'succeeded' AND mode = 'full') AS last_full,
         (SELECT CASE WHEN fallback = 'filter_refused' THEN started_at END FROM catalog_sync_runs
           WHERE supplier = $1 AND planned_mode = 'incremental' AND status <> 'running'
           ORDER BY started_at DESC LIMIT 1) AS refused_at`,
      [supplier],
    )) as Array<{ last_complete: Date | null; last_full: Date | null; refused_at: Date | null }>;
    return {
      lastCompleteAt: row.last_complete,
      lastFullAt: row.last_full,
      filterRefusedAt: row.refused_at,
    };
  }

  /**
   * The latest run (running or not) and the end of the latest run that succeeded; null before any
   * run. The latest success is found by its start, not max(finished_at): runs never overlap, so it is
   * the same run, found by the started_at index instead of scanning every run, so that the read costs
   * the same however many runs are kept.
   */
  async latestWithLastSuccess(supplier?: string): Promise<{ run: SyncRunRecord; lastSuccessAt: Date | null } | null> {
    const rows = (await this.dataSource.query(
      `SELECT r.*, (SELECT s.finished_at FROM catalog_sync_runs s WHERE s.status = 'succeeded' AND ($1::text IS NULL OR s.supplier
        = $1::text)
                     ORDER BY s.started_at DESC LIMIT 1) AS relay_last_success_at
         FROM catalog_sync_runs r WHERE $1::text IS NULL OR r.supplier = $1::text ORDER BY r.started_at DESC LIMIT 1`,
      [supplier ?? null],
    )) as Array<SyncRunRecord & { relay_last_success_at: Date | null }>;
    const row = rows[0];
    if (!row) return null;
    const { relay_last_success_at: lastSuccessAt, ...run } = row;
    return { run, lastSuccessAt };
  }

  async lastFinished(supplier?: string): Promise<SyncRunRecord | null> {
    const rows = (await this.db.query(
      `SELECT * FROM catalog_sync_runs WHERE status <> 'running' AND ($1::text IS NULL OR supplier = $1::text) ORDER BY ` +
        `started_at DESC LIMIT 1`,
      [supplier ?? null],
    )) as SyncRunRecord[];
    return rows[0] ?? null;
  }
}
