/**
 * Reconciliation's queries: the schedule on the order rows (planning newly finished orders, claiming
 * due reads), the on-demand runs (one running at a time across replicas: a partial unique index; a
 * running row whose heartbeat stopped, by the database's clock, is failed as abandoned) and the
 * differences found (items).
 *
 * The schedule costs no scan of the orders table: due reads are found by `orders_reconcile_due` (rows
 * with a `reconcile_at`), orders to plan by `orders_reconcile_unplanned` (finished rows not planned
 * yet); both partial indexes hold only the rows they find.
 */
import { Injectable } from '@nestjs/common';
import { DataSource } from 'typeorm';
import { isUniqueViolation } from '../database/pg-errors.js';
import type { ReconciliationItemsRow, ReconciliationRunsRow } from '../database/rows.generated.js';
import { sqlRows } from '../ops/sql.js';
import { RANGE_STATUSES, SCHEDULED_STATUSES } from './reconcile-plan.js';

const quoted = (values: readonly string[]): string => values.map((v) => `'${v}'`).join(', ');
/** The statuses as the partial index `orders_reconcile_unplanned` names them (the planner matches the text). */
const SCHEDULED_IN = `status IN (${quoted(SCHEDULED_STATUSES)})`;
const RANGE_IN = `status IN (${quoted(RANGE_STATUSES)})`;

/** A due scheduled read, claimed by this process until its lease ends. */
export interface ReconcileClaim {
  id: string;
  shopOrderNo: string;
  status: string;
  /** When the order was planned: its schedule counts from then. */
  plannedAt: Date;
}

export type ReconciliationRunStatus = 'running' | 'succeeded' | 'failed';

export interface ReconciliationRunRecord {
  runId: string;
  status: ReconciliationRunStatus;
  from: Date;
  to: Date;
  owner: string;
  startedAt: Date;
  heartbeatAt: Date;
  finishedAt: Date | null;
  ordersTotal: number;
  ordersDone: number;
  ordersFailed: number;
  differences: number;
  error: string | null;
}

export interface ReconciliationItemRecord {
  id: string;
  orderId: string;
  shopOrderNo: string;
  field: string;
  local: string | null;
  upstream: string | null;
  applied: boolean;
  runId: string | null;
  detectedAt: Date;
}

/** A difference to record, written in the transaction that applied the read. */
export interface NewItem {
  orderId: string;
  shopOrderNo: string;
  field: string;
  local: string | null;
  upstream: string | null;
  applied: boolean;
  runId: string | null;
  detectedAt: Date;
}

/** A run as its statements read it (`SELECT *`): the generated row, its status as the domain names it. */
type RunRow = Omit<ReconciliationRunsRow, 'status'> & { status: ReconciliationRunStatus };

const toRun = (r: RunRow): ReconciliationRunRecord => ({
  runId: r.run_id,
  status: r.status,
  from: new Date(r.from_at),
  to: new Date(r.to_at),
  owner: r.owner,
  startedAt: new Date(r.started_at),
  heartbeatAt: new Date(r.heartbeat_at),
  finishedAt: r.finished_at === null ? null : new Date(r.finished_at),
  ordersTotal: r.orders_total,
  ordersDone: r.orders_done,
  ordersFailed: r.orders_failed,
  differences: r.differences,
  error: r.error,
});

@Injectable()
export class ReconciliationRepository {
  constructor(private readonly dataSource: DataSource) {}

  // ----------------------------------------------------------------------------------- schedule

  /**
   * Plans up to `limit` finished orders not planned yet and followed by nothing (the poller reads an
   * order it follows): planned at `now`, first read at `firstAt` (null: none). One statement; how many.
   */
  async planUnplanned(now: Date, firstAt: Date | null, limit: number): Promise<number> {
    const planned = await sqlRows<{ id: string }>(
      this.dataSource,
      `UPDATE orders SET reconcile_planned_at = $1, reconcile_at = $2
        WHERE id IN (
          SELECT id FROM orders
           WHERE reconcile_planned_at IS NULL AND upstream_order_id IS NOT NULL AND ${SCHEDULED_IN} AND next_poll_at IS NULL
           LIMIT $3
           FOR UPDATE SKIP LOCKED)
        RETURNING id`,
      [now, firstAt, limit],
    );
    return planned.length;
  }

  /**
   * Claims due scheduled reads (one replica each): one statement takes the rows with FOR UPDATE SKIP
   * LOCKED and moves their `reconcile_at` to `leaseUntil`, so that a read whose process stops is due
   * again then. An order with a cancel in progress waits for it.
   */
  async claimDue(now: Date, leaseUntil: Date, limit: number): Promise<ReconcileClaim[]> {
    const claimed = await sqlRows<{ id: string; shop_order_no: string; status: string; reconcile_planned_at: Date }>(
      this.dataSource,
      `UPDATE orders SET reconcile_at = $2
        WHERE id IN (
          SELECT id FROM orders
           WHERE reconcile_at <= $1 AND (op_until IS NULL OR op_until < $1)
           ORDER BY reconcile_at
           LIMIT $3
           FOR UPDATE SKIP LOCKED)
        RETURNING id, shop_order_no, status, reconcile_planned_at`,
      [now, leaseUntil, limit],
    );
    return claimed.map((c) => ({
      id: String(c.id),
      shopOrderNo: c.shop_order_no,
      status: c.status,
      plannedAt: new Date(c.reconcile_planned_at),
    }));
  }

  /**
   * The backlog of scheduled reads (read by operations for `/health` and the metrics): by supplier, the
   * reads due at `now` and not made yet (a claimed read's `reconcile_at` is its lease, in the future)
   * and the oldest due time. One statement over the rows `orders_reconcile_due` holds.
   */
  async backlog(now: Date): Promise<Array<{ supplier: string; due: number; oldestDueAt: Date }>> {
    const rows = await sqlRows<{ supplier: string; n: number; oldest: Date | string }>(
      this.dataSource,
      `SELECT supplier, count(*)::int AS n, min(reconcile_at) AS oldest FROM orders WHERE reconcile_at <= $1 GROUP BY supplier`,
      [now],
    );
    return rows.map((r) => ({ supplier: r.supplier, due: Number(r.n), oldestDueAt: new Date(r.oldest) }));
  }

  /** Sets the order's next scheduled read (null: none). */
  async reschedule(orderId: string, at: Date | null): Promise<void> {
    await this.dataSource.query('UPDATE orders SET reconcile_at = $2 WHERE id = $1', [orderId, at]);
  }

  /**
   * The write (`$?` placeholders, for the transaction that applied the read) that records the read on
   * the order: when it was read, and its next scheduled read when `next` is given (undefined: as it is).
   */
  markReadSql(orderId: string, readAt: Date, next: Date | null | undefined): { sql: string; params: unknown[] } {
    return next === undefined
      ? { sql: 'UPDATE orders SET reconciled_at = $? WHERE id = $?', params: [readAt, orderId] }
      : { sql: 'UPDATE orders SET reconciled_at = $?, reconcile_at = $? WHERE id = $?', params: [readAt, next, orderId] };
  }

  /** The multi-row insert of `items` (`$?` placeholders), for the transaction that applied the read. */
  insertItemsSql(items: readonly NewItem[]): { sql: string; params: unknown[] } {
    const params: unknown[] = [];
    for (const i of items) params.push(i.orderId, i.shopOrderNo, i.field, i.local, i.upstream, i.applied, i.runId, i.detectedAt);
    return {
      sql: `INSERT INTO reconciliation_items (order_id, shop_order_no, field, local_value, upstream_value, applied, run_id, detected_at)
            VALUES ${items.map(() => '($?, $?, $?, $?, $?, $?, $?, $?)').join(', ')}`,
      params,
    };
  }

  // --------------------------------------------------------------------------------- range runs

  /** Orders created in [from, to] in a finished upstream state, with an upstream order. */
  async countRange(from: Date, to: Date): Promise<number> {
    const [{ n }] = await sqlRows<{ n: number }>(
      this.dataSource,
      `SELECT count(*)::int AS n FROM orders WHERE created_at >= $1 AND created_at <= $2 AND ${RANGE_IN} AND upstream_order_id IS NOT NULL`,
      [from, to],
    );
    return n;
  }

  /** The next `limit` of those orders after `after` (by created_at, id: the index orders_created). */
  async rangeBatch(
    from: Date,
    to: Date,
    after: { createdAt: Date; id: string } | null,
    limit: number,
  ): Promise<Array<{ id: string; createdAt: Date }>> {
    const found = await sqlRows<{ id: string; created_at: Date }>(
      this.dataSource,
      `SELECT id, created_at FROM orders
        WHERE created_at >= $1 AND created_at <= $2 AND ${RANGE_IN} AND upstream_order_id IS NOT NULL
          AND ($3::timestamptz IS NULL OR (created_at, id) > ($3::timestamptz, $4::bigint))
        ORDER BY created_at, id LIMIT $5`,
      [from, to, after?.createdAt ?? null, after?.id ?? null, limit],
    );
    return found.map((f) => ({ id: String(f.id), createdAt: new Date(f.created_at) }));
  }

  /** Inserts the run as running; false when a run is running (anywhere). */
  async tryInsertRunning(run: {
    runId: string;
    from: Date;
    to: Date;
    owner: string;
    startedAt: Date;
    ordersTotal: number;
  }): Promise<boolean> {
    try {
      await this.dataSource.query(
        `INSERT INTO reconciliation_runs (run_id, status, from_at, to_at, owner, started_at, heartbeat_at, orders_total)
         VALUES ($1, 'running', $2, $3, $4, $5, clock_timestamp(), $6)`,
        [run.runId, run.from, run.to, run.owner, run.startedAt, run.ordersTotal],
      );
      return true;
    } catch (e) {
      if (isUniqueViolation(e)) return false;
      throw e;
    }
  }

  async running(): Promise<ReconciliationRunRecord | null> {
    const [row] = await sqlRows<RunRow>(this.dataSource, `SELECT * FROM reconciliation_runs WHERE status = 'running' LIMIT 1`);
    return row ? toRun(row) : null;
  }

  /** Fails running runs whose heartbeat is older than `staleMs` (the database's clock); their ids. */
  async failAbandoned(staleMs: number): Promise<string[]> {
    const failed = await sqlRows<{ run_id: string }>(
      this.dataSource,
      `UPDATE reconciliation_runs SET status = 'failed', finished_at = clock_timestamp(),
              error = 'abandoned: its process stopped (no heartbeat)'
        WHERE status = 'running' AND heartbeat_at < clock_timestamp() - $1::int * interval '1 millisecond'
        RETURNING run_id`,
      [Math.ceil(staleMs)],
    );
    return failed.map((f) => f.run_id);
  }

  /** Writes the run's counters and heartbeat, as its owner while it runs; false when it no longer holds it. */
  async progress(runId: string, owner: string, c: { done: number; failed: number; differences: number }): Promise<boolean> {
    const updated = await sqlRows<{ run_id: string }>(
      this.dataSource,
      `UPDATE reconciliation_runs SET orders_done = $3, orders_failed = $4, differences = $5, heartbeat_at = clock_timestamp()
        WHERE run_id = $1 AND owner = $2 AND status = 'running' RETURNING run_id`,
      [runId, owner, c.done, c.failed, c.differences],
    );
    return updated.length > 0;
  }

  async heartbeat(runId: string, owner: string): Promise<void> {
    await this.dataSource.query(
      `UPDATE reconciliation_runs SET heartbeat_at = clock_timestamp() WHERE run_id = $1 AND owner = $2 AND status = 'running'`,
      [runId, owner],
    );
  }

  async finish(runId: string, owner: string, status: 'succeeded' | 'failed', error: string | null, at: Date): Promise<void> {
    await this.dataSource.query(
      `UPDATE reconciliation_runs SET status = $3, error = $4, finished_at = $5 WHERE run_id = $1 AND owner = $2 AND status = 'running'`,
      [runId, owner, status, error, at],
    );
  }

  async findRun(runId: string): Promise<ReconciliationRunRecord | null> {
    const [row] = await sqlRows<RunRow>(this.dataSource, 'SELECT * FROM reconciliation_runs WHERE run_id = $1', [runId]);
    return row ? toRun(row) : null;
  }

  async listRuns(offset: number, limit: number): Promise<{ items: ReconciliationRunRecord[]; total: number }> {
    const [{ n }] = await sqlRows<{ n: number }>(this.dataSource, 'SELECT count(*)::int AS n FROM reconciliation_runs');
    const found = await sqlRows<RunRow>(
      this.dataSource,
      'SELECT * FROM reconciliation_runs ORDER BY started_at DESC, run_id DESC LIMIT $1 OFFSET $2',
      [limit, offset],
    );
    return { items: found.map(toRun), total: n };
  }

  // -------------------------------------------------------------------------------------- items

  /** Differences found, newest first; of one order when `shopOrderNo` is given. */
  async listItems(
    filter: { shopOrderNo?: string; runId?: string },
    offset: number,
    limit: number,
  ): Promise<{ items: ReconciliationItemRecord[]; total: number }> {
    const where: string[] = [];
    const params: unknown[] = [];
    if (filter.shopOrderNo !== undefined) {
      params.push(filter.shopOrderNo);
      where.push(`shop_order_no = $${params.length}`);
    }
    if (filter.runId !== undefined) {
      params.push(filter.runId);
      where.push(`run_id = $${params.length}`);
    }
    const clause = where.length ? `WHERE ${where.join(' AND ')}` : '';
    const [{ n }] = await sqlRows<{ n: number }>(this.dataSource, `SELECT count(*)::int AS n FROM reconciliation_items ${clause}`, params);
    const found = await sqlRows<ReconciliationItemsRow>(
      this.dataSource,
      `SELECT * FROM reconciliation_items ${clause} ORDER BY id DESC LIMIT $${params.length + 1} OFFSET $${params.length + 2}`,
      [...params, limit, offset],
    );
    return {
      items: found.map((f) => ({
        id: String(f.id),
        orderId: String(f.order_id),
        shopOrderNo: f.shop_order_no,
        field: f.field,
        local: f.local_value,
        upstream: f.upstream_value,
        applied: f.applied,
        runId: f.run_id,
        detectedAt: new Date(f.detected_at),
      })),
      total: n,
    };
  }
}
