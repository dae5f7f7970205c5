/**
 * The local catalog for its readers: the internal API, and the orders engine, which relies on two
 * stable calls:
 *
 * - `getSku(ref)`: the local SKU a reference names (a sku_key, or a plain sku_code: see sku-key.ts), or
 *   null, with its upstream ids, listing state, stock, prices, fulfillment and currency;
 *   `skuForOrder(ref, found)` the same for the SKUs an order read itself (OrderReads.findSkuForOrder
 *   reads them in the statement that also tells whether the order number is recorded: placing an
 *   order costs one read), with the refusal of a reference that names several SKUs;
 * - `refreshProduct(productId)`: reads `GET /products/{id}` fresh and applies it through the same
 *   diff-based write path as a sync (its SKUs' sku_id, prices and stock move locally; SKUs it no longer
 *   has are unlisted); on a definitive 404 (`product_not_found`, `product_unavailable`) unlists the
 *   product's SKUs and returns null; any other upstream error is rethrown untouched. Its read is the
 *   price guard's (budget class `price`): a successful read of the product within ORDER_PRICE_FRESH_S
 *   serves again without a request, and concurrent reads of one product share one request;
 * - `confirmCost` / `confirmedCost`: a create answered with a charge of exactly quantity × the checked
 *   cost confirms that SKU's cost for ORDER_PRICE_FRESH_S (price-freshness.ts); a charge above it
 *   forgets the product's read, a lower one (a member price) changes nothing.
 *
 * Each takes the supplier it is about (CONTRACT §10; absent: the `UPSTREAM_*` supplier for the product
 * reads, every supplier for a SKU reference): a product is read with that supplier's own upstream
 * client, and reads and confirmations are kept per (supplier, product).
 */
import { performance } from 'node:perf_hooks';
import { Injectable } from '@nestjs/common';
import { AppError } from '../common/app-error.js';
import { Clock } from '../common/clock.js';
import { AppConfig } from '../config/app-config.js';
import { MediaRepository } from '../media/media.repository.js';
import { mediaSettings } from '../media/media-settings.js';
import { iconUrl, shownIcon } from '../media/product-media.js';
import { SupplierRegistry } from '../suppliers/supplier-registry.service.js';
import type { UpstreamProduct } from '../upstream/upstream.types.js';
import {
  CatalogReadRepository,
  resolveFound,
  SKU_REF_ROWS,
  type FoundResolution,
  type FoundSku,
  type SkuListFilter,
} from './catalog-read.repository.js';
import type { StoredCategory, StoredChange, StoredConflict, StoredSku } from './catalog.records.js';
import { CategoryRepository } from './category.repository.js';
import { CatalogWriter } from './catalog-writer.service.js';
import { chargeVerdict, confirmationServes, isFresh, type CostConfirmation } from './price-freshness.js';
import { isProductGone } from './product-gone.js';
import type { MultiLanguageText } from './sku-diff.js';
import { candidateText, parseSkuKey } from './sku-key.js';

/** A local SKU, for the orders engine. Money as decimal strings. */
export interface CatalogSku {
  /** The supplier whose SKU it is. */
  supplier: string;
  /** `<product_id>:<sku_code>`: the SKU within its supplier (see sku-key.ts). */
  skuKey: string;
  skuCode: string;
  /** The `sku_id` to order with. */
  upstreamSkuId: number;
  productId: number;
  productTitle: MultiLanguageText;
  categoryId: number;
  specValues: Record<string, unknown>;
  /** In the upstream's listing (false once delisted). */
  listed: boolean;
  /** The SKU and its product are enabled upstream. */
  active: boolean;
  /** listed, active and not out of stock. */
  available: boolean;
  stockStatus: string;
  /** -1: unlimited. */
  stockQuantity: number;
  /** What the upstream charges us (`price_amount`). */
  costPrice: string;
  /** The pricing rules applied to the cost. */
  salePrice: string;
  originalPrice: string | null;
  memberPrice: string | null;
  /** From the upstream's ping; null before the first successful one. */
  currency: string | null;
  fulfillmentType: string;
  manualFormSchema: Record<string, unknown> | null;
  updatedAt: Date;
  /** The fingerprint of the product as last written locally (null when unknown). */
  productFingerprint: string | null;
}

export interface CategoryNode {
  /** The stored category, its icon as the shop is shown it (see `shownIcon`). */
  category: Omit<StoredCategory, 'icon'> & { icon: string | null };
  children: CategoryNode[];
}

export function toCatalogSku(s: StoredSku, currency: string | null, productFingerprint: string | null): CatalogSku {
  return {
    supplier: s.supplier,
    skuKey: s.sku_key,
    skuCode: s.sku_code,
    upstreamSkuId: s.upstream_sku_id,
    productId: s.product_id,
    productTitle: s.product_title,
    categoryId: s.category_id,
    specValues: s.spec_values,
    listed: s.listed,
    active: s.sku_active && s.product_active,
    available: s.available,
    stockStatus: s.stock_status,
    stockQuantity: s.stock_quantity,
    costPrice: s.cost_price,
    salePrice: s.sale_price,
    originalPrice: s.original_price,
    memberPrice: s.member_price,
    currency,
    fulfillmentType: s.fulfillment_type,
    manualFormSchema: s.manual_form_schema,
    updatedAt: s.updated_at,
    productFingerprint,
  };
}

/** The refusal of a reference that names no SKU (404 `sku_not_found`) or several (409 `sku_ambiguous`, with the candidates' keys). */
export function skuRefError(ref: string, r: Exclude<FoundResolution, { kind: 'found' }>): AppError {
  if (r.kind === 'not_found') return new AppError('sku_not_found', `no SKU ${ref}`);
  return new AppError(
    'sku_ambiguous',
    `sku_code ${ref} is carried by ` +
      `${r.candidates.length === SKU_REF_ROWS ? `${SKU_REF_ROWS} or more` : r.candidates.length} ` +
      `${r.listed ? 'listed' : 'unlisted'} SKUs (products): name one by its sku_key` +
      (r.candidates.some((c) => typeof c !== 'string') ? ' and its supplier (?supplier=)' : ''),
    { candidates: r.candidates },
  );
}

/** The SKU an order names (`CatalogService.skuForOrder`). */
export interface SkuForOrder {
  /** The SKU (null: none, or `refused`). */
  sku: CatalogSku | null;
  /**
   * Set when the reference names several SKUs: 409 `sku_ambiguous` (several listed), or 409
   * `sku_unavailable` when every SKU carrying the code is unlisted (none could be ordered, whichever
   * it is). Checked only for a new attempt: a recorded order is answered as recorded.
   */
  refused: AppError | null;
}

/** A product's fresh read (`CatalogService.readProduct`), settled: its answer or its error, and when (performance.now()). */
export type ProductAnswer = ({ product: UpstreamProduct } | { error: unknown }) & { settledAt: number };

/** How a product read for an order waits for the request budget. */
export interface ProductReadOptions {
  /** The supplier whose product it is (default: the `UPSTREAM_*` supplier). */
  supplier?: string;
  signal?: AbortSignal;
  /** The longest wait for the budget; past it the read rejects with BudgetWaitExceeded. */
  maxWaitMs?: number;
}

/** The product an order's SKU reference named (`CatalogService.productHint`). */
export interface ProductHint {
  supplier: string;
  productId: number;
  skuCode: string;
}

/** A create sent for a SKU the price guard checked (`CatalogService.confirmCost`). */
export interface CheckedCreate {
  /** The supplier it was sent to (default: the `UPSTREAM_*` supplier). */
  supplier?: string;
  productId: number;
  skuCode: string;
  /** The sku_id the create was sent with. */
  skuId: number;
  /** The unit cost the price guard checked. */
  unitCost: string;
  quantity: number;
  currency: string | null;
}

/** At most this many SKUs' product hints (and products' last reads and confirmations) are kept (then they start over). */
const PRODUCT_HINTS = 50_000;

@Injectable()
export class CatalogService {
  /** SKU reference (as orders name it) → its product and SKU code, for `productHint`. */
  private readonly productOfSku = new Map<string, ProductHint>();

  /**
   * The last successful read of each product with when it settled (the clock's ms; kept
   * ORDER_PRICE_FRESH_S), and the reads in flight.
   */
  private readonly freshReads = new Map<string, { answer: ProductAnswer; readAt: number }>();
  private readonly readsInFlight = new Map<string, Promise<ProductAnswer>>();
  /** Product (productKey) → SKU code → the last create that confirmed that SKU's cost (kept ORDER_PRICE_FRESH_S). */
  private readonly confirmedCosts = new Map<string, Map<string, CostConfirmation>>();

  constructor(
    private readonly config: AppConfig,
    private readonly clock: Clock,
    private readonly repo: CatalogReadRepository,
    private readonly categoryRepo: CategoryRepository,
    private readonly writer: CatalogWriter,
    private readonly suppliers: SupplierRegistry,
    private readonly media: MediaRepository,
  ) {}

  /** The key of a supplier's product in this process's maps (reads, confirmations). */
  private productKey(supplier: string | undefined, productId: number): string {
    return `${supplier ?? this.suppliers.envName}/${productId}`;
  }

  // ---------------------------------------------------------------------- for the orders engine

  /**
   * The local SKU a reference (a sku_key or a sku_code) names at `supplier` (absent: at any supplier),
   * or null when it names none or several.
   */
  async getSku(ref: string, supplier?: string): Promise<CatalogSku | null> {
    const r = resolveFound(ref, await this.repo.findSkusWithCurrency(ref, supplier));
    return r.kind === 'found' ? toCatalogSku(r.found.sku, r.found.currency, r.found.productFingerprint) : null;
  }

  /**
   * `getSku` for placing an order, from the SKUs the order read itself (OrderReads.findSkuForOrder:
   * with whether its `shopOrderNo` is recorded, in one statement), with the refusal of a reference
   * that names several; remembers an available SKU's product for `productHint`.
   */
  skuForOrder(ref: string, found: readonly FoundSku[], supplier?: string): SkuForOrder {
    const r = resolveFound(ref, supplier === undefined ? found : found.filter((f) => f.sku.supplier === supplier));
    const sku = r.kind === 'found' ? toCatalogSku(r.found.sku, r.found.currency, r.found.productFingerprint) : null;
    const hintKey = `${supplier ?? ''}|${ref}`;
    if (sku?.available) {
      if (this.productOfSku.size >= PRODUCT_HINTS && !this.productOfSku.has(hintKey)) this.productOfSku.clear();
      this.productOfSku.set(hintKey, { supplier: sku.supplier, productId: sku.productId, skuCode: sku.skuCode });
    } else {
      this.productOfSku.delete(hintKey);
    }
    let refused: AppError | null = null;
    if (r.kind === 'ambiguous') {
      refused = r.listed
        ? skuRefError(ref, r)
        : new AppError(
            'sku_unavailable',
            `SKU ${ref} is not available: every SKU carrying it is unlisted (${r.candidates.map(candidateText).join(', ')})`,
          );
    }
    return { sku, refused };
  }

  /**
   * The product an available SKU belonged to when an order last read it in this process (a hint: the
   * caller checks it against what it then reads). Lets an order start its product's fresh read while it
   * reads the SKU locally. A SKU read unavailable or missing has none, so that requests for it make no
   * upstream call.
   */
  productHint(ref: string, supplier?: string): ProductHint | undefined {
    return this.productOfSku.get(`${supplier ?? ''}|${ref}`);
  }

  private get freshMs(): number {
    return this.config.budget.orderPriceFreshS * 1000;
  }

  /** `GET /products/{id}`, settled either way (the caller may never look at it), with when it settled (performance.now()). */
  readProduct(productId: number, opts: ProductReadOptions = {}): Promise<ProductAnswer> {
    const freshMs = this.freshMs;
    const key = this.productKey(opts.supplier, productId);
    if (freshMs > 0) {
      const last = this.freshReads.get(key);
      if (last && isFresh(last.readAt, this.clock.nowMs(), freshMs)) return Promise.resolve(last.answer);
      const running = this.readsInFlight.get(key);
      if (running) return running;
    }
    let upstream;
    try {
      upstream = this.suppliers.get(opts.supplier ?? this.suppliers.envName).client;
    } catch (error) {
      return Promise.resolve({ error, settledAt: performance.now() });
    }
    const read = upstream.getProduct(productId, opts.signal, { priority: 'price', maxWaitMs: opts.maxWaitMs }).then(
      (product): ProductAnswer => {
        const answer = { product, settledAt: performance.now() };
        if (freshMs > 0) {
          if (this.freshReads.size >= PRODUCT_HINTS) this.freshReads.clear();
          this.freshReads.set(key, { answer, readAt: this.clock.nowMs() });
          // the read is newer than any create's confirmation and serves every SKU of the product
          this.confirmedCosts.delete(key);
        }
        return answer;
      },
      (error: unknown): ProductAnswer => ({ error, settledAt: performance.now() }),
    );
    if (freshMs > 0) {
      this.readsInFlight.set(key, read);
      void read.then(() => this.readsInFlight.delete(key));
    }
    return read;
  }

  /**
   * Forgets the product's last read and its SKUs' confirmations (the upstream refused an order for it,
   * or charged another price than the one checked: the next order reads it again).
   */
  forgetRead(productId: number, supplier?: string): void {
    const key = this.productKey(supplier, productId);
    this.freshReads.delete(key);
    this.confirmedCosts.delete(key);
  }

  /**
   * A create for a checked SKU was answered with `charged` (the answer arrived at `answeredAt`, the
   * clock's ms, the moment a read's freshness also starts from): a charge of exactly quantity × the
   * checked cost confirms the SKU's cost at `answeredAt` (true); a lower one (a member price, a tier)
   * changes nothing; any other forgets the product's read and confirmations (see price-freshness.ts
   * `chargeVerdict`). Nothing is kept with ORDER_PRICE_FRESH_S at 0.
   */
  confirmCost(c: CheckedCreate, charged: { amount?: string | null; currency?: string | null }, answeredAt: number): boolean {
    const verdict = chargeVerdict(charged, c);
    if (verdict !== 'confirms') {
      if (verdict === 'differs') this.forgetRead(c.productId, c.supplier);
      return false;
    }
    if (this.freshMs <= 0) return true;
    const key = this.productKey(c.supplier, c.productId);
    let skus = this.confirmedCosts.get(key);
    if (!skus) {
      if (this.confirmedCosts.size >= PRODUCT_HINTS) this.confirmedCosts.clear();
      skus = new Map();
      this.confirmedCosts.set(key, skus);
    }
    const last = skus.get(c.skuCode);
    if (!last || last.at <= answeredAt) skus.set(c.skuCode, { skuId: c.skuId, unitCost: c.unitCost, at: answeredAt });
    return true;
  }

  /** Whether a create confirmed the SKU's cost within ORDER_PRICE_FRESH_S (whatever the local catalog now says). */
  costConfirmedLately(productId: number, skuCode: string, supplier?: string): boolean {
    const c = this.confirmedCosts.get(this.productKey(supplier, productId))?.get(skuCode);
    return c !== undefined && isFresh(c.at, this.clock.nowMs(), this.freshMs);
  }

  /**
   * The confirmation that lets the price guard skip the product's read for this local SKU: a create
   * for it confirmed, within ORDER_PRICE_FRESH_S, the sku_id and the cost the local catalog holds.
   */
  confirmedCost(
    sku: Pick<CatalogSku, 'productId' | 'skuCode' | 'upstreamSkuId' | 'costPrice'> & { supplier?: string },
  ): CostConfirmation | null {
    const c = this.confirmedCosts.get(this.productKey(sku.supplier, sku.productId))?.get(sku.skuCode);
    return confirmationServes(c, sku, this.clock.nowMs(), this.freshMs) ? c : null;
  }

  /**
   * Reads the product fresh (or takes `answer`, a read of `productId` already made) and applies it
   * locally. Returns the fresh product, or null when the upstream says it is gone (its SKUs are then
   * unlisted). Other upstream errors are rethrown.
   */
  async refreshProduct(
    productId: number,
    knownFingerprint: string | null = null,
    read?: ProductAnswer,
    opts: ProductReadOptions = {},
  ): Promise<UpstreamProduct | null> {
    const answer = read ?? (await this.readProduct(productId, opts));
    const supplier = opts.supplier ?? this.suppliers.envName;
    if ('error' in answer) {
      if (isProductGone(answer.error)) {
        await this.writer.unlistProduct(productId, { supplier, runId: null, source: 'refresh' });
        return null;
      }
      throw answer.error;
    }
    const { product } = answer;
    // Its SKUs no longer in it are unlisted and the others written, in one transaction; nothing at all
    // when its fingerprint did not move (compared with `knownFingerprint`, read with the SKU just
    // before, without another query).
    await this.writer.applyFreshProduct(product, { supplier, runId: null, source: 'refresh' }, knownFingerprint);
    return product;
  }

  // ------------------------------------------------------------------------ for the internal API

  /** The SKU a reference names: 404 `sku_not_found` for none, 409 `sku_ambiguous` for several (see sku-key.ts). */
  async findSku(ref: string, supplier?: string): Promise<{ sku: StoredSku; currency: string | null }> {
    const r = resolveFound(ref, await this.repo.findSkusWithCurrency(ref, supplier));
    if (r.kind !== 'found') throw skuRefError(ref, r);
    return { sku: r.found.sku, currency: r.found.currency };
  }

  /** A page of SKUs, with each of their suppliers' currency. */
  async listSkus(filter: SkuListFilter): Promise<{ items: StoredSku[]; total: number; currencies: Map<string, string | null> }> {
    const { items, total } = await this.repo.listSkus(filter);
    const currencies = new Map<string, string | null>();
    for (const supplier of new Set(items.map((s) => s.supplier))) currencies.set(supplier, await this.repo.currency(supplier));
    return { items, total, currencies };
  }

  /**
   * Unlists every SKU of a supplier (it was deleted: CONTRACT §10), its products and categories with
   * them; its orders keep their history. Returns the SKUs unlisted.
   */
  async unlistSupplier(supplier: string): Promise<number> {
    for (const key of [...this.freshReads.keys(), ...this.confirmedCosts.keys()]) {
      if (key.startsWith(`${supplier}/`)) {
        this.freshReads.delete(key);
        this.confirmedCosts.delete(key);
      }
    }
    for (const [key, hint] of this.productOfSku) if (hint.supplier === supplier) this.productOfSku.delete(key);
    const r = await this.writer.unlistSupplier(supplier);
    return r.delisted;
  }

  /**
   * The history of the SKU a reference names (as findSku resolves it). A key with no SKU row but a
   * history (recorded while its code belonged to that product, before SKUs were keyed by product)
   * lists that history.
   */
  async skuChanges(ref: string, offset: number, limit: number, supplier?: string): Promise<{ items: StoredChange[]; total: number }> {
    const r = resolveFound(ref, await this.repo.findSkusWithCurrency(ref, supplier));
    if (r.kind === 'found') return this.repo.skuChanges(r.found.sku.supplier, r.found.sku.sku_key, offset, limit);
    const byKey =
      r.kind === 'not_found' && parseSkuKey(ref)
        ? await this.repo.skuChanges(supplier ?? this.suppliers.envName, ref, offset, limit)
        : null;
    if (byKey && byKey.total > 0) return byKey;
    throw skuRefError(ref, r);
  }

  conflicts(offset: number, limit: number): Promise<{ items: StoredConflict[]; total: number }> {
    return this.repo.conflicts(offset, limit);
  }

  /**
   * The category tree, each level by sort_order descending (a child whose parent is unknown is a root).
   * Icons are shown as the shop may see them: the relay's copy once mirrored, else null (shownIcon).
   */
  async categoryTree(supplier?: string): Promise<CategoryNode[]> {
    const stored = await this.categoryRepo.categories(supplier);
    // each supplier's icons resolved against its own origin
    const settings = new Map(
      [...new Set(stored.map((c) => c.supplier))].map((name) => [
        name,
        mediaSettings(this.config, this.suppliers.find(name)?.config.baseUrl ?? this.config.upstream.baseUrl),
      ]),
    );
    const urls = stored.flatMap((c) => {
      const s = settings.get(c.supplier)!;
      const url = s.mirror ? iconUrl(c.icon, s.origin) : null;
      return url === null ? [] : [url];
    });
    const known = await this.media.sources(urls, this.clock.now());
    const all = stored.map((c) => ({ ...c, icon: shownIcon(c.icon, (u) => known.get(u), settings.get(c.supplier)!) }));
    const id = (supplier: string, category: number) => `${supplier}/${category}`;
    const nodes = new Map<string, CategoryNode>(all.map((c) => [id(c.supplier, c.id), { category: c, children: [] }]));
    const roots: CategoryNode[] = [];
    for (const c of all) {
      const node = nodes.get(id(c.supplier, c.id))!;
      const parent = c.parent_id !== 0 && c.parent_id !== c.id ? nodes.get(id(c.supplier, c.parent_id)) : undefined;
      (parent ? parent.children : roots).push(node);
    }
    return roots;
  }
}
