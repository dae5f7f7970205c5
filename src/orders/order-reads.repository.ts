/**
 * The reads of the orders' tables (`OrderReads`): every statement here is a plain SELECT in a
 * statement of its own, outside any transaction; none writes, locks or claims a row. The writes are
 * `OrderWrites`' (order-writes.repository.ts): the one-statement claims, leases, schedules and flags,
 * and the entry points of the unit of work `OrderTx` (order-tx.ts), in which every read that must see a
 * locked row is made. test/architecture-rules.spec.ts checks that this file writes and locks nothing.
 */
import { Injectable } from '@nestjs/common';
import { DataSource } from 'typeorm';
import type { PageRequest } from '../common/pagination.js';
import { PROGRESS_WATCHED, type EventSource } from './order-state.js';
import { rows, runPrepared } from '../database/prepared-statements.js';
import { SKU_REF_ROWS, SKU_WITH_CURRENCY, toFoundSku } from '../catalog/catalog-read.repository.js';
import { CURRENCY_KEY } from '../catalog/catalog.records.js';
import {
  toAttempt,
  toOrder,
  type AttemptRecord,
  type AttemptRow,
  type OrderEventRecord,
  type OrderRecord,
  type OrderRow,
} from './order.records.js';
import type { SupplierSku } from './place-plan.js';
import type { RouteEntry } from '../offers/offer-failover.js';

const ORDER_SELECT = `SELECT o.*, r.created_at AS refund_at, r.amount AS refund_amount
  FROM orders o LEFT JOIN order_refunds r ON r.order_id = o.id`;

/** Unfinished orders without progress since `stuckBefore`, and `submit_unknown` since `unknownBefore`. */
const STUCK_CONDITION = `((o.status IN (${[...PROGRESS_WATCHED].map((s) => `'${s}'`).join(',')}) AND o.progress_at < $STUCK)
  OR (o.status = 'submit_unknown' AND o.status_changed_at < $UNKNOWN))`;

/** STUCK_CONDITION with its thresholds at the statement's parameters `stuckParam`, `unknownParam` (also OrderWrites.flagStuck's). */
export function stuckCondition(stuckParam: number, unknownParam: number): string {
  return STUCK_CONDITION.replace('$STUCK', `$${stuckParam}`).replace('$UNKNOWN', `$${unknownParam}`);
}

/**
 * An order's first read, in one statement (one round trip less for every order placed): the SKUs the
 * order's reference may name ($1, a sku_key or a sku_code), at the supplier $4 when the order names
 * one (else at every supplier: place-plan.ts `pickSupplier` then refuses a reference several suppliers carry), as the
 * catalog reads them for an order (SKU_WITH_CURRENCY, with each row's supplier: one row of nulls when
 * there is none) and whether the order's `shop_order_no` is already recorded (a replay: the relay then
 * reads the order). It reads the orders table, so it is the orders' statement; the SKU's columns, their
 * mapping and the resolution of the reference are the catalog's.
 */
const SKUS_FOR_ORDER = `(SELECT x.* FROM catalog_skus x WHERE (x.sku_key = $1 OR x.sku_code = $1) AND ($4::text IS NULL OR x.supplier = $4)
  ORDER BY x.sku_key = $1 DESC, x.listed DESC, x.sku_key, x.supplier LIMIT ${SKU_REF_ROWS})`;
const FIND_SKU_FOR_ORDER_SQL = `SELECT ${SKU_WITH_CURRENCY}, s.supplier AS relay_supplier,
  EXISTS (SELECT 1 FROM orders o WHERE o.shop_order_no = $3) AS relay_order_recorded
  FROM (SELECT 1) AS one LEFT JOIN LATERAL ${SKUS_FOR_ORDER} s ON true`;

export interface StuckThresholds {
  stuckBefore: Date;
  unknownBefore: Date;
}

export interface OrderListFilter {
  status?: string;
  supplier?: string;
  stuck?: StuckThresholds;
}

@Injectable()
export class OrderReads {
  constructor(private readonly dataSource: DataSource) {}

  /**
   * The SKUs an order's reference (a sku_key or a sku_code) may name, with the currency and their
   * product's fingerprint (none when the catalog has no such SKU; CatalogService.skuForOrder resolves
   * them), and whether `shopOrderNo` is a recorded order: one prepared statement.
   */
  async findSkuForOrder(
    ref: string,
    shopOrderNo: string,
    supplier: string | null = null,
  ): Promise<{ found: SupplierSku[]; orderRecorded: boolean }> {
    const found = await runPrepared<Record<string, unknown>>(
      this.dataSource,
      this.dataSource.manager,
      { key: 'find_sku_for_order', text: FIND_SKU_FOR_ORDER_SQL },
      [ref, CURRENCY_KEY, shopOrderNo, supplier],
    );
    return {
      found: found.filter((row) => row.sku_key !== null).map((row) => ({ ...toFoundSku(row), supplier: row.relay_supplier as string })),
      orderRecorded: found[0]?.relay_order_recorded === true,
    };
  }

  async findByShopOrderNo(shopOrderNo: string): Promise<OrderRecord | null> {
    const [row] = await rows<OrderRow>(this.dataSource, `${ORDER_SELECT} WHERE o.shop_order_no = $1`, [shopOrderNo]);
    return row ? toOrder(row) : null;
  }

  async findById(id: string): Promise<OrderRecord | null> {
    const [row] = await rows<OrderRow>(this.dataSource, `${ORDER_SELECT} WHERE o.id = $1`, [id]);
    return row ? toOrder(row) : null;
  }

  /** The order that follows upstream order `upstreamOrderId` of `supplier` (ids are each supplier's own). */
  async findByUpstreamId(supplier: string, upstreamOrderId: number): Promise<OrderRecord | null> {
    const [row] = await rows<OrderRow>(this.dataSource, `${ORDER_SELECT} WHERE o.supplier = $1 AND o.upstream_order_id = $2`, [
      supplier,
      upstreamOrderId,
    ]);
    return row ? toOrder(row) : null;
  }

  /**
   * The order a callback of `supplier` names: the order of the attempt numbered `number` when it is
   * that supplier's, else the order of that supplier that follows `upstreamOrderId`.
   */
  async findOrderNamed(
    supplier: string,
    upstreamOrderId: number,
    number: string | null,
  ): Promise<{ order: OrderRecord; attempt: AttemptRecord | null } | null> {
    const attempt = number === null ? null : await this.findAttemptByDownstreamNo(number);
    const order = attempt ? await this.findById(attempt.orderId) : null;
    if (attempt && order?.supplier === supplier) return { order, attempt };
    const followed = await this.findByUpstreamId(supplier, upstreamOrderId);
    return followed ? { order: followed, attempt: null } : null;
  }

  async findAttemptByDownstreamNo(downstreamOrderNo: string): Promise<AttemptRecord | null> {
    const [row] = await rows<AttemptRow>(this.dataSource, 'SELECT * FROM order_attempts WHERE downstream_order_no = $1', [
      downstreamOrderNo,
    ]);
    return row ? toAttempt(row) : null;
  }

  async findAttempt(orderId: string, attemptNo: number): Promise<AttemptRecord | null> {
    const [row] = await rows<AttemptRow>(this.dataSource, 'SELECT * FROM order_attempts WHERE order_id = $1 AND attempt_no = $2', [
      orderId,
      attemptNo,
    ]);
    return row ? toAttempt(row) : null;
  }

  /** The order's attempts as its `route` shows them (CONTRACT §11), oldest first; an attempt without its own supplier takes the order's. */
  async route(orderId: string): Promise<RouteEntry[]> {
    return rows<RouteEntry>(
      this.dataSource,
      `SELECT a.attempt_no AS attempt, coalesce(a.supplier, o.supplier) AS supplier, coalesce(a.sku_key, o.sku_key) AS sku_key,
              a.status AS outcome, a.error_code
         FROM order_attempts a JOIN orders o ON o.id = a.order_id
        WHERE a.order_id = $1 ORDER BY a.attempt_no`,
      [orderId],
    );
  }

  async list(filter: OrderListFilter, page: PageRequest): Promise<{ items: OrderRecord[]; total: number }> {
    const where: string[] = [];
    const params: unknown[] = [];
    if (filter.status !== undefined) {
      params.push(filter.status);
      where.push(`o.status = $${params.length}`);
    }
    if (filter.supplier !== undefined) {
      params.push(filter.supplier);
      where.push(`o.supplier = $${params.length}`);
    }
    if (filter.stuck) {
      params.push(filter.stuck.stuckBefore, filter.stuck.unknownBefore);
      where.push(stuckCondition(params.length - 1, params.length));
    }
    const clause = where.length ? `WHERE ${where.join(' AND ')}` : '';
    const [{ n }] = await rows<{ n: number }>(this.dataSource, `SELECT count(*)::int AS n FROM orders o ${clause}`, params);
    // The stuck orders are few and found by the status index; without the fence the planner may walk
    // orders_created backwards through every order looking for a page of them.
    const paged = `ORDER BY o.created_at DESC, o.id DESC LIMIT $${params.length + 1} OFFSET $${params.length + 2}`;
    const found = await rows<OrderRow>(
      this.dataSource,
      filter.stuck
        ? `WITH picked AS MATERIALIZED (SELECT o.id FROM orders o ${clause})
           ${ORDER_SELECT} WHERE o.id IN (SELECT id FROM picked) ${paged}`
        : `${ORDER_SELECT} ${clause} ${paged}`,
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

  /** Attempts still `submitting` after their lease (the database's clock): their sender is gone. */
  async staleSubmitting(limit: number): Promise<Array<{ orderId: string; attemptNo: number }>> {
    const found = await rows<{ order_id: string; attempt_no: number }>(
      this.dataSource,
      `SELECT order_id, attempt_no FROM order_attempts
        WHERE status = 'submitting' AND sending_until < now() ORDER BY sending_until LIMIT $1`,
      [limit],
    );
    return found.map((f) => ({ orderId: String(f.order_id), attemptNo: f.attempt_no }));
  }

  /** The queued attempts (waiting for the request budget) of orders at `supplier`, first reserved first. */
  async queuedHead(limit: number, supplier: string): Promise<Array<{ orderId: string; attemptNo: number }>> {
    const found = await rows<{ order_id: string; attempt_no: number }>(
      this.dataSource,
      `SELECT a.order_id, a.attempt_no FROM order_attempts a
        WHERE a.status = 'queued' AND EXISTS (SELECT 1 FROM orders o WHERE o.id = a.order_id AND o.supplier = $2)
        ORDER BY a.created_at, a.id LIMIT $1`,
      [limit, supplier],
    );
    return found.map((f) => ({ orderId: String(f.order_id), attemptNo: f.attempt_no }));
  }

  /** How many orders are `queued` (accepted, waiting for the request budget; found by the status index). */
  async countQueued(): Promise<number> {
    const found: Array<{ n: number }> = await this.dataSource.query(`SELECT count(*)::int AS n FROM orders WHERE status = 'queued'`);
    return Number(found[0]?.n ?? 0);
  }

  /** Scheduled reconciliation reads due now and not made yet (the reconciliation's backlog; by its index). */
  async countReconcileDue(): Promise<number> {
    const found: Array<{ n: number }> = await this.dataSource.query(
      `SELECT count(*)::int AS n FROM orders WHERE reconcile_at IS NOT NULL AND reconcile_at <= now()`,
    );
    return Number(found[0]?.n ?? 0);
  }

  /** Orders by status, for `statuses` only (by the status index). */
  async countByStatus(statuses: readonly string[]): Promise<Array<{ status: string; n: number }>> {
    return rows<{ status: string; n: number }>(
      this.dataSource,
      'SELECT status, count(*)::int AS n FROM orders WHERE status = ANY($1::text[]) GROUP BY status',
      [statuses],
    );
  }
}
