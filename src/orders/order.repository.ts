/**
 * SQL of the orders: one order row per shop order, one row per attempt, events and the local refund.
 * Records (`OrderRecord`, `AttemptRecord`) never leave the orders module: responses are built by
 * `toOrderResponse()`.
 *
 * Locking: a transaction that touches an order locks its `orders` row first (then its attempts), so
 * two transactions never wait on each other crosswise. No transaction here ever awaits anything but
 * its own queries.
 */
import { Injectable } from '@nestjs/common';
import { DataSource, type EntityManager } from 'typeorm';
import type { PageRequest } from '../common/pagination.js';
import type { EventSource, OrderStatus } from './order-state.js';
import { isUniqueViolation, sqlState } from '../database/pg-errors.js';
import { numbered, rows } from '../database/prepared-statements.js';

export interface OrderRecord {
  id: string;
  shopOrderNo: string;
  skuCode: string;
  quantity: number;
  requestFingerprint: string;
  maxUnitCost: string | null;
  traceId: string;
  status: OrderStatus;
  attempt: number;
  downstreamOrderNo: string;
  upstreamOrderId: number | null;
  upstreamOrderNo: string | null;
  productId: number | null;
  skuId: number | null;
  unitCost: string | null;
  expectedAmount: string | null;
  amount: string | null;
  currency: string | null;
  refundedAmount: string | null;
  errorCode: string | null;
  errorMessage: string | null;
  fulfillmentType: string | null;
  deliveredAt: Date | null;
  deliverySealed: Buffer | null;
  anomaly: string | null;
  statusChangedAt: Date;
  progressAt: Date;
  stuckSince: Date | null;
  nextPollAt: Date | null;
  pollIntervalMs: number | null;
  pollLeaseUntil: Date | null;
  opKind: string | null;
  opToken: string | null;
  opUntil: Date | null;
  createdAt: Date;
  updatedAt: Date;
  refundAt: Date | null;
  refundAmount: string | null;
}

export interface AttemptRequest {
  sku_id: number;
  quantity: number;
  manual_form_data?: Record<string, unknown>;
  trace_id: string;
  /** Send our callback_url with it (false once the upstream refused our address). */
  with_callback: boolean;
}

export type AttemptStatus = 'submitting' | 'accepted' | 'rejected' | 'submit_unknown';

export interface AttemptRecord {
  id: string;
  orderId: string;
  attemptNo: number;
  downstreamOrderNo: string;
  status: AttemptStatus;
  request: AttemptRequest;
  sends: number;
  sendingUntil: Date | null;
  unknownSince: Date | null;
  nextResendAt: Date | null;
  upstreamOrderId: number | null;
}

export interface OrderEventRecord {
  id: string;
  source: EventSource;
  kind: string;
  oldStatus: string | null;
  newStatus: string | null;
  detail: Record<string, unknown> | null;
  createdAt: Date;
}

/** Columns an order update may set. */
export type OrderPatch = Partial<{
  status: OrderStatus;
  attempt: number;
  downstream_order_no: string;
  upstream_order_id: number | null;
  upstream_order_no: string | null;
  product_id: number | null;
  sku_id: number | null;
  unit_cost: string | null;
  expected_amount: string | null;
  amount: string | null;
  currency: string | null;
  refunded_amount: string | null;
  error_code: string | null;
  error_message: string | null;
  fulfillment_type: string | null;
  delivered_at: Date | null;
  delivery_sealed: Buffer | null;
  anomaly: string | null;
  status_changed_at: Date;
  progress_at: Date;
  stuck_since: Date | null;
  next_poll_at: Date | null;
  poll_interval_ms: number | null;
  poll_lease_until: Date | null;
  op_kind: string | null;
  op_token: string | null;
  op_until: Date | null;
  updated_at: Date;
}>;

export type AttemptPatch = Partial<{
  status: AttemptStatus;
  request: AttemptRequest;
  sending_until: Date | null;
  unknown_since: Date | null;
  next_resend_at: Date | null;
  upstream_order_id: number | null;
  http_status: number | null;
  error_code: string | null;
  error_message: string | null;
  finished_at: Date | null;
}>;

interface OrderRow {
  id: string;
  shop_order_no: string;
  sku_code: string;
  quantity: number;
  request_fingerprint: string;
  max_unit_cost: string | null;
  trace_id: string;
  status: OrderStatus;
  attempt: number;
  downstream_order_no: string;
  upstream_order_id: string | null;
  upstream_order_no: string | null;
  product_id: string | null;
  sku_id: string | null;
  unit_cost: string | null;
  expected_amount: string | null;
  amount: string | null;
  currency: string | null;
  refunded_amount: string | null;
  error_code: string | null;
  error_message: string | null;
  fulfillment_type: string | null;
  delivered_at: Date | null;
  delivery_sealed: Buffer | null;
  anomaly: string | null;
  status_changed_at: Date;
  progress_at: Date;
  stuck_since: Date | null;
  next_poll_at: Date | null;
  poll_interval_ms: number | null;
  poll_lease_until: Date | null;
  op_kind: string | null;
  op_token: string | null;
  op_until: Date | null;
  created_at: Date;
  updated_at: Date;
  refund_at?: Date | null;
  refund_amount?: string | null;
}

interface AttemptRow {
  id: string;
  order_id: string;
  attempt_no: number;
  downstream_order_no: string;
  status: AttemptStatus;
  request: AttemptRequest;
  sends: number;
  sending_until: Date | null;
  unknown_since: Date | null;
  next_resend_at: Date | null;
  upstream_order_id: string | null;
}

const num = (v: string | number | null): number | null => (v === null ? null : Number(v));

function toOrder(r: OrderRow): OrderRecord {
  return {
    id: String(r.id),
    shopOrderNo: r.shop_order_no,
    skuCode: r.sku_code,
    quantity: r.quantity,
    requestFingerprint: r.request_fingerprint,
    maxUnitCost: r.max_unit_cost,
    traceId: r.trace_id,
    status: r.status,
    attempt: r.attempt,
    downstreamOrderNo: r.downstream_order_no,
    upstreamOrderId: num(r.upstream_order_id),
    upstreamOrderNo: r.upstream_order_no,
    productId: num(r.product_id),
    skuId: num(r.sku_id),
    unitCost: r.unit_cost,
    expectedAmount: r.expected_amount,
    amount: r.amount,
    currency: r.currency,
    refundedAmount: r.refunded_amount,
    errorCode: r.error_code,
    errorMessage: r.error_message,
    fulfillmentType: r.fulfillment_type,
    deliveredAt: r.delivered_at,
    deliverySealed: r.delivery_sealed,
    anomaly: r.anomaly,
    statusChangedAt: r.status_changed_at,
    progressAt: r.progress_at,
    stuckSince: r.stuck_since,
    nextPollAt: r.next_poll_at,
    pollIntervalMs: r.poll_interval_ms,
    pollLeaseUntil: r.poll_lease_until,
    opKind: r.op_kind,
    opToken: r.op_token,
    opUntil: r.op_until,
    createdAt: r.created_at,
    updatedAt: r.updated_at,
    refundAt: r.refund_at ?? null,
    refundAmount: r.refund_amount ?? null,
  };
}

function toAttempt(r: AttemptRow): AttemptRecord {
  return {
    id: String(r.id),
    orderId: String(r.order_id),
    attemptNo: r.attempt_no,
    downstreamOrderNo: r.downstream_order_no,
    status: r.status,
    request: r.request,
    sends: r.sends,
    sendingUntil: r.sending_until,
    unknownSince: r.unknown_since,
    nextResendAt: r.next_resend_at,
    upstreamOrderId: num(r.upstream_order_id),
  };
}

const ORDER_SELECT = `SELECT o.*, r.created_at AS refund_at, r.amount AS refund_amount
  FROM orders o LEFT JOIN order_refunds r ON r.order_id = o.id`;

/** Unfinished orders without progress since `stuckBefore`, and `submit_unknown` since `unknownBefore`. */
const STUCK_CONDITION = `((o.status IN ('submitting','pending_payment','paid','fulfilling','partially_delivered') AND o.progress_at < $STUCK)
  OR (o.status = 'submit_unknown' AND o.status_changed_at < $UNKNOWN))`;

function stuckCondition(stuckParam: number, unknownParam: number): string {
  return STUCK_CONDITION.replace('$STUCK', `$${stuckParam}`).replace('$UNKNOWN', `$${unknownParam}`);
}

export interface StuckThresholds {
  stuckBefore: Date;
  unknownBefore: Date;
}

/** An order `flagStuck` has just flagged; `since`: its last progress (its `submit_unknown` start). */
export interface StuckOrder {
  shopOrderNo: string;
  status: string;
  traceId: string;
  since: Date;
}

export interface NewOrderInput {
  shopOrderNo: string;
  skuCode: string;
  quantity: number;
  requestFingerprint: string;
  maxUnitCost: string | null;
  traceId: string;
  productId: number;
  skuId: number;
  unitCost: string;
  expectedAmount: string;
  currency: string | null;
  fulfillmentType: string | null;
}

/** A write held back until the next statement of its transaction: SQL with `$?` for each parameter. */
interface HeldWrite {
  sql: string;
  params: unknown[];
  /** The attempt it updates (a row is never updated twice in one statement). */
  attemptId?: string;
}

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
const leaseEnd = (param: string): string => `date_trunc('milliseconds', now() + ${param} * interval '1 millisecond')`;

/** Makes the statement's transaction commit without waiting for the WAL flush (its value: 'off'). */
const LAZY_COMMIT = "set_config('synchronous_commit', 'off', true)";

/** SQLSTATE raised by relay_expect_unchanged() (migration 20261122004000_row_guard). */
const ROW_CHANGED = 'RL001';

/**
 * The operations of one transaction on orders. In a transaction (`OrderRepository.transaction`),
 * attempt updates and event rows are held back and sent with the transaction's next statement (as
 * data-modifying CTEs of the order update, typically), so that an outcome costs one round trip rather
 * than three; they are always sent before the transaction commits, and before any other statement of
 * it (each of which goes after them, as before). Outside a transaction every write goes at once.
 *
 * With a snapshot (`OrderRepository.fromSnapshot`) there is no transaction at all: the snapshot stands
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
      const { ctes, params } = this.withHeld(held, 3);
      await rows(this.em, `WITH guard AS (SELECT id FROM orders WHERE id = $1${this.unchanged(2, null)} FOR UPDATE), ${ctes} SELECT 1 FROM guard`, [
        this.snapshot.order.id,
        this.snapshot.version,
        ...params,
      ]);
      return;
    }
    const { ctes, params } = this.withHeld(held, 1);
    await rows(this.em, `WITH ${ctes} SELECT 1`, params);
  }

  /** The held writes as CTEs whose parameters start at `$first`. */
  private withHeld(held: HeldWrite[], first: number): { ctes: string; params: unknown[] } {
    const params: unknown[] = [];
    const ctes = held.map((h, i) => {
      const sql = numbered(h.sql, first + params.length);
      params.push(...h.params);
      return `held_${i} AS (${sql})`;
    });
    return { ctes: ctes.join(', '), params };
  }

  /** Holds `w` for the transaction's next statement, or sends it at once outside a transaction. */
  private async holdOrSend(w: HeldWrite): Promise<void> {
    if (this.holdWrites) this.held.push(w);
    else await rows(this.em, numbered(w.sql, 1), w.params);
  }

  /** A write of another module in this transaction (`$?` placeholders): held like the others. */
  write(sql: string, params: unknown[]): Promise<void> {
    return this.holdOrSend({ sql, params });
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
  async insertOrder(input: NewOrderInput, request: AttemptRequest, now: Date, leaseMs: number): Promise<OrderSnapshot | null> {
    this.direct('insertOrder');
    await this.flush();
    let found: Array<OrderRow & { attempt_id: string; attempt_sending_until: Date; row_version: string }>;
    try {
      found = await rows<OrderRow & { attempt_id: string; attempt_sending_until: Date; row_version: string }>(
        this.em,
        `WITH o AS (
           INSERT INTO orders (shop_order_no, sku_code, quantity, request_fingerprint, max_unit_cost, trace_id, status, attempt,
             downstream_order_no, product_id, sku_id, unit_cost, expected_amount, currency, fulfillment_type,
             status_changed_at, progress_at, created_at, updated_at)
           VALUES ($1, $2, $3, $4, $5, $6, 'submitting', 1, $1, $7, $8, $9, $10, $11, $12, $13, $13, $13, $13)
           ON CONFLICT (shop_order_no) DO NOTHING
           RETURNING *, xmin::text AS row_version),
         a AS (
           INSERT INTO order_attempts (order_id, attempt_no, downstream_order_no, status, request, sends, sending_until, created_at)
           SELECT o.id, 1, o.downstream_order_no, 'submitting', $14::jsonb, 1, ${leaseEnd('$15::int')}, $13 FROM o
           RETURNING id, sending_until),
         e AS (
           INSERT INTO order_events (order_id, source, kind, old_status, new_status, detail, created_at)
           SELECT o.id, 'api', 'status', NULL, 'submitting', '{"trigger":"submit","attempt":1}'::jsonb, $13 FROM o)
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
  async insertAttempt(orderId: string, attemptNo: number, downstreamOrderNo: string, request: AttemptRequest, now: Date, leaseMs: number): Promise<AttemptRecord> {
    this.direct('insertAttempt');
    await this.flush();
    const [row] = await rows<AttemptRow>(
      this.em,
      `INSERT INTO order_attempts (order_id, attempt_no, downstream_order_no, status, request, sends, sending_until, created_at)
       VALUES ($1, $2, $3, 'submitting', $4::jsonb, 1, ${leaseEnd('$5::int')}, $6)
       ON CONFLICT (downstream_order_no) DO NOTHING
       RETURNING *`,
      [orderId, attemptNo, downstreamOrderNo, JSON.stringify(request), Math.ceil(leaseMs), now],
    );
    if (!row) throw new DownstreamNumberTaken(downstreamOrderNo);
    return toAttempt(row);
  }

  /** Updates the order (locked by this transaction) and returns it as it now is; held writes go with it. */
  async updateOrder(order: OrderRecord, patch: OrderPatch): Promise<OrderRecord> {
    const entries = Object.entries(patch).filter(([, v]) => v !== undefined);
    if (entries.length === 0) {
      await this.flush();
      return order;
    }
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
    const withHeld = held.length ? this.withHeld(held, params.length + 1) : null;
    const [row] = await rows<OrderRow>(this.em, `${withHeld ? `WITH ${withHeld.ctes} ` : ''}UPDATE orders SET ${sets.join(', ')} WHERE id = $1${check} RETURNING *`, [
      ...params,
      ...(withHeld?.params ?? []),
    ]);
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
      ? { sql: `UPDATE order_attempts SET ${sets.join(', ')} WHERE id = $? AND relay_expect_unchanged(xmin = $?::xid)`, params: [...values, this.snapshot.version], attemptId: id }
      : { sql: `UPDATE order_attempts SET ${sets.join(', ')} WHERE id = $?`, params: values, attemptId: id };
    await this.holdOrSend(write);
  }

  async insertEvent(
    orderId: string,
    e: { source: EventSource; kind: string; from: string | null; to: string | null; detail?: Record<string, unknown> | null },
    at: Date,
  ): Promise<void> {
    const write: HeldWrite = {
      sql: `INSERT INTO order_events (order_id, source, kind, old_status, new_status, detail, created_at) VALUES ($?, $?, $?, $?, $?, $?::jsonb, $?)`,
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

export interface PollClaim {
  id: string;
  upstreamOrderId: number;
  shopOrderNo: string;
  /** The order as the claim wrote it (the poll writes from it, or locks the row when it moved). */
  snapshot: RowSnapshot;
}

export interface OrderListFilter {
  status?: string;
  stuck?: StuckThresholds;
}

@Injectable()
export class OrderRepository {
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
  async addEvent(orderId: string, e: { source: EventSource; kind: string; from: string | null; to: string | null; detail?: Record<string, unknown> | null }, at: Date): Promise<void> {
    await new OrderTx(this.dataSource.manager).insertEvent(orderId, e, at);
  }

  async findByShopOrderNo(shopOrderNo: string): Promise<OrderRecord | null> {
    const [row] = await rows<OrderRow>(this.dataSource, `${ORDER_SELECT} WHERE o.shop_order_no = $1`, [shopOrderNo]);
    return row ? toOrder(row) : null;
  }

  async findById(id: string): Promise<OrderRecord | null> {
    const [row] = await rows<OrderRow>(this.dataSource, `${ORDER_SELECT} WHERE o.id = $1`, [id]);
    return row ? toOrder(row) : null;
  }

  async findByUpstreamId(upstreamOrderId: number): Promise<OrderRecord | null> {
    const [row] = await rows<OrderRow>(this.dataSource, `${ORDER_SELECT} WHERE o.upstream_order_id = $1`, [upstreamOrderId]);
    return row ? toOrder(row) : null;
  }

  async findAttemptByDownstreamNo(downstreamOrderNo: string): Promise<AttemptRecord | null> {
    const [row] = await rows<AttemptRow>(this.dataSource, 'SELECT * FROM order_attempts WHERE downstream_order_no = $1', [downstreamOrderNo]);
    return row ? toAttempt(row) : null;
  }

  async findAttempt(orderId: string, attemptNo: number): Promise<AttemptRecord | null> {
    const [row] = await rows<AttemptRow>(this.dataSource, 'SELECT * FROM order_attempts WHERE order_id = $1 AND attempt_no = $2', [orderId, attemptNo]);
    return row ? toAttempt(row) : null;
  }

  async list(filter: OrderListFilter, page: PageRequest): Promise<{ items: OrderRecord[]; total: number }> {
    const where: string[] = [];
    const params: unknown[] = [];
    if (filter.status !== undefined) {
      params.push(filter.status);
      where.push(`o.status = $${params.length}`);
    }
    if (filter.stuck) {
      params.push(filter.stuck.stuckBefore, filter.stuck.unknownBefore);
      where.push(stuckCondition(params.length - 1, params.length));
    }
    const clause = where.length ? `WHERE ${where.join(' AND ')}` : '';
    const [{ n }] = await rows<{ n: number }>(this.dataSource, `SELECT count(*)::int AS n FROM orders o ${clause}`, params);
    // The stuck orders are few and found by the status index; without the fence the planner may walk
    // orders_created backwards through every order looking for a page of them (856 ms with 500,000
    // orders and fewer stuck than the page size, against ~1 ms).
    const found = await rows<OrderRow>(
      this.dataSource,
      filter.stuck
        ? `WITH picked AS MATERIALIZED (SELECT o.id FROM orders o ${clause})
           ${ORDER_SELECT} WHERE o.id IN (SELECT id FROM picked) ORDER BY o.created_at DESC, o.id DESC LIMIT $${params.length + 1} OFFSET $${params.length + 2}`
        : `${ORDER_SELECT} ${clause} ORDER BY o.created_at DESC, o.id DESC LIMIT $${params.length + 1} OFFSET $${params.length + 2}`,
      [...params, page.pageSize, page.offset],
    );
    return { items: found.map(toOrder), total: n };
  }

  async events(orderId: string): Promise<OrderEventRecord[]> {
    const found = await rows<{
      id: string;
      source: EventSource;
      kind: string;
      old_status: string | null;
      new_status: string | null;
      detail: Record<string, unknown> | null;
      created_at: Date;
    }>(this.dataSource, 'SELECT * FROM order_events WHERE order_id = $1 ORDER BY id', [orderId]);
    return found.map((e) => ({
      id: String(e.id),
      source: e.source,
      kind: e.kind,
      oldStatus: e.old_status,
      newStatus: e.new_status,
      detail: e.detail,
      createdAt: e.created_at,
    }));
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
      return { id: order.id, upstreamOrderId: Number(c.upstream_order_id), shopOrderNo: order.shopOrderNo, snapshot: { order, attempt: null, version: c.row_version, lazyCommit: true } };
    });
  }

  /** Attempts still `submitting` after their lease (the database's clock): their sender is gone. */
  async staleSubmitting(limit: number): Promise<Array<{ orderId: string; attemptNo: number }>> {
    const found = await rows<{ order_id: string; attempt_no: number }>(
      this.dataSource,
      `SELECT order_id, attempt_no FROM order_attempts WHERE status = 'submitting' AND sending_until < now() ORDER BY sending_until LIMIT $1`,
      [limit],
    );
    return found.map((f) => ({ orderId: String(f.order_id), attemptNo: f.attempt_no }));
  }

  /**
   * Claims `submit_unknown` attempts due for a re-send under the same number (only where the upstream
   * deduplicates): sets the sending lease, so that one send at a time is ever in flight.
   */
  async claimResends(now: Date, leaseMs: number, limit: number): Promise<AttemptRecord[]> {
    const claimed = await rows<AttemptRow>(
      this.dataSource,
      `UPDATE order_attempts SET sending_until = ${leaseEnd('$2::int')}, sends = sends + 1
        WHERE id IN (
          SELECT a.id FROM order_attempts a JOIN orders o ON o.id = a.order_id
           WHERE a.status = 'submit_unknown' AND a.next_resend_at <= $1
             AND (a.sending_until IS NULL OR a.sending_until < now())
             AND (o.op_until IS NULL OR o.op_until < $1)
           ORDER BY a.next_resend_at
           LIMIT $3
           FOR UPDATE OF a SKIP LOCKED)
        RETURNING *`,
      [now, Math.ceil(leaseMs), limit],
    );
    return claimed.map(toAttempt);
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
    await this.dataSource.query('UPDATE order_attempts SET sending_until = NULL WHERE id = $1 AND sending_until = $2', [attemptId, leaseUntil]);
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
   * Flags newly stuck orders and unflags those that moved on, in one transaction; returns the newly
   * stuck and the stuck count. `alert` runs in that transaction for each newly stuck order (with the
   * transaction's manager and its `afterCommit` for log lines and metrics), so that an order is never
   * flagged without its alert's outbox row: when the alert fails, the flags roll back with it and the
   * next pass finds those orders newly stuck again.
   */
  async flagStuck(
    now: Date,
    t: StuckThresholds,
    alert: (s: StuckOrder, em: EntityManager, afterCommit: (effect: () => void) => void) => Promise<unknown>,
  ): Promise<{ newlyStuck: StuckOrder[]; count: number }> {
    return this.transaction(async (tx) => {
      const newly = await rows<{ shop_order_no: string; status: string; trace_id: string; since: Date }>(
        tx.em,
        `UPDATE orders o SET stuck_since = $1 WHERE o.stuck_since IS NULL AND ${stuckCondition(2, 3)}
         RETURNING o.shop_order_no, o.status, o.trace_id,
                   CASE WHEN o.status = 'submit_unknown' THEN o.status_changed_at ELSE o.progress_at END AS since`,
        [now, t.stuckBefore, t.unknownBefore],
      );
      const newlyStuck = newly.map((r) => ({ shopOrderNo: r.shop_order_no, status: r.status, traceId: r.trace_id, since: new Date(r.since) }));
      for (const s of newlyStuck) await alert(s, tx.em, (effect) => tx.afterCommit(effect));
      await tx.em.query(`UPDATE orders o SET stuck_since = NULL WHERE o.stuck_since IS NOT NULL AND NOT ${stuckCondition(1, 2)}`, [
        t.stuckBefore,
        t.unknownBefore,
      ]);
      const [{ n }] = await rows<{ n: number }>(tx.em, 'SELECT count(*)::int AS n FROM orders WHERE stuck_since IS NOT NULL');
      return { newlyStuck, count: n };
    });
  }

  /** Orders by status, for `statuses` only (by the status index). */
  async countByStatus(statuses: readonly string[]): Promise<Array<{ status: string; n: number }>> {
    return rows<{ status: string; n: number }>(this.dataSource, 'SELECT status, count(*)::int AS n FROM orders WHERE status = ANY($1::text[]) GROUP BY status', [statuses]);
  }
}
