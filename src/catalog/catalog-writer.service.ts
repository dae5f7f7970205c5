/**
 * The one write path of the local catalog. A sync page, a delisting check, an order's fresh read and
 * a rule change all go through here, so that each write is diff-based (nothing written when nothing
 * changed), priced by the rules in force, recorded in the change history and announced to the shop
 * (transactional outbox) in the same transaction.
 */
import { Injectable, Logger } from '@nestjs/common';
import { DataSource, type EntityManager } from 'typeorm';
import { sqlState } from '../database/pg-errors.js';
import { OutboxWriter, type OutboxEvent } from '../notifications/outbox.writer.js';
import { OfferValuation } from '../offers/offer-valuation.service.js';
import { Metrics } from '../ops/metrics.service.js';
import type { UpstreamProduct } from '../upstream/upstream.types.js';
import { CatalogReadRepository } from './catalog-read.repository.js';
import { CommitModeRepository } from './commit-mode.repository.js';
import { PricingContextService, type PricingContext } from './pricing-context.service.js';
import { ProductMediaService } from './product-media.service.js';
import { ProductRepository } from './product.repository.js';
import {
  addCounts,
  diffSku,
  emptyCounts,
  eventsForDiff,
  productFingerprint,
  skuRowsFromProduct,
  type ChangeCounts,
  type SalePriceFn,
  type SkuDiff,
  type SkuRow,
} from './sku-diff.js';
import { skuKeyOf } from './sku-key.js';
import { SkuWriteRepository, type HistoryInput } from './sku-write.repository.js';

export type ChangeSource = 'sync' | 'confirm' | 'refresh' | 'pricing' | 'supplier';

export interface WriteOptions {
  /** The supplier whose catalog is written (every statement names it). */
  supplier: string;
  /** The run the change belongs to (null outside a run). */
  runId: string | null;
  source: ChangeSource;
  /**
   * `check` (default): compare product fingerprints first and map, price and send only the products
   * whose fingerprint moved (cheap when little changed); `write`: send every product at once (cheaper
   * when most are new or changed); `insert`: as `write`, the rows sent as new ones by COPY on a
   * PostgreSQL server (cheapest when all are new, e.g. a first sync), and sent again as `write` when
   * one of them is not. All give the same result.
   */
  strategy?: 'check' | 'write' | 'insert';
  /**
   * A full pass's fingerprints as stored when it started (possibly none): a product whose fingerprint
   * equals its entry is unchanged without asking the database. The others are checked against the
   * database as usual. Given, the pass keeps what it saw in memory: nothing is marked seen in the
   * database.
   */
  known?: Map<number, string>;
  /** Where the products' fingerprints come from (default: computed; see PageFingerprints). */
  fingerprintOf?: (product: UpstreamProduct) => string;
}

export interface WriteResult {
  /** SKU rows handed in (distinct codes per product: distinct SKUs). */
  skus: number;
  /** SKU rows written. */
  written: number;
  created: number;
  /** Existing SKUs that changed. */
  changed: number;
  relisted: number;
  delisted: number;
  counts: ChangeCounts;
  diffs: SkuDiff[];
  /** Products written in full whose fingerprint was not kept (see WRITE_FINGERPRINTS_SQL): to be looked at again. */
  unfingerprinted: number[];
  /** Products not written because their fingerprint equals their entry in `known` (WriteOptions). */
  unchangedAsKnown: number[];
}

function emptyResult(): WriteResult {
  return {
    skus: 0,
    written: 0,
    created: 0,
    changed: 0,
    relisted: 0,
    delisted: 0,
    counts: emptyCounts(),
    diffs: [],
    unfingerprinted: [],
    unchangedAsKnown: [],
  };
}

const MAX_PRICING_RETRIES = 3;

/** The run whose "seen" rows the database keeps for these products (none when the pass keeps them in memory). */
function seenBy(opts: WriteOptions): string | null {
  return opts.known ? null : opts.runId;
}

@Injectable()
export class CatalogWriter {
  private readonly logger = new Logger('catalog');

  constructor(
    private readonly dataSource: DataSource,
    private readonly repo: SkuWriteRepository,
    private readonly reads: CatalogReadRepository,
    private readonly pricing: PricingContextService,
    private readonly outbox: OutboxWriter,
    private readonly metrics: Metrics,
    private readonly commitMode: CommitModeRepository,
    private readonly products: ProductRepository,
    private readonly productMedia: ProductMediaService,
    private readonly offers: OfferValuation,
  ) {}

  /**
   * Applies products seen live (a listing page, a detail read): products whose fingerprint did not
   * move are only marked seen; the others' SKUs are mapped, priced and upserted (a row is written only
   * when a field differs) and their changes recorded. A SKU is its product's: two products carrying
   * one sku_code are two SKUs.
   */
  async applyProducts(products: UpstreamProduct[], opts: WriteOptions): Promise<WriteResult> {
    if (products.length === 0) return emptyResult();
    let unchangedSkus = 0;
    const unchangedAsKnown: number[] = [];
    let todo: Array<{ product: UpstreamProduct; fingerprint: string }> = [];
    const fingerprintOf = opts.fingerprintOf ?? productFingerprint;
    for (const product of products) {
      const fingerprint = fingerprintOf(product);
      if (opts.known?.get(product.id) === fingerprint) {
        unchangedSkus += product.skus.length;
        unchangedAsKnown.push(product.id);
      } else {
        todo.push({ product, fingerprint });
      }
    }
    if (todo.length > 0 && (opts.strategy ?? 'check') === 'check') {
      // Outside any transaction: for a re-sync, this one look is all a page costs.
      const changed = await this.repo.checkProducts(
        this.dataSource.manager,
        opts.supplier,
        todo.map((f) => ({ productId: f.product.id, fingerprint: f.fingerprint })),
        seenBy(opts),
      );
      for (const f of todo) if (!changed.has(f.product.id)) unchangedSkus += f.product.skus.length;
      todo = todo.filter((f) => changed.has(f.product.id));
    }
    if (todo.length === 0) return { ...emptyResult(), skus: unchangedSkus, unchangedAsKnown };

    const result = await this.writeProducts(todo, opts);
    result.skus += unchangedSkus;
    result.unchangedAsKnown = unchangedAsKnown;
    this.report(result);
    return result;
  }

  /**
   * Applies one product just read fresh (an order's price guard): its SKUs no longer in it are
   * unlisted and the others written, in one transaction. When its fingerprint did not move, nothing
   * is written at all: the stored fingerprint vouches that the last write stored exactly this product
   * and that none of its other SKUs is listed (a fingerprint is kept only then, and dropped whenever
   * one of its SKUs is unlisted), so the unlisting would find nothing and the upsert change nothing.
   */
  async applyFreshProduct(product: UpstreamProduct, opts: WriteOptions, knownFingerprint: string | null = null): Promise<WriteResult> {
    const f = { product, fingerprint: productFingerprint(product) };
    // `knownFingerprint` was read just before: equal means nothing to write, without asking again
    const unchanged =
      (knownFingerprint !== null && knownFingerprint === f.fingerprint && opts.runId === null) ||
      !(
        await this.repo.checkProducts(
          this.dataSource.manager,
          opts.supplier,
          [{ productId: product.id, fingerprint: f.fingerprint }],
          opts.runId,
        )
      ).has(product.id);
    if (unchanged) return { ...emptyResult(), skus: product.skus.length };
    const result = await this.write([f], opts, { productId: product.id, keep: product.skus.map((s) => s.sku_code) }, false);
    this.report(result);
    return result;
  }

  /** Writes products seen live: by COPY first when they are believed new (`insert`), else by upsert. */
  private async writeProducts(todo: Array<{ product: UpstreamProduct; fingerprint: string }>, opts: WriteOptions): Promise<WriteResult> {
    if (opts.strategy !== 'insert' || !(await this.repo.canCopy())) return this.write(todo, opts, null, false);
    try {
      return await this.write(todo, opts, null, true);
    } catch (e) {
      // A SKU already stored: nothing of the transaction was kept; the upsert sorts it out.
      if (sqlState(e) !== '23505') throw e;
      return this.write(todo, opts, null, false);
    }
  }

  /**
   * Writes products in one transaction (retried on a deadlock), after unlisting `unlist`'s other SKUs
   * in it when given; `copy`: the rows are sent as new ones (see SkuWriteRepository.insertNewSkus).
   */
  private async write(
    todo: Array<{ product: UpstreamProduct; fingerprint: string }>,
    opts: WriteOptions,
    unlist: { productId: number; keep: string[] } | null,
    copy: boolean,
  ): Promise<WriteResult> {
    // Loaded before the transaction: never wait for another connection while holding one.
    const initial = await this.pricing.current();
    const products = todo.map((f) => f.product);
    // The products' own rows (content, images, tags, SEO), their images shown from what is known of
    // their URLs: read before the transaction too.
    const productRows = await this.productMedia.prepare(opts.supplier, products);
    const keys = products.flatMap((p) => p.skus.map((s) => skuKeyOf(p.id, s.sku_code)));
    return this.retryOnDeadlock(() =>
      this.dataSource.transaction(async (em) => {
        let ctx = initial;
        let rounds = this.rounds(opts.supplier, products, ctx);
        // A SKU twice in the input (a product on two pages of one batch: rounds > 1) is upserted twice.
        const byCopy = copy && rounds.length === 1;
        // First the pricing version, then the SKUs (and those the unlisting may touch), then rows: the
        // one order of every catalog write (a reprice takes the version first too), and the upsert's
        // snapshot starts after any other writer of these SKUs committed (see LOCK_SKU_CODES_SQL).
        // insertNewSkus takes them itself, in the statement it sends first. Rows are stamped with the
        // transaction's start on the database's clock (see transactionNow).
        const now = byCopy
          ? await this.repo.transactionNow(em)
          : (await this.repo.lockSkuCodes(em, opts.supplier, keys, { listedOf: unlist?.productId })).now;
        const unlisted = unlist ? await this.repo.unlistProductSkus(em, opts.supplier, unlist.productId, { now, keep: unlist.keep }) : [];
        if (unlist && unlisted.length > 0) await this.products.touch(em, opts.supplier, unlist.productId, now);
        for (let attempt = 0; ; attempt++) {
          if (attempt > 0) rounds = this.rounds(opts.supplier, products, ctx);
          const out = emptyResult();
          const pairs: Array<{ old: SkuRow | null; next: SkuRow }> = [];
          let stale = false;
          for (const round of rounds) {
            const byKey = new Map(round.map((r) => [r.sku_key, r]));
            const write = { supplier: opts.supplier, now, runId: opts.runId, pricingVersion: ctx.version, source: opts.source };
            const outcome = byCopy ? await this.repo.insertNewSkus(em, round, write) : await this.repo.upsertSkus(em, round, write);
            if (outcome.stalePricing !== null) {
              stale = true;
              break;
            }
            out.skus += round.length;
            for (const w of outcome.written) pairs.push({ old: w.old, next: byKey.get(w.skuKey)! });
          }
          if (stale) {
            // A rule changed since these prices were computed (only the first write can see it: the
            // transaction holds the version from its locks on). Reprice with the rules in force and retry.
            if (attempt >= MAX_PRICING_RETRIES) throw new Error('pricing rules kept changing during a catalog write');
            ctx = await this.pricing.reload(em);
            continue;
          }
          if (unlisted.length > 0) {
            // The unlisting is recorded first, as unlistProduct records it, and committed durably as
            // there (the upserts turn synchronous_commit off for their transaction).
            await this.record(
              em,
              unlisted.map((old) => ({ old, next: { ...old, listed: false } })),
              out,
              opts,
              now,
            );
            await this.commitMode.commitDurably(em);
          }
          await this.record(em, pairs, out, opts, now);
          const moved = await this.products.upsert(em, opts.supplier, productRows, now);
          const changedProducts = moved
            .filter((m) => !m.created)
            .map((m) => ({ supplier: opts.supplier, product_id: m.product_id, updated_at: now }));
          if (this.outbox.enabled && changedProducts.length > 0)
            await this.outbox.append(em as EntityManager, this.productMedia.events(changedProducts));
          out.unfingerprinted = await this.repo.writeFingerprints(
            em,
            opts.supplier,
            todo.map((f) => ({
              productId: f.product.id,
              fingerprint: f.fingerprint,
              skuCodes: [...new Set(f.product.skus.map((s) => s.sku_code))],
            })),
            { seenBy: seenBy(opts), now },
          );
          return out;
        }
      }),
    );
  }

  /**
   * Pages may be written two at a time (PostgreSQL). Writers of the same SKUs wait for each other
   * on the SKUs' locks, taken in one order; should two of them still wait for each other in a circle
   * (on rows the SKUs' locks do not cover: fingerprints, seen rows), the server aborts one, which is simply
   * written again.
   */
  private async retryOnDeadlock<T>(fn: () => Promise<T>): Promise<T> {
    for (let attempt = 1; ; attempt++) {
      try {
        return await fn();
      } catch (e) {
        const code = sqlState(e);
        if (attempt >= 3 || (code !== '40P01' && code !== '40001')) throw e;
      }
    }
  }

  /** Unlists the listed SKUs of a product: all of them (the product is gone), or those not in `keep`. */
  async unlistProduct(productId: number, opts: WriteOptions & { keep?: string[] }): Promise<WriteResult> {
    const result = await this.dataSource.transaction(async (em) => {
      // The SKUs' locks as every catalog write (see write): an upsert of one of these SKUs waits, and
      // then sees it unlisted (and records the relisting), rather than relisting it from a stale read.
      const { now } = await this.repo.lockSkuCodes(em, opts.supplier, [], { listedOf: productId });
      const olds = await this.repo.unlistProductSkus(em, opts.supplier, productId, { now, keep: opts.keep });
      // the product's `listed` follows its SKUs'
      if (olds.length > 0) await this.products.touch(em, opts.supplier, productId, now);
      const out = emptyResult();
      await this.record(
        em,
        olds.map((old) => ({ old, next: { ...old, listed: false } })),
        out,
        opts,
        now,
      );
      return out;
    });
    this.report(result);
    return result;
  }

  /**
   * Unlists every listed SKU of a supplier (it was deleted: CONTRACT §10), its products and categories
   * with them, in one transaction recorded as any unlisting (history, shop notifications naming the
   * supplier). Its orders are not touched. Returns what changed.
   */
  async unlistSupplier(supplier: string): Promise<WriteResult> {
    const result = await this.dataSource.transaction(async (em) => {
      const now = await this.repo.lockAllSkus(em);
      const olds = await this.repo.unlistSupplierSkus(em, supplier, now);
      await this.products.unlistSupplier(em, supplier, now);
      const out = emptyResult();
      await this.record(
        em,
        olds.map((old) => ({ old, next: { ...old, listed: false } })),
        out,
        { supplier, runId: null, source: 'supplier' },
        now,
      );
      await this.commitMode.commitDurably(em);
      return out;
    });
    this.report(result);
    return result;
  }

  /**
   * Reprices every SKU with `ctx` inside the caller's transaction (a rule change), batch by batch.
   * Returns what changed.
   */
  async repriceAll(em: EntityManager, ctx: PricingContext, batchSize = 1000): Promise<WriteResult> {
    const now = await this.repo.transactionNow(em);
    const out = emptyResult();
    let after = { supplier: '', skuKey: '' };
    for (;;) {
      const batch = await this.repo.skuBatch(em, after, batchSize);
      if (batch.length === 0) break;
      const last = batch[batch.length - 1];
      after = { supplier: last.supplier, skuKey: last.sku_key };
      const pairs: Array<{ supplier: string; old: SkuRow; next: SkuRow }> = [];
      for (const { supplier, ...old } of batch) {
        const sale = ctx.price(old.cost_price, { supplier, skuKey: old.sku_key, skuCode: old.sku_code, categoryId: old.category_id });
        const next = { ...old, sale_price: sale };
        if (diffSku(old, next).changes.length > 0) pairs.push({ supplier, old, next });
      }
      const written = new Set(
        await this.repo.setSalePrices(
          em,
          pairs.map((p) => ({ supplier: p.supplier, sku_key: p.next.sku_key, sale_price: p.next.sale_price })),
          now,
        ),
      );
      out.skus += batch.length;
      // recorded supplier by supplier (the history and events name theirs)
      for (const supplier of new Set(pairs.map((p) => p.supplier))) {
        await this.record(
          em,
          pairs.filter((p) => p.supplier === supplier && written.has(`${supplier}/${p.next.sku_key}`)),
          out,
          { supplier, runId: null, source: 'pricing' },
          now,
        );
      }
    }
    this.report(out);
    return out;
  }

  /** Rows of the products, split in rounds so that one statement never holds a SKU twice. */
  private rounds(supplier: string, products: UpstreamProduct[], ctx: PricingContext): SkuRow[][] {
    const rounds: SkuRow[][] = [];
    const claims = new Map<string, number>();
    const price: SalePriceFn = (cost, subject) => ctx.price(cost, { ...subject, supplier });
    for (const p of products) {
      const { rows, duplicates } = skuRowsFromProduct(p, price);
      if (duplicates.length) this.logger.warn(`product ${p.id} lists sku_code ${duplicates.join(', ')} more than once; the first is kept`);
      for (const row of rows) {
        const n = claims.get(row.sku_key) ?? 0;
        claims.set(row.sku_key, n + 1);
        (rounds[n] ??= []).push(row);
      }
    }
    return rounds;
  }

  /** History, counts and shop notifications of written rows. */
  private async record(
    em: Pick<EntityManager, 'query'>,
    pairs: Array<{ old: SkuRow | null; next: SkuRow }>,
    out: WriteResult,
    opts: WriteOptions,
    now: Date,
  ): Promise<void> {
    const history: HistoryInput[] = [];
    const events: OutboxEvent[] = [];
    const diffs: Array<{ old: SkuRow | null; next: SkuRow; diff: SkuDiff }> = [];
    for (const { old, next } of pairs) {
      const diff = diffSku(old, next);
      if (!diff.created && diff.changes.length === 0) continue;
      out.written++;
      if (diff.created) out.created++;
      else out.changed++;
      if (diff.relisted) out.relisted++;
      if (diff.delisted) out.delisted++;
      addCounts(out.counts, diff);
      out.diffs.push(diff);
      // A new SKU's creation is recorded on its row by the insert itself (created_run_id, created_source).
      if (!diff.created) for (const change of diff.changes) history.push({ skuKey: diff.skuKey, skuCode: diff.skuCode, change });
      diffs.push({ old, next, diff });
    }
    if (diffs.length === 0) return;
    await this.repo.appendHistory(em, history, { supplier: opts.supplier, runId: opts.runId, source: opts.source, now });
    if (this.outbox.enabled) {
      const currency = diffs.some((d) => d.diff.kinds.includes('price')) ? await this.reads.currency(opts.supplier, em) : null;
      for (const d of diffs) events.push(...eventsForDiff(d.old, d.next, d.diff, currency, opts.supplier));
      await this.outbox.append(em as EntityManager, events);
    }
    // The offers over these SKUs follow their sale price and availability, in this transaction.
    const keys = diffs.map((d) => d.next.sku_key);
    await this.offers.refreshForSkus(em as EntityManager, opts.supplier, keys);
  }

  private report(r: WriteResult): void {
    for (const [kind, n] of Object.entries(r.counts)) if (n > 0) this.metrics.syncChanges.inc({ kind }, n);
  }
}
