/**
 * The checks after a complete full pass of a sync run. Every listed SKU the pass did not see is checked
 * with `GET /products/{id}`: 404 `product_not_found` / `product_unavailable` → unlisted (deleted or
 * withdrawn); 200 with `is_active: false` → unlisted too (a withdrawn product, as newer Dujiao-Next
 * answers), its data updated; found active → kept and updated. The run's claim is renewed before each
 * batch (a run that no longer holds its row unlists nothing).
 *
 * These reads are the sync's: they take the request budget as class `sync` (never `price`, the
 * default of `getProduct`, which would put them ahead of the orders' polls).
 */
import { Injectable, Logger } from '@nestjs/common';
import { AppConfig } from '../config/app-config.js';
import type { UpstreamCallOptions } from '../upstream/upstream.client.js';
import type { UpstreamProduct } from '../upstream/upstream.types.js';
import { CatalogRepository } from './catalog.repository.js';
import { CatalogWriter } from './catalog-writer.service.js';
import { isProductGone } from './product-gone.js';
import { AbortedError, RetriesExhausted, withRetries } from './product-pager.js';
import { SyncRunLease } from './sync-run-lease.service.js';
import { countWrite, message, type ActiveRun } from './sync-run-state.js';

/** The budget class of the sync's own product reads. */
const SYNC_READ: UpstreamCallOptions = { priority: 'sync' };

/** Products checked per batch after a full pass. */
const CONFIRM_BATCH = 100;

/** Runs `fn` over `items`, `limit` at a time. */
async function mapLimit<T>(items: T[], limit: number, fn: (item: T) => Promise<void>): Promise<void> {
  let next = 0;
  const worker = async () => {
    while (next < items.length) await fn(items[next++]);
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker));
}

@Injectable()
export class DelistingChecks {
  private readonly logger = new Logger('catalog-sync');

  constructor(
    private readonly config: AppConfig,
    private readonly catalog: CatalogRepository,
    private readonly writer: CatalogWriter,
    private readonly lease: SyncRunLease,
  ) {}

  /**
   * After a complete full pass: every product with a listed SKU that it did not see, or that has no
   * fingerprint, is checked with `GET /products/{id}`. (A product without a fingerprint still has SKUs
   * it no longer lists; a SKU created during the run was seen live.)
   */
  async confirmUnseen(run: ActiveRun): Promise<void> {
    run.phase = 'confirming';
    run.emit();
    const seen = run.seen;
    if (seen) {
      // What the pass saw is in memory, with what was fingerprinted and what was not at its start. The
      // products fingerprinted since (by the pass, or e.g. by an order's fresh read) are read now.
      const since = new Set(await this.catalog.fingerprintedSince(run.supplier, run.startedAt));
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
        for (const id of await this.catalog.productsWrittenSince(run.supplier, seen.fence)) {
          const fp = seen.unchanged.has(id) ? seen.fingerprintedAtStart.get(id) : undefined;
          if (fp !== undefined) expected.set(id, fp);
        }
        for (const id of await this.catalog.fingerprintsMoved(run.supplier, expected)) ids.add(id);
      }
      const sorted = [...ids].sort((a, b) => a - b);
      for (let i = 0; i < sorted.length; i += CONFIRM_BATCH) {
        if (run.abort.signal.aborted) throw new AbortedError();
        await this.lease.hold(run.claim); // a run that no longer holds its row unlists nothing
        await mapLimit(sorted.slice(i, i + CONFIRM_BATCH), this.config.sync.concurrency, (id) => this.confirmProduct(run, id));
      }
      return;
    }
    let after = 0;
    for (;;) {
      if (run.abort.signal.aborted) throw new AbortedError();
      const ids = await this.catalog.unseenProducts(run.supplier, run.runId, run.startedAt, after, CONFIRM_BATCH);
      if (ids.length === 0) return;
      after = ids[ids.length - 1];
      await this.lease.hold(run.claim);
      await mapLimit(ids, this.config.sync.concurrency, (id) => this.confirmProduct(run, id));
    }
  }

  private async confirmProduct(run: ActiveRun, productId: number): Promise<void> {
    let product: UpstreamProduct;
    try {
      product = await withRetries(() => run.client.getProduct(productId, run.abort.signal, SYNC_READ), {
        policy: run.retry,
        signal: run.abort.signal,
      });
    } catch (e) {
      if (e instanceof AbortedError) throw e;
      const cause = e instanceof RetriesExhausted ? e.cause : e;
      if (isProductGone(cause)) {
        countWrite(run, await this.writer.unlistProduct(productId, { supplier: run.supplier, runId: run.runId, source: 'confirm' }));
        run.emit();
        return;
      }
      run.counters.unconfirmed++;
      this.logger.warn(`product ${productId} was not in the listing and could not be checked (${message(cause)}): left listed`);
      return;
    }
    // Found: the listing shifted under the pass (active), or it is withdrawn (`is_active: false`: its
    // rows are written unlisted, see skuRowsFromProduct). Either way the SKUs it no longer has are
    // unlisted and the others updated.
    if (product.is_active) run.counters.confirmedLive++;
    countWrite(
      run,
      await this.writer.unlistProduct(productId, {
        supplier: run.supplier,
        runId: run.runId,
        source: 'confirm',
        keep: product.skus.map((s) => s.sku_code),
      }),
    );
    countWrite(run, await this.writer.applyProducts([product], { supplier: run.supplier, runId: run.runId, source: 'confirm' }));
    run.emit();
  }
}
