/**
 * Catalog sync runs: one at a time across replicas, started by the API, the schedule, the start of the
 * service or the CLI, and run in the background of this process.
 *
 * A run: ping (the catalog currency) → categories → the products pass (full or incremental, see
 * sync-plan.ts), every page written as it arrives → after a complete full pass only, every listed SKU
 * the pass did not see is checked with `GET /products/{id}` (404 → unlisted; found → kept and updated)
 * → finished with its summary. A run that cannot fetch every page fails, says which page and why, and
 * unlists nothing.
 *
 * The run row is this process's claim on the run (one at a time across replicas): it is renewed by a
 * heartbeat (the database's clock), and a run that finds it gone (another process recovered the row
 * as abandoned) or cannot renew it for CLAIM_LOST_AFTER_MS stops at once, unlists nothing more, and
 * is recorded failed with the reason. The delisting checks renew it before each batch.
 *
 * Progress is published to `onProgress` listeners and to the `onProgress` of the run's own options
 * (the `relay sync` command shows it); `done` resolves with the finished run.
 */
import { randomBytes } from 'node:crypto';
import { Injectable, Logger, type OnModuleDestroy } from '@nestjs/common';
import { DataSource, type EntityManager } from 'typeorm';
import { AppError } from '../common/app-error.js';
import { heapPolicy } from '../common/heap-policy.js';
import { Clock } from '../common/clock.js';
import { AppConfig } from '../config/app-config.js';
import { AlertService, type AfterCommit } from '../ops/alert.service.js';
import { Metrics } from '../ops/metrics.js';
import { UpstreamClient } from '../upstream/upstream.client.js';
import { UpstreamDefinitiveError } from '../upstream/upstream.errors.js';
import type { UpstreamProduct } from '../upstream/upstream.types.js';
import { CatalogRepository } from './catalog.repository.js';
import { CategoryRepository } from './category.repository.js';
import { CatalogWriter, type WriteOptions, type WriteResult } from './catalog-writer.service.js';
import { PageFingerprints } from './page-fingerprints.js';
import { PricingContextService } from './pricing-context.service.js';
import { PricingService } from './pricing.service.js';
import { isProductGone } from './product-gone.js';
import {
  AbortedError,
  DEFAULT_RETRY_POLICY,
  fetchAllPages,
  PageFailure,
  RetriesExhausted,
  sleep,
  withRetries,
  type FetchedPage,
  type PagerResult,
  type RetryPolicy,
} from './product-pager.js';
import { emptyCounts } from './sku-diff.js';
import { planPass, type PassMode, type PassPlan } from './sync-plan.js';
import { SyncRunRepository, type RunCounters, type SyncRunRecord } from './sync-run.repository.js';

export type SyncTrigger = 'api' | 'schedule' | 'start' | 'cli';
export type SyncPhase = 'starting' | 'categories' | 'products' | 'confirming' | 'finished';

/** A run's progress: its counters so far (those of the run row, see RunCounters). */
export interface SyncProgress
  extends Pick<RunCounters, 'pagesDone' | 'pagesTotal' | 'productsSeen' | 'skusSeen' | 'skusCreated' | 'skusChanged' | 'skusDelisted' | 'skusRelisted' | 'conflicts'> {
  runId: string;
  mode: PassMode;
  phase: SyncPhase;
  /** Set in the `finished` event. */
  status?: 'succeeded' | 'failed';
  error?: string | null;
}

export interface StartSyncOptions {
  /** Default: SYNC_MODE (auto decides between full and incremental). */
  mode?: PassMode;
  trigger?: SyncTrigger;
  /** Progress of this run only (see also `onProgress()`). */
  onProgress?: (p: SyncProgress) => void;
}

export interface StartedSync {
  runId: string;
  mode: PassMode;
  /** Resolves with the finished run (succeeded or failed); never rejects. */
  done: Promise<SyncRunRecord>;
}

/** A running row without a heartbeat for this long (by the database's clock) belongs to a process that stopped. */
export const STALE_RUN_MS = 60_000;
const HEARTBEAT_MS = 5_000;
/**
 * A run whose heartbeat has not been written for this long stops itself: from STALE_RUN_MS on, another
 * process may recover its row and start a run of its own, and two runs must never go on at once.
 */
export const CLAIM_LOST_AFTER_MS = STALE_RUN_MS / 2;
/**
 * Reads of an incremental listing whose `total` moved while it was paged (see productsPass) before the
 * run falls back to a full pass.
 */
export const MAX_INCREMENTAL_READS = 3;
const PROGRESS_FLUSH_MS = 1_000;
type WriteStrategy = NonNullable<WriteOptions['strategy']>;

/**
 * How a pass writes its next page, from how the last one went: only new rows (a catalog being
 * filled) → sent as new ones (`insert`, by COPY on a server); mostly new or changed → whole rows at
 * once (`write`); mostly unchanged → fingerprints first (`check`).
 */
function nextStrategy(last: WriteResult): WriteStrategy {
  if (last.skus === 0) return 'check';
  if (last.created === last.skus) return 'insert';
  return last.written * 2 > last.skus ? 'write' : 'check';
}

/**
 * Pages written at once. Their statements run on separate connections (on PostgreSQL, separate
 * backends): a page's database work overlaps the next one's. (The embedded database runs them one
 * after the other anyway.)
 */
const PAGE_WRITERS = 2;
/**
 * Pages that wait for a writer go to it together, up to this many: a first sync (every page written)
 * then makes ~4× fewer transactions and statements. Measured on PostgreSQL, 20,000 products in pages
 * of 50: 2.2–2.5 s one page a transaction, 1.8–1.9 s with 4, 2.0 s with 2 or 8; PGlite 3.8–3.9 s →
 * 2.9–3.3 s, for ~20–30 MB more peak memory. A re-sync's writers keep up, so its pages still go one
 * by one.
 */
const PAGE_BATCH = 4;
/**
 * Up to this many products, a full pass compares its pages with the fingerprints stored at its start
 * in memory, and keeps the ids it saw there (some 100 bytes a product in all); above, it asks the
 * database page by page and records what it saw in catalog_sync_seen.
 */
const MAX_KNOWN_FINGERPRINTS = 250_000;
/** Products checked per batch after a full pass. */
const CONFIRM_BATCH = 100;

/** An incremental pass met a product older than its `updated_after`: the upstream ignored the filter. */
class FilterIgnored extends Error {
  constructor(readonly productId: number) {
    super(`product ${productId} is older than updated_after: the upstream ignored the filter`);
    this.name = 'FilterIgnored';
  }
}

function isFilterIgnored(e: unknown): e is FilterIgnored | PageFailure {
  return e instanceof FilterIgnored || (e instanceof PageFailure && e.cause instanceof FilterIgnored);
}

interface RunEnd {
  status: 'succeeded' | 'failed';
  error: string | null;
}

interface ActiveRun {
  runId: string;
  plan: PassPlan;
  mode: PassMode;
  fallback: string | null;
  startedAt: Date;
  counters: RunCounters;
  abort: AbortController;
  onProgress?: (p: SyncProgress) => void;
  phase: SyncPhase;
  notes: string[];
  /** When the counters were last written to the run row (ms). */
  flushedAt: number;
  /** How the next page is written, from what the last one was (see nextStrategy). */
  strategy: WriteStrategy;
  /** Why this process no longer holds the run (its row), once it knows: the run stops. */
  lostClaim: string | null;
  /** When (performance.now()) the run row was last written as running by this process. */
  claimHeldAt: number;
  /** A heartbeat of the timer is under way. */
  beating: boolean;
  conflictKeys: Set<string>;
  /**
   * What a full pass saw, kept in memory, with the fingerprints stored at its start (null: what it saw
   * is recorded in catalog_sync_seen).
   */
  seen: {
    ids: Set<number>;
    fingerprintedAtStart: Map<number, string>;
    /** Every write that read did not see is stamped at or after it (CatalogRepository.fingerprintIndex). */
    fence: Date;
    /** Products with a listed SKU and no fingerprint, at the start of the pass. */
    unfingerprintedAtStart: number[];
    /** Products the pass wrote without keeping their fingerprint. */
    unfingerprinted: Set<number>;
    /**
     * Products the pass saw with the very fingerprint stored at its start, and so did not write: their
     * stored fingerprint is checked again after the pass (see confirmUnseen).
     */
    unchanged: Set<number>;
  } | null;
}

function newRunId(now: Date): string {
  return `run_${now.toISOString().replace(/[-:TZ.]/g, '').slice(0, 14)}_${randomBytes(4).toString('hex')}`;
}

function emptyCounters(): RunCounters {
  return {
    pagesTotal: 0,
    pagesDone: 0,
    productsSeen: 0,
    skusSeen: 0,
    skusCreated: 0,
    skusChanged: 0,
    skusDelisted: 0,
    skusRelisted: 0,
    changes: emptyCounts(),
    conflicts: 0,
    confirmedLive: 0,
    unconfirmed: 0,
  };
}

function message(e: unknown): string {
  return e instanceof Error ? e.message : String(e);
}

/** Runs `fn` over `items`, `limit` at a time. */
async function mapLimit<T>(items: T[], limit: number, fn: (item: T) => Promise<void>): Promise<void> {
  let next = 0;
  const worker = async () => {
    while (next < items.length) await fn(items[next++]);
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker));
}

@Injectable()
export class CatalogSyncService implements OnModuleDestroy {
  private readonly logger = new Logger('catalog-sync');
  /** This process, as the owner of the runs it starts. */
  readonly instanceId = `${process.pid}-${randomBytes(3).toString('hex')}`;
  /** Retries of upstream reads during a run. */
  retryPolicy: RetryPolicy = DEFAULT_RETRY_POLICY;
  /** The heartbeat of a run, and how long it may fail before the run stops (a test shortens them). */
  claimTiming = { heartbeatMs: HEARTBEAT_MS, lostAfterMs: CLAIM_LOST_AFTER_MS };
  private readonly listeners = new Set<(p: SyncProgress) => void>();
  private active: { run: ActiveRun; done: Promise<SyncRunRecord> } | null = null;
  private closing = false;

  constructor(
    private readonly config: AppConfig,
    private readonly clock: Clock,
    private readonly dataSource: DataSource,
    private readonly upstream: UpstreamClient,
    private readonly runs: SyncRunRepository,
    private readonly catalog: CatalogRepository,
    private readonly categoryRepo: CategoryRepository,
    private readonly writer: CatalogWriter,
    private readonly pricing: PricingContextService,
    private readonly pricingRules: PricingService,
    private readonly alerts: AlertService,
    private readonly metrics: Metrics,
  ) {}

  /** Subscribes to the progress of every run of this process; returns the unsubscribe function. */
  onProgress(listener: (p: SyncProgress) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  /** The run this process is executing, if any. */
  get activeRunId(): string | null {
    return this.active?.run.runId ?? null;
  }

  /**
   * Starts a run in the background. Throws AppError 409 `sync_in_progress` (with `run_id`) when a run
   * is running anywhere.
   */
  async start(options: StartSyncOptions = {}): Promise<StartedSync> {
    if (this.closing) throw new AppError('service_unavailable', 503, 'the service is shutting down');
    const now = this.clock.now();
    const facts = await this.runs.planningFacts();
    const plan = planPass({
      requested: options.mode,
      configured: this.config.sync.mode,
      now,
      fullEveryMs: this.config.sync.fullEveryMs,
      ...facts,
    });
    const runId = newRunId(now);
    const row = {
      runId,
      mode: plan.mode,
      requestedMode: options.mode ?? null,
      trigger: options.trigger ?? 'api',
      owner: this.instanceId,
      startedAt: now,
      updatedAfter: plan.updatedAfter,
      note: plan.reason,
    };
    for (let attempt = 0; ; attempt++) {
      if (await this.runs.tryInsertRunning(row)) break;
      // Never the run this process is executing itself, however late its heartbeat.
      const recovered = await this.recoverAbandoned(now);
      if (recovered) {
        this.logger.warn(`sync run ${recovered} was abandoned (no heartbeat for ${STALE_RUN_MS / 1000} s): marked failed`);
        continue;
      }
      const running = await this.runs.running();
      if (running) {
        throw new AppError('sync_in_progress', 409, `a catalog sync is already running (${running.run_id})`, { run_id: running.run_id });
      }
      if (attempt >= 3) throw new AppError('sync_in_progress', 409, 'a catalog sync is already running', { run_id: null });
    }

    const run: ActiveRun = {
      runId,
      plan,
      mode: plan.mode,
      fallback: null,
      startedAt: now,
      counters: emptyCounters(),
      abort: new AbortController(),
      onProgress: options.onProgress,
      phase: 'starting',
      notes: [plan.reason],
      flushedAt: now.getTime(),
      strategy: 'check',
      lostClaim: null,
      claimHeldAt: performance.now(),
      beating: false,
      conflictKeys: new Set(),
      seen: null,
    };
    const done = this.execute(run).finally(() => {
      if (this.active?.run === run) this.active = null;
    });
    this.active = { run, done };
    this.logger.log(`sync run ${runId} started (${plan.mode}: ${plan.reason}; trigger ${row.trigger})`);
    return { runId, mode: plan.mode, done };
  }

  /** Starts a run and waits for its end (the `relay sync` command). */
  async runSync(options: StartSyncOptions = {}): Promise<SyncRunRecord> {
    const started = await this.start({ trigger: 'cli', ...options });
    return started.done;
  }

  async getRun(runId: string): Promise<SyncRunRecord> {
    const run = await this.runs.get(runId);
    if (!run) throw new AppError('sync_run_not_found', 404, `no sync run ${runId}`);
    return run;
  }

  listRuns(offset: number, limit: number): Promise<{ items: SyncRunRecord[]; total: number }> {
    return this.runs.list(offset, limit);
  }

  lastFinishedRun(): Promise<SyncRunRecord | null> {
    return this.runs.lastFinished();
  }

  /** Stops this process's run (it is recorded as failed) before the database goes away. */
  async onModuleDestroy(): Promise<void> {
    this.closing = true;
    const active = this.active;
    if (!active) return;
    active.run.abort.abort();
    await active.done.catch(() => undefined);
  }

  // --------------------------------------------------------------------------------- the run

  private async execute(run: ActiveRun): Promise<SyncRunRecord> {
    const started = performance.now();
    // a pass parses the whole catalog: its garbage is collected early beside the embedded database
    const releaseHeap = heapPolicy.hold();
    const heartbeat = setInterval(() => void this.beat(run), this.claimTiming.heartbeatMs);
    heartbeat.unref();
    let status: 'succeeded' | 'failed' = 'succeeded';
    let error: string | null = null;
    try {
      await this.catalog.clearOrphanSeen();
      this.emit(run);
      await this.readCurrency(run);
      await this.syncCategories(run);
      await this.productsPass(run);
      if (run.mode === 'full') {
        await this.confirmUnseen(run);
        await this.followFreedCodes(run);
      }
    } catch (e) {
      status = 'failed';
      error =
        run.lostClaim !== null
          ? this.lostClaimError(run)
          : e instanceof AbortedError
            ? 'aborted: the service is shutting down'
            : e instanceof PageFailure
              ? `${e.message}; nothing was unlisted`
              : message(e);
      if (run.lostClaim === null && !(e instanceof PageFailure) && !(e instanceof AbortedError) && !(e instanceof RetriesExhausted)) {
        this.logger.error(`sync run ${run.runId} failed: ${(e as Error)?.stack ?? String(e)}`);
      }
    } finally {
      clearInterval(heartbeat);
      releaseHeap();
    }
    ({ status, error } = await this.finishWithRetries(run, status, error));
    await this.catalog.clearSeen(run.runId).catch(() => undefined);
    this.metrics.syncRuns.inc({ mode: run.mode, status });
    this.metrics.syncDuration.observe({ mode: run.mode }, (performance.now() - started) / 1000);
    const c = run.counters;
    const summary = `pages ${c.pagesDone}/${c.pagesTotal}, products ${c.productsSeen}, SKUs ${c.skusSeen} (created ${c.skusCreated}, changed ${c.skusChanged}, delisted ${c.skusDelisted}, relisted ${c.skusRelisted}, conflicts ${c.conflicts})`;
    if (status === 'succeeded') this.logger.log(`sync run ${run.runId} succeeded (${run.mode}): ${summary}`);
    else this.logger.warn(`sync run ${run.runId} failed (${run.mode}): ${error}; ${summary}`);
    run.phase = 'finished';
    this.emit(run, { status, error });
    const record = await this.runs.get(run.runId).catch(() => null);
    return record ?? this.syntheticRecord(run, status, error);
  }

  private async readCurrency(run: ActiveRun): Promise<void> {
    try {
      const ping = await this.upstream.ping(run.abort.signal);
      await this.catalog.setCurrency(ping.currency);
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
      categories = await withRetries(() => this.upstream.listCategories(run.abort.signal), { policy: this.retryPolicy, signal: run.abort.signal });
    } catch (e) {
      if (e instanceof AbortedError) throw e;
      throw new Error(`categories: ${message(e)}; nothing was unlisted`, { cause: e });
    }
    const now = this.clock.now();
    const r = await this.dataSource.transaction((em) => this.categoryRepo.syncCategories(em, categories, now));
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

  /**
   * The products pass of the plan. An incremental one falls back to a full listing, read from its first
   * page without the filter, when the upstream refuses `updated_after` or ignores it (a full pass is
   * never made of a filtered listing).
   *
   * An incremental listing whose `total` moved while it was paged (a product withdrawn or inserted)
   * may have moved products onto pages already fetched: this pass missed them, and the next run's
   * window (from this run's start) would leave out those updated before it. Such a listing is read
   * again, until a read sees one `total` on every page (its products are those of the window, its
   * earlier reads' writes are found unchanged), at most MAX_INCREMENTAL_READS times, then a full pass
   * is made (it confirms whatever it did not see). Reading again is the simpler of the correct answers:
   * nothing is remembered across runs (leaving the window where it was would need the run row to say
   * so), and the incremental listing is short.
   */
  private async productsPass(run: ActiveRun): Promise<void> {
    run.phase = 'products';
    let updatedAfter = run.plan.updatedAfter ?? undefined;
    for (let read = 1; ; read++) {
      let listing: PagerResult;
      try {
        listing = await this.pass(run, updatedAfter);
      } catch (e) {
        if (updatedAfter === undefined || run.lostClaim !== null) throw e;
        if (isFilterIgnored(e)) {
          this.logger.warn(`${message(e instanceof PageFailure ? e.cause : e)}: the listing is read again in full`);
          await this.restartAsFull(run, 'filter_ignored');
        } else if (this.refusedFilter(run, e)) {
          this.logger.warn(`the upstream refused updated_after (${message(e.upstreamCause)}): falling back to a full pass`);
          await this.restartAsFull(run, 'filter_refused');
        } else {
          throw e;
        }
        updatedAfter = undefined;
        continue;
      }
      if (updatedAfter === undefined || !listing.totalChanged) return;
      const moved = `the listing changed while it was read (total ${listing.minTotal} to ${listing.total})`;
      if (read >= MAX_INCREMENTAL_READS) {
        this.logger.warn(`${moved}, ${read} times: falling back to a full pass`);
        await this.restartAsFull(run, 'listing_moved');
        updatedAfter = undefined;
      } else {
        run.notes.push(`${moved}: read again`);
        this.resetPassCounters(run);
      }
    }
  }

  private refusedFilter(run: ActiveRun, e: unknown): e is PageFailure {
    return (
      run.mode === 'incremental' &&
      e instanceof PageFailure &&
      e.page === 1 &&
      e.upstreamCause instanceof UpstreamDefinitiveError &&
      e.upstreamCause.httpStatus >= 400 &&
      e.upstreamCause.httpStatus < 500 &&
      e.upstreamCause.httpStatus !== 401 &&
      e.upstreamCause.httpStatus !== 403
    );
  }

  /** The pass starts again, a full one (what the earlier one wrote stays written, and counted). */
  private async restartAsFull(run: ActiveRun, fallback: string): Promise<void> {
    await this.switchToFull(run, fallback);
    this.resetPassCounters(run);
    // What the filtered read marked seen must not spare a product the full pass does not see.
    await this.catalog.clearSeen(run.runId);
  }

  private resetPassCounters(run: ActiveRun): void {
    const c = run.counters;
    c.pagesDone = 0;
    c.pagesTotal = 0;
    c.productsSeen = 0;
    c.skusSeen = 0;
    this.emit(run);
  }

  private async switchToFull(run: ActiveRun, fallback: string): Promise<void> {
    run.mode = 'full';
    run.fallback = fallback;
    run.notes.push(
      fallback === 'filter_refused'
        ? 'the upstream refused updated_after: full pass'
        : fallback === 'filter_ignored'
          ? 'the upstream ignored updated_after: full pass'
          : `the listing kept changing while it was read (${MAX_INCREMENTAL_READS} times): full pass`,
    );
    if ((await this.runs.setMode(run.runId, this.instanceId, 'full', fallback)) === 0) this.loseClaim(run, 'another process recovered it as abandoned');
    if (run.lostClaim !== null) throw new AbortedError(`lost its claim: ${run.lostClaim}`);
  }

  /** See MAX_KNOWN_FINGERPRINTS (a test sets 0 to take the database's way). */
  knownFingerprintsLimit = MAX_KNOWN_FINGERPRINTS;
  /** The fingerprints of the last complete full pass's pages, by page content (see PageFingerprints). */
  readonly pageFingerprints = new PageFingerprints(MAX_KNOWN_FINGERPRINTS);

  private async pass(run: ActiveRun, updatedAfter: Date | undefined): Promise<PagerResult> {
    // An upstream that ignores the filter answers with older products too: the run then reads the
    // listing again, in full (see productsPass). The filter is sent truncated to the second.
    const cutoff = updatedAfter ? Math.floor(updatedAfter.getTime() / 1000) * 1000 : null;
    // A full pass over a stored catalog compares its pages with the fingerprints stored at its start
    // (read while the first pages are fetched): its unchanged products (most of a re-sync) cost no
    // query, and what it saw is kept in memory.
    const read = updatedAfter ? null : this.catalog.fingerprintIndex(this.knownFingerprintsLimit);
    const index = read?.then((r) => r?.fingerprints ?? null) ?? null;
    index?.catch(() => undefined); // awaited with the first page; a pass that fails before it ends here
    // Read while the pass runs too, for the confirmation after it (see confirmUnseen).
    const unfingerprinted = index?.then((fps) => (fps ? this.catalog.unfingerprintedProducts() : null)) ?? null;
    unfingerprinted?.catch(() => undefined);
    const seen = new Set<number>();
    const droppedFingerprints = new Set<number>();
    const unchangedAtStart = new Set<number>();
    // A full pass recognises the pages whose bodies the previous complete pass received (see
    // PageFingerprints): unchanged since the start of the pass, they are not parsed; else their
    // fingerprints come from memory.
    const memo = updatedAfter ? null : this.pageFingerprints;
    memo?.startPass();
    let startIndex: Map<number, string> | null = null;
    void index?.then((fps) => (startIndex = fps), () => undefined);
    const listing = await fetchAllPages({
      fetchPage: async (q, signal) => {
        if (!memo) return this.upstream.listProducts(q, signal);
        const page = await this.upstream.listProducts({ ...q, digest: true, remembered: (digest) => memo.unchangedPage(digest, startIndex) }, signal);
        if (!page.unchanged) memo.addPage(page);
        return page;
      },
      requestedPageSize: this.config.sync.pageSize,
      concurrency: this.config.sync.concurrency,
      writeConcurrency: Math.min(PAGE_WRITERS, this.config.sync.concurrency),
      writeBatch: PAGE_BATCH,
      updatedAfter,
      retry: this.retryPolicy,
      signal: run.abort.signal,
      onPlan: (plan) => {
        run.counters.pagesTotal = plan.pages;
        this.emit(run);
      },
      onRetry: (info) =>
        this.logger.warn(`page ${info.page}: ${message(info.error)}; ${info.rateLimited ? 'rate limited, waiting' : 'retrying in'} ${info.delayMs} ms`),
      onPage: async (page: FetchedPage) => {
        // Before anything of the page is written.
        const older = cutoff === null ? undefined : page.items.find((p) => this.olderThan(p, cutoff));
        if (older) throw new FilterIgnored(older.id);
        const fingerprints = await index;
        const known = fingerprints ?? undefined;
        const r = await this.writer.applyProducts(page.items, {
          runId: run.runId,
          source: 'sync',
          strategy: run.strategy,
          known,
          ...(memo ? { fingerprintOf: memo.fingerprintOf } : {}),
        });
        run.strategy = nextStrategy(r);
        for (const p of page.items) seen.add(p.id);
        for (const id of r.unchangedAsKnown) unchangedAtStart.add(id);
        for (const id of r.unfingerprinted) droppedFingerprints.add(id);
        this.count(run, r);
        // unchanged since the start of the pass (compared with `known`): seen, nothing to write
        for (const p of page.unchanged) {
          seen.add(p.id);
          unchangedAtStart.add(p.id);
          run.counters.skusSeen += p.skus;
        }
        run.counters.pagesDone += page.pages.length;
        run.counters.productsSeen += page.items.length + page.unchanged.length;
        this.metrics.syncPages.inc(page.pages.length);
        await this.flushProgress(run);
        this.emit(run);
      },
    });
    memo?.completePass();
    // Above MAX_KNOWN_FINGERPRINTS (and in an incremental pass) every product was marked seen in
    // catalog_sync_seen instead.
    const atStart = await read;
    const unfingerprintedAtStart = await unfingerprinted;
    run.seen =
      atStart && unfingerprintedAtStart
        ? {
            ids: seen,
            fingerprintedAtStart: atStart.fingerprints,
            fence: atStart.fence,
            unfingerprintedAtStart,
            unfingerprinted: droppedFingerprints,
            unchanged: unchangedAtStart,
          }
        : null;
    return listing;
  }

  /**
   * Proof that the upstream ignored `updated_after`: a product updated strictly before it (`cutoffMs`,
   * the second sent). One updated in that very second is no proof: an upstream that keeps whole-second
   * timestamps and filters with `>=` lists it.
   */
  private olderThan(p: UpstreamProduct, cutoffMs: number): boolean {
    if (typeof p.updated_at !== 'string') return false;
    const t = Date.parse(p.updated_at);
    return !Number.isNaN(t) && t < cutoffMs;
  }

  /**
   * After a complete full pass: every product with a listed SKU that it did not see, or that has no
   * fingerprint, is checked with `GET /products/{id}`. (A product without a fingerprint claims another
   * product's code or still has SKUs it no longer lists; a SKU created during the run was seen live.)
   */
  private async confirmUnseen(run: ActiveRun): Promise<void> {
    run.phase = 'confirming';
    this.emit(run);
    const seen = run.seen;
    if (seen) {
      // What the pass saw is in memory, with what was fingerprinted and what was not at its start. The
      // products fingerprinted since (by the pass, or e.g. by an order's fresh read) are read now.
      const since = new Set(await this.catalog.fingerprintedSince(run.startedAt));
      const ids = new Set(seen.unfingerprinted);
      // Without a fingerprint at the start: unless the pass saw it and fingerprinted it.
      for (const id of seen.unfingerprintedAtStart) if (!(since.has(id) && seen.ids.has(id))) ids.add(id);
      for (const id of seen.fingerprintedAtStart.keys()) if (!seen.ids.has(id)) ids.add(id);
      for (const id of since) if (!seen.ids.has(id)) ids.add(id);
      // Seen unchanged from the start, so not written: unless its stored fingerprint has moved since
      // (an order's fresh read unlisted it, or wrote what the upstream said then), what the pass saw
      // was not applied. Read again: found, it is kept and updated; gone, unlisted. Only products
      // written since the fingerprints were read can have moved (SKU rows or fingerprint stamped at
      // or after the read's fence), a few in a re-sync.
      if (seen.unchanged.size > 0) {
        const expected = new Map<number, string>();
        for (const id of await this.catalog.productsWrittenSince(seen.fence)) {
          const fp = seen.unchanged.has(id) ? seen.fingerprintedAtStart.get(id) : undefined;
          if (fp !== undefined) expected.set(id, fp);
        }
        for (const id of await this.catalog.fingerprintsMoved(expected)) ids.add(id);
      }
      const sorted = [...ids].sort((a, b) => a - b);
      for (let i = 0; i < sorted.length; i += CONFIRM_BATCH) {
        if (run.abort.signal.aborted) throw new AbortedError();
        await this.holdClaim(run); // a run that no longer holds its row unlists nothing
        await mapLimit(sorted.slice(i, i + CONFIRM_BATCH), this.config.sync.concurrency, (id) => this.confirmProduct(run, id));
      }
      return;
    }
    let after = 0;
    for (;;) {
      if (run.abort.signal.aborted) throw new AbortedError();
      const ids = await this.catalog.unseenProducts(run.runId, run.startedAt, after, CONFIRM_BATCH);
      if (ids.length === 0) return;
      after = ids[ids.length - 1];
      await this.holdClaim(run);
      await mapLimit(ids, this.config.sync.concurrency, (id) => this.confirmProduct(run, id));
    }
  }

  private async confirmProduct(run: ActiveRun, productId: number): Promise<void> {
    let product: UpstreamProduct;
    try {
      product = await withRetries(() => this.upstream.getProduct(productId, run.abort.signal), { policy: this.retryPolicy, signal: run.abort.signal });
    } catch (e) {
      if (e instanceof AbortedError) throw e;
      const cause = e instanceof RetriesExhausted ? e.cause : e;
      if (isProductGone(cause)) {
        this.count(run, await this.writer.unlistProduct(productId, { runId: run.runId, source: 'confirm' }));
        this.emit(run);
        return;
      }
      run.counters.unconfirmed++;
      this.logger.warn(`product ${productId} was not in the listing and could not be checked (${message(cause)}): left listed`);
      return;
    }
    // Found: the listing shifted under the pass. Only the SKUs it no longer has are unlisted; it is kept
    // and updated.
    run.counters.confirmedLive++;
    this.count(run, await this.writer.unlistProduct(productId, { runId: run.runId, source: 'confirm', keep: product.skus.map((s) => s.sku_code) }));
    this.count(run, await this.writer.applyProducts([product], { runId: run.runId, source: 'confirm' }));
    this.emit(run);
  }

  /**
   * A sku_code claimed by another product while its owner still held it is a conflict; once the
   * owner is confirmed gone, the claimant is read fresh and takes it over.
   */
  private async followFreedCodes(run: ActiveRun): Promise<void> {
    const claimants = await this.catalog.claimantsOfFreedCodes(run.runId);
    for (const id of claimants) {
      try {
        const product = await withRetries(() => this.upstream.getProduct(id, run.abort.signal), { policy: this.retryPolicy, signal: run.abort.signal });
        this.count(run, await this.writer.applyProducts([product], { runId: run.runId, source: 'confirm' }));
      } catch (e) {
        if (e instanceof AbortedError) throw e;
        this.logger.warn(`product ${id} claims a freed sku_code but could not be read: ${message(e)}`);
      }
    }
  }

  /** The run row's counters (the CLI follows them over the API), at most once a second. */
  private async flushProgress(run: ActiveRun): Promise<void> {
    const now = this.clock.now();
    if (now.getTime() - run.flushedAt < PROGRESS_FLUSH_MS) return;
    run.flushedAt = now.getTime();
    await this.holdClaim(run);
  }

  /**
   * Writes the run's counters and heartbeat, as its owner, while it is running; throws AbortedError
   * (and stops the run) when this process no longer holds it.
   */
  private async holdClaim(run: ActiveRun): Promise<void> {
    if (run.lostClaim === null) {
      if ((await this.runs.heartbeat(run.runId, this.instanceId, run.counters)) > 0) run.claimHeldAt = performance.now();
      else this.loseClaim(run, 'another process recovered it as abandoned');
    }
    if (run.lostClaim !== null) throw new AbortedError(`lost its claim: ${run.lostClaim}`);
  }

  /**
   * The heartbeat of the timer. A failure is logged; once none has been written for
   * CLAIM_LOST_AFTER_MS (failing, or hanging), the run stops before another process may take it over.
   */
  private async beat(run: ActiveRun): Promise<void> {
    if (run.lostClaim !== null) return;
    const silentMs = performance.now() - run.claimHeldAt;
    if (silentMs >= this.claimTiming.lostAfterMs) {
      this.loseClaim(run, `its heartbeat could not be written for ${Math.round(silentMs / 1000)} s (another process may recover it after ${STALE_RUN_MS / 1000} s)`);
      return;
    }
    if (run.beating) return;
    run.beating = true;
    try {
      if ((await this.runs.heartbeat(run.runId, this.instanceId, run.counters)) > 0) run.claimHeldAt = performance.now();
      else this.loseClaim(run, 'another process recovered it as abandoned');
    } catch (e) {
      this.logger.warn(`heartbeat of sync run ${run.runId} failed: ${message(e)}`);
    } finally {
      run.beating = false;
    }
  }

  /** This process no longer holds the run: it stops at once (see execute). */
  private loseClaim(run: ActiveRun, why: string): void {
    if (run.lostClaim !== null) return;
    run.lostClaim = why;
    this.logger.error(`sync run ${run.runId} lost its claim: ${why}; stopping it`);
    run.abort.abort();
  }

  private lostClaimError(run: ActiveRun): string {
    const delisted = run.counters.skusDelisted;
    return `lost its claim on the run: ${run.lostClaim ?? 'unknown'}; stopped, ${delisted === 0 ? 'nothing was unlisted' : `nothing unlisted after that (${delisted} SKUs before)`}`;
  }

  private count(run: ActiveRun, r: WriteResult): void {
    const c = run.counters;
    c.skusSeen += r.skus;
    c.skusCreated += r.created;
    c.skusChanged += r.changed;
    c.skusDelisted += r.delisted;
    c.skusRelisted += r.relisted;
    // A conflicted product is looked at in full again (and may be read again to confirm it): each
    // conflict counts once per run.
    for (const k of r.conflicts) {
      const key = `${k.skuCode}\u0000${k.claimantProductId}`;
      if (!run.conflictKeys.has(key)) {
        run.conflictKeys.add(key);
        c.conflicts++;
      }
    }
    for (const k of Object.keys(r.counts) as Array<keyof typeof r.counts>) c.changes[k] += r.counts[k];
  }

  /**
   * The end of a run is recorded even through a passing database hiccup (else it would block runs until
   * it is stale). Returns the end recorded: failed, whatever the run made of it, when this process no
   * longer held the run.
   */
  private async finishWithRetries(run: ActiveRun, status: 'succeeded' | 'failed', error: string | null): Promise<RunEnd> {
    for (let attempt = 1; ; attempt++) {
      try {
        return await this.finish(run, status, error);
      } catch (e) {
        if (attempt >= 5) {
          this.logger.error(`could not record the end of sync run ${run.runId}: ${message(e)}`);
          return { status, error };
        }
        await sleep(200 * 2 ** attempt);
      }
    }
  }

  /**
   * Fails a running run that lost its heartbeat (its process stopped), never this process's own, and
   * raises `sync_failed` for it in the same transaction (log line and metric after the commit), as for
   * a run that fails by itself. Returns its id, if there was one.
   */
  private async recoverAbandoned(now: Date): Promise<string | null> {
    const recovered = await this.withAfterCommit(async (em, afterCommit) => {
      const run = await this.runs.recoverStale(STALE_RUN_MS, now, this.activeRunId, em);
      if (run) await this.alerts.syncFailed({ runId: run.runId, mode: run.mode, error: run.error, failedAt: now }, em, afterCommit);
      return run;
    });
    return recovered?.runId ?? null;
  }

  /**
   * Records the end of a run; a failure raises `sync_failed` (AlertService) in the same transaction,
   * its log line and metric once that has committed.
   */
  private async finish(run: ActiveRun, status: 'succeeded' | 'failed', error: string | null): Promise<RunEnd> {
    const now = this.clock.now();
    const note = run.notes.join('; ');
    return this.withAfterCommit(async (em, afterCommit) => {
      let end: RunEnd = { status, error };
      let recorded = await this.runs.finish(em, run.runId, this.instanceId, { status, counters: run.counters, error, note, now });
      if (recorded === 0) {
        // Another process recovered the row as abandoned (and may run its own run now): this run's end
        // is recorded on its row as a failure, without making it running or succeeded again.
        run.lostClaim ??= 'another process recovered it as abandoned before its end was recorded';
        const lost = this.lostClaimError(run);
        end = { status: 'failed', error: lost };
        recorded = await this.runs.finishLost(em, run.runId, this.instanceId, { counters: run.counters, error: lost, note });
      }
      if (end.status === 'failed' && recorded > 0) {
        await this.alerts.syncFailed({ runId: run.runId, mode: run.mode, error: end.error, failedAt: now }, em, afterCommit);
      }
      return end;
    });
  }

  /**
   * Runs `work` in a transaction; the effects it hands to `afterCommit` (an alert's log line and
   * metric) run once the transaction has committed, and not at all when it rolls back.
   */
  private async withAfterCommit<T>(work: (em: EntityManager, afterCommit: AfterCommit) => Promise<T>): Promise<T> {
    const effects: Array<() => void> = [];
    const result = await this.dataSource.transaction((em) => work(em, (effect) => effects.push(effect)));
    for (const effect of effects) effect();
    return result;
  }

  private emit(run: ActiveRun, end?: { status: 'succeeded' | 'failed'; error: string | null }): void {
    const c = run.counters;
    const p: SyncProgress = {
      runId: run.runId,
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
      note: run.notes.join('; '),
      error,
    };
  }
}
