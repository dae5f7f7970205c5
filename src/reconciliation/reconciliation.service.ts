/**
 * Reconciliation (issue 25, CONTRACT §5): a finished order is read again from the upstream, which may
 * have changed it without a callback (an admin refund sends none), and every difference is handled:
 * - applied through the rules of a poll (OrderUpdater.applyReport on the locked row, as the poller and
 *   an operator refresh do: a later status never moves the order back, a contradiction is an anomaly;
 *   the status change writes its own event and `order.status_changed` notification);
 * - recorded as a reconciliation item, announced to the shop as `order.reconciled` (outbox) and the
 *   read noted on the order, all in that same transaction;
 * - counted in `relay_reconciliation_differences_total{field}` once committed.
 *
 * Reads are the lowest class of the request budget (`reconcile`). Two ways in: the schedule
 * (ReconciliationScheduler, RECONCILE_AFTER) and on-demand runs over a range of `created_at`, one
 * running at a time across replicas, executed by the process that started it.
 */
import { randomBytes } from 'node:crypto';
import { Injectable, Logger, type OnModuleDestroy } from '@nestjs/common';
import { AppError } from '../common/app-error.js';
import { Clock } from '../common/clock.js';
import { AppConfig } from '../config/app-config.js';
import { OutboxWriter } from '../notifications/outbox.writer.js';
import { Metrics } from '../ops/metrics.service.js';
import type { OrderRecord } from '../orders/order.records.js';
import { OrderReads } from '../orders/order-reads.repository.js';
import { OrderWrites } from '../orders/order-writes.repository.js';
import { OrderUpdater } from '../orders/order-updater.service.js';
import { SupplierRegistry } from '../suppliers/supplier-registry.service.js';
import { UpstreamDefinitiveError } from '../upstream/upstream.errors.js';
import type { UpstreamOrder } from '../upstream/upstream.types.js';
import {
  differenceApplied,
  firstReconcileAt,
  isScheduledStatus,
  nextReconcileAt,
  orderDifferences,
  type Difference,
  type LocalFacts,
} from './reconcile-plan.js';
import {
  ReconciliationRepository,
  type ReconcileClaim,
  type ReconciliationItemRecord,
  type ReconciliationRunRecord,
} from './reconciliation.repository.js';

/** A running run without a heartbeat for this long (the database's clock) belongs to a process that stopped. */
export const STALE_RUN_MS = 60_000;
const HEARTBEAT_MS = 5_000;
/** Orders a run reads from the database at a time. */
const RUN_BATCH = 100;
/** The longest a scheduled read waits for the request budget before it is tried again later. */
export const SCHEDULED_BUDGET_WAIT_MS = 30_000;

export type ReconcileOutcome =
  | { kind: 'read'; differences: Difference[]; order: OrderRecord }
  /** A cancel is in progress on the order: read again later. */
  | { kind: 'deferred' }
  /** The upstream read failed; `definitive`: the upstream refused it (e.g. 404), trying again will not help. */
  | { kind: 'read_failed'; error: Error; definitive: boolean }
  | { kind: 'missing' };

@Injectable()
export class ReconciliationService implements OnModuleDestroy {
  private readonly logger = new Logger('reconciliation');
  /** This process, as the owner of the runs it starts. */
  readonly instanceId = `${process.pid}-${randomBytes(3).toString('hex')}`;
  /** The run this process executes, if any, and its stop signal. */
  private active: { runId: string; abort: AbortController; done: Promise<void> } | null = null;

  constructor(
    private readonly config: AppConfig,
    private readonly clock: Clock,
    private readonly metrics: Metrics,
    private readonly outbox: OutboxWriter,
    private readonly suppliers: SupplierRegistry,
    private readonly orderReads: OrderReads,
    private readonly orderWrites: OrderWrites,
    private readonly updater: OrderUpdater,
    private readonly repo: ReconciliationRepository,
  ) {}

  /** The schedule's steps (RECONCILE_AFTER); null: no scheduled reconciliation. */
  get steps(): readonly number[] | null {
    return this.config.reconcile.afterMs;
  }

  // ------------------------------------------------------------------------------------- one order

  /**
   * Reads one order from the upstream and applies it; the differences found are recorded with `runId`
   * (null: the schedule). `plannedAt`: the read is the order's scheduled one (its schedule counts from
   * then), and its next is planned in the same transaction. `maxWaitMs`: the longest wait for the
   * request budget.
   */
  async reconcileOrder(
    orderId: string,
    runId: string | null,
    opts: { plannedAt?: Date; signal?: AbortSignal; maxWaitMs?: number },
  ): Promise<ReconcileOutcome> {
    const order = await this.orderReads.findById(orderId);
    // read at the order's supplier (none: the supplier was deleted, the order keeps its history as it is)
    const supplier = order && this.suppliers.find(order.supplier);
    if (!order || order.upstreamOrderId === null || !supplier) return { kind: 'missing' };
    let answer: UpstreamOrder;
    try {
      answer = await supplier.client.getOrder(order.upstreamOrderId, opts.signal, {
        priority: 'reconcile',
        ...(opts.maxWaitMs !== undefined ? { maxWaitMs: opts.maxWaitMs } : {}),
      });
    } catch (e) {
      return { kind: 'read_failed', error: e as Error, definitive: e instanceof UpstreamDefinitiveError };
    }
    return this.apply(orderId, answer, runId, opts.plannedAt);
  }

  /** Applies a read on the locked row, with its items, notification and schedule, in one transaction. */
  private async apply(
    orderId: string,
    answer: UpstreamOrder,
    runId: string | null,
    plannedAt: Date | undefined,
  ): Promise<ReconcileOutcome> {
    return this.orderWrites.transaction(async (tx): Promise<ReconcileOutcome> => {
      const order = await tx.lockOrderToApply(orderId);
      if (!order) return { kind: 'missing' };
      const now = this.clock.now();
      if (order.opToken !== null && order.opUntil !== null && order.opUntil > now) return { kind: 'deferred' };
      const differences = orderDifferences(facts(order), answer);
      const source = runId === null ? 'reconciliation (schedule)' : `reconciliation run ${runId}`;
      const applied = await this.updater.applyReport(tx, order, answer, 'poll', {
        schedule: 'hint',
        kind: 'read',
        ...(differences.length > 0
          ? { detail: { reconciliation: runId ?? 'schedule', differences: differences.map((d) => d.field) } }
          : {}),
      });
      const updated = applied.order;
      if (differences.length > 0) {
        const items = differences.map((d) => ({
          orderId,
          shopOrderNo: order.shopOrderNo,
          field: d.field,
          local: d.local,
          upstream: d.upstream,
          applied: differenceApplied(d, facts(updated)),
          runId,
          detectedAt: now,
        }));
        const insert = this.repo.insertItemsSql(items);
        await tx.write(insert.sql, insert.params);
        const event = this.outbox.insert([
          {
            type: 'order.reconciled',
            subject: order.shopOrderNo,
            payload: {
              shop_order_no: order.shopOrderNo,
              supplier: order.supplier,
              status: updated.status,
              previous_status: order.status,
              refunded_amount: updated.refundedAmount,
              run_id: runId,
              differences: items.map((i) => ({ field: i.field, local: i.local, upstream: i.upstream, applied: i.applied })),
              at: now.toISOString(),
            },
          },
        ]);
        if (event) await tx.write(event.sql, event.params);
        tx.afterCommit(() => {
          for (const d of differences) this.metrics.reconciliationDifferences.inc({ field: d.field, supplier: order.supplier });
          this.logger.warn({
            msg:
              `order ${order.shopOrderNo}: the upstream differs ` +
              `(${differences.map((d) => `${d.field} ${d.local ?? 'none'} → ${d.upstream ?? 'none'}`).join(', ')}); ` +
              `found by ${source}`,
            shop_order_no: order.shopOrderNo,
            trace_id: order.traceId,
            run_id: runId,
            differences,
          });
        });
      }
      const steps = this.steps;
      const next =
        plannedAt === undefined ? undefined : steps && isScheduledStatus(updated.status) ? nextReconcileAt(plannedAt, steps, now) : null;
      const mark = this.repo.markReadSql(orderId, now, next);
      await tx.write(mark.sql, mark.params);
      return { kind: 'read', differences, order: updated };
    });
  }

  // -------------------------------------------------------------------------------------- schedule

  /** Plans up to `limit` newly finished orders; how many. */
  planFinished(limit: number): Promise<number> {
    const steps = this.steps;
    if (!steps) return Promise.resolve(0);
    const now = this.clock.now();
    return this.repo.planUnplanned(now, firstReconcileAt(now, steps), limit);
  }

  /** The lease of a claimed scheduled read: its wait for the budget, the read, a margin. */
  get claimLeaseMs(): number {
    return SCHEDULED_BUDGET_WAIT_MS + this.config.upstream.timeoutMs + 5_000;
  }

  /** How long a scheduled read that could not be made waits before it is tried again. */
  get retryMs(): number {
    return Math.min(60_000, this.steps?.[0] ?? 60_000);
  }

  /** One claimed scheduled read; its next read is planned whatever the outcome. */
  async reconcileClaimed(claim: ReconcileClaim, signal?: AbortSignal): Promise<ReconcileOutcome> {
    const steps = this.steps;
    if (!steps || !isScheduledStatus(claim.status)) {
      // the order moved on (refunded, canceled) or the schedule is off: nothing left to read
      await this.repo.reschedule(claim.id, null);
      return { kind: 'missing' };
    }
    const outcome = await this.reconcileOrder(claim.id, null, { plannedAt: claim.plannedAt, signal, maxWaitMs: SCHEDULED_BUDGET_WAIT_MS });
    const now = this.clock.now();
    if (outcome.kind === 'deferred' || (outcome.kind === 'read_failed' && !outcome.definitive)) {
      if (!signal?.aborted) await this.repo.reschedule(claim.id, new Date(now.getTime() + this.retryMs));
      else await this.repo.reschedule(claim.id, now);
    } else if (outcome.kind === 'read_failed') {
      // refused by the upstream (e.g. no such order there): this step is over, the next one reads again
      await this.repo.reschedule(claim.id, nextReconcileAt(claim.plannedAt, steps, now));
      this.logger.warn({
        msg: `order ${claim.shopOrderNo}: reconciliation read refused by the upstream: ${outcome.error.message}`,
        shop_order_no: claim.shopOrderNo,
      });
    } else if (outcome.kind === 'missing') {
      await this.repo.reschedule(claim.id, null);
    }
    if (outcome.kind === 'read_failed' && !outcome.definitive && !signal?.aborted) {
      this.logger.debug({
        msg: `order ${claim.shopOrderNo}: reconciliation read failed (${outcome.error.message}); tried again later`,
        shop_order_no: claim.shopOrderNo,
      });
    }
    return outcome;
  }

  // ------------------------------------------------------------------------------------ range runs

  /**
   * Starts a run over the orders created in [from, to] in a finished upstream state, executed in the
   * background by this process. AppError 409 `reconciliation_in_progress` (with `run_id`) while a run
   * is running anywhere; a run abandoned by a stopped process is failed first.
   */
  async start(from: Date, to: Date): Promise<{ runId: string; ordersTotal: number }> {
    const abandoned = await this.repo.failAbandoned(STALE_RUN_MS);
    for (const id of abandoned)
      this.logger.warn(`reconciliation run ${id} was abandoned (no heartbeat for ${STALE_RUN_MS / 1000} s): marked failed`);
    const running = await this.repo.running();
    if (running) throw inProgress(running.runId);
    const now = this.clock.now();
    const runId = `rec_${now
      .toISOString()
      .replace(/[-:TZ.]/g, '')
      .slice(0, 14)}_${randomBytes(4).toString('hex')}`;
    const ordersTotal = await this.repo.countRange(from, to);
    if (!(await this.repo.tryInsertRunning({ runId, from, to, owner: this.instanceId, startedAt: now, ordersTotal }))) {
      throw inProgress((await this.repo.running())?.runId ?? null);
    }
    const abort = new AbortController();
    const done = this.execute(runId, from, to, abort.signal).finally(() => {
      if (this.active?.runId === runId) this.active = null;
    });
    this.active = { runId, abort, done };
    this.logger.log({
      msg: `reconciliation run ${runId} started: ${ordersTotal} orders created from ${from.toISOString()} to ${to.toISOString()}`,
      run_id: runId,
    });
    return { runId, ordersTotal };
  }

  private async execute(runId: string, from: Date, to: Date, signal: AbortSignal): Promise<void> {
    const counters = { done: 0, failed: 0, differences: 0 };
    const beat = setInterval(() => void this.repo.heartbeat(runId, this.instanceId).catch(() => undefined), HEARTBEAT_MS);
    beat.unref?.();
    try {
      let after: { createdAt: Date; id: string } | null = null;
      for (;;) {
        const batch = await this.repo.rangeBatch(from, to, after, RUN_BATCH);
        for (const o of batch) {
          if (signal.aborted) throw new Error('stopped: the instance shut down');
          const outcome = await this.reconcileOrder(o.id, runId, { signal });
          if (outcome.kind === 'read') counters.differences += outcome.differences.length;
          if (outcome.kind === 'read_failed' || outcome.kind === 'deferred') counters.failed++;
          counters.done++;
          if (!(await this.repo.progress(runId, this.instanceId, counters))) throw new Error('the run is no longer held by this process');
        }
        if (batch.length < RUN_BATCH) break;
        after = batch[batch.length - 1];
      }
      await this.repo.finish(runId, this.instanceId, 'succeeded', null, this.clock.now());
      this.logger.log({
        msg:
          `reconciliation run ${runId} succeeded: ${counters.done} orders read, ${counters.differences} differences, ` +
          `${counters.failed} not read`,
        run_id: runId,
        ...counters,
      });
    } catch (e) {
      const error = signal.aborted ? 'stopped: the instance shut down' : (e as Error).message;
      await this.repo.finish(runId, this.instanceId, 'failed', error, this.clock.now()).catch(() => undefined);
      this.logger.error({ msg: `reconciliation run ${runId} failed: ${error}`, run_id: runId });
    } finally {
      clearInterval(beat);
    }
  }

  async getRun(runId: string): Promise<ReconciliationRunRecord> {
    const run = await this.repo.findRun(runId);
    if (!run) throw new AppError('reconciliation_run_not_found', `no reconciliation run ${runId}`);
    return run;
  }

  listRuns(offset: number, limit: number): Promise<{ items: ReconciliationRunRecord[]; total: number }> {
    return this.repo.listRuns(offset, limit);
  }

  listItems(
    filter: { shopOrderNo?: string; runId?: string },
    offset: number,
    limit: number,
  ): Promise<{ items: ReconciliationItemRecord[]; total: number }> {
    return this.repo.listItems(filter, offset, limit);
  }

  /** Stops the run this process executes (recorded failed) and waits for it. */
  async onModuleDestroy(): Promise<void> {
    const active = this.active;
    if (!active) return;
    active.abort.abort();
    await active.done;
  }
}

function facts(o: OrderRecord): LocalFacts {
  return { status: o.status, amount: o.amount, refundedAmount: o.refundedAmount };
}

function inProgress(runId: string | null): AppError {
  return new AppError('reconciliation_in_progress', `a reconciliation run is already running${runId ? `: ${runId}` : ''}`, {
    run_id: runId,
  });
}
