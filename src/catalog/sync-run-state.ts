/**
 * A catalog sync run as this process executes it: its plan, counters and progress, its claim on the
 * run row (SyncRunLease) and what its full pass saw. The run (CatalogSyncService), its products pass
 * (ProductsPass) and the delisting checks after it (DelistingChecks) share it.
 */
import { randomBytes } from 'node:crypto';
import type { SupplierSettings } from '../suppliers/supplier.types.js';
import type { UpstreamClient } from '../upstream/upstream.client.js';
import type { SkippedProduct } from '../upstream/upstream.shapes.js';
import type { SkippedCategory } from '../upstream/upstream.types.js';
import type { WriteOptions, WriteResult } from './catalog-writer.service.js';
import type { RetryPolicy } from './product-pager.js';
import { emptyCounts } from './sku-diff.js';
import type { PassMode, PassPlan } from './sync-plan.js';
import type { RunClaim } from './sync-run-lease.service.js';
import { MAX_SKIPPED_LISTED, type RunCounters } from './sync-run.repository.js';

export type SyncPhase = 'starting' | 'categories' | 'products' | 'rereading' | 'confirming' | 'media' | 'finished';

/** A run's progress: its counters so far (those of the run row, see RunCounters). */
export interface SyncProgress extends Pick<
  RunCounters,
  'pagesDone' | 'pagesTotal' | 'productsSeen' | 'skusSeen' | 'skusCreated' | 'skusChanged' | 'skusDelisted' | 'skusRelisted' | 'conflicts'
> {
  runId: string;
  supplier: string;
  mode: PassMode;
  phase: SyncPhase;
  /** Set in the `finished` event. */
  status?: 'succeeded' | 'failed';
  error?: string | null;
}

export type WriteStrategy = NonNullable<WriteOptions['strategy']>;

export interface ActiveRun {
  runId: string;
  /** The supplier whose catalog the run syncs: every write names it. */
  supplier: string;
  /** That supplier's upstream port (its own request budget). */
  client: UpstreamClient;
  /** That supplier's settings (page size, list-inactive, timeout…). */
  settings: SupplierSettings;
  plan: PassPlan;
  mode: PassMode;
  fallback: string | null;
  startedAt: Date;
  counters: RunCounters;
  /** Stops the run (the service shutting down, or the claim lost). */
  abort: AbortController;
  /** This process's claim on the run row (its runId, abort and counters are the run's own). */
  claim: RunClaim;
  /** Retries of upstream reads. */
  retry: RetryPolicy;
  /** This process's total wait of `sync` requests for the budget when the run started (see sync-budget-wait.ts). */
  budgetWaitFromMs: number;
  onProgress?: (p: SyncProgress) => void;
  /** Publishes the run's progress to its listeners (see CatalogSyncService.onProgress). */
  emit(): void;
  phase: SyncPhase;
  notes: string[];
  /** When the counters were last written to the run row (ms). */
  flushedAt: number;
  /** How the next page is written, from what the last one was (see ProductsPass). */
  strategy: WriteStrategy;
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
     * stored fingerprint is checked again after the pass (see DelistingChecks.confirmUnseen).
     */
    unchanged: Set<number>;
  } | null;
}

export function newRunId(now: Date): string {
  return `run_${now
    .toISOString()
    .replace(/[-:TZ.]/g, '')
    .slice(0, 14)}_${randomBytes(4).toString('hex')}`;
}

export function emptyCounters(): RunCounters {
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
    budgetWaitMs: 0,
    skippedProducts: [],
    skippedCategories: [],
    rereadProducts: 0,
    skippedImages: [],
    imagesFetched: 0,
    imageBytes: 0,
    mediaMs: 0,
  };
}

/**
 * Records products of a page left out for their shape in the run: each listed once by id (a listing
 * read again meets them again), up to MAX_SKIPPED_LISTED.
 */
export function noteSkipped(run: ActiveRun, skipped: readonly SkippedProduct[]): void {
  const list = run.counters.skippedProducts;
  for (const s of skipped) {
    if (list.length >= MAX_SKIPPED_LISTED) return;
    if (s.product_id !== null && list.some((x) => x.product_id === s.product_id)) continue;
    list.push({ product_id: s.product_id, reason: s.reason });
  }
}

/** Records categories left out for their shape in the run, up to MAX_SKIPPED_LISTED. */
export function noteSkippedCategories(run: ActiveRun, skipped: readonly SkippedCategory[]): void {
  const list = run.counters.skippedCategories;
  for (const s of skipped) {
    if (list.length >= MAX_SKIPPED_LISTED) return;
    list.push({ category_id: s.category_id, reason: s.reason });
  }
}

/** Adds a write's outcome to the run's counters. */
export function countWrite(run: ActiveRun, r: WriteResult): void {
  const c = run.counters;
  c.skusSeen += r.skus;
  c.skusCreated += r.created;
  c.skusChanged += r.changed;
  c.skusDelisted += r.delisted;
  c.skusRelisted += r.relisted;
  for (const k of Object.keys(r.counts) as Array<keyof typeof r.counts>) c.changes[k] += r.counts[k];
}

export function message(e: unknown): string {
  return e instanceof Error ? e.message : String(e);
}
