/**
 * The background loop of each instance: turns attempts left `submitting` by a stopped process into
 * `submit_unknown`, re-sends due unknown attempts (where the upstream deduplicates), polls due
 * unfinished orders (claimed with FOR UPDATE SKIP LOCKED, so replicas share the work), and flags stuck
 * orders (AlertService's `order_stuck`: its outbox row in the transaction that flags the order, its log
 * line and metric after the commit).
 *
 * Its tick is at most a quarter of UPSTREAM_TIMEOUT_MS (and at most ORDER_POLL_BASE_MS and 1 s), so a
 * leftover `submitting` attempt becomes `submit_unknown` within 2 × UPSTREAM_TIMEOUT_MS of a start:
 * the sweep of those attempts runs on its own timer at that pace, never behind a long pass of slow
 * reads or re-sends (a pass may take many seconds when the upstream answers slowly).
 * The stuck flags are kept every second (a partial index finds the flagged orders); the orders-by-
 * status gauge, a count over the whole table, is read when the metrics are scraped, on any instance.
 */
import { Injectable, Logger, type OnApplicationBootstrap, type OnModuleDestroy } from '@nestjs/common';
import { Clock } from '../common/clock.js';
import { LoopProgress, type LoopProgressView } from '../common/loop-progress.js';
import { WakeLoop } from '../common/wake-loop.js';
import { AppConfig } from '../config/app-config.js';
import { AlertService } from '../ops/alert.service.js';
import { Metrics } from '../ops/metrics.service.js';
import { DomainEvents } from './domain-events.js';
import { ITEMS_DELIVERED, ORDER_STATUSES, UNFINISHED, stuckThresholds } from './order-state.js';
import { OrderFollowService } from './order-follow.service.js';
import { OrderReads } from './order-reads.repository.js';
import { OrderWrites, type PollClaim } from './order-writes.repository.js';
import { runLimited } from './run-limited.js';

const POLL_BATCH = 20;
const POLL_ROUNDS = 10;
const POLL_CONCURRENCY = 8;
const HOUSEKEEPING_MS = 1000;
/** How often the gauge counts the orders in a final status (see refreshStatusGauge). */
const FINAL_COUNT_MS = 5 * 60_000;

@Injectable()
export class OrderPoller implements OnApplicationBootstrap, OnModuleDestroy {
  private readonly logger = new Logger('order-poller');
  /** The passes: after one, the next at once when a batch was full or a wake() came (reads not failing), else a tick later. */
  private readonly loop = new WakeLoop(
    () => this.tick().catch(() => false),
    (backlog, woken) => ((woken && !this.readsFailing) || backlog ? 0 : this.tickMs),
  );
  /** The sweep of attempts left `submitting` (sweepStale): one at a time, a tick apart, beside the passes. */
  private readonly sweepLoop = new WakeLoop<void>(
    () =>
      this.sweepCount
        .run(() => this.follow.sweepStale())
        .then(
          () => undefined,
          (e: Error) => {
            if (!this.stopped) this.logger.error({ msg: `sweep of in-flight attempts failed: ${e.message}` });
          },
        ),
    () => this.tickMs,
  );
  /** Aborted at shutdown: ends the polls' reads in flight. */
  private readonly shutdown = new AbortController();
  /** The last batch's reads failed for the most part: no pass sooner than the next tick. */
  private readsFailing = false;
  private lastHousekeeping = 0;
  private readonly passCount = new LoopProgress();
  private readonly sweepCount = new LoopProgress();

  constructor(
    private readonly config: AppConfig,
    private readonly clock: Clock,
    private readonly metrics: Metrics,
    private readonly reads: OrderReads,
    private readonly writes: OrderWrites,
    private readonly follow: OrderFollowService,
    private readonly alerts: AlertService,
    events: DomainEvents,
  ) {
    // read when the metrics are scraped, on every instance (a count over the whole orders table)
    metrics.onScrape(() => this.refreshStatusGauge());
    events.subscribe('order_read_due', this.readDueOrdersNow.bind(this));
  }

  /**
   * `order_read_due`: an order was made due now (a delivered state reported without its items, a
   * callback's read failed); a pass comes soon instead of at the next tick.
   */
  private readDueOrdersNow(): void {
    this.wake();
  }

  /**
   * The orders-by-status gauge (Metrics runs one refresh at a time). The unfinished statuses (a few
   * rows, by index) are counted at every scrape; the final ones, a count over nearly the whole table
   * (~150 ms with 500,000 orders), at most every FINAL_COUNT_MS.
   */
  private finalCountedAt = -Infinity;
  private async refreshStatusGauge(): Promise<void> {
    // (a clock stepped back counts them again rather than freezing them)
    const sinceFinal = this.clock.nowMs() - this.finalCountedAt;
    const all = sinceFinal >= FINAL_COUNT_MS || sinceFinal < 0;
    const statuses = all ? ORDER_STATUSES : ORDER_STATUSES.filter((s) => UNFINISHED.has(s));
    const counts = new Map((await this.reads.countByStatus(statuses)).map((c) => [c.status, c.n]));
    for (const status of statuses) this.metrics.ordersByStatus.set({ status }, counts.get(status) ?? 0);
    if (all) this.finalCountedAt = this.clock.nowMs();
  }

  /** Passes (tick) begun and ended since the start: for tests and tools (see LoopProgress). */
  get passes(): LoopProgressView {
    return this.passCount;
  }

  /** Sweeps of attempts left `submitting` (sweepStale) begun and ended since the start: for tests and tools. */
  get sweeps(): LoopProgressView {
    return this.sweepCount;
  }

  private get stopped(): boolean {
    return this.loop.stopped;
  }

  get tickMs(): number {
    const { pollBaseMs } = this.config.orders;
    return Math.max(10, Math.min(pollBaseMs, this.config.upstream.timeoutMs / 4, 1000));
  }

  onApplicationBootstrap(): void {
    if (!this.config.workers) return; // the relay command's in-process instance does no background work
    this.sweepLoop.start(0);
    this.loop.start();
    void this.requeueAwaitingItems();
  }

  /**
   * Orders left in a delivered state without their items and followed by nothing (stored so before
   * a delivered state without its fulfillment was known not to be a delivery): put back on the
   * poller, counted and logged, once at each start.
   */
  async requeueAwaitingItems(): Promise<number> {
    try {
      const found = await this.writes.requeueAwaitingItems([...ITEMS_DELIVERED], this.clock.now(), this.config.orders.pollBaseMs);
      if (found.length > 0) {
        this.metrics.itemsRequeued.inc(found.length);
        this.logger.warn({
          msg: `${found.length} orders in a delivered state without their items are followed again to read them`,
          count: found.length,
          shop_order_nos: found.slice(0, 20),
        });
        this.wake();
      }
      return found.length;
    } catch (e) {
      if (!this.stopped) this.logger.error({ msg: `requeue of orders without their items failed: ${(e as Error).message}` });
      return 0;
    }
  }

  async onModuleDestroy(): Promise<void> {
    const passEnded = this.loop.stop();
    const sweepEnded = this.sweepLoop.stop();
    this.shutdown.abort(); // reads in flight end now (a re-send in flight runs to its answer)
    await Promise.all([passEnded, sweepEnded]);
  }

  /**
   * Runs a tick soon (e.g. after a callback made an order due); not while the upstream fails most
   * reads (the next tick comes at its pace).
   */
  wake(): void {
    if (!this.config.workers || this.readsFailing) return;
    this.loop.wake();
  }

  /**
   * One pass: the due re-sends, then at most POLL_ROUNDS claims of POLL_BATCH due orders, then the
   * housekeeping (the sweep of attempts left `submitting` runs apart: sweepLoop). True when its last
   * claim was full and most of its reads answered (more may be due: the next pass follows at once
   * instead of a tick later, so an instance keeps up with more than POLL_ROUNDS × POLL_BATCH due orders
   * a tick); a batch whose reads failed for the most part ends the pass, and neither a full batch nor a
   * wake() brings the next one before a tick.
   * Public for tests and tools; errors are logged, never thrown.
   */
  tick(): Promise<boolean> {
    return this.passCount.run(() => this.pass());
  }

  private async pass(): Promise<boolean> {
    let backlog = false;
    try {
      await this.follow.resendDue();
      for (let round = 0; round < POLL_ROUNDS && !this.stopped; round++) {
        const now = this.clock.now();
        // The batch is read POLL_CONCURRENCY at a time: its lease lasts one read's lease per wave, so
        // that an order of the last wave is still held when its read starts (one poller at a time, §9).
        const leaseMs = Math.ceil(POLL_BATCH / POLL_CONCURRENCY) * this.follow.pollLeaseMs;
        const claims = await this.writes.claimDuePolls(now, new Date(now.getTime() + leaseMs), POLL_BATCH);
        // Each supplier's reads in a pool of their own: one whose key is blocked or whose server does
        // not answer never holds the reads of another (its reads wait a bounded time: OrderFollowService.pollOne).
        const bySupplier = new Map<string, PollClaim[]>();
        for (const c of claims) bySupplier.set(c.snapshot.order.supplier, [...(bySupplier.get(c.snapshot.order.supplier) ?? []), c]);
        const failing = await Promise.all(
          [...bySupplier.values()].map(async (group) => {
            let failed = 0;
            await runLimited(group, POLL_CONCURRENCY, async (c) => {
              try {
                if (!(await this.follow.pollOne(c, this.shutdown.signal))) failed++;
              } catch (e) {
                failed++;
                this.logger.error({
                  msg: `order ${c.shopOrderNo}: poll failed: ${(e as Error).message}`,
                  shop_order_no: c.shopOrderNo,
                  trace_id: c.snapshot.order.traceId,
                });
              }
            });
            return failed * 2 >= group.length;
          }),
        );
        // An upstream failing most reads (down, rate limiting) is not read faster than a batch a tick
        // (a few orders it cannot read do not slow the others); with several suppliers, only when every
        // supplier polled is failing so.
        this.readsFailing = claims.length > 0 && failing.every(Boolean);
        backlog = claims.length === POLL_BATCH && !this.readsFailing;
        if (!backlog) break;
      }
      if (this.clock.nowMs() - this.lastHousekeeping >= HOUSEKEEPING_MS) {
        this.lastHousekeeping = this.clock.nowMs();
        await this.housekeeping();
      }
    } catch (e) {
      if (!this.stopped) this.logger.error({ msg: `order poller tick failed: ${(e as Error).message}` });
      return false;
    }
    return backlog && !this.stopped;
  }

  /** Stuck orders flagged with their alert (one transaction; the flagged ones found by a partial index). */
  private async housekeeping(): Promise<void> {
    const now = this.clock.now();
    const { count } = await this.writes.transaction(async (tx) => {
      const flagged = await this.writes.flagStuck(tx, now, stuckThresholds(now, this.config.orders.stuckAlertS));
      for (const s of flagged.newlyStuck)
        await this.alerts.orderStuck(
          { shopOrderNo: s.shopOrderNo, status: s.status, since: s.since, traceId: s.traceId },
          tx.em,
          (effect) => tx.afterCommit(effect),
        );
      return flagged;
    });
    this.metrics.stuckOrders.set(count);
  }
}
