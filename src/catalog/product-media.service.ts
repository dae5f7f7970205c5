/**
 * Products' images (CONTRACT §5, "A product"): how a written product's images are shown
 * (`prepare`, for CatalogWriter: from what is already known of each URL, nothing fetched), and the
 * media pass of a sync run (`runPass`), after its pages: every image URL still unknown is downloaded
 * (MediaFetcher, at most MEDIA_CONCURRENCY at a time, no request budget), stored by its SHA-256 or
 * recorded as refused, and the products using it are rendered again; then the categories' icons are
 * mirrored the same way (their shown URL is made when the categories are read: CatalogService).
 *
 * Each supplier's images are resolved against its own origin (its base URL), and its pass renders its
 * own products and categories only.
 *
 * The pass never fails a run: what goes wrong is logged, noted in the run, and left for the next one
 * (the products stay pending). It never touches an order: it uses neither the upstream client nor
 * its budget.
 */
import { Injectable, Logger } from '@nestjs/common';
import { DataSource } from 'typeorm';
import { Clock } from '../common/clock.js';
import { AppConfig } from '../config/app-config.js';
import { MediaFetcher } from '../media/media-fetcher.js';
import { MediaRepository, type MediaOutcome } from '../media/media.repository.js';
import { mediaSettings } from '../media/media-settings.js';
import { mediaKey, renderProductMedia, resolveImageUrl, type MediaSettings, type SourceState } from '../media/product-media.js';
import { OutboxWriter, type OutboxEvent } from '../notifications/outbox.writer.js';
import { SupplierRegistry } from '../suppliers/supplier-registry.service.js';
import type { UpstreamProduct } from '../upstream/upstream.types.js';
import { CategoryRepository } from './category.repository.js';
import { ProductRepository, type ProductRow } from './product.repository.js';
import { message, type ActiveRun } from './sync-run-state.js';
import { MAX_SKIPPED_LISTED } from './sync-run.repository.js';

/** Images downloaded at once. */
export const MEDIA_CONCURRENCY = 2;
/** Products rendered per batch of the pass. */
const PASS_BATCH = 200;
/** Downloaded images are written together, once this many bytes (or MAX_BUFFERED_IMAGES) are held. */
const MAX_BUFFERED_BYTES = 4 * 1024 * 1024;
const MAX_BUFFERED_IMAGES = 100;
/** A transient refusal (a timeout, an unreachable host, a 5xx) is tried again after this long. */
export const MEDIA_RETRY_MS = 3_600_000;

function text(v: unknown): Record<string, string> {
  return typeof v === 'object' && v !== null && !Array.isArray(v) ? (v as Record<string, string>) : {};
}

/** Runs `fn` over `items`, at most `limit` at a time. */
async function eachLimited<T>(items: readonly T[], limit: number, fn: (item: T) => Promise<void>): Promise<void> {
  let next = 0;
  const worker = async (): Promise<void> => {
    while (next < items.length) await fn(items[next++]);
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker));
}

/** The shop notification of a product whose shown fields changed. */
export function productChangedEvent(supplier: string, productId: number, updatedAt: Date): OutboxEvent {
  return {
    type: 'product.changed',
    subject: `product:${productId}`,
    payload: { supplier, product_id: productId, updated_at: new Date(updatedAt).toISOString() },
  };
}

@Injectable()
export class ProductMediaService {
  private readonly logger = new Logger('catalog-media');

  constructor(
    private readonly config: AppConfig,
    private readonly clock: Clock,
    private readonly dataSource: DataSource,
    private readonly products: ProductRepository,
    private readonly categories: CategoryRepository,
    private readonly media: MediaRepository,
    private readonly fetcher: MediaFetcher,
    private readonly outbox: OutboxWriter,
    private readonly suppliers: SupplierRegistry,
  ) {}

  /** The media settings of a supplier's products (its origin; the env supplier's when it is unknown here). */
  settings(supplier: string): MediaSettings {
    return mediaSettings(this.config, this.suppliers.find(supplier)?.config.baseUrl ?? this.config.upstream.baseUrl);
  }

  /** The product rows of a supplier's upstream products, their images shown from what is known of their URLs. */
  async prepare(supplier: string, products: UpstreamProduct[]): Promise<ProductRow[]> {
    const s = this.settings(supplier);
    let known = new Map<string, SourceState>();
    if (s.mirror) {
      const urls = new Set<string>();
      for (const p of products) for (const u of renderProductMedia(p, () => undefined, s).urls) urls.add(u);
      known = await this.media.sources([...urls], this.clock.now());
    }
    const key = mediaKey(s);
    return products.map((p) => {
      const r = renderProductMedia(p, (u) => known.get(u), s);
      return {
        product_id: p.id,
        slug: p.slug,
        title: text(p.title),
        description: text(p.description),
        content: p.content ?? null,
        images: p.images ?? [],
        tags: p.tags ?? [],
        seo_meta: p.seo_meta ?? null,
        category_id: p.category_id,
        is_active: p.is_active,
        shown: { images: r.images, content: r.content },
        // unknown URLs are fetched, and refusals reported, by the next media pass
        media_pending: r.pending.length > 0 || r.skipped.length > 0,
        media_key: key,
        urls: r.urls,
      };
    });
  }

  /** The notifications of products whose shown fields changed. */
  events(moved: Array<{ supplier: string; product_id: number; updated_at: Date }>): OutboxEvent[] {
    return moved.map((m) => productChangedEvent(m.supplier, m.product_id, m.updated_at));
  }

  /** The media pass of a run (after its pages): see the top of this file. */
  async runPass(run: ActiveRun): Promise<void> {
    run.phase = 'media';
    run.emit();
    const started = performance.now();
    try {
      await this.pass(run);
    } catch (e) {
      if (run.abort.signal.aborted) return;
      this.logger.warn(`sync run ${run.runId}: the media pass stopped (the products stay pending for the next run): ${message(e)}`);
      run.notes.push(`images: ${message(e)}`);
    } finally {
      run.counters.mediaMs += performance.now() - started;
    }
  }

  private async pass(run: ActiveRun): Promise<void> {
    const s = this.settings(run.supplier);
    const key = mediaKey(s);
    const supplier = new URL(s.origin);
    const c = run.counters;
    let after = 0;
    for (;;) {
      if (run.abort.signal.aborted) return;
      const now = this.clock.now();
      const work = await this.products.mediaWork(run.supplier, after, key, now, PASS_BATCH);
      if (work.length === 0) break;
      after = work[work.length - 1].product_id;
      const urls = new Set<string>();
      for (const w of work) for (const u of renderProductMedia(w, () => undefined, s).urls) urls.add(u);
      const known = s.mirror ? await this.media.sources([...urls], now) : new Map<string, SourceState>();
      const toFetch = s.mirror ? [...urls].filter((u) => !known.has(u)) : [];
      // outcomes are written in groups (one transaction each), never more than MAX_BUFFERED_BYTES held
      let buffered: MediaOutcome[] = [];
      let bufferedBytes = 0;
      let writing: Promise<void> = Promise.resolve();
      const flush = (): Promise<void> => {
        const group = buffered;
        buffered = [];
        bufferedBytes = 0;
        writing = writing.then(() => this.media.record(group, this.clock.now()));
        return writing;
      };
      await eachLimited(toFetch, MEDIA_CONCURRENCY, async (url) => {
        const o = await this.fetchOne(run, supplier, url);
        if (o === null) return;
        buffered.push(o);
        if (o.kind === 'mirrored') bufferedBytes += o.file.data.length;
        known.set(
          url,
          o.kind === 'mirrored' ? { kind: 'mirrored', sha256: o.file.sha256, ext: o.file.ext } : { kind: 'refused', reason: o.reason },
        );
        if (bufferedBytes >= MAX_BUFFERED_BYTES || buffered.length >= MAX_BUFFERED_IMAGES) await flush();
      });
      await flush();
      if (run.abort.signal.aborted) return;
      const renders = work.map((w) => {
        const r = renderProductMedia(w, (u) => known.get(u), s);
        for (const sk of r.skipped) {
          if (c.skippedImages.length < MAX_SKIPPED_LISTED)
            c.skippedImages.push({ product_id: w.product_id, url: sk.url, reason: sk.reason });
        }
        return {
          product_id: w.product_id,
          media_version: w.media_version,
          shown: { images: r.images, content: r.content },
          media_pending: r.pending.length > 0,
          media_key: key,
          urls: r.urls,
        };
      });
      await this.dataSource.transaction(async (em) => {
        // stamped with the transaction's start, as every catalog write (the changed_since fence)
        const stamp = await this.products.transactionNow(em);
        const moved = await this.products.storeRenders(em, run.supplier, renders, stamp);
        // A product is announced when its images change once it was complete; the render that
        // completes a new or edited product is not announced again (its write was).
        await this.outbox.append(em, this.events(moved.filter((m) => !m.was_pending).map((m) => ({ ...m, supplier: run.supplier }))));
      });
      run.emit();
    }
    if (s.mirror && !run.abort.signal.aborted) await this.iconPass(run, s, supplier);
  }

  /** Downloads one image URL, counted in the run; null when the run was stopped meanwhile. */
  private async fetchOne(run: ActiveRun, supplier: URL, url: string): Promise<MediaOutcome | null> {
    if (run.abort.signal.aborted) return null;
    const r = await this.fetcher.fetch(url, {
      supplier,
      maxBytes: this.config.media.maxBytes,
      timeoutMs: run.settings.timeoutMs,
      signal: run.abort.signal,
    });
    if (run.abort.signal.aborted) return null;
    if (r.ok) {
      run.counters.imagesFetched++;
      run.counters.imageBytes += r.data.length;
      return { kind: 'mirrored', url, file: r };
    }
    this.logger.warn(`sync run ${run.runId}: image ${url} left out (${r.reason}: ${r.detail})`);
    const retryAt = r.transient ? new Date(this.clock.now().getTime() + MEDIA_RETRY_MS) : null;
    return { kind: 'refused', url, reason: r.reason, retryAt };
  }

  /**
   * The categories' icons, mirrored like product images (the shop is shown `icon: null` until one is
   * mirrored, and when it is refused). An icon URL still unknown is fetched; one refused now, or whose
   * value is not an http(s) URL, is reported in the run's `skipped_images` with `product_id` null and
   * its `category_id`. The categories are few: their icons are fetched in one group.
   */
  private async iconPass(run: ActiveRun, s: MediaSettings, supplier: URL): Promise<void> {
    const c = run.counters;
    const skip = (categoryId: number, url: string, reason: string): void => {
      if (c.skippedImages.length < MAX_SKIPPED_LISTED) c.skippedImages.push({ product_id: null, category_id: categoryId, url, reason });
    };
    const users = new Map<string, number[]>();
    for (const cat of await this.categories.categories(run.supplier)) {
      if (cat.icon.trim() === '') continue;
      const r = resolveImageUrl(cat.icon, s.origin);
      if ('refused' in r) {
        skip(cat.id, cat.icon, r.refused);
        continue;
      }
      users.set(r.url, [...(users.get(r.url) ?? []), cat.id]);
    }
    const known = await this.media.sources([...users.keys()], this.clock.now());
    const outcomes: MediaOutcome[] = [];
    await eachLimited(
      [...users.keys()].filter((u) => !known.has(u)),
      MEDIA_CONCURRENCY,
      async (url) => {
        const o = await this.fetchOne(run, supplier, url);
        if (o === null) return;
        outcomes.push(o);
        if (o.kind === 'refused') for (const id of users.get(url) ?? []) skip(id, url, o.reason);
      },
    );
    if (run.abort.signal.aborted) return;
    await this.media.record(outcomes, this.clock.now());
    run.emit();
  }
}
