/**
 * Delivers the transactional outbox to the shop (CONTRACT §7), when `config.workers` is on and
 * SHOP_WEBHOOK_URL is set.
 *
 * Delivery cycles, one at a time on a WakeLoop (common/wake-loop.ts): a cycle claims a few due events
 * in one short transaction (a lease, see OutboxRepository), POSTs each one to the shop outside any
 * transaction and records each result in its own statement: `delivered` on a 2xx, else retried with
 * exponential backoff and jitter (webhook-backoff.ts), `dead` after SHOP_WEBHOOK_MAX_ATTEMPTS. The
 * next cycle follows at once after a full claim or a kick, else after a second; while every delivery
 * fails, the loop rests longer and longer between cycles (common/backoff.ts, up to a minute), so that
 * a shop that is down is not flooded (webhook-backoff.ts nextCycleMs). The events of one subject go out
 * in order. An event is at least once at the shop; the `Relay-Event-Id` header lets it drop a repeat
 * (a repeat only happens when a process dies mid-delivery and its lease runs out).
 *
 * One delivery at a time per event, across replicas: a request has a total deadline
 * (`timing.requestMs`, an AbortSignal) until the answer's status, and the answer's body is not read at
 * all (the status is the answer; a shop trickling or sending a large body neither holds the request
 * open nor fails it: the connection is closed once the status is in); the claim's lease
 * (`timing.leaseMs`, measured by the database's clock from the claim) is three times the deadline, so
 * that the request and the recording of its result end well before another replica may claim the
 * event again.
 *
 * Shutdown: stops the loop (no cycle starts after it), lets the cycle in flight finish its deliveries
 * (each is bounded by the request deadline) and record them, and releases what a cycle claimed once
 * the shutdown had begun; nothing claimed is left unrecorded, so nothing waits for a lease.
 */
import { Injectable, Logger, type OnApplicationBootstrap, type OnModuleDestroy } from '@nestjs/common';
import axios, { type AxiosInstance } from 'axios';
import type { Readable } from 'node:stream';
import { Clock } from '../common/clock.js';
import { LoopProgress, type LoopProgressView } from '../common/loop-progress.js';
import { WakeLoop } from '../common/wake-loop.js';
import { AppConfig } from '../config/app-config.js';
import { Metrics } from '../ops/metrics.service.js';
import { OutboxRepository, type ClaimedEvent } from './outbox.repository.js';
import { attemptOutcome, failedCyclesAfter, isDelivered, nextCycleMs, type CycleCadence, type DeliveryCycle } from './webhook-backoff.js';
import { buildWebhookRequest } from './webhook-request.js';

/** Per delivery request: the total deadline (and the longest silence within it). */
export const WEBHOOK_TIMEOUT_MS = 10_000;
/** How long a claim holds its events: well above the request's deadline plus the recording of its result. */
export const WEBHOOK_LEASE_MS = 3 * WEBHOOK_TIMEOUT_MS;
/** Deliveries at once; also the size of one claim. */
export const WEBHOOK_CONCURRENCY = 4;
/** How often the outbox is looked at when there was nothing to do. */
export const WEBHOOK_IDLE_MS = 1_000;
/** The longest rest given to a shop that failed every delivery of the last cycles. */
export const WEBHOOK_MAX_PAUSE_MS = 60_000;
/** The loop's cadence: a look every WEBHOOK_IDLE_MS, a rest of 1 s, 2 s, … 60 s while the shop fails everything. */
const CADENCE: CycleCadence = {
  idleMs: WEBHOOK_IDLE_MS,
  batch: WEBHOOK_CONCURRENCY,
  pause: { baseMs: WEBHOOK_IDLE_MS, maxMs: WEBHOOK_MAX_PAUSE_MS },
};

@Injectable()
export class WebhookSender implements OnApplicationBootstrap, OnModuleDestroy {
  private readonly logger = new Logger('webhooks');
  private readonly http: AxiosInstance;
  private running = false;
  private stopping = false;
  /** Cycles in a row that claimed events and delivered none (the shop's rest grows with them). */
  private failedCycles = 0;
  /** The delivery cycles, one at a time; the next after the wait nextCycleMs gives, at once after a kick. */
  private readonly loop = new WakeLoop<DeliveryCycle>(
    () => this.cycle(),
    (cycle, kicked) => nextCycleMs(cycle, this.failedCycles, kicked, CADENCE),
  );
  private readonly cycleCount = new LoopProgress();
  /**
   * The request's total deadline and the claim's lease (a test shortens them; keep the lease well
   * above the deadline).
   */
  timing = { requestMs: WEBHOOK_TIMEOUT_MS, leaseMs: WEBHOOK_LEASE_MS };

  constructor(
    private readonly config: AppConfig,
    private readonly clock: Clock,
    private readonly metrics: Metrics,
    private readonly outbox: OutboxRepository,
  ) {
    this.http = axios.create({
      maxRedirects: 0,
      validateStatus: () => true,
      transformResponse: [(d: unknown) => d],
      // resolved at the answer's headers; the body is dropped unread (see deliverOne)
      responseType: 'stream',
      proxy: false,
    });
    metrics.onScrape(() => this.refreshBacklog());
  }

  /** Delivery cycles (deliverDue) of the loop begun and ended since the start: for tests and tools (LoopProgress). */
  get cycles(): LoopProgressView {
    return this.cycleCount;
  }

  /** True from the start of the delivery loop until it has ended at shutdown: for tests and tools. */
  get looping(): boolean {
    return this.running;
  }

  /** True when this process delivers webhooks. */
  get enabled(): boolean {
    return this.config.workers && this.config.shopWebhook.url !== null && this.config.shopWebhook.secret !== null;
  }

  onApplicationBootstrap(): void {
    if (!this.enabled) return;
    this.running = true;
    // the first cycle begins here, as the application starts
    this.loop.startNow();
  }

  async onModuleDestroy(): Promise<void> {
    this.stopping = true;
    // from here on nothing more is claimed (a test of the shutdown waits for this line)
    if (this.running) this.logger.debug({ msg: 'webhook delivery stopping: the deliveries in flight end, nothing more is claimed' });
    await this.loop.stop();
    this.running = false;
  }

  /**
   * Looks at the outbox now instead of at the next tick (e.g. after an operator's replay): between
   * cycles the next one starts now, during one the next follows it at once. Nothing when this process
   * does not deliver.
   */
  kick(): void {
    if (this.running) this.loop.wake();
  }

  /** One pass of the loop: a delivery cycle, counted; a failed one is logged and counts as nothing claimed. */
  private async cycle(): Promise<DeliveryCycle> {
    let cycle: DeliveryCycle = { claimed: 0, delivered: 0 };
    try {
      cycle = await this.cycleCount.run(() => this.deliverDue());
    } catch (e) {
      this.logger.warn({ msg: `outbox delivery cycle failed: ${(e as Error).message}` });
    }
    this.failedCycles = failedCyclesAfter(this.failedCycles, cycle);
    return cycle;
  }

  /** One cycle: claims due events and delivers them; returns how many were claimed and delivered. */
  async deliverDue(): Promise<DeliveryCycle> {
    const events = await this.outbox.claimDue(this.timing.leaseMs, WEBHOOK_CONCURRENCY);
    if (events.length === 0) return { claimed: 0, delivered: 0 };
    if (this.stopping) {
      await this.outbox.release(events);
      return { claimed: events.length, delivered: 0 };
    }
    const results = await Promise.all(events.map((e) => this.deliverOne(e)));
    return { claimed: events.length, delivered: results.filter(Boolean).length };
  }

  /** Delivers one claimed event and records the attempt; true when the shop took it. */
  private async deliverOne(e: ClaimedEvent): Promise<boolean> {
    const url = this.config.shopWebhook.url!;
    const attempt = e.attempts + 1;
    const secret = this.config.shopWebhook.secret!;
    const req = buildWebhookRequest(e, { url, secret, nowSeconds: this.clock.nowMs() / 1000, attempt });
    let httpStatus: number | null = null;
    let error: string | null = null;
    const { requestMs } = this.timing;
    try {
      // `timeout` ends a silent connection; the signal ends the request at its deadline whatever it does.
      const res = await this.http.post<Readable>(url, req.body, {
        headers: req.headers,
        timeout: requestMs,
        signal: AbortSignal.timeout(requestMs),
      });
      res.data.on('error', () => undefined);
      res.data.destroy(); // the status is the answer: its body is neither needed nor waited for
      httpStatus = res.status;
      if (!isDelivered(res.status)) error = `HTTP ${res.status}`;
    } catch (err) {
      error = describeNetworkError(err);
    }
    const outcome = attemptOutcome(isDelivered(httpStatus), attempt, this.config.shopWebhook.maxAttempts);
    let recorded: Awaited<ReturnType<OutboxRepository['recordAttempt']>>;
    try {
      recorded = await this.outbox.recordAttempt(e, {
        status: outcome.status,
        retryInMs: outcome.status === 'pending' ? outcome.retryInMs : null,
        httpStatus,
        error,
      });
    } catch (err) {
      // The lease runs out and the event is tried again: at least once, never lost.
      this.logger.error({ msg: `outbox event ${e.id}: could not record the attempt: ${(err as Error).message}`, event_id: e.id });
      return false;
    }
    if (!recorded.recorded) {
      this.logger.warn({ msg: `outbox event ${e.id}: lease lost before the result was recorded`, event_id: e.id });
      return false;
    }
    const result = outcome.status === 'delivered' ? 'delivered' : outcome.status === 'dead' ? 'dead' : 'failed';
    this.metrics.outboxDeliveries.inc({ result });
    const fields = { event_id: e.id, event: e.eventType, subject: e.subject, attempt, http_status: httpStatus };
    if (outcome.status === 'delivered') {
      this.logger.debug({ ...fields, msg: `webhook ${e.eventType} #${e.id} delivered` });
    } else if (outcome.status === 'dead') {
      this.logger.error({
        ...fields,
        error,
        msg:
          `webhook ${e.eventType} #${e.id} gave up after ${attempt} attempts (${error}); ` +
          `replay it with POST /internal/webhooks/deliveries/${e.id}/replay`,
      });
    } else {
      this.logger.warn({
        ...fields,
        error,
        next_attempt_at: recorded.nextAttemptAt?.toISOString(),
        msg: `webhook ${e.eventType} #${e.id} failed (${error}), retrying`,
      });
    }
    return outcome.status === 'delivered';
  }

  /** Sets the backlog gauges from the table (when the metrics are scraped, on any instance). */
  async refreshBacklog(): Promise<void> {
    const counts = await this.outbox.counts();
    this.metrics.outboxBacklog.set(counts.pending);
    this.metrics.outboxDead.set(counts.dead);
  }

  /** For tests and health: whether the loop runs in this process. */
  get active(): boolean {
    return this.running;
  }
}

/** A short reason without the URL's query or any header (never a secret). */
function describeNetworkError(err: unknown): string {
  const e = err as { code?: string; message?: string };
  // ERR_CANCELED: the deadline's signal (nothing else cancels a delivery)
  if (e?.code === 'ECONNABORTED' || e?.code === 'ETIMEDOUT' || e?.code === 'ERR_CANCELED') return 'timeout';
  return e?.code ?? (e?.message ?? 'request failed').slice(0, 200);
}
