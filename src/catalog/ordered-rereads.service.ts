/**
 * The re-reads of ordered products after an incremental pass. Dujiao-Next leaves a product's
 * `updated_at` as it was when its stock changes (cards added or sold), so an incremental listing never
 * shows stock change. After its pages, an incremental run reads `GET /products/{id}` for up to
 * SYNC_REREAD_ORDERED products ordered in the last day (those whose last fresh read is the oldest,
 * see CatalogRepository.orderedProductsToReread) and applies each as an order's fresh read does
 * (CatalogWriter.applyFreshProduct), its changes recorded under the run. A full pass reads every
 * product anyway: it makes none.
 *
 * The reads take the lowest budget class (`reconcile`): a wait for the budget paces them and never
 * fails the run. A product the upstream says is gone (404 `product_not_found` / `product_unavailable`)
 * is unlisted, as a refresh does; any other failure is logged and the run goes on. Each product read
 * is recorded (catalog_product_rereads), whatever the answer, so that the next run starts with others.
 */
import { Injectable, Logger } from '@nestjs/common';
import { Clock } from '../common/clock.js';
import { AppConfig } from '../config/app-config.js';
import { Metrics } from '../ops/metrics.service.js';
import type { UpstreamCallOptions } from '../upstream/upstream.client.js';
import type { UpstreamProduct } from '../upstream/upstream.types.js';
import { CatalogRepository } from './catalog.repository.js';
import { CatalogWriter } from './catalog-writer.service.js';
import { isProductGone } from './product-gone.js';
import { AbortedError, RetriesExhausted, withRetries } from './product-pager.js';
import { SyncRunLease } from './sync-run-lease.service.js';
import { countWrite, message, type ActiveRun } from './sync-run-state.js';

/** The budget class of the re-reads: the lowest. */
const REREAD: UpstreamCallOptions = { priority: 'reconcile' };

/** How far back an order makes its product one to re-read. */
export const REREAD_ORDERED_WITHIN_MS = 24 * 3_600_000;

/** The run's claim is renewed (and its counters written) every this many re-reads. */
const HOLD_EVERY = 50;

@Injectable()
export class OrderedRereads {
  private readonly logger = new Logger('catalog-sync');

  constructor(
    private readonly config: AppConfig,
    private readonly clock: Clock,
    private readonly catalog: CatalogRepository,
    private readonly writer: CatalogWriter,
    private readonly lease: SyncRunLease,
    private readonly metrics: Metrics,
  ) {}

  /** After an incremental pass (nothing after a full one, nor with SYNC_REREAD_ORDERED=0). */
  async run(run: ActiveRun): Promise<void> {
    const limit = this.config.sync.rereadOrdered;
    if (limit === 0 || run.mode !== 'incremental') return;
    const since = new Date(this.clock.now().getTime() - REREAD_ORDERED_WITHIN_MS);
    const ids = await this.catalog.orderedProductsToReread(run.supplier, since, limit, run.runId);
    if (ids.length === 0) return;
    run.phase = 'rereading';
    run.emit();
    for (let i = 0; i < ids.length; i++) {
      if (run.abort.signal.aborted) throw new AbortedError();
      // a run that no longer holds its row unlists nothing
      if (i % HOLD_EVERY === 0) await this.lease.hold(run.claim);
      await this.reread(run, ids[i]);
    }
  }

  private async reread(run: ActiveRun, productId: number): Promise<void> {
    run.counters.rereadProducts++;
    let product: UpstreamProduct;
    try {
      product = await withRetries(() => run.client.getProduct(productId, run.abort.signal, REREAD), {
        policy: run.retry,
        signal: run.abort.signal,
      });
    } catch (e) {
      if (e instanceof AbortedError || run.abort.signal.aborted) throw e instanceof AbortedError ? e : new AbortedError();
      const cause = e instanceof RetriesExhausted ? e.cause : e;
      await this.catalog.markReread(run.supplier, productId, this.clock.now());
      if (isProductGone(cause)) {
        this.metrics.syncRereads.inc({ outcome: 'gone' });
        countWrite(run, await this.writer.unlistProduct(productId, { supplier: run.supplier, runId: run.runId, source: 'refresh' }));
      } else {
        this.metrics.syncRereads.inc({ outcome: 'failed' });
        this.logger.warn(
          `sync run ${run.runId}: product ${productId} (ordered lately) could not be re-read (${message(cause)}); the run goes on`,
        );
      }
      run.emit();
      return;
    }
    countWrite(run, await this.writer.applyFreshProduct(product, { supplier: run.supplier, runId: run.runId, source: 'refresh' }));
    await this.catalog.markReread(run.supplier, productId, this.clock.now());
    this.metrics.syncRereads.inc({ outcome: 'ok' });
    run.emit();
  }
}
