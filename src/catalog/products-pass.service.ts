/**
 * The products pass of a sync run (full or incremental, see sync-plan.ts): the listing is paged
 * (product-pager.ts) and every page written as it arrives (CatalogWriter), the run's counters renewed
 * on its row at most once a second. A full pass compares its pages with the fingerprints stored at its
 * start and keeps what it saw for the delisting checks after it (DelistingChecks). An incremental
 * pass falls back to a full one when the upstream refuses or ignores `updated_after`, or when its
 * listing keeps moving while it is read.
 */
import { Injectable, Logger } from '@nestjs/common';
import { Clock } from '../common/clock.js';
import { AppConfig } from '../config/app-config.js';
import { Metrics } from '../ops/metrics.service.js';
import { SupplierRegistry } from '../suppliers/supplier-registry.service.js';
import { UpstreamDefinitiveError } from '../upstream/upstream.errors.js';
import type { ProductPageQuery, UpstreamProduct } from '../upstream/upstream.types.js';
import { CatalogRepository } from './catalog.repository.js';
import { CatalogWriter, type WriteResult } from './catalog-writer.service.js';
import { PageFingerprints } from './page-fingerprints.js';
import { fetchAllPages, PageFailure, type FetchedPage, type PagerResult } from './product-pager.js';
import { updateBudgetWait } from './sync-budget-wait.js';
import { SyncRunLease } from './sync-run-lease.service.js';
import { countWrite, message, noteSkipped, type ActiveRun, type WriteStrategy } from './sync-run-state.js';

/**
 * Reads of an incremental listing whose `total` moved while it was paged (see ProductsPass.run) before the
 * run falls back to a full pass.
 */
export const MAX_INCREMENTAL_READS = 3;
const PROGRESS_FLUSH_MS = 1_000;

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
 * then makes several times fewer transactions and statements, for a little more peak memory. A
 * re-sync's writers keep up, so its pages still go one by one.
 */
const PAGE_BATCH = 4;
/**
 * Up to this many products, a full pass compares its pages with the fingerprints stored at its start
 * in memory, and keeps the ids it saw there (some 100 bytes a product in all); above, it asks the
 * database page by page and records what it saw in catalog_sync_seen.
 */
const MAX_KNOWN_FINGERPRINTS = 250_000;

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

@Injectable()
export class ProductsPass {
  private readonly logger = new Logger('catalog-sync');
  /** See MAX_KNOWN_FINGERPRINTS (a test sets 0 to take the database's way). */
  knownFingerprintsLimit = MAX_KNOWN_FINGERPRINTS;
  /**
   * The fingerprints of each supplier's last complete full pass's pages, by page content (see
   * PageFingerprints): one supplier's page is never recognised as another's.
   */
  private readonly pageMemos = new Map<string, PageFingerprints>();

  constructor(
    private readonly config: AppConfig,
    private readonly clock: Clock,
    private readonly suppliers: SupplierRegistry,
    private readonly catalog: CatalogRepository,
    private readonly writer: CatalogWriter,
    private readonly lease: SyncRunLease,
    private readonly metrics: Metrics,
  ) {}

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
  /** A supplier's page fingerprints (default: the `UPSTREAM_*` supplier's). */
  pageFingerprintsOf(supplier: string = this.suppliers.envName): PageFingerprints {
    let memo = this.pageMemos.get(supplier);
    if (!memo) {
      memo = new PageFingerprints(MAX_KNOWN_FINGERPRINTS);
      this.pageMemos.set(supplier, memo);
    }
    return memo;
  }

  /** The `UPSTREAM_*` supplier's page fingerprints. */
  get pageFingerprints(): PageFingerprints {
    return this.pageFingerprintsOf();
  }

  async run(run: ActiveRun): Promise<void> {
    run.phase = 'products';
    let updatedAfter = run.plan.updatedAfter ?? undefined;
    for (let read = 1; ; read++) {
      let listing: PagerResult;
      try {
        listing = await this.pass(run, updatedAfter);
      } catch (e) {
        if (updatedAfter === undefined || run.claim.lost !== null) throw e;
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
    run.emit();
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
    await this.lease.setMode(run.claim, 'full', fallback);
  }

  private async pass(run: ActiveRun, updatedAfter: Date | undefined): Promise<PagerResult> {
    // An upstream that ignores the filter answers with older products too: the run then reads the
    // listing again, in full (see ProductsPass.run). The filter is sent truncated to the second.
    const cutoff = updatedAfter ? Math.floor(updatedAfter.getTime() / 1000) * 1000 : null;
    // A full pass over a stored catalog compares its pages with the fingerprints stored at its start
    // (read while the first pages are fetched): its unchanged products (most of a re-sync) cost no
    // query, and what it saw is kept in memory.
    const read = updatedAfter ? null : this.catalog.fingerprintIndex(run.supplier, this.knownFingerprintsLimit);
    const index = read?.then((r) => r?.fingerprints ?? null) ?? null;
    index?.catch(() => undefined); // awaited with the first page; a pass that fails before it ends here
    // Read while the pass runs too, for the confirmation after it (see DelistingChecks.confirmUnseen).
    const unfingerprinted = index?.then((fps) => (fps ? this.catalog.unfingerprintedProducts(run.supplier) : null)) ?? null;
    unfingerprinted?.catch(() => undefined);
    const seen = new Set<number>();
    const droppedFingerprints = new Set<number>();
    const unchangedAtStart = new Set<number>();
    // A full pass recognises the pages whose bodies the previous complete pass received (see
    // PageFingerprints): unchanged since the start of the pass, they are not parsed; else their
    // fingerprints come from memory.
    const memo = updatedAfter ? null : this.pageFingerprintsOf(run.supplier);
    memo?.startPass();
    let startIndex: Map<number, string> | null = null;
    void index?.then(
      (fps) => (startIndex = fps),
      () => undefined,
    );
    // Where the upstream lists inactive products on request (UPSTREAM_LIST_INACTIVE), they come with
    // `is_active: false` and are unlisted as they are written: a withdrawn product costs no read of
    // its own. Only a product missing from a complete pass is read (DelistingChecks).
    const inactive: Pick<ProductPageQuery, 'includeInactive'> = run.settings.listInactive ? { includeInactive: true } : {};
    const upstream = run.client;
    const listing = await fetchAllPages({
      fetchPage: async (q, signal) => {
        if (!memo) return upstream.listProducts({ ...q, ...inactive }, signal);
        const r = await upstream.listProductsRecognizing({ ...q, ...inactive }, (digest) => memo.unchangedPage(digest, startIndex), signal);
        if (r.kind === 'recognized') return r.known;
        memo.addPage(r.page, r.digest);
        return r.page;
      },
      requestedPageSize: run.settings.pageSize,
      concurrency: this.config.sync.concurrency,
      writeConcurrency: Math.min(PAGE_WRITERS, this.config.sync.concurrency),
      writeBatch: PAGE_BATCH,
      updatedAfter,
      retry: run.retry,
      signal: run.abort.signal,
      onPlan: (plan) => {
        run.counters.pagesTotal = plan.pages;
        run.emit();
      },
      onRetry: (info) =>
        this.logger.warn(
          `page ${info.page}: ${message(info.error)}; ${info.rateLimited ? 'rate limited, waiting' : 'retrying in'} ${info.delayMs} ms`,
        ),
      onPage: async (page: FetchedPage) => {
        // Before anything of the page is written.
        const older = cutoff === null ? undefined : page.items.find((p) => this.olderThan(p, cutoff));
        if (older) throw new FilterIgnored(older.id);
        const fingerprints = await index;
        const known = fingerprints ?? undefined;
        const r = await this.writer.applyProducts(page.items, {
          supplier: run.supplier,
          runId: run.runId,
          source: 'sync',
          strategy: run.strategy,
          known,
          ...(memo ? { fingerprintOf: memo.fingerprintOf } : {}),
        });
        run.strategy = nextStrategy(r);
        for (const p of page.items) seen.add(p.id);
        if (page.skipped.length > 0) await this.noteSkipped(run, page, known === undefined, seen);
        for (const id of r.unchangedAsKnown) unchangedAtStart.add(id);
        for (const id of r.unfingerprinted) droppedFingerprints.add(id);
        countWrite(run, r);
        // unchanged since the start of the pass (compared with `known`): seen, nothing to write
        for (const p of page.unchanged) {
          seen.add(p.id);
          unchangedAtStart.add(p.id);
          run.counters.skusSeen += p.skus;
        }
        run.counters.pagesDone += page.pages.length;
        run.counters.productsSeen += page.items.length + page.unchanged.length + page.skipped.length;
        this.metrics.syncPages.inc(page.pages.length);
        await this.flushProgress(run);
        run.emit();
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
   * Products of a page left out for their shape: reported in the run (by id, with the reason) and
   * counted, and, when their id is usable, counted as seen (in memory, or in catalog_sync_seen when the
   * pass keeps what it saw there): the pass stays complete and never unlists them for their shape;
   * their stored SKUs stay as they are.
   */
  private async noteSkipped(run: ActiveRun, page: FetchedPage, seenInDatabase: boolean, seen: Set<number>): Promise<void> {
    const ids = page.skipped.flatMap((s) => (s.product_id === null ? [] : [s.product_id]));
    for (const id of ids) seen.add(id);
    if (seenInDatabase) await this.catalog.markSeen(run.runId, ids);
    this.metrics.syncProductsSkipped.inc(page.skipped.length);
    noteSkipped(run, page.skipped);
    for (const s of page.skipped)
      this.logger.warn(`sync run ${run.runId}: product ${s.product_id ?? '(no usable id)'} left out of page ${page.page}: ${s.reason}`);
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

  /** The run row's counters (the CLI follows them over the API), at most once a second. */
  private async flushProgress(run: ActiveRun): Promise<void> {
    const now = this.clock.now();
    if (now.getTime() - run.flushedAt < PROGRESS_FLUSH_MS) return;
    run.flushedAt = now.getTime();
    await updateBudgetWait(run, this.metrics);
    await this.lease.hold(run.claim);
  }
}
