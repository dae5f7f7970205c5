/**
 * Catalog sync runs: one at a time per supplier across replicas (several suppliers' runs at once),
 * started by the API, the schedule, the start of the service or the CLI, and run in the background of
 * this process. A run syncs one supplier's catalog with that supplier's own upstream client (its own
 * request budget and sockets, SupplierRegistry) and settings (page size, list-inactive, sync mode):
 * two suppliers' runs share no lock, timer or queue, so a blocked or failing one never delays another.
 *
 * A run: ping (the catalog currency) → categories → the products pass (full or incremental, see
 * sync-plan.ts and ProductsPass), every page written as it arrives → after a complete full pass only,
 * every listed SKU the pass did not see is checked with `GET /products/{id}` (404 → unlisted; found →
 * kept and updated; see DelistingChecks); after an incremental pass, the products ordered lately are
 * re-read (stock does not move `updated_at`; see OrderedRereads) → the media pass: product images
 * downloaded and mirrored (ProductMediaService; it never fails the run) → finished with its summary. A run that cannot fetch every
 * page fails, says which page and why, and unlists nothing.
 *
 * The run row is this process's claim on the run (SyncRunLease): renewed by a heartbeat, its loss stops
 * the run at once, which unlists nothing more and is recorded failed with the reason.
 *
 * Progress is published to `onProgress` listeners and to the `onProgress` of the run's own options
 * (the `relay sync` command shows it); `done` resolves with the finished run.
 */
import { Injectable, Logger, type OnModuleDestroy } from '@nestjs/common';
import { DataSource } from 'typeorm';
import { AppError } from '../common/app-error.js';
import { heapPolicy } from '../common/heap-policy.js';
import { Clock } from '../common/clock.js';
import { AppConfig } from '../config/app-config.js';
import { Metrics } from '../ops/metrics.service.js';
import { SupplierRegistry } from '../suppliers/supplier-registry.service.js';
import { CatalogRepository } from './catalog.repository.js';
import { CategoryRepository } from './category.repository.js';
import { DelistingChecks } from './delisting-checks.service.js';
import { OrderedRereads } from './ordered-rereads.service.js';
import type { PageFingerprints } from './page-fingerprints.js';
import { PricingContextService } from './pricing-context.service.js';
import { PricingService } from './pricing.service.js';
import { ProductMediaService } from './product-media.service.js';
import { ProductsPass } from './products-pass.service.js';
import { AbortedError, DEFAULT_RETRY_POLICY, PageFailure, RetriesExhausted, withRetries, type RetryPolicy } from './product-pager.js';
import { planPass, type PassMode } from './sync-plan.js';
import { SyncRunLease, type RunEnd } from './sync-run-lease.service.js';
import { emptyCounters, message, newRunId, noteSkippedCategories, type ActiveRun, type SyncProgress } from './sync-run-state.js';
import { SyncRunRepository, type SyncRunRecord } from './sync-run.repository.js';
import { syncBudgetWaitedMs, updateBudgetWait } from './sync-budget-wait.js';

export type { SyncPhase, SyncProgress } from './sync-run-state.js';
export type SyncTrigger = 'api' | 'schedule' | 'start' | 'cli';

export interface StartSyncOptions {
  /** Default: the supplier's sync mode (SYNC_MODE for the `UPSTREAM_*` one; auto decides between full and incremental). */
  mode?: PassMode;
  /** The supplier whose catalog is synced (default: the `UPSTREAM_*` supplier). */
  supplier?: string;
  trigger?: SyncTrigger;
  /** Progress of this run only (see also `onProgress()`). */
  onProgress?: (p: SyncProgress) => void;
}

export interface StartedSync {
  runId: string;
  supplier: string;
  mode: PassMode;
  /** Resolves with the finished run (succeeded or failed); never rejects. */
  done: Promise<SyncRunRecord>;
}

@Injectable()
export class CatalogSyncService implements OnModuleDestroy {
  private readonly logger = new Logger('catalog-sync');
  /** Retries of upstream reads during a run (a run keeps the policy in force at its start). */
  retryPolicy: RetryPolicy = DEFAULT_RETRY_POLICY;
  private readonly listeners = new Set<(p: SyncProgress) => void>();
  /** The runs this process executes, by supplier. */
  private readonly active = new Map<string, { run: ActiveRun; done: Promise<SyncRunRecord> }>();
  private closing = false;

  constructor(
    private readonly config: AppConfig,
    private readonly clock: Clock,
    private readonly dataSource: DataSource,
    private readonly suppliers: SupplierRegistry,
    private readonly runs: SyncRunRepository,
    private readonly catalog: CatalogRepository,
    private readonly categoryRepo: CategoryRepository,
    private readonly lease: SyncRunLease,
    private readonly productsPass: ProductsPass,
    private readonly delistingChecks: DelistingChecks,
    private readonly orderedRereads: OrderedRereads,
    private readonly pricing: PricingContextService,
    private readonly pricingRules: PricingService,
    private readonly metrics: Metrics,
    private readonly productMedia: ProductMediaService,
  ) {}

  /** This process, as the owner of the runs it starts (see SyncRunLease). */
  get instanceId(): string {
    return this.lease.instanceId;
  }

  /** The heartbeat of a run, and how long it may fail before the run stops (a test shortens them). */
  get claimTiming(): { heartbeatMs: number; lostAfterMs: number } {
    return this.lease.timing;
  }

  set claimTiming(timing: { heartbeatMs: number; lostAfterMs: number }) {
    this.lease.timing = timing;
  }

  /** Up to this many products, a full pass keeps what it saw in memory (a test sets 0; see ProductsPass). */
  get knownFingerprintsLimit(): number {
    return this.productsPass.knownFingerprintsLimit;
  }

  set knownFingerprintsLimit(limit: number) {
    this.productsPass.knownFingerprintsLimit = limit;
  }

  /** The fingerprints of the last complete full pass's pages, by page content (see PageFingerprints). */
  get pageFingerprints(): PageFingerprints {
    return this.productsPass.pageFingerprints;
  }

  /** Subscribes to the progress of every run of this process; returns the unsubscribe function. */
  onProgress(listener: (p: SyncProgress) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  /** The run this process is executing for a supplier (default: the `UPSTREAM_*` one), if any. */
  activeRunId(supplier: string = this.suppliers.envName): string | null {
    return this.active.get(supplier)?.run.runId ?? null;
  }

  /**
   * Starts a run of a supplier's catalog in the background. Throws AppError 404 `supplier_not_found`,
   * 409 `supplier_disabled`, or 409 `sync_in_progress` (with `run_id`) when a run of that supplier is
   * running anywhere.
   */
  async start(options: StartSyncOptions = {}): Promise<StartedSync> {
    if (this.closing) throw new AppError('service_unavailable', 'the service is shutting down');
    const supplier = options.supplier ?? this.suppliers.envName;
    const runtime = await this.suppliers.resolve(supplier);
    if (!runtime.config.enabled) {
      throw new AppError('supplier_disabled', `supplier ${supplier} is disabled: its catalog is not synced`, { supplier });
    }
    const settings = runtime.config.settings;
    const now = this.clock.now();
    const facts = await this.runs.planningFacts(supplier);
    const plan = planPass({
      requested: options.mode,
      configured: settings.syncMode,
      now,
      fullEveryMs: this.config.sync.fullEveryMs,
      ...facts,
    });
    const runId = newRunId(now);
    const trigger = options.trigger ?? 'api';
    const abort = new AbortController();
    const counters = emptyCounters();
    const claim = await this.lease.claim(
      {
        runId,
        supplier,
        mode: plan.mode,
        requestedMode: options.mode ?? null,
        trigger,
        startedAt: now,
        updatedAfter: plan.updatedAfter,
        note: plan.reason,
      },
      this.activeRunId(supplier),
      { abort, counters },
    );

    const run: ActiveRun = {
      runId,
      supplier,
      client: runtime.client,
      settings,
      plan,
      mode: plan.mode,
      fallback: null,
      startedAt: now,
      counters,
      abort,
      claim,
      // Under the request budget, a 429 or a wait for the budget paces the run and never fails it.
      retry: { ...this.retryPolicy, budgeted: settings.rateLimit !== null },
      budgetWaitFromMs: await syncBudgetWaitedMs(this.metrics, supplier),
      onProgress: options.onProgress,
      emit: () => this.emit(run),
      phase: 'starting',
      notes: [plan.reason],
      flushedAt: now.getTime(),
      strategy: 'check',
      seen: null,
    };
    const done = this.execute(run).finally(() => {
      if (this.active.get(supplier)?.run === run) this.active.delete(supplier);
    });
    this.active.set(supplier, { run, done });
    this.logger.log(`sync run ${runId} of ${supplier} started (${plan.mode}: ${plan.reason}; trigger ${trigger})`);
    return { runId, supplier, mode: plan.mode, done };
  }

  /** Starts a run and waits for its end (the `relay sync` command). */
  async runSync(options: StartSyncOptions = {}): Promise<SyncRunRecord> {
    const started = await this.start({ trigger: 'cli', ...options });
    return started.done;
  }

  async getRun(runId: string): Promise<SyncRunRecord> {
    const run = await this.runs.get(runId);
    if (!run) throw new AppError('sync_run_not_found', `no sync run ${runId}`);
    return run;
  }

  listRuns(offset: number, limit: number, supplier?: string): Promise<{ items: SyncRunRecord[]; total: number }> {
    return this.runs.list(offset, limit, { supplier });
  }

  lastFinishedRun(supplier?: string): Promise<SyncRunRecord | null> {
    return this.runs.lastFinished(supplier);
  }

  /** Stops this process's runs (they are recorded as failed) before the database goes away. */
  async onModuleDestroy(): Promise<void> {
    this.closing = true;
    const active = [...this.active.values()];
    for (const a of active) a.run.abort.abort();
    await Promise.all(active.map((a) => a.done.catch(() => undefined)));
  }

  // --------------------------------------------------------------------------------- the run

  private async execute(run: ActiveRun): Promise<SyncRunRecord> {
    const started = performance.now();
    // a pass parses the whole catalog: its garbage is collected early beside the embedded database
    const releaseHeap = heapPolicy.hold();
    const stopHeartbeat = this.lease.startHeartbeat(run.claim);
    let status: 'succeeded' | 'failed' = 'succeeded';
    let error: string | null = null;
    try {
      await this.catalog.clearOrphanSeen();
      this.emit(run);
      await this.readCurrency(run);
      await this.syncCategories(run);
      await this.productsPass.run(run);
      if (run.mode === 'full') {
        await this.delistingChecks.confirmUnseen(run);
      } else {
        await this.orderedRereads.run(run);
      }
      // after the pages (and what follows them): images are downloaded, and never fail the run
      await this.productMedia.runPass(run);
    } catch (e) {
      status = 'failed';
      error =
        run.claim.lost !== null
          ? this.lease.lostError(run.claim)
          : e instanceof AbortedError
            ? 'aborted: the service is shutting down'
            : e instanceof PageFailure
              ? `${e.message}; nothing was unlisted`
              : message(e);
      if (run.claim.lost === null && !(e instanceof PageFailure) && !(e instanceof AbortedError) && !(e instanceof RetriesExhausted)) {
        this.logger.error(`sync run ${run.runId} of ${run.supplier} failed: ${(e as Error)?.stack ?? String(e)}`);
      }
    } finally {
      stopHeartbeat();
      releaseHeap();
    }
    await updateBudgetWait(run, this.metrics);
    ({ status, error } = await this.lease.finish(run.claim, { status, error, mode: run.mode, note: run.notes.join('; ') }));
    await this.catalog.clearSeen(run.runId).catch(() => undefined);
    this.metrics.syncRuns.inc({ mode: run.mode, status, supplier: run.supplier });
    this.metrics.syncDuration.observe({ mode: run.mode, supplier: run.supplier }, (performance.now() - started) / 1000);
    const c = run.counters;
    const summary =
      `pages ${c.pagesDone}/${c.pagesTotal}, products ${c.productsSeen}, SKUs ${c.skusSeen} (created ${c.skusCreated}, ` +
      `changed ${c.skusChanged}, delisted ${c.skusDelisted}, relisted ${c.skusRelisted}, conflicts ${c.conflicts})` +
      `, ${c.skippedProducts.length} products and ${c.skippedCategories.length} categories left out for their shape, ` +
      `${c.rereadProducts} ordered products re-read` +
      `, waited ${Math.round(c.budgetWaitMs)} ms for the request budget` +
      `, ${c.imagesFetched} images fetched (${c.imageBytes} bytes, ${Math.round(c.mediaMs)} ms), ${c.skippedImages.length} left out`;
    if (status === 'succeeded') this.logger.log(`sync run ${run.runId} of ${run.supplier} succeeded (${run.mode}): ${summary}`);
    else this.logger.warn(`sync run ${run.runId} of ${run.supplier} failed (${run.mode}): ${error}; ${summary}`);
    run.phase = 'finished';
    this.emit(run, { status, error });
    const record = await this.runs.get(run.runId).catch(() => null);
    return record ?? this.syntheticRecord(run, status, error);
  }

  private async readCurrency(run: ActiveRun): Promise<void> {
    try {
      const ping = await run.client.ping(run.abort.signal, { priority: 'sync' });
      await this.catalog.setCurrency(run.supplier, ping.currency);
    } catch (e) {
      if (run.abort.signal.aborted) throw new AbortedError();
      this.logger.warn(`ping failed, the catalog currency is not refreshed: ${message(e)}`);
    }
  }

  private async syncCategories(run: ActiveRun): Promise<void> {
    run.phase = 'categories';
    this.emit(run);
    let categories;
    try {
      categories = await withRetries(() => run.client.listCategories(run.abort.signal), { policy: run.retry, signal: run.abort.signal });
    } catch (e) {
      if (e instanceof AbortedError) throw e;
      throw new Error(`categories: ${message(e)}; nothing was unlisted`, { cause: e });
    }
    // A category whose shape is wrong (a null name) is left out and reported, the others stored; it
    // is not unlisted either (the upstream still lists it).
    const skipped = categories.skipped ?? [];
    noteSkippedCategories(run, skipped);
    if (skipped.length > 0)
      this.logger.warn(`sync run ${run.runId} of ${run.supplier}: ${skipped.length} categories left out for their shape`);
    const keep = skipped.flatMap((c) => (c.category_id === null ? [] : [c.category_id]));
    const now = this.clock.now();
    const r = await this.dataSource.transaction((em) => this.categoryRepo.syncCategories(em, run.supplier, categories, now, keep));
    if (r.unlisted > 0) run.notes.push(`${r.unlisted} categories unlisted`);
    // The category tree feeds the pricing rules (a parent's rule applies to its children): a category
    // that moved may move sale prices, whose SKUs' upstream data did not change.
    if (r.reparented > 0) {
      const n = await this.pricingRules.repriceCatalog();
      run.notes.push(`${r.reparented} categories moved: ${n} sale prices updated`);
    } else {
      await this.pricing.reload();
    }
  }

  private emit(run: ActiveRun, end?: RunEnd): void {
    const c = run.counters;
    const p: SyncProgress = {
      runId: run.runId,
      supplier: run.supplier,
      mode: run.mode,
      phase: run.phase,
      pagesDone: c.pagesDone,
      pagesTotal: c.pagesTotal,
      productsSeen: c.productsSeen,
      skusSeen: c.skusSeen,
      skusCreated: c.skusCreated,
      skusChanged: c.skusChanged,
      skusDelisted: c.skusDelisted,
      skusRelisted: c.skusRelisted,
      conflicts: c.conflicts,
      ...(end ?? {}),
    };
    for (const l of [...this.listeners, ...(run.onProgress ? [run.onProgress] : [])]) {
      try {
        l(p);
      } catch (e) {
        this.logger.warn(`a sync progress listener failed: ${message(e)}`);
      }
    }
  }

  private syntheticRecord(run: ActiveRun, status: 'succeeded' | 'failed', error: string | null): SyncRunRecord {
    const c = run.counters;
    return {
      run_id: run.runId,
      supplier: run.supplier,
      mode: run.mode,
      planned_mode: run.plan.mode,
      requested_mode: null,
      fallback: run.fallback,
      trigger: 'unknown',
      status,
      owner: this.instanceId,
      started_at: run.startedAt,
      heartbeat_at: this.clock.now(),
      finished_at: this.clock.now(),
      updated_after: run.plan.updatedAfter,
      pages_total: c.pagesTotal,
      pages_done: c.pagesDone,
      products_seen: c.productsSeen,
      skus_seen: c.skusSeen,
      skus_created: c.skusCreated,
      skus_changed: c.skusChanged,
      skus_delisted: c.skusDelisted,
      skus_relisted: c.skusRelisted,
      changes: c.changes,
      conflicts: c.conflicts,
      confirmed_live: c.confirmedLive,
      unconfirmed: c.unconfirmed,
      budget_wait_ms: Math.round(c.budgetWaitMs),
      skipped_products: c.skippedProducts,
      skipped_categories: c.skippedCategories,
      reread_products: c.rereadProducts,
      skipped_images: c.skippedImages,
      images_fetched: c.imagesFetched,
      image_bytes: c.imageBytes,
      media_ms: Math.round(c.mediaMs),
      note: run.notes.join('; '),
      error,
    };
  }
}
