/**
 * The one place where an order's status changes, inside the caller's transaction on the locked row:
 * upstream reports (API answer, callback, poll, operator) as `planReport` (report-plan.ts) decides,
 * local moves through the transition table. Every applied change writes an event row and a shop
 * notification (outbox); regressions are counted, anomalies kept and logged; delivered items are
 * sealed before they are stored. Never logs an item.
 */
import { Injectable, Logger } from '@nestjs/common';
import { Clock } from '../common/clock.js';
import { AppConfig } from '../config/app-config.js';
import { OutboxWriter } from '../notifications/outbox.writer.js';
import { Metrics } from '../ops/metrics.service.js';
import type { UpstreamFulfillment } from '../upstream/upstream.types.js';
import { parseDeliveryPayload } from './delivery-payload.js';
import {
  DUPLICATE_UPSTREAM_ORDER,
  FOLLOWED,
  UPSTREAM_ORDER_EXISTS,
  canTransition,
  type EventSource,
  type LocalTrigger,
  type OrderStatus,
  type ReportKind,
} from './order-state.js';
import type { AttemptRecord, OrderPatch, OrderRecord } from './order.records.js';
import { ORDER_ROUTE, type OrderTx } from './order-tx.js';
import { DomainEvents } from './domain-events.js';
import { PayloadCipher, type DeliveredData } from './payload-cipher.service.js';
import { callbackNextPoll, nextPollInterval, pollPace } from './poll-backoff.js';
import {
  decideReport,
  mergeItems,
  planReport,
  reportTakesItems,
  type ReportDecision,
  type ReportPlan,
  type UpstreamReport,
} from './report-plan.js';

export type { UpstreamReport } from './report-plan.js';

export interface ApplyOptions {
  /**
   * `poll`: the poller's own read (backs off when nothing moved, releases its lease); `callback`: a
   * verified callback applied as the upstream's word (callbacks are flowing: the next poll moves later);
   * `hint`: any other.
   */
  schedule: 'poll' | 'callback' | 'hint';
  /**
   * `read`: the report is the upstream's order detail; `answer`: a create's or a cancel's answer, which
   * never carries the fulfillment (see `itemsFollowUp`).
   */
  kind: ReportKind;
  /** Columns to set along with the report (e.g. the upstream ids of an accepted attempt). */
  patch?: OrderPatch;
  /** Extra detail for the event row. */
  detail?: Record<string, unknown>;
  /**
   * A write of the caller's (`$?` placeholders), given the status the order ends at: held in `tx` before
   * the order's update, so that it goes in the same statement (e.g. a callback's inbox row finished).
   */
  withWrite?: (to: OrderStatus) => { sql: string; params: unknown[] };
}

export interface ApplyResult {
  /** The order as it now is. */
  order: OrderRecord;
  from: OrderStatus;
  to: OrderStatus;
  decision: ReportDecision;
  /** The status changed, or items / a refunded amount arrived. */
  progressed: boolean;
}

@Injectable()
export class OrderUpdater {
  private readonly logger = new Logger('orders');

  constructor(
    private readonly config: AppConfig,
    private readonly clock: Clock,
    private readonly metrics: Metrics,
    private readonly outbox: OutboxWriter,
    private readonly cipher: PayloadCipher,
    private readonly events: DomainEvents,
  ) {}

  /**
   * Applies an upstream report to `order` (locked by the caller in `tx`): the items it brings are
   * sealed, `planReport` decides what it changes, `writeReport` writes that.
   */
  async applyReport(
    tx: OrderTx,
    order: OrderRecord,
    report: UpstreamReport,
    source: EventSource,
    opts: ApplyOptions,
  ): Promise<ApplyResult> {
    const now = this.clock.now();
    const decision = decideReport(order.status, report.status);
    const delivery = reportTakesItems(decision) ? this.delivery(tx, order, report.fulfillment, now) : null;
    const plan = planReport(order, report, decision, { kind: opts.kind, patch: opts.patch, delivery, now });
    const updated = await this.writeReport(tx, order, report, source, opts, plan, now);
    return { order: updated, from: plan.from, to: plan.to, decision, progressed: plan.progressed };
  }

  /** Writes a report's plan in `tx`: its event row, the order's columns with the next poll, and what follows the commit. */
  private async writeReport(
    tx: OrderTx,
    order: OrderRecord,
    report: UpstreamReport,
    source: EventSource,
    opts: ApplyOptions,
    plan: ReportPlan,
    now: Date,
  ): Promise<OrderRecord> {
    const { to } = plan;
    if (plan.event?.kind === 'status') await this.recordChange(tx, order, to, source, now, { ...opts.detail });
    if (plan.regression) {
      tx.afterCommit(() => {
        this.metrics.stateRegressions.inc({ source });
        this.logger.debug({
          msg: 'status report ignored: it would move the order back',
          shop_order_no: order.shopOrderNo,
          trace_id: order.traceId,
          status: order.status,
          reported: report.status,
          source,
        });
      });
    }
    if (plan.event?.kind === 'anomaly') {
      const { reason, reported } = plan.event;
      await tx.insertEvent(order.id, { source, kind: 'anomaly', from: order.status, to: null, detail: { reason, reported } }, now);
      tx.afterCommit(() => {
        this.metrics.stateAnomalies.inc();
        this.logger.warn({
          msg: `contradictory status report kept as an anomaly: ${reason}`,
          shop_order_no: order.shopOrderNo,
          trace_id: order.traceId,
          status: order.status,
          reported,
          source,
        });
      });
    }
    const callbacksExpected = plan.patch.callbacks_expected ?? order.callbacksExpected;
    const schedule = this.schedule(
      { ...order, callbacksExpected },
      to,
      plan.progressed,
      opts.schedule,
      now,
      plan.follow,
      plan.items === 'read_now',
    );
    if (opts.withWrite) {
      const w = opts.withWrite(to);
      await tx.write(w.sql, w.params);
    }
    const updated = await tx.updateOrder(order, { ...plan.patch, ...schedule });
    if (plan.items === 'read_now') {
      const reported = plan.held ?? to;
      tx.afterCommit(() => {
        this.logger.log({
          msg: `order ${order.shopOrderNo}: ${reported} reported without its items; the order stays ${to} and is read now`,
          shop_order_no: order.shopOrderNo,
          trace_id: order.traceId,
          status: to,
          reported,
          source,
        });
        this.events.publish({ type: 'order_read_due', orderId: order.id, why: 'items_due' });
      });
    }
    if (plan.firstDelivery) tx.afterCommit(() => this.metrics.timeToDelivery.observe((now.getTime() - order.createdAt.getTime()) / 1000));
    return updated;
  }

  /** A local move of the transition table (throws when the table does not allow it). */
  async moveLocal(
    tx: OrderTx,
    order: OrderRecord,
    trigger: LocalTrigger,
    to: OrderStatus,
    source: EventSource,
    patch: OrderPatch = {},
    detail: Record<string, unknown> = {},
  ): Promise<OrderRecord> {
    if (!canTransition(trigger, order.status, to)) {
      throw new Error(`order ${order.shopOrderNo}: ${trigger} does not allow ${order.status} → ${to}`);
    }
    const now = this.clock.now();
    // announced with the supplier and SKU the move leaves the order at (a new attempt may change them)
    const moved = {
      ...order,
      supplier: patch.supplier ?? order.supplier,
      skuKey: patch.sku_key !== undefined ? patch.sku_key : order.skuKey,
    };
    await this.recordChange(tx, moved, to, source, now, { trigger, ...detail });
    return tx.updateOrder(order, {
      ...patch,
      status: to,
      status_changed_at: now,
      progress_at: now,
      stuck_since: null,
      ...this.schedule(order, to, true, 'hint', now),
      updated_at: now,
    });
  }

  /**
   * Keeps `reason` as the order's anomaly without a status change (e.g. an upstream order that the
   * order does not follow): the column, an `anomaly` event row and the anomalies metric, as for a
   * contradictory report. The log line is the caller's (its level and its words).
   */
  async recordAnomaly(
    tx: OrderTx,
    order: OrderRecord,
    reason: string,
    source: EventSource,
    detail: Record<string, unknown>,
  ): Promise<OrderRecord> {
    const now = this.clock.now();
    await tx.insertEvent(order.id, { source, kind: 'anomaly', from: order.status, to: null, detail: { reason, ...detail } }, now);
    tx.afterCommit(() => this.metrics.stateAnomalies.inc());
    return tx.updateOrder(order, order.anomaly === reason ? {} : { anomaly: reason, updated_at: now });
  }

  /**
   * An upstream order for attempt `attempt` that the order does not follow (a verified callback named
   * it, or a create was accepted after the attempt was closed here), kept as the order's anomaly with
   * an event row: UPSTREAM_ORDER_EXISTS when the order follows no upstream order (not refundable, no
   * new attempt: an operator settles it), DUPLICATE_UPSTREAM_ORDER when it follows another.
   */
  async recordUntracked(
    tx: OrderTx,
    order: OrderRecord,
    attempt: AttemptRecord,
    upstreamOrderId: number,
    report: UpstreamReport,
    source: EventSource,
  ): Promise<{ order: OrderRecord; reason: string }> {
    const reason = order.upstreamOrderId === null ? UPSTREAM_ORDER_EXISTS : DUPLICATE_UPSTREAM_ORDER;
    const updated = await this.recordAnomaly(tx, order, reason, source, {
      upstream_order_id: upstreamOrderId,
      upstream_order_no: report.order_no ?? null,
      upstream_status: report.status,
      amount: report.amount ?? null,
      attempt: attempt.attemptNo,
      downstream_order_no: attempt.downstreamOrderNo,
      attempt_status: attempt.status,
      followed_upstream_order_id: order.upstreamOrderId,
    });
    return { order: updated, reason };
  }

  /** Event row and shop notification of a status change. */
  async recordChange(
    tx: OrderTx,
    order: OrderRecord,
    to: OrderStatus,
    source: EventSource,
    now: Date,
    detail: Record<string, unknown>,
  ): Promise<void> {
    await tx.insertEvent(
      order.id,
      { source, kind: 'status', from: order.status === to ? null : order.status, to, detail: Object.keys(detail).length ? detail : null },
      now,
    );
    await this.announce(tx, order, order.status === to ? null : order.status, to, source, now);
  }

  /** Whether `announce` writes (a shop notification into the outbox): else it only logs. */
  get announceWrites(): boolean {
    return this.outbox.enabled;
  }

  /** The shop notification (outbox, same transaction) and the log line of a status change whose event row is written. */
  async announce(
    tx: OrderTx,
    order: OrderRecord,
    from: OrderStatus | null,
    to: OrderStatus,
    source: EventSource,
    now: Date,
  ): Promise<void> {
    // the offer the order is placed through (CONTRACT §11), null when placed by SKU
    const offer = order.offer ?? null;
    const insert = this.outbox.insert([
      {
        type: 'order.status_changed',
        subject: order.shopOrderNo,
        payload: {
          shop_order_no: order.shopOrderNo,
          supplier: order.supplier,
          offer,
          // an offer order's SKU at its current source, and its route (computed in the same statement)
          ...(offer !== null ? { sku_key: order.skuKey } : {}),
          status: to,
          previous_status: from,
          source,
          attempt: order.attempt,
          at: now.toISOString(),
        },
        ...(offer !== null ? { computed: { route: ORDER_ROUTE } } : {}),
      },
    ]);
    if (insert && offer !== null) await tx.writeWithRoute(order.id, insert.sql, insert.params);
    else if (insert) await tx.write(insert.sql, insert.params);
    tx.afterCommit(() =>
      this.logger.log({
        msg: `order ${order.shopOrderNo}: ${from ?? 'new'} → ${to}`,
        shop_order_no: order.shopOrderNo,
        trace_id: order.traceId,
        from,
        to,
        source,
      }),
    );
  }

  /**
   * Polling of a followed order: backoff from ORDER_POLL_BASE_MS to ORDER_POLL_MAX_MS, reset by progress.
   * A callback applied as the upstream's word moves the next poll later: to the base from now after
   * progress, else to the current wait from now (so that an order whose callbacks keep arriving is not
   * polled on top of them, and one whose callbacks stop is polled as before); a next poll already close
   * to that stays (`callbackNextPoll`).
   */
  private schedule(
    order: OrderRecord,
    to: OrderStatus,
    progressed: boolean,
    mode: ApplyOptions['schedule'],
    now: Date,
    follow = false,
    readNow = false,
  ): OrderPatch {
    const pace = pollPace(this.config.orders, order.callbacksExpected);
    const { pollBaseMs } = pace;
    if (!FOLLOWED.has(to) && !follow) {
      if (mode !== 'poll' && order.nextPollAt === null && order.pollIntervalMs === null) return {}; // nothing to write
      return { next_poll_at: null, poll_interval_ms: null, ...(mode === 'poll' ? { poll_lease_until: null } : {}) };
    }
    if (readNow) return { next_poll_at: now, poll_interval_ms: pollBaseMs, ...(mode === 'poll' ? { poll_lease_until: null } : {}) };
    if (mode === 'poll') {
      const interval = nextPollInterval(order.pollIntervalMs, progressed, pace);
      return { next_poll_at: new Date(now.getTime() + interval), poll_interval_ms: interval, poll_lease_until: null };
    }
    if (mode === 'callback') {
      const interval = progressed ? pollBaseMs : Math.max(pollBaseMs, order.pollIntervalMs ?? pollBaseMs);
      const at = callbackNextPoll(order.nextPollAt, now, interval);
      return at === null ? {} : { next_poll_at: at, poll_interval_ms: interval };
    }
    if (progressed || order.nextPollAt === null)
      return { next_poll_at: new Date(now.getTime() + pollBaseMs), poll_interval_ms: pollBaseMs };
    return {};
  }

  /**
   * The sealed items when the report brings new ones; null when there are none or they are unchanged.
   * Never loses an item: the stored items are opened here and merged as `mergeItems` (report-plan.ts)
   * decides.
   */
  private delivery(tx: OrderTx, order: OrderRecord, f: UpstreamFulfillment | null | undefined, now: Date): OrderPatch | null {
    if (!f || typeof f.payload !== 'string') return null;
    let stored: DeliveredData | null = null;
    if (order.deliverySealed) {
      try {
        stored = this.cipher.open(order.id, order.deliverySealed);
      } catch {
        // unreadable with the configured keys: replace it
      }
    }
    const merge = mergeItems(stored, { items: parseDeliveryPayload(f.payload), delivery_data: f.delivery_data ?? null });
    if (merge.kept > 0) {
      const { kept, storedCount } = merge;
      tx.afterCommit(() =>
        this.logger.warn({
          msg: `order ${order.shopOrderNo}: a report lacks ${kept} of the ${storedCount} delivered items stored; they are kept`,
          shop_order_no: order.shopOrderNo,
          trace_id: order.traceId,
        }),
      );
    }
    if (merge.kind === 'unchanged') return null;
    const at = f.delivered_at ? new Date(f.delivered_at) : now;
    return {
      delivery_sealed: this.cipher.seal(order.id, merge.data),
      delivered_at: Number.isNaN(at.getTime()) ? now : at,
      fulfillment_type: typeof f.type === 'string' ? f.type : order.fulfillmentType,
    };
  }
}
