/**
 * The unit of work on orders (`OrderTx`): the statements of one transaction, its held writes and its
 * after-commit effects, or one optimistic statement checked against a snapshot of the rows. Every
 * statement on the orders' tables inside a transaction is here (one exception: OrderWrites'
 * `flagStuck`): the locks, every insert into the orders' tables (orders, attempts, events, refunds)
 * and every move of an order's or an attempt's state. OrderWrites (order-writes.repository.ts) opens
 * the unit of work, and only it, and holds the claims and schedule writes outside it; OrderReads
 * (order-reads.repository.ts) holds the reads outside it (test/architecture-rules.spec.ts checks the split).
 *
 * The locks of an order: `lockOrder` and `lockOrderByShopNo` (then the refund in a statement of its
 * own, for deciding on a refund or a new attempt: see refundOf), `lockOrderToApply` and
 * `lockOrderNamed` (the refund joined in the locking statement, for applying an upstream report),
 * `lockOrderAndAttempt` (both rows in one statement, then the refund as lockOrder) and `lockAttempt`
 * (an attempt, after its order).
 *
 * Locking: a transaction that touches an order locks its `orders` row first (then its attempts), so
 * two transactions never wait on each other crosswise. No transaction here ever awaits anything but
 * its own queries.
 */
import type { EntityManager, QueryRunner } from 'typeorm';
import type { EventSource } from './order-state.js';
import { isUniqueViolation } from '../database/pg-errors.js';
import { commitWith, numbered, rows, statementFor } from '../database/prepared-statements.js';
import {
  toAttempt,
  toOrder,
  type AttemptPatch,
  type AttemptRecord,
  type AttemptRequest,
  type AttemptRow,
  type NewOrderInput,
  type OrderPatch,
  type OrderRecord,
  type OrderRow,
} from './order.records.js';
export { ORDER_ROUTE } from './order-route.sql.js';
import { heldCtes, renderHeld, type HeldWrite } from './held-writes.sql.js';

/**
 * What an optimistic one-statement write was computed from: an order row as this process last wrote
 * it (a reservation, a poll claim), with its row version (`xmin`), and the attempt written in the same
 * transaction, if any (then it has the same version). The guard covers those rows only: a poll claim's
 * refund columns are as its statement began (like `lockOrderToApply`'s), not for deciding on a refund.
 */
export interface RowSnapshot {
  order: OrderRecord;
  attempt: AttemptRecord | null;
  version: string;
  /**
   * Its statement commits without waiting for the WAL flush: for a poll's answer, which the upstream
   * still holds (a write lost in a crash leaves the order as it was, due for a poll that reads the same
   * answer again). Not when it stores delivered items (a later upstream read may lack them), nor for an
   * attempt's outcome, which exists nowhere else.
   */
  lazyCommit?: boolean;
}

/** A reservation's snapshot: the order and its new attempt, written together. */
export interface OrderSnapshot extends RowSnapshot {
  attempt: AttemptRecord;
}

/** The snapshot cannot be used (the rows moved, or the work needs more than one statement): nothing was written. */
export class SnapshotUnusable extends Error {
  constructor(reason: string) {
    super(`optimistic write not possible: ${reason}`);
    this.name = 'SnapshotUnusable';
  }
}

/**
 * The end of an attempt's sending lease of `$n` milliseconds, on the database's clock (truncated to
 * the millisecond, as a JavaScript Date holds it, so that the holder can give back exactly its own):
 * every replica sets and judges these leases by one clock, so a replica whose clock runs ahead never
 * takes over (sweeps, re-sends) an attempt whose sender is still within its lease.
 */
export const leaseEnd = (param: string): string => `date_trunc('milliseconds', now() + ${param} * interval '1 millisecond')`;

/** Makes the statement's transaction commit without waiting for the WAL flush (its value: 'off'). */
export const LAZY_COMMIT = "set_config('synchronous_commit', 'off', true)";

/** SQLSTATE raised by relay_expect_unchanged() (migration 20261122004000_row_guard). */
export const ROW_CHANGED = 'RL001';

/**
 * The operations of one transaction on orders. In a transaction (`OrderWrites.transaction`),
 * attempt updates and event rows are held back and sent with the transaction's next statement (as
 * data-modifying CTEs of the order update, typically), so that an outcome costs one round trip rather
 * than three; they are always sent before the transaction commits, and before any other statement of
 * it (each of which goes after them, as before). Outside a transaction every write goes at once.
 *
 * With a snapshot (`OrderWrites.fromSnapshot`) there is no transaction at all: the snapshot stands
 * in for the locked rows, and every write goes in one statement that checks, under the row locks, that
 * neither row changed since (else it aborts, writing nothing). Work that needs another statement is
 * refused before anything is sent.
 *
 * Side effects (metrics, log lines) are registered with `afterCommit`: they happen once the writes
 * are committed, and not at all when the transaction rolls back.
 */
export class OrderTx {
  private held: HeldWrite[] = [];
  private readonly effects: Array<() => void> = [];
  /** Statements sent with the snapshot (at most one). */
  private snapshotStatements = 0;

  constructor(
    readonly em: EntityManager,
    private readonly holdWrites = false,
    private readonly snapshot: RowSnapshot | null = null,
  ) {}

  /** Runs `effect` once this transaction's writes are committed (at once outside a transaction). */
  afterCommit(effect: () => void): void {
    if (this.holdWrites) this.effects.push(effect);
    else effect();
  }

  /** The effects registered with `afterCommit`, after the commit. */
  runEffects(): void {
    for (const effect of this.effects.splice(0)) effect();
  }

  /** Refuses a statement the snapshot cannot stand for. */
  private direct(what: string): void {
    if (this.snapshot) throw new SnapshotUnusable(what);
  }

  /** Whether the one statement of a snapshot was sent (it commits on its own). */
  get snapshotSent(): boolean {
    return this.snapshotStatements > 0;
  }

  /** Counts the one statement allowed with a snapshot. */
  private snapshotStatement(): void {
    if (this.snapshotStatements++ > 0) throw new Error('an optimistic write sends a single statement'); // a bug: the first one is committed
  }

  /**
   * `AND relay_expect_unchanged(…)` for the snapshot's statement, its parameter numbered `n`; with the
   * lazy commit when the snapshot allows it and the statement stores no delivered items (`patch`: the
   * order's columns it sets; those are durable before anyone can read them, as a later upstream read
   * may lack them).
   */
  private unchanged(n: number, patch: OrderPatch | null): string {
    const lazy = this.snapshot?.lazyCommit === true && patch?.delivery_sealed === undefined;
    return ` AND relay_expect_unchanged(xmin = $${n}::xid)${lazy ? ` AND ${LAZY_COMMIT} = 'off'` : ''}`;
  }

  /** Sends the held writes (one statement). */
  async flush(): Promise<void> {
    if (this.held.length === 0) return;
    const held = this.held;
    this.held = [];
    if (this.snapshot) {
      // no order update to carry them: lock and check the order row in the statement itself
      this.snapshotStatement();
      const { ctes, params } = heldCtes(held, 3);
      await rows(
        this.em,
        `WITH guard AS (SELECT id FROM orders WHERE id = $1${this.unchanged(2, null)} FOR UPDATE), ${ctes} SELECT 1 FROM guard`,
        [this.snapshot.order.id, this.snapshot.version, ...params],
      );
      return;
    }
    const { ctes, params } = heldCtes(held, 1);
    await rows(this.em, `WITH ${ctes} SELECT 1`, params);
  }

  /**
   * Ends a transaction opened with its BEGIN held back (OrderWrites.pipelinedTransaction): the held
   * writes and the COMMIT in one exchange (see commitWith).
   */
  async commit(runner: QueryRunner): Promise<void> {
    const held = this.held;
    this.held = [];
    if (held.length === 0) {
      await commitWith(runner, null, []);
      return;
    }
    const { ctes, params } = heldCtes(held, 1);
    await commitWith(runner, statementFor(`WITH ${ctes} SELECT 1`), params);
  }

  /** Holds `w` for the transaction's next statement, or sends it at once outside a transaction. */
  private async holdOrSend(w: HeldWrite): Promise<void> {
    if (this.holdWrites) this.held.push(w);
    else {
      const params: unknown[] = [];
      await rows(this.em, renderHeld(w, 1, params, []), params);
    }
  }

  /** A write of another module in this transaction (`$?` placeholders): held like the others. */
  write(sql: string, params: unknown[]): Promise<void> {
    return this.holdOrSend({ sql, params });
  }

  /**
   * `write`, where ORDER_ROUTE in `sql` shows order `orderId`'s route as this transaction leaves it:
   * the attempts written before, and the attempt updates held with it, which go in the same statement
   * (e.g. an offer order's shop notification: no statement of its own).
   */
  writeWithRoute(orderId: string, sql: string, params: unknown[]): Promise<void> {
    return this.holdOrSend({ sql, params, routeOf: orderId });
  }

  async lockOrder(id: string, skipLocked = false): Promise<OrderRecord | null> {
    this.direct('lockOrder');
    await this.flush();
    const [row] = await rows<OrderRow>(this.em, `SELECT * FROM orders WHERE id = $1 FOR UPDATE${skipLocked ? ' SKIP LOCKED' : ''}`, [id]);
    return row ? toOrder({ ...row, ...(await this.refundOf(row.id)) }) : null;
  }

  /**
   * Locks an order to apply an upstream report to it (a poll, a callback's confirming read): one
   * statement, the refund joined as it was when the statement began. Not for deciding on a refund or
   * a new attempt: a statement that waited for the lock misses a refund committed meanwhile (see
   * refundOf; lockOrder reads it after the lock).
   */
  async lockOrderToApply(id: string): Promise<OrderRecord | null> {
    this.direct('lockOrderToApply');
    await this.flush();
    const [row] = await rows<OrderRow>(
      this.em,
      `SELECT o.*, r.created_at AS refund_at, r.amount AS refund_amount
         FROM orders o LEFT JOIN order_refunds r ON r.order_id = o.id
        WHERE o.id = $1 FOR UPDATE OF o`,
      [id],
    );
    return row ? toOrder(row) : null;
  }

  /**
   * Locks the order a callback names, to apply it (as `lockOrderToApply`), in one statement: among the
   * orders of `supplier` (the one whose URL the callback reached), the order of the attempt numbered
   * `downstreamOrderNo`, else the order that follows `upstreamOrderId`; with
   * the named attempt's number and status. The attempt's status is as the statement began: one that
   * waited for the lock may see it earlier than it now is (`submitting` or `submit_unknown` for an
   * attempt settled meanwhile), never later.
   */
  async lockOrderNamed(
    supplier: string,
    downstreamOrderNo: string | null,
    upstreamOrderId: number,
  ): Promise<{ order: OrderRecord; named: { attemptNo: number; status: AttemptRecord['status'] } | null } | null> {
    return (await this.writeAndLockOrderNamed(null, supplier, downstreamOrderNo, upstreamOrderId)).found;
  }

  /**
   * `lockOrderNamed` with a write of another module sent in the same statement, before the lock (e.g. a
   * callback's inbox row: one round trip for both): `first`'s SQL (`$?` placeholders) returns one row,
   * whose columns must not be named as an order's (`first` in the answer).
   */
  async writeAndLockOrderNamed<F extends object>(
    first: { sql: string; params: unknown[] } | null,
    supplier: string,
    downstreamOrderNo: string | null,
    upstreamOrderId: number,
  ): Promise<{
    first: F | null;
    found: { order: OrderRecord; named: { attemptNo: number; status: AttemptRecord['status'] } | null } | null;
  }> {
    this.direct('lockOrderNamed');
    await this.flush();
    const lock = `SELECT o.*, r.created_at AS refund_at, r.amount AS refund_amount,
              (SELECT attempt_no FROM a) AS named_attempt_no, (SELECT status FROM a) AS named_status
         FROM orders o LEFT JOIN order_refunds r ON r.order_id = o.id
        WHERE o.id = (SELECT id FROM target LIMIT 1) FOR UPDATE OF o`;
    // only an order of the supplier the callback came from is named (CONTRACT §6)
    const ctes = `a AS (SELECT t.order_id, t.attempt_no, t.status FROM order_attempts t
                         WHERE t.downstream_order_no = $1 AND EXISTS (SELECT 1 FROM orders s WHERE s.id = t.order_id AND s.supplier = $3)),
            target AS (SELECT order_id AS id FROM a
                       UNION ALL
                       SELECT id FROM orders WHERE supplier = $3 AND upstream_order_id = $2 AND NOT EXISTS (SELECT 1 FROM a))`;
    type Row = OrderRow & { named_attempt_no: number | null; named_status: AttemptRecord['status'] | null };
    // the write's row, with the locked order's columns beside it (null when no order is found)
    const [row] = first
      ? await rows<Row>(this.em, `WITH f AS (${numbered(first.sql, 4)}), ${ctes} SELECT f.*, x.* FROM f LEFT JOIN (${lock}) x ON true`, [
          downstreamOrderNo,
          upstreamOrderId,
          supplier,
          ...first.params,
        ])
      : await rows<Row>(this.em, `WITH ${ctes} ${lock}`, [downstreamOrderNo, upstreamOrderId, supplier]);
    const firstRow = first && row ? (row as unknown as F) : null;
    if (!row || row.id === null || row.id === undefined) return { first: firstRow, found: null };
    return {
      first: firstRow,
      found: {
        order: toOrder(row),
        named:
          row.named_attempt_no === null || row.named_status === null ? null : { attemptNo: row.named_attempt_no, status: row.named_status },
      },
    };
  }

  async lockOrderByShopNo(shopOrderNo: string): Promise<OrderRecord | null> {
    this.direct('lockOrderByShopNo');
    await this.flush();
    const [row] = await rows<OrderRow>(this.em, 'SELECT * FROM orders WHERE shop_order_no = $1 FOR UPDATE', [shopOrderNo]);
    return row ? toOrder({ ...row, ...(await this.refundOf(row.id)) }) : null;
  }

  /**
   * The refund of an order this transaction has just locked, read by a statement of its own: a
   * statement that waited for the lock still sees the other tables as they were when it began (READ
   * COMMITTED), so a join in the locking statement would miss a refund committed by the transaction
   * it waited for (and a resubmission or a second refund would then pass its check).
   */
  private async refundOf(orderId: string): Promise<Pick<OrderRow, 'refund_at' | 'refund_amount'>> {
    const [r] = await rows<Pick<OrderRow, 'refund_at' | 'refund_amount'>>(
      this.em,
      'SELECT created_at AS refund_at, amount AS refund_amount FROM order_refunds WHERE order_id = $1',
      [orderId],
    );
    return r ?? { refund_at: null, refund_amount: null };
  }

  /** Locks an order and one of its attempts in one statement. */
  async lockOrderAndAttempt(orderId: string, attemptNo: number): Promise<{ order: OrderRecord; attempt: AttemptRecord } | null> {
    if (this.snapshot) {
      // the snapshot stands for the locked rows; the write checks that they did not move
      const { order, attempt } = this.snapshot;
      if (order.id !== orderId || attempt?.attemptNo !== attemptNo) throw new SnapshotUnusable('another order or attempt');
      return { order, attempt };
    }
    await this.flush();
    const [row] = await rows<OrderRow & { a: AttemptRow }>(
      this.em,
      `SELECT o.*, to_jsonb(a.*) AS a
         FROM orders o JOIN order_attempts a ON a.order_id = o.id AND a.attempt_no = $2
        WHERE o.id = $1 FOR UPDATE OF o, a`,
      [orderId, attemptNo],
    );
    if (!row) return null;
    const a = row.a;
    return {
      order: toOrder({ ...row, ...(await this.refundOf(orderId)) }),
      attempt: toAttempt({
        ...a,
        sending_until: a.sending_until === null ? null : new Date(a.sending_until),
        unknown_since: a.unknown_since === null ? null : new Date(a.unknown_since),
        next_resend_at: a.next_resend_at === null ? null : new Date(a.next_resend_at),
      }),
    };
  }

  /** The database's clock at this transaction's start (`now()`): what attempt leases are judged by. */
  async databaseNow(): Promise<Date> {
    this.direct('databaseNow');
    await this.flush();
    const [row] = await rows<{ now: Date }>(this.em, 'SELECT now() AS now');
    return row.now;
  }

  async lockAttempt(orderId: string, attemptNo: number): Promise<AttemptRecord | null> {
    this.direct('lockAttempt');
    await this.flush();
    const [row] = await rows<AttemptRow>(this.em, 'SELECT * FROM order_attempts WHERE order_id = $1 AND attempt_no = $2 FOR UPDATE', [
      orderId,
      attemptNo,
    ]);
    return row ? toAttempt(row) : null;
  }

  /**
   * Inserts a new order with its first attempt (being sent now) and its first event, in one statement;
   * null when the shop_order_no already exists. Throws DownstreamNumberTaken when another attempt
   * already uses the order number.
   */
  /**
   * A new order with its first attempt and event, in one statement: `submitting` under the sending
   * lease, or `queued` (not sent, no lease) when it waits for the request budget.
   */
  async insertOrder(
    input: NewOrderInput,
    request: AttemptRequest,
    now: Date,
    leaseMs: number,
    status: 'submitting' | 'queued' = 'submitting',
  ): Promise<OrderSnapshot | null> {
    this.direct('insertOrder');
    await this.flush();
    let found: Array<OrderRow & { attempt_id: string; attempt_sending_until: Date; row_version: string }>;
    try {
      found = await rows<OrderRow & { attempt_id: string; attempt_sending_until: Date; row_version: string }>(
        this.em,
        `WITH o AS (
           INSERT INTO orders (shop_order_no, sku_code, sku_key, quantity, request_fingerprint, max_unit_cost, price_ceiling, trace_id,
             status, attempt, downstream_order_no, product_id, sku_id, unit_cost, expected_amount, currency, fulfillment_type,
             status_changed_at, progress_at, created_at, updated_at, supplier, offer)
           VALUES ($1, $2, $18, $3, $4, $5, $17, $6, $16::text, 1, $1, $7, $8, $9, $10, $11, $12, $13, $13, $13, $13, $19, $20)
           ON CONFLICT (shop_order_no) DO NOTHING
           RETURNING *, xmin::text AS row_version),
         a AS (
           INSERT INTO order_attempts (order_id, attempt_no, downstream_order_no, status, request, sends, sending_until, created_at,
             supplier, sku_key)
           SELECT o.id, 1, o.downstream_order_no, $16::text, $14::jsonb, CASE WHEN $16::text = 'queued' THEN 0 ELSE 1 END,
                  CASE WHEN $16::text = 'queued' THEN NULL ELSE ${leaseEnd('$15::int')} END, $13, o.supplier, o.sku_key FROM o
           RETURNING id, sending_until),
         e AS (
           INSERT INTO order_events (order_id, source, kind, old_status, new_status, detail, created_at)
           SELECT o.id, 'api', 'status', NULL, $16::text, '{"trigger":"submit","attempt":1}'::jsonb, $13 FROM o)
         SELECT o.*, a.id AS attempt_id, a.sending_until AS attempt_sending_until FROM o, a`,
        [
          input.shopOrderNo,
          input.skuCode,
          input.quantity,
          input.requestFingerprint,
          input.maxUnitCost,
          input.traceId,
          input.productId,
          input.skuId,
          input.unitCost,
          input.expectedAmount,
          input.currency,
          input.fulfillmentType,
          now,
          JSON.stringify(request),
          Math.ceil(leaseMs),
          status,
          input.priceCeiling,
          input.skuKey,
          input.supplier,
          input.offer,
        ],
      );
    } catch (e) {
      if (isUniqueViolation(e, 'order_attempts_downstream_order_no_key')) throw new DownstreamNumberTaken(input.shopOrderNo);
      throw e;
    }
    const [row] = found;
    if (!row) return null;
    const order = toOrder(row);
    return {
      order,
      version: row.row_version,
      attempt: {
        id: String(row.attempt_id),
        orderId: order.id,
        attemptNo: 1,
        downstreamOrderNo: order.downstreamOrderNo,
        status: 'submitting',
        request,
        sends: 1,
        sendingUntil: row.attempt_sending_until,
        unknownSince: null,
        nextResendAt: null,
        upstreamOrderId: null,
      },
    };
  }

  /** Inserts an attempt being sent now; throws DownstreamNumberTaken when its number is used. */
  async insertAttempt(
    orderId: string,
    attemptNo: number,
    downstreamOrderNo: string,
    request: AttemptRequest,
    now: Date,
    leaseMs: number,
    status: 'submitting' | 'queued' = 'submitting',
    target: { supplier: string; skuKey: string | null },
  ): Promise<AttemptRecord> {
    this.direct('insertAttempt');
    await this.flush();
    const [row] = await rows<AttemptRow>(
      this.em,
      `INSERT INTO order_attempts (order_id, attempt_no, downstream_order_no, status, request, sends, sending_until, created_at,
         supplier, sku_key)
       VALUES ($1, $2, $3, $7::text, $4::jsonb, CASE WHEN $7::text = 'queued' THEN 0 ELSE 1 END,
               CASE WHEN $7::text = 'queued' THEN NULL ELSE ${leaseEnd('$5::int')} END, $6, $8, $9)
       ON CONFLICT (downstream_order_no) DO NOTHING
       RETURNING *`,
      [orderId, attemptNo, downstreamOrderNo, JSON.stringify(request), Math.ceil(leaseMs), now, status, target.supplier, target.skuKey],
    );
    if (!row) throw new DownstreamNumberTaken(downstreamOrderNo);
    return toAttempt(row);
  }

  /** Updates the order (locked by this transaction) and returns it as it now is; held writes go with it (an empty patch sends nothing). */
  async updateOrder(order: OrderRecord, patch: OrderPatch): Promise<OrderRecord> {
    const entries = Object.entries(patch).filter(([, v]) => v !== undefined);
    // nothing to write: the held writes stay held for the transaction's next statement or its commit
    if (entries.length === 0) return order;
    const sets = entries.map(([k], i) => `${k} = $${i + 2}`);
    const params: unknown[] = [order.id, ...entries.map(([, v]) => v)];
    let check = '';
    if (this.snapshot) {
      if (order.id !== this.snapshot.order.id) throw new SnapshotUnusable('another order');
      this.snapshotStatement();
      params.push(this.snapshot.version);
      check = this.unchanged(params.length, patch);
    }
    const held = this.held;
    this.held = [];
    const withHeld = held.length ? heldCtes(held, params.length + 1) : null;
    const [row] = await rows<OrderRow>(
      this.em,
      `${withHeld ? `WITH ${withHeld.ctes} ` : ''}UPDATE orders SET ${sets.join(', ')} WHERE id = $1${check} RETURNING *`,
      [...params, ...(withHeld?.params ?? [])],
    );
    return { ...toOrder(row), refundAt: order.refundAt, refundAmount: order.refundAmount };
  }

  async updateAttempt(id: string, patch: AttemptPatch): Promise<void> {
    const entries = Object.entries(patch).filter(([, v]) => v !== undefined);
    if (entries.length === 0) return;
    if (this.held.some((h) => h.attemptId === id)) await this.flush();
    const sets = entries.map(([k]) => (k === 'request' ? `${k} = $?::jsonb` : `${k} = $?`));
    const values = [...entries.map(([k, v]) => (k === 'request' ? JSON.stringify(v) : v)), id];
    if (this.snapshot && id !== this.snapshot.attempt?.id) throw new SnapshotUnusable('another attempt');
    const write: HeldWrite = this.snapshot
      ? {
          sql: `UPDATE order_attempts SET ${sets.join(', ')} WHERE id = $? AND relay_expect_unchanged(xmin = $?::xid)`,
          params: [...values, this.snapshot.version],
          attemptId: id,
        }
      : { sql: `UPDATE order_attempts SET ${sets.join(', ')} WHERE id = $?`, params: values, attemptId: id };
    await this.holdOrSend(write);
  }

  async insertEvent(
    orderId: string,
    e: { source: EventSource; kind: string; from: string | null; to: string | null; detail?: Record<string, unknown> | null },
    at: Date,
  ): Promise<void> {
    const write: HeldWrite = {
      sql: `INSERT INTO order_events (order_id, source, kind, old_status, new_status, detail, created_at)
            VALUES ($?, $?, $?, $?, $?, $?::jsonb, $?)`,
      params: [orderId, e.source, e.kind, e.from, e.to, e.detail ? JSON.stringify(e.detail) : null, at],
    };
    await this.holdOrSend(write);
  }

  /** Records the local refund; false when one already exists. */
  async insertRefund(orderId: string, amount: string | null, currency: string | null, at: Date): Promise<boolean> {
    this.direct('insertRefund');
    await this.flush();
    const inserted = await rows<{ order_id: string }>(
      this.em,
      `INSERT INTO order_refunds (order_id, amount, currency, created_at) VALUES ($1, $2, $3, $4)
       ON CONFLICT (order_id) DO NOTHING RETURNING order_id`,
      [orderId, amount, currency, at],
    );
    return inserted.length > 0;
  }

  /** Another order already follows this upstream order. */
  async upstreamIdTaken(upstreamOrderId: number, exceptOrderId: string): Promise<boolean> {
    this.direct('upstreamIdTaken');
    await this.flush();
    const found = await rows(this.em, 'SELECT 1 FROM orders WHERE upstream_order_id = $1 AND id <> $2', [upstreamOrderId, exceptOrderId]);
    return found.length > 0;
  }
}

export class DownstreamNumberTaken extends Error {
  constructor(readonly downstreamOrderNo: string) {
    super(`downstream_order_no ${downstreamOrderNo} is already used by another attempt`);
    this.name = 'DownstreamNumberTaken';
  }
}
