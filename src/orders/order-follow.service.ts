/**
 * Following orders after the create call: reading an order from the upstream and applying it (poll,
 * callback hint, operator refresh), settling `submit_unknown` attempts (a callback or an operator
 * naming the upstream order, or a re-send under the same number where the upstream deduplicates),
 * turning attempts left `submitting` by a stopped process into `submit_unknown`, and keeping as an
 * anomaly an upstream order that a callback names and that the order does not follow (`checkUntracked`).
 *
 * Pattern everywhere: claim (short transaction) → upstream call outside any transaction → apply in a
 * second short transaction on the locked row.
 */
import { Injectable, Logger } from '@nestjs/common';
import { Clock } from '../common/clock.js';
import { AppConfig } from '../config/app-config.js';
import { SupplierRegistry } from '../suppliers/supplier-registry.service.js';
import type { UpstreamCallOptions, UpstreamClient } from '../upstream/upstream.client.js';
import { UpstreamDefinitiveError } from '../upstream/upstream.errors.js';
import type { UpstreamOrder } from '../upstream/upstream.types.js';
import { DUPLICATE_UPSTREAM_ORDER, ITEMS_DELIVERED, UPSTREAM_ORDER_EXISTS, upstreamKeptNothing, type EventSource } from './order-state.js';
import type { AttemptRecord, OrderRecord } from './order.records.js';
import type { OrderTx } from './order-tx.js';
import { OrderReads } from './order-reads.repository.js';
import { OrderWrites, type PollClaim } from './order-writes.repository.js';
import { DomainEvents } from './domain-events.js';
import { OrderSubmitter } from './order-submitter.service.js';
import { OrderUpdater } from './order-updater.service.js';
import { nextPollInterval, pollPace } from './poll-backoff.js';

export type RefreshResult =
  | { kind: 'applied'; order: OrderRecord }
  /** A cancel is in progress: the report waits (the inbox keeps it). */
  | { kind: 'deferred' }
  | { kind: 'read_failed'; error: Error }
  | { kind: 'missing' };

export type ResolveResult =
  | { kind: 'resolved'; order: OrderRecord }
  /** The upstream order is not this attempt's (another downstream_order_no, or unknown there). */
  | { kind: 'mismatch'; reason: string }
  | { kind: 'read_failed'; error: Error }
  /**
   * The attempt is no longer `submit_unknown` (settled meanwhile, e.g. by an operator): nothing was
   * recorded. `answer` is the upstream's read of the order, when it was made.
   */
  | { kind: 'not_unknown'; order: OrderRecord | null; answer?: UpstreamOrder };

/** What `checkUntracked` made of an upstream order that an order does not follow. */
export type UntrackedResult =
  /** It exists there and is not canceled: kept as the order's anomaly (`recorded`: newly, with its event and log line). */
  | { kind: 'anomaly'; reason: string; status: string; order: OrderRecord; recorded: boolean }
  /** It exists there but keeps nothing (canceled or refunded there): no anomaly. */
  | { kind: 'nothing_kept'; status: string }
  /** The upstream has no such order, or it is not this attempt's, or another order follows it. */
  | { kind: 'mismatch'; reason: string }
  | { kind: 'read_failed'; error: Error }
  /** The order follows it now (settled meanwhile). */
  | { kind: 'followed' };

@Injectable()
export class OrderFollowService {
  private readonly logger = new Logger('orders');

  constructor(
    private readonly config: AppConfig,
    private readonly clock: Clock,
    private readonly suppliers: SupplierRegistry,
    private readonly reads: OrderReads,
    private readonly writes: OrderWrites,
    private readonly updater: OrderUpdater,
    private readonly submitter: OrderSubmitter,
    private readonly events: DomainEvents,
  ) {}

  /**
   * The client of an order's supplier (CONTRACT §10): every read of the order goes there, whether the
   * supplier is enabled or not (its unfinished orders are followed to the end).
   */
  private upstream(supplier: string): UpstreamClient {
    return this.suppliers.get(supplier).client;
  }

  /** Lease of one poll's read (the read ends within the timeout); a claimed batch holds one per wave of reads. */
  get pollLeaseMs(): number {
    return this.config.upstream.timeoutMs + 1000;
  }

  /**
   * Polls one claimed order: read, then apply (backing off when nothing moved). `signal` (shutdown)
   * ends the read; the lease is then given back. False when the upstream read failed (the order then
   * waits its backoff).
   */
  async pollOne(claim: PollClaim, signal?: AbortSignal): Promise<boolean> {
    let answer: UpstreamOrder;
    try {
      // a delivered order whose items no report has brought is read as a delivery (it hands items to the shop)
      const priority = ITEMS_DELIVERED.has(claim.snapshot.order.status) ? 'deliver' : 'poll';
      // The wait for the budget is bounded (a timeout's length): a key blocked for longer fails the read
      // at once (the order backs off), so that a blocked supplier never holds the poller's pass.
      const { client, config } = this.suppliers.get(claim.snapshot.order.supplier);
      answer = await client.getOrder(claim.upstreamOrderId, signal, { priority, maxWaitMs: config.settings.timeoutMs });
    } catch (e) {
      if (signal?.aborted) {
        // ended by the shutdown, not by the upstream: the claim is given back as it was (due, no backoff)
        await this.onClaimedRow(claim, (tx, order) => tx.updateOrder(order, { poll_lease_until: null }).then(() => undefined));
        return true;
      }
      await this.onClaimedRow(claim, async (tx, order) => {
        const interval = nextPollInterval(order.pollIntervalMs, false, pollPace(this.config.orders, order.callbacksExpected));
        const now = this.clock.now();
        await tx.updateOrder(order, {
          poll_lease_until: null,
          ...(order.nextPollAt !== null ? { next_poll_at: new Date(now.getTime() + interval), poll_interval_ms: interval } : {}),
        });
      });
      this.logger.debug({
        msg: `order ${claim.shopOrderNo}: poll failed (${(e as Error).message})`,
        shop_order_no: claim.shopOrderNo,
        trace_id: claim.snapshot.order.traceId,
      });
      return false;
    }
    await this.onClaimedRow(claim, async (tx, order) => {
      if (this.opInProgress(order)) {
        await tx.updateOrder(order, { poll_lease_until: null, next_poll_at: order.nextPollAt === null ? null : order.opUntil });
        return;
      }
      await this.updater.applyReport(tx, order, answer, 'poll', { schedule: 'poll', kind: 'read' });
    });
    return true;
  }

  /**
   * `work` on a claimed order: first as one optimistic statement from the row as the claim wrote it
   * (no transaction, no lock taken beforehand), written only if no other transaction changed the row
   * since the claim; else (a callback, a cancel, an operator moved it) in a transaction on the locked row.
   */
  private async onClaimedRow(claim: PollClaim, work: (tx: OrderTx, order: OrderRecord) => Promise<void>): Promise<void> {
    const { snapshot } = claim;
    if (await this.writes.fromSnapshot(snapshot, async (tx) => (await work(tx, snapshot.order), true))) return;
    await this.writes.transaction(async (tx) => {
      const order = await tx.lockOrderToApply(claim.id);
      if (order) await work(tx, order);
    });
  }

  /**
   * Reads the order from the upstream and applies it (a callback hint, an operator refresh). `signal`
   * (shutdown) ends the read: `read_failed`. `opts` go to the read (its budget class).
   */
  async refresh(orderId: string, source: EventSource, signal?: AbortSignal, opts?: UpstreamCallOptions): Promise<RefreshResult> {
    const order = await this.reads.findById(orderId);
    if (!order || order.upstreamOrderId === null) return { kind: 'missing' };
    if (this.opInProgress(order)) return { kind: 'deferred' };
    let answer: UpstreamOrder;
    try {
      answer = await this.upstream(order.supplier).getOrder(order.upstreamOrderId, signal, opts);
    } catch (e) {
      if (source === 'callback') await this.writes.pollSoon(order.id, this.clock.now());
      return { kind: 'read_failed', error: e as Error };
    }
    return this.apply(orderId, answer, source);
  }

  /** Applies an upstream answer already read (e.g. by a cancel) on the locked row. */
  async apply(orderId: string, answer: UpstreamOrder, source: EventSource, opToken?: string): Promise<RefreshResult> {
    const deferred = await this.writes.transaction(async (tx) => {
      const order = await tx.lockOrderToApply(orderId);
      if (!order) return true;
      if (this.opInProgress(order) && order.opToken !== opToken) return true;
      await this.updater.applyReport(tx, order, answer, source, { schedule: 'hint', kind: 'read' });
      return false;
    });
    if (deferred) return { kind: 'deferred' };
    const updated = await this.reads.findById(orderId);
    return updated ? { kind: 'applied', order: updated } : { kind: 'missing' };
  }

  /**
   * Settles a `submit_unknown` attempt from an upstream order id (a callback carrying its number, or
   * the operator): the order is read, and its `downstream_order_no` must be the attempt's. `opts` go to
   * the read (its budget class). `supplier`: the order's.
   */
  async resolveUnknown(
    supplier: string,
    attempt: AttemptRecord,
    upstreamOrderId: number,
    source: EventSource,
    signal?: AbortSignal,
    opts?: UpstreamCallOptions,
  ): Promise<ResolveResult> {
    let answer: UpstreamOrder;
    try {
      answer = await this.upstream(supplier).getOrder(upstreamOrderId, signal, opts);
    } catch (e) {
      if (e instanceof UpstreamDefinitiveError && e.httpStatus === 404)
        return { kind: 'mismatch', reason: `the upstream has no order ${upstreamOrderId}` };
      return { kind: 'read_failed', error: e as Error };
    }
    // The callback that named this order carried the attempt's number, signed by the upstream; an
    // operator's id must be proven by the upstream's own answer.
    const proven =
      answer.downstream_order_no !== undefined ? answer.downstream_order_no === attempt.downstreamOrderNo : source === 'callback';
    if (!proven) {
      return {
        kind: 'mismatch',
        reason:
          answer.downstream_order_no === undefined
            ? `upstream order ${upstreamOrderId} does not show its downstream_order_no, ` +
              `so it cannot be proven to be attempt ${attempt.downstreamOrderNo}'s: ` +
              'wait for its callback (or, where the upstream deduplicates order numbers, the automatic resend), ' +
              'or settle it with not_placed'
            : `upstream order ${upstreamOrderId} carries downstream_order_no ${answer.downstream_order_no}, ` +
              `not ${attempt.downstreamOrderNo}`,
      };
    }
    const taken = await this.reads.findByUpstreamId(supplier, upstreamOrderId);
    if (taken && taken.id !== attempt.orderId)
      return { kind: 'mismatch', reason: `upstream order ${upstreamOrderId} already belongs to order ${taken.shopOrderNo}` };
    const current = await this.reads.findAttempt(attempt.orderId, attempt.attemptNo);
    if (!current || current.status !== 'submit_unknown')
      return { kind: 'not_unknown', order: await this.reads.findById(attempt.orderId), answer };
    // the attempt may be closed between the check above and the record (an operator's not_placed):
    // then nothing was recorded, and it is not resolved
    const recorded = await this.submitter.recordOutcome(
      attempt.orderId,
      attempt.attemptNo,
      { kind: 'accepted', report: answer, request: attempt.request, reportKind: 'read' },
      source,
    );
    if (!recorded.applied) return { kind: 'not_unknown', order: recorded.order, answer };
    return { kind: 'resolved', order: recorded.order };
  }

  /**
   * An upstream order named by a verified callback (with the number of `attempt`, an attempt of order
   * `orderId`) that the order does not follow: the attempt was closed here (`rejected`), or the order
   * follows another upstream order. The upstream's own read decides (CONTRACT §6), never the callback:
   * when the order exists there, is this attempt's (its `downstream_order_no`, when the answer carries
   * one) and keeps something (not canceled or refunded), it is kept as the order's anomaly, with an
   * event row, the anomalies metric and an error-level log line (once per upstream order):
   * UPSTREAM_ORDER_EXISTS when the order follows no upstream order (it then waits for an operator: no
   * local cancel, refund or new attempt), DUPLICATE_UPSTREAM_ORDER when it follows another one.
   * `answer`: the order as already read (by `resolveUnknown`), else it is read here. `supplier`: the order's.
   */
  async checkUntracked(
    supplier: string,
    orderId: string,
    attempt: AttemptRecord,
    upstreamOrderId: number,
    source: EventSource,
    signal?: AbortSignal,
    answer?: UpstreamOrder,
  ): Promise<UntrackedResult> {
    let read = answer;
    if (!read) {
      try {
        read = await this.upstream(supplier).getOrder(upstreamOrderId, signal);
      } catch (e) {
        if (e instanceof UpstreamDefinitiveError && e.httpStatus === 404)
          return { kind: 'mismatch', reason: `the upstream has no order ${upstreamOrderId}` };
        return { kind: 'read_failed', error: e as Error };
      }
    }
    const report = read;
    if (report.downstream_order_no !== undefined && report.downstream_order_no !== attempt.downstreamOrderNo) {
      return {
        kind: 'mismatch',
        reason:
          `upstream order ${upstreamOrderId} carries downstream_order_no ${report.downstream_order_no}, ` +
          `not ${attempt.downstreamOrderNo}`,
      };
    }
    const taken = await this.reads.findByUpstreamId(supplier, upstreamOrderId);
    if (taken && taken.id !== orderId)
      return { kind: 'mismatch', reason: `upstream order ${upstreamOrderId} already belongs to order ${taken.shopOrderNo}` };
    if (taken) return { kind: 'followed' };
    if (upstreamKeptNothing(report.status)) return { kind: 'nothing_kept', status: report.status };
    // once per upstream order: its later callbacks add no event, metric or log line
    const known = (await this.reads.events(orderId)).some((e) => e.kind === 'anomaly' && e.detail?.upstream_order_id === upstreamOrderId);
    return this.writes.transaction(async (tx): Promise<UntrackedResult> => {
      const order = await tx.lockOrder(orderId);
      if (!order) return { kind: 'mismatch', reason: `order ${orderId} is gone` };
      if (order.upstreamOrderId === upstreamOrderId) return { kind: 'followed' };
      if (known && order.anomaly === (order.upstreamOrderId === null ? UPSTREAM_ORDER_EXISTS : DUPLICATE_UPSTREAM_ORDER)) {
        return { kind: 'anomaly', reason: order.anomaly, status: report.status, order, recorded: false };
      }
      const { order: updated, reason } = await this.updater.recordUntracked(tx, order, attempt, upstreamOrderId, report, source);
      tx.afterCommit(() =>
        this.logger.error({
          msg:
            order.upstreamOrderId === null
              ? `order ${order.shopOrderNo}: the upstream has order ${upstreamOrderId} (${report.status}) ` +
                `for attempt ${attempt.downstreamOrderNo}, which is ${attempt.status} here; ` +
                `the order follows no upstream order and waits for an operator (anomaly ${reason})`
              : `order ${order.shopOrderNo}: the upstream has a second order ${upstreamOrderId} (${report.status}) ` +
                `for attempt ${attempt.downstreamOrderNo} besides ${order.upstreamOrderId}, which it follows (anomaly ${reason})`,
          shop_order_no: order.shopOrderNo,
          trace_id: order.traceId,
          upstream_order_id: upstreamOrderId,
          downstream_order_no: attempt.downstreamOrderNo,
          anomaly: reason,
          source,
        }),
      );
      return { kind: 'anomaly', reason, status: report.status, order: updated, recorded: true };
    });
  }

  /** Attempts still `submitting` past their lease (the sender stopped): `submit_unknown` now. */
  async sweepStale(): Promise<number> {
    const now = this.clock.now();
    const stale = await this.reads.staleSubmitting(50);
    let swept = 0;
    for (const s of stale) {
      const done = await this.writes.transaction(async (tx) => {
        const order = await tx.lockOrder(s.orderId, true);
        const attempt = order ? await tx.lockAttempt(s.orderId, s.attemptNo) : null;
        // the lease is judged by the database's clock, as it was set (never this replica's)
        if (
          !order ||
          !attempt ||
          attempt.status !== 'submitting' ||
          !attempt.sendingUntil ||
          attempt.sendingUntil >= (await tx.databaseNow())
        )
          return false;
        await tx.updateAttempt(attempt.id, {
          status: 'submit_unknown',
          sending_until: null,
          unknown_since: now,
          next_resend_at: this.submitter.resendAt(now),
        });
        if (order.status === 'submitting' && order.attempt === s.attemptNo) {
          await this.updater.moveLocal(
            tx,
            order,
            'sweep',
            'submit_unknown',
            'poll',
            { error_code: null, error_message: 'outcome unknown: the attempt was in flight when its sender stopped' },
            { attempt: s.attemptNo, downstream_order_no: attempt.downstreamOrderNo },
          );
        }
        this.logger.warn({
          msg: `order ${order.shopOrderNo}: attempt ${s.attemptNo} found in flight after its lease: submit_unknown`,
          shop_order_no: order.shopOrderNo,
          trace_id: order.traceId,
        });
        return true;
      });
      if (done) {
        swept++;
        this.events.publish({ type: 'order_settled', orderId: s.orderId });
      }
    }
    return swept;
  }

  /**
   * Where the upstream deduplicates `downstream_order_no`: sends due `submit_unknown` attempts again
   * under the same number (one send at a time: the claim takes the attempt's sending lease).
   */
  async resendDue(limit = 10): Promise<number> {
    // (per supplier: UPSTREAM_ORDER_NO_IDEMPOTENT is each supplier's setting)
    const deduplicating = this.suppliers
      .list()
      .filter((s) => s.config.settings.orderNoIdempotent)
      .map((s) => s.config.name);
    if (deduplicating.length === 0) return 0;
    const now = this.clock.now();
    const claimed = await this.writes.claimResends(now, this.submitter.sendLeaseMs, limit, deduplicating);
    await Promise.all(
      claimed.map(async (a) => {
        const outcome = await this.submitter.send(a.supplier, a.downstreamOrderNo, a.request, { shop_order_no: a.downstreamOrderNo });
        this.logger.log({
          msg: `re-sent unknown attempt ${a.downstreamOrderNo}: ${outcome.kind}`,
          downstream_order_no: a.downstreamOrderNo,
        });
        await this.submitter.record(a.orderId, a.attemptNo, outcome, 'poll');
      }),
    );
    return claimed.length;
  }

  private opInProgress(order: OrderRecord): boolean {
    return order.opToken !== null && order.opUntil !== null && order.opUntil > this.clock.now();
  }
}
