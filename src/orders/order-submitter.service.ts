/**
 * Sending an attempt to the upstream and recording what came of it. The send happens outside any
 * transaction, under the attempt's sending lease (taken when the attempt was reserved, or by a
 * re-send claim); the outcome is written in one short transaction on the locked order.
 *
 * Outcome classes (CONTRACT §5): accepted; a definitive refusal (`rejected`, the upstream's code);
 * nothing reached the upstream after a few quick tries (`rejected`, `upstream_unavailable`); unknown
 * (`submit_unknown`); held back by the request budget (`queued`). What each does to the attempt and
 * its order is the table of attempt-plan.ts. `invalid_callback_url` is not a refusal of the
 * order: the same attempt goes again at once without the callback address.
 */
import { Injectable, Logger } from '@nestjs/common';
import { setTimeout as sleep } from 'node:timers/promises';
import { Clock } from '../common/clock.js';
import { AppConfig } from '../config/app-config.js';
import { Metrics } from '../ops/metrics.service.js';
import { UpstreamMonitor } from '../ops/upstream-monitor.service.js';
import { isRateLimited } from '../upstream/budgeted-upstream.client.js';
import { callbackUrlFor } from '../callbacks/callback-url.js';
import { SupplierRegistry } from '../suppliers/supplier-registry.service.js';
import { UpstreamDefinitiveError, UpstreamRetryableError, UpstreamUnknownError } from '../upstream/upstream.errors.js';
import type { UpstreamCreateOrderRequest } from '../upstream/upstream.types.js';
import { planOutcome, planSendFailure, sendLeaseMs, type FailedSend, type SendFailure } from './attempt-plan.js';
import { overcharge, refusalCode } from './place-plan.js';
import { upstreamKeptNothing, type EventSource, type ReportKind } from './order-state.js';
import type { AttemptRecord, AttemptRequest, OrderRecord } from './order.records.js';
import type { OrderSnapshot, OrderTx } from './order-tx.js';
import { OrderWrites } from './order-writes.repository.js';
import { DomainEvents } from './domain-events.js';
import { OrderUpdater, type UpstreamReport } from './order-updater.service.js';
import type { RefusalFollowUp } from './offer-failover.service.js';

/** An accepted attempt: the create answer, or an order detail that proved the attempt exists. */
export type AcceptedReport = UpstreamReport & { order_id: number };

export type SendOutcome =
  /** `reportKind`: the create's answer, or an order detail read to prove the attempt (see ReportKind). */
  | { kind: 'accepted'; report: AcceptedReport; request: AttemptRequest; reportKind: ReportKind }
  /**
   * rejected (`upstreamOrderId`: the order the refusal names, `payment_failed`: the one the upstream
   * created and canceled), unavailable, unknown, or queued (not sent for the request budget: no token
   * in time, or a 429, the upstream processed nothing; it waits in the queue). See attempt-plan.ts.
   */
  | FailedSend;

/** A failed try of the create call, as the send-retry policy sees it. */
function sendFailure(e: unknown): SendFailure {
  if (e instanceof UpstreamDefinitiveError) {
    return {
      kind: 'definitive',
      errorCode: e.errorCode,
      httpStatus: e.httpStatus,
      message: e.upstreamMessage || e.message,
      upstreamOrderId: e.upstreamOrderId,
    };
  }
  if (e instanceof UpstreamRetryableError)
    return { kind: 'retryable', reason: e.reason, rateLimited: isRateLimited(e as unknown), retryAfterMs: e.retryAfterMs };
  return { kind: 'unknown', reason: e instanceof UpstreamUnknownError ? e.reason : e instanceof Error ? e.message : String(e) };
}

@Injectable()
export class OrderSubmitter {
  private readonly logger = new Logger('orders');
  /** The suppliers that refused our callback address once: their orders are followed by polling alone. */
  private readonly callbackRefused = new Set<string>();

  constructor(
    private readonly config: AppConfig,
    private readonly clock: Clock,
    private readonly metrics: Metrics,
    private readonly suppliers: SupplierRegistry,
    private readonly writes: OrderWrites,
    private readonly updater: OrderUpdater,
    private readonly events: DomainEvents,
    private readonly monitor: UpstreamMonitor,
  ) {}

  /** Whether new attempts at `supplier` carry our callback_url. */
  withCallback(supplier: string): boolean {
    return this.config.callbacks.publicUrl !== null && !this.callbackRefused.has(supplier);
  }

  /** The callback_url an order at `supplier` is created with (CONTRACT §10: its own), null without CALLBACK_PUBLIC_URL. */
  callbackUrl(supplier: string): string | null {
    const { publicUrl } = this.config.callbacks;
    return publicUrl === null ? null : callbackUrlFor(publicUrl, supplier, this.suppliers.envName);
  }

  /** How long an attempt's sending lease lasts (attempt-plan.ts `sendLeaseMs`). */
  get sendLeaseMs(): number {
    return sendLeaseMs(this.config.upstream.timeoutMs);
  }

  /**
   * Sends one attempt (outside any transaction). `wait.maxWaitMs`: the longest wait for the request
   * budget's token (or, with the budget off, for the end of a block this process met); without one in
   * time, or on a 429 (with or without a budget), the outcome is `queued` (nothing was sent or
   * processed). `wait.granted`: the caller took the first send's token already. The create goes to
   * `supplier`, through its client and under its budget.
   */
  async send(
    supplier: string,
    downstreamOrderNo: string,
    request: AttemptRequest,
    log: { shop_order_no: string },
    wait: { maxWaitMs?: number; granted?: boolean } = {},
  ): Promise<SendOutcome> {
    const started = performance.now();
    const { client, config } = this.suppliers.get(supplier);
    const callbackUrl = this.callbackUrl(supplier);
    let req = request;
    for (let tryNo = 0; ; tryNo++) {
      const body: UpstreamCreateOrderRequest = {
        sku_id: req.sku_id,
        quantity: req.quantity,
        ...(req.manual_form_data !== undefined ? { manual_form_data: req.manual_form_data } : {}),
        downstream_order_no: downstreamOrderNo,
        trace_id: req.trace_id,
        ...(req.with_callback && callbackUrl !== null ? { callback_url: callbackUrl } : {}),
      };
      try {
        const created = await client.createOrder(body, { maxWaitMs: wait.maxWaitMs, granted: tryNo === 0 && wait.granted === true });
        return { kind: 'accepted', report: created, request: req, reportKind: 'answer' };
      } catch (e) {
        // the send-retry policy (attempt-plan.ts) decides whether it goes again; this carries it out
        const step = planSendFailure(sendFailure(e), {
          tryNo,
          elapsedMs: performance.now() - started,
          timeoutMs: config.settings.timeoutMs,
          withCallback: body.callback_url !== undefined,
        });
        if (step.callbackRefused) {
          this.callbackRefused.add(supplier);
          this.logger.warn({
            msg:
              `supplier ${supplier} refused our callback_url (invalid_callback_url): sending again without it; ` +
              'its orders are followed by polling',
            supplier,
            ...log,
            trace_id: req.trace_id,
          });
          req = { ...req, with_callback: false };
        }
        if (step.kind === 'stop') return step.outcome;
        if (step.delayMs > 0) await sleep(step.delayMs);
      }
    }
  }

  /**
   * Records the outcome of a send (or a proof that the attempt exists upstream) on the attempt and the
   * order, in one transaction. An attempt that is no longer open is left as it is.
   *
   * With `snapshot` (the order and attempt as the reservation wrote them), it is first tried as one
   * statement that checks, under the row locks, that nothing changed them since; when something did
   * (a callback, the sweeper, an operator), nothing is written and it is done in a transaction.
   */
  async record(
    orderId: string,
    attemptNo: number,
    outcome: SendOutcome,
    source: EventSource,
    snapshot?: OrderSnapshot,
    onRefused?: RefusalFollowUp,
  ): Promise<OrderRecord> {
    return (await this.recordOutcome(orderId, attemptNo, outcome, source, onRefused ? undefined : snapshot, onRefused)).order;
  }

  /**
   * `record`, telling whether the outcome was taken: `applied` is false when the attempt was no longer
   * open (or no longer the order's attempt) and was left as it is.
   */
  async recordOutcome(
    orderId: string,
    attemptNo: number,
    outcome: SendOutcome,
    source: EventSource,
    snapshot?: OrderSnapshot,
    onRefused?: RefusalFollowUp,
  ): Promise<{ order: OrderRecord; applied: boolean }> {
    const now = this.clock.now();
    const work = async (tx: OrderTx): Promise<{ order: OrderRecord; applied: boolean } | null> => {
      const locked = await tx.lockOrderAndAttempt(orderId, attemptNo);
      if (!locked) return null;
      const { order, attempt } = locked;
      // the attempt lifecycle (attempt-plan.ts) decides everything the outcome does, to an attempt no longer
      // open too; this carries it out
      const plan = planOutcome(
        outcome.kind === 'accepted'
          ? {
              kind: 'accepted',
              upstreamOrderId: outcome.report.order_id,
              changedRequest: outcome.request !== attempt.request ? outcome.request : null,
            }
          : outcome,
        {
          status: attempt.status,
          sends: attempt.sends,
          current: order.attempt === attemptNo,
          leased: attempt.sendingUntil !== null,
          attemptNo,
          downstreamOrderNo: attempt.downstreamOrderNo,
        },
        { now, resendAt: this.resendAt(now) },
      );
      await tx.updateAttempt(attempt.id, plan.attempt);
      tx.afterCommit(() => {
        if (plan.metric) this.metrics.placements.inc({ outcome: plan.metric, supplier: order.supplier });
        if (plan.log) this.logOutcome(plan.log, order, attempt, outcome);
      });
      switch (plan.order.kind) {
        case 'unchanged':
          return { order, applied: plan.taken };
        case 'untracked':
          if (outcome.kind !== 'accepted') throw new Error(`a ${outcome.kind} outcome has no upstream order`);
          return { order: await this.lateAcceptance(tx, order, attempt, outcome.report, source), applied: plan.taken };
        case 'move': {
          const { trigger, to, patch, detail } = plan.order;
          const moved = await this.updater.moveLocal(tx, order, trigger, to, source, patch, detail);
          // a refusal's follow-up (an offer order's next source) is reserved in this same transaction;
          // `unavailable`: nothing reached the upstream
          const code = outcome.kind === 'rejected' ? refusalCode(outcome) : moved.errorCode;
          const followed = to === 'rejected' && onRefused ? await onRefused(tx, moved, code, outcome.kind !== 'unavailable') : null;
          return { order: followed ?? moved, applied: plan.taken };
        }
        case 'report': {
          if (outcome.kind !== 'accepted') throw new Error(`a ${outcome.kind} outcome has no report`);
          const r = outcome.report;
          const applied = await this.updater.applyReport(tx, order, r, source, {
            schedule: 'hint',
            kind: outcome.reportKind,
            patch: {
              upstream_order_id: r.order_id,
              upstream_order_no: r.order_no ?? null,
              ...(outcome.request.with_callback && this.config.callbacks.publicUrl !== null ? { callbacks_expected: true } : {}),
            },
            detail: { attempt: attemptNo, downstream_order_no: attempt.downstreamOrderNo },
          });
          tx.afterCommit(() => {
            this.monitor.pingSoon(); // the wallet was debited: check it against WALLET_LOW_BALANCE
            this.checkCharge(order, r);
          });
          return { order: applied.order, applied: plan.taken };
        }
      }
    };
    const recorded = (snapshot ? await this.writes.fromSnapshot(snapshot, work) : null) ?? (await this.writes.transaction(work));
    this.events.publish({ type: 'order_settled', orderId });
    if (!recorded) throw new Error(`order ${orderId} vanished`);
    return recorded;
  }

  /** The logs an outcome's plan asks for, once committed. */
  private logOutcome(kind: 'resend_refused' | 'unknown', order: OrderRecord, attempt: AttemptRecord, outcome: SendOutcome): void {
    if (kind === 'resend_refused' && outcome.kind === 'rejected') {
      this.logger.warn({
        msg:
          `order ${order.shopOrderNo}: the re-send of attempt ${attempt.attemptNo} (${attempt.downstreamOrderNo}) was refused ` +
          `(${outcome.errorCode}, HTTP ${outcome.httpStatus}); an earlier send may have been placed, so it stays submit_unknown`,
        shop_order_no: order.shopOrderNo,
        trace_id: order.traceId,
        error_code: outcome.errorCode,
      });
    } else if (kind === 'unknown' && outcome.kind === 'unknown') {
      this.logger.warn({
        msg: `order ${order.shopOrderNo}: outcome of the create call unknown (${outcome.reason})`,
        shop_order_no: order.shopOrderNo,
        trace_id: order.traceId,
      });
    }
  }

  /**
   * The upstream accepted a create whose attempt was closed here meanwhile (the sweeper took the
   * sender for gone and an operator then settled it `not_placed`, or a later attempt took over): an
   * upstream order exists that the order does not follow. Kept as the order's anomaly
   * (OrderUpdater.recordUntracked), as a verified callback naming it would be; nothing when the order
   * follows this one, or when the upstream order keeps nothing (canceled, refunded).
   */
  private async lateAcceptance(
    tx: OrderTx,
    order: OrderRecord,
    attempt: AttemptRecord,
    report: AcceptedReport,
    source: EventSource,
  ): Promise<OrderRecord> {
    if (order.upstreamOrderId === report.order_id || upstreamKeptNothing(report.status)) return order;
    const { order: updated, reason } = await this.updater.recordUntracked(tx, order, attempt, report.order_id, report, source);
    tx.afterCommit(() =>
      this.logger.error({
        msg:
          `order ${order.shopOrderNo}: the upstream accepted attempt ${attempt.downstreamOrderNo} as order ${report.order_id} ` +
          `(${report.status}) after it was closed here (${attempt.status}); kept as anomaly ${reason}`,
        shop_order_no: order.shopOrderNo,
        trace_id: order.traceId,
        upstream_order_id: report.order_id,
        downstream_order_no: attempt.downstreamOrderNo,
        anomaly: reason,
        source,
      }),
    );
    return updated;
  }

  /** When a `submit_unknown` attempt is sent again (where the upstream deduplicates order numbers). */
  resendAt(now: Date): Date {
    return new Date(now.getTime() + this.config.upstream.submitUnknownRecheckS * 1000);
  }

  /** A charge above quantity × the checked unit price (place-plan.ts `overcharge`) is counted and logged. */
  private checkCharge(order: OrderRecord, r: AcceptedReport): void {
    const over = overcharge(r.amount, order.unitCost, order.quantity);
    if (over) {
      this.metrics.overcharges.inc({ supplier: order.supplier });
      this.logger.warn({
        msg: `order ${order.shopOrderNo}: the upstream charged ${r.amount}, above ${over.expected} (quantity × checked unit price)`,
        shop_order_no: order.shopOrderNo,
        trace_id: order.traceId,
        amount: r.amount,
        ceiling: over.expected,
      });
    }
  }
}
