/**
 * The writes on orders (`OrderWrites`): the entry points of the unit of work (`transaction`,
 * `pipelinedTransaction`, `fromSnapshot`, `autocommit`), which hand the caller an `OrderTx`, and the
 * one-statement writes outside one, which set only leases, schedules and flags (the poll claim's lease
 * and the next poll, an attempt's sending lease, `stuck_since`) or add an event on its own. The reads
 * are `OrderReads`' (order-reads.repository.ts).
 *
 * The rule of the split: every statement inside one transaction (or the one optimistic statement from a
 * snapshot) is OrderTx's (order-tx.ts): the locks, every insert into the orders' tables, every move of
 * an order's or an attempt's state. The one statement here that runs in a caller's transaction is
 * `flagStuck` (the alerts go in the same transaction as the flags). test/architecture-rules.spec.ts
 * checks the columns each file's updates set.
 */
import { Injectable } from '@nestjs/common';
import { DataSource } from 'typeorm';
import type { EventSource } from './order-state.js';
import { sqlState } from '../database/pg-errors.js';
import { deferBegin, rows, takeDeferredBegin } from '../database/prepared-statements.js';
import { toAttempt, toOrder, type AttemptRecord, type AttemptRow, type OrderRow } from './order.records.js';
import { stuckCondition, type StuckThresholds } from './order-reads.repository.js';
import { LAZY_COMMIT, leaseEnd, OrderTx, ROW_CHANGED, SnapshotUnusable, type RowSnapshot } from './order-tx.js';

/** An order `flagStuck` has just flagged; `since`: its last progress (its `submit_unknown` start). */
export interface StuckOrder {
  shopOrderNo: string;
  status: string;
  traceId: string;
  since: Date;
}

export interface PollClaim {
  id: string;
  upstreamOrderId: number;
  shopOrderNo: string;
  /** The order as the claim wrote it (the poll writes from it, or locks the row when it moved). */
  snapshot: RowSnapshot;
}

@Injectable()
export class OrderWrites {
  constructor(private readonly dataSource: DataSource) {}

  /** A transaction on orders: its held writes are sent before it commits, its effects after. */
  async transaction<T>(fn: (tx: OrderTx) => Promise<T>): Promise<T> {
    let tx: OrderTx | undefined;
    const result = await this.dataSource.transaction(async (em) => {
      tx = new OrderTx(em, true);
      const value = await fn(tx);
      await tx.flush();
      return value;
    });
    tx?.runEffects();
    return result;
  }

  /**
   * `transaction` in fewer round trips, for a short transaction of prepared statements (a verified
   * callback's): its BEGIN goes in the exchange of its first statement, and its held writes with its
   * COMMIT (deferBegin, commitWith). A TypeORM query in `fn` sends the BEGIN first, as usual.
   */
  async pipelinedTransaction<T>(fn: (tx: OrderTx) => Promise<T>): Promise<T> {
    const runner = this.dataSource.createQueryRunner();
    await runner.connect();
    const state = runner as unknown as { isTransactionActive: boolean; transactionDepth: number };
    const query = runner.query.bind(runner);
    deferBegin(runner);
    runner.query = (async (...args: Parameters<typeof runner.query>) => {
      if (takeDeferredBegin(runner)) await query('BEGIN');
      return query(...args);
    }) as typeof runner.query;
    // a transaction to TypeORM too: a nested transaction of its own is a savepoint of this one
    state.isTransactionActive = true;
    state.transactionDepth = 1;
    const tx = new OrderTx(runner.manager, true);
    let value: T;
    try {
      value = await fn(tx);
      await tx.commit(runner);
      state.isTransactionActive = false;
      state.transactionDepth = 0;
    } catch (e) {
      state.isTransactionActive = false;
      state.transactionDepth = 0;
      // nothing to roll back when the BEGIN was never sent
      if (!takeDeferredBegin(runner)) await query('ROLLBACK').catch(() => undefined);
      throw e;
    } finally {
      await runner.release();
    }
    tx.runEffects();
    return value;
  }

  /**
   * `fn` on the snapshot's rows as one statement without a transaction (see OrderTx): its result, or
   * `null` when the rows moved since the snapshot or `fn` needs more than the snapshot can give; then
   * nothing was written and no effect ran, and the caller does the work in a transaction.
   */
  async fromSnapshot<T>(snapshot: RowSnapshot, fn: (tx: OrderTx) => Promise<T>): Promise<T | null> {
    const tx = new OrderTx(this.dataSource.manager, true, snapshot);
    let result: T;
    try {
      result = await fn(tx);
      await tx.flush();
    } catch (e) {
      // RL001: the statement wrote nothing. SnapshotUnusable: refused before anything was sent, unless
      // the work asked for more after its statement had committed; doing it again would then write twice.
      if (sqlState(e) === ROW_CHANGED || (e instanceof SnapshotUnusable && !tx.snapshotSent)) return null;
      throw e;
    }
    tx.runEffects();
    return result;
  }

  /** Operations outside a transaction: each statement commits on its own (a single-statement write). */
  autocommit<T>(fn: (tx: OrderTx) => Promise<T>): Promise<T> {
    return fn(new OrderTx(this.dataSource.manager));
  }

  /** An event on its own (e.g. an operator's refresh that changed nothing). */
  async addEvent(
    orderId: string,
    e: { source: EventSource; kind: string; from: string | null; to: string | null; detail?: Record<string, unknown> | null },
    at: Date,
  ): Promise<void> {
    await new OrderTx(this.dataSource.manager).insertEvent(orderId, e, at);
  }

  /**
   * Claims due orders for polling (one replica at a time): one statement takes the rows with FOR
   * UPDATE SKIP LOCKED and sets a lease. The upstream call happens after it commits. Each claim
   * carries the order as the claim wrote it (its `xmin`: the claim's transaction), so that the poll's
   * answer can be applied by one optimistic statement (`fromSnapshot`) when nothing else wrote the
   * row meanwhile.
   */
  async claimDuePolls(now: Date, leaseUntil: Date, limit: number): Promise<PollClaim[]> {
    const claimed = await rows<OrderRow & { row_version: string }>(
      this.dataSource,
      `WITH c AS (
         UPDATE orders SET poll_lease_until = $2
          WHERE id IN (
            SELECT id FROM orders
             WHERE next_poll_at <= $1
               AND upstream_order_id IS NOT NULL
               AND (poll_lease_until IS NULL OR poll_lease_until < $1)
               AND (op_until IS NULL OR op_until < $1)
             ORDER BY next_poll_at
             LIMIT $3
             FOR UPDATE SKIP LOCKED)
          RETURNING *, xmin::text AS row_version)
       SELECT c.*, r.created_at AS refund_at, r.amount AS refund_amount, ${LAZY_COMMIT} AS lazy_commit
         FROM c LEFT JOIN order_refunds r ON r.order_id = c.id`,
      [now, leaseUntil, limit],
    );
    return claimed.map((c) => {
      const order = toOrder(c);
      return {
        id: order.id,
        upstreamOrderId: Number(c.upstream_order_id),
        shopOrderNo: order.shopOrderNo,
        snapshot: { order, attempt: null, version: c.row_version, lazyCommit: true },
      };
    });
  }

  /**
   * Claims `submit_unknown` attempts due for a re-send under the same number (only where the upstream
   * deduplicates): sets the sending lease, so that one send at a time is ever in flight.
   */
  async claimResends(
    now: Date,
    leaseMs: number,
    limit: number,
    suppliers: readonly string[],
  ): Promise<Array<AttemptRecord & { supplier: string }>> {
    const claimed = await rows<AttemptRow & { supplier: string }>(
      this.dataSource,
      `UPDATE order_attempts SET sending_until = ${leaseEnd('$2::int')}, sends = sends + 1
        WHERE id IN (
          SELECT a.id FROM order_attempts a JOIN orders o ON o.id = a.order_id
           WHERE a.status = 'submit_unknown' AND a.next_resend_at <= $1
             AND (a.sending_until IS NULL OR a.sending_until < now())
             AND (o.op_until IS NULL OR o.op_until < $1)
             AND o.supplier = ANY($4::text[])
           ORDER BY a.next_resend_at
           LIMIT $3
           FOR UPDATE OF a SKIP LOCKED)
        RETURNING *, (SELECT o.supplier FROM orders o WHERE o.id = order_attempts.order_id) AS supplier`,
      [now, Math.ceil(leaseMs), limit, suppliers],
    );
    return claimed.map((a) => ({ ...toAttempt(a), supplier: a.supplier }));
  }

  /** Takes the sending lease of one `submit_unknown` attempt (operator resolve): its end, null when busy. */
  async claimUnknownAttempt(attemptId: string, leaseMs: number): Promise<Date | null> {
    const [claimed] = await rows<{ sending_until: Date }>(
      this.dataSource,
      `UPDATE order_attempts SET sending_until = ${leaseEnd('$2::int')}
        WHERE id = $1 AND status = 'submit_unknown' AND (sending_until IS NULL OR sending_until < now())
        RETURNING sending_until`,
      [attemptId, Math.ceil(leaseMs)],
    );
    return claimed?.sending_until ?? null;
  }

  /** Gives back the sending lease `leaseUntil` took (claimUnknownAttempt), only if it is still that one. */
  async releaseAttemptLease(attemptId: string, leaseUntil: Date): Promise<void> {
    await this.dataSource.query('UPDATE order_attempts SET sending_until = NULL WHERE id = $1 AND sending_until = $2', [
      attemptId,
      leaseUntil,
    ]);
  }

  /**
   * Orders in one of `statuses` (the delivering and delivered ones) whose items no report has brought
   * and that nothing follows: put back on the poller, due at `now`. Returns their numbers.
   */
  async requeueAwaitingItems(statuses: readonly string[], now: Date, intervalMs: number): Promise<string[]> {
    const found = await rows<{ shop_order_no: string }>(
      this.dataSource,
      `UPDATE orders SET next_poll_at = $2, poll_interval_ms = $3
        WHERE status = ANY($1::text[]) AND delivered_at IS NULL AND upstream_order_id IS NOT NULL AND next_poll_at IS NULL
        RETURNING shop_order_no`,
      [statuses, now, intervalMs],
    );
    return found.map((f) => f.shop_order_no);
  }

  /**
   * Makes an order with an upstream order due for polling now: a callback whose confirming read failed
   * (CONTRACT §6: the order is left to the poller). Also an order the poller no longer follows (a
   * delivered order the upstream then refunds or completes: next_poll_at NULL): it is read once, and
   * the read's answer schedules it as for any poll (NULL again once read, backing off while reads fail).
   */
  async pollSoon(orderId: string, now: Date): Promise<void> {
    await this.dataSource.query(
      `UPDATE orders SET next_poll_at = $2 WHERE id = $1 AND upstream_order_id IS NOT NULL AND (next_poll_at IS NULL OR next_poll_at > $2)`,
      [orderId, now],
    );
  }

  /**
   * Flags newly stuck orders and unflags those that moved on, in the caller's transaction `tx`;
   * returns the newly stuck and the stuck count. The caller raises each newly stuck order's alert in
   * the same transaction (OrderPoller), so that an order is never flagged without its alert's outbox
   * row: when the alert fails, the flags roll back with it and the next pass finds those orders newly
   * stuck again.
   */
  async flagStuck(tx: OrderTx, now: Date, t: StuckThresholds): Promise<{ newlyStuck: StuckOrder[]; count: number }> {
    const newly = await rows<{ shop_order_no: string; status: string; trace_id: string; since: Date }>(
      tx.em,
      `UPDATE orders o SET stuck_since = $1 WHERE o.stuck_since IS NULL AND ${stuckCondition(2, 3)}
       RETURNING o.shop_order_no, o.status, o.trace_id,
                 CASE WHEN o.status = 'submit_unknown' THEN o.status_changed_at ELSE o.progress_at END AS since`,
      [now, t.stuckBefore, t.unknownBefore],
    );
    const newlyStuck = newly.map((r) => ({
      shopOrderNo: r.shop_order_no,
      status: r.status,
      traceId: r.trace_id,
      since: new Date(r.since),
    }));
    await tx.em.query(`UPDATE orders o SET stuck_since = NULL WHERE o.stuck_since IS NOT NULL AND NOT ${stuckCondition(1, 2)}`, [
      t.stuckBefore,
      t.unknownBefore,
    ]);
    const [{ n }] = await rows<{ n: number }>(tx.em, 'SELECT count(*)::int AS n FROM orders WHERE stuck_since IS NOT NULL');
    return { newlyStuck, count: n };
  }
}
