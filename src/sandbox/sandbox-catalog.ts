/**
 * The sandbox's catalog: a seeded, deterministic world of two-level categories, products and SKUs,
 * plus the mutators tests use to change it (each change, an admin's edit, bumps the product's
 * `updated_at` and drops its cached JSON). Stock taken or given back by orders (`takeStock`,
 * `returnStock`) changes what is served but not `updated_at`: Dujiao-Next filters `updated_after` on
 * the product row alone and counts an auto product's stock when it is read, so sales never appear in
 * an `updated_after` listing.
 *
 * Listing order: `sortOrder` descending, then id ascending. Generated and added products have
 * sortOrder 0; `insertAtFront()` gives a product a sortOrder above every other, so it sorts first.
 *
 * What is served (`page()`, `productJson()`) leaves a product's inactive SKUs out when
 * `servesInactiveSkus` is false (profile `dujiao-next`: Dujiao-Next's product JSON skips them). The
 * helpers that hand wire shapes to tests (`getProduct`, `listedProducts`, `getSku`, `findSku`,
 * `addProduct`…) always show every SKU, inactive ones with `is_active` false, as the record holds it.
 *
 * The records, the seed and the categories are in sandbox-catalog-seed.ts; the store (indexes, listing
 * order, stamps, wire JSON) in sandbox-catalog-store.ts.
 */
import { parseMoney, percentOf } from './sandbox-money.js';
import { DURATIONS, MANUAL_FORM_SCHEMA, stockStatusFor, type ProductRecord, type SkuRecord } from './sandbox-catalog-seed.js';
import { CatalogStore, type FoundSku } from './sandbox-catalog-store.js';
import {
  SANDBOX_STOCK_STATUSES,
  type MultiLanguageText,
  type SandboxFulfillmentType,
  type SandboxProduct,
  type SandboxStockStatus,
} from './sandbox.types.js';

export { LOW_STOCK_THRESHOLD, stockStatusFor, type ProductRecord, type SkuRecord } from './sandbox-catalog-seed.js';
export type { FoundSku } from './sandbox-catalog-store.js';

export interface AddSkuInput {
  skuCode?: string;
  price?: string;
  originalPrice?: string;
  memberPrice?: string;
  stockStatus?: SandboxStockStatus;
  stockQuantity?: number;
  isActive?: boolean;
  specValues?: Record<string, string>;
}

export interface AddProductInput {
  title?: MultiLanguageText;
  description?: MultiLanguageText;
  categoryId?: number;
  fulfillmentType?: SandboxFulfillmentType;
  manualFormSchema?: Record<string, unknown> | null;
  /** Default: one SKU, price '10.00', unlimited, active. */
  skus?: AddSkuInput[];
  /** Default true. */
  listed?: boolean;
  /** Default: none. */
  images?: string[];
  content?: MultiLanguageText | null;
  tags?: string[];
  seoMeta?: Record<string, unknown> | null;
}

/** A product's storefront fields (see SandboxCatalog.setProductMedia). */
export interface ProductMediaInput {
  images?: string[];
  content?: MultiLanguageText | null;
  tags?: string[];
  seoMeta?: Record<string, unknown> | null;
}

export interface FindSkuFilter {
  fulfillmentType?: SandboxFulfillmentType;
  stockStatus?: SandboxStockStatus;
  /** Default true. */
  active?: boolean;
  /** Default true: the product is listed. */
  listed?: boolean;
  /** Skip this many matches. */
  skip?: number;
}

export class SandboxCatalog extends CatalogStore {
  /** Throws away every change and generates the seeded catalog again. */
  regenerate(): void {
    this.generate();
  }

  // ------------------------------------------------------------------------------------ reading

  get productCount(): number {
    return this.productsById.size;
  }

  get listedCount(): number {
    return this.listing().length;
  }

  get skuCount(): number {
    return this.skusById.size;
  }

  /** The wire shape of a product (a fresh copy, every SKU: see the header), listed or not. */
  getProduct(id: number): SandboxProduct | undefined {
    const p = this.productsById.get(id);
    return p ? this.fullWire(p) : undefined;
  }

  /** The first SKU carrying this code (see duplicateSkuCode) with its product. */
  getSku(skuCode: string): FoundSku | undefined {
    const s = this.skusByCode.get(skuCode)?.[0];
    return s ? this.found(s) : undefined;
  }

  /** The SKU with this code in product `productId` (a code is unique only within its product, as Dujiao-Next's). */
  getSkuOf(productId: number, skuCode: string): FoundSku | undefined {
    const s = this.productsById.get(productId)?.skus.find((x) => x.skuCode === skuCode);
    return s ? this.found(s) : undefined;
  }

  getSkuById(skuId: number): FoundSku | undefined {
    const s = this.skusById.get(skuId);
    return s ? this.found(s) : undefined;
  }

  /** Every listed product in listing order (wire shapes, every SKU: see the header). */
  listedProducts(): SandboxProduct[] {
    return this.listing().map((p) => this.fullWire(p));
  }

  /** The first SKU (in listing order) matching the filter. */
  findSku(filter: FindSkuFilter = {}): FoundSku | undefined {
    const active = filter.active ?? true;
    const listed = filter.listed ?? true;
    let skip = filter.skip ?? 0;
    const products = listed ? this.listing() : [...this.productsById.values()].filter((p) => !p.listed);
    for (const p of products) {
      if (filter.fulfillmentType && p.fulfillmentType !== filter.fulfillmentType) continue;
      for (const s of p.skus) {
        if (s.isActive !== active) continue;
        if (filter.stockStatus && s.stockStatus !== filter.stockStatus) continue;
        if (skip-- > 0) continue;
        return this.found(s);
      }
    }
    return undefined;
  }

  /**
   * One page of the listing (with `includeInactive`, of every product, delisted ones with `is_active`
   * false, in the same order), as cached product JSON strings, with the id of its first product.
   * `updated_after` keeps the products updated strictly after it, or, `inclusive` (an upstream with
   * whole-second timestamps that filters with `>=`), those updated in its second or later.
   */
  page(
    page: number,
    pageSize: number,
    updatedAfterMs?: number,
    inclusive = false,
    includeInactive = false,
  ): { items: string[]; total: number; firstId: number | null } {
    let list = includeInactive ? this.everyProduct() : this.listing();
    if (updatedAfterMs !== undefined) {
      const second = (ms: number) => Math.floor(ms / 1000);
      list = inclusive
        ? list.filter((p) => second(p.updatedAt) >= second(updatedAfterMs))
        : list.filter((p) => p.updatedAt > updatedAfterMs);
    }
    const start = (page - 1) * pageSize;
    const items = start < list.length ? list.slice(start, start + pageSize).map((p) => this.productJson(p)) : [];
    return { items, total: list.length, firstId: start < list.length ? list[start].id : null };
  }

  // ---------------------------------------------------------------------------------- mutators

  /** Sets the SKU's price (decimal string); an original price at or below it is dropped. */
  setPrice(skuCode: string, price: string): void {
    const s = this.sku(skuCode);
    s.priceCents = parseMoney(price);
    if (s.originalCents !== null && s.originalCents <= s.priceCents) s.originalCents = null;
    if (s.memberCents !== null && s.memberCents >= s.priceCents) s.memberCents = null;
    this.touch(s.productId);
  }

  /**
   * Sets stock. `unlimited` forces quantity -1, `out_of_stock` 0; `in_stock`/`low_stock` take the
   * given quantity (defaults 100 / 5).
   */
  setStock(skuCode: string, status: SandboxStockStatus, quantity?: number, opts: { keepUpdatedAt?: boolean } = {}): void {
    if (!SANDBOX_STOCK_STATUSES.includes(status)) throw new RangeError(`unknown stock status ${status}`);
    const s = this.sku(skuCode);
    const stockQuantity = status === 'unlimited' ? -1 : status === 'out_of_stock' ? 0 : (quantity ?? (status === 'in_stock' ? 100 : 5));
    if (!Number.isInteger(stockQuantity)) throw new RangeError('stock quantity must be an integer');
    s.stockStatus = status;
    s.stockQuantity = stockQuantity;
    // Cards added to an auto product (Dujiao-Next counts them when the product is read) leave its
    // `updated_at` as it was: `keepUpdatedAt` changes only what is served, as takeStock does.
    if (opts.keepUpdatedAt) this.product(s.productId).json = null;
    else this.touch(s.productId);
  }

  /**
   * Serves the product with `title: null` (`on`), or with its title again: an admin's edit (a new
   * `updated_at`) that leaves a product in a shape the API should never give.
   */
  /** Changes a product's images, content, tags or SEO data (as an admin's edit: its updated_at moves). */
  setProductMedia(productId: number, input: ProductMediaInput): void {
    const p = this.product(productId);
    if (input.images !== undefined) p.images = input.images;
    if (input.content !== undefined) p.content = input.content;
    if (input.tags !== undefined) p.tags = input.tags;
    if (input.seoMeta !== undefined) p.seoMeta = input.seoMeta;
    this.touch(productId);
  }

  setTitleNull(productId: number, on: boolean): void {
    this.product(productId).titleNull = on;
    this.touch(productId);
  }

  setSkuActive(skuCode: string, active: boolean): void {
    const s = this.sku(skuCode);
    s.isActive = active;
    this.touch(s.productId);
  }

  /** Gives the SKU a new numeric id (the old one becomes unknown: sku_unavailable). Returns it. */
  changeSkuId(skuCode: string): number {
    const s = this.sku(skuCode);
    this.skusById.delete(s.id);
    s.id = this.nextSkuId++;
    this.skusById.set(s.id, s);
    this.touch(s.productId);
    return s.id;
  }

  /**
   * Removes one SKU from its product (which keeps its other SKUs and stays listed): the code and the
   * id become unknown. A product's last SKU cannot be removed (delist the product instead).
   */
  removeSku(skuCode: string): void {
    const s = this.sku(skuCode);
    const p = this.product(s.productId);
    if (p.skus.length < 2) throw new RangeError(`product ${p.id} has no other SKU: delist it instead`);
    p.skus = p.skus.filter((x) => x !== s);
    this.skusById.delete(s.id);
    const rest = (this.skusByCode.get(s.skuCode) ?? []).filter((x) => x !== s);
    if (rest.length) this.skusByCode.set(s.skuCode, rest);
    else this.skusByCode.delete(s.skuCode);
    this.touch(p.id);
  }

  delistProduct(productId: number): void {
    const p = this.product(productId);
    p.listed = false;
    this.dropListings();
    this.touch(productId);
  }

  /**
   * Deletes the product (as an admin's soft delete: it is gone from every listing and its detail is
   * 404 product_not_found); its SKU ids and codes become unknown. Orders keep what they recorded.
   */
  deleteProduct(productId: number): void {
    const p = this.product(productId);
    this.productsById.delete(p.id);
    for (const sku of p.skus) {
      this.skusById.delete(sku.id);
      const rest = (this.skusByCode.get(sku.skuCode) ?? []).filter((x) => x !== sku);
      if (rest.length) this.skusByCode.set(sku.skuCode, rest);
      else this.skusByCode.delete(sku.skuCode);
    }
    this.dropListings();
  }

  relistProduct(productId: number): void {
    const p = this.product(productId);
    p.listed = true;
    this.dropListings();
    this.touch(productId);
  }

  /** Adds a product at the end of the listing. Returns its wire shape. */
  addProduct(input: AddProductInput = {}): SandboxProduct {
    const id = this.nextProductId++;
    const now = this.stamp();
    const fulfillmentType = input.fulfillmentType ?? 'auto';
    const p: ProductRecord = {
      id,
      slug: `product-${id}`,
      title: input.title ?? { 'zh-CN': `新增商品 ${id}`, en: `Added product ${id}` },
      description: input.description ?? { 'zh-CN': `商品 ${id} 的说明`, en: `Description of product ${id}` },
      content: input.content ?? null,
      seoMeta: input.seoMeta ?? null,
      images: input.images ?? [],
      tags: input.tags ?? [],
      fulfillmentType,
      manualFormSchema:
        input.manualFormSchema !== undefined ? input.manualFormSchema : fulfillmentType === 'manual' ? MANUAL_FORM_SCHEMA : null,
      categoryId: input.categoryId ?? this.leafCategoryIds()[0],
      skus: [],
      createdAt: now,
      updatedAt: now,
      listed: input.listed ?? true,
      sortOrder: 0,
      json: null,
    };
    const skus = input.skus && input.skus.length > 0 ? input.skus : [{}];
    skus.forEach((si, k) => {
      const status = si.stockStatus ?? (si.stockQuantity !== undefined ? stockStatusFor(si.stockQuantity) : 'unlimited');
      const quantity =
        status === 'unlimited' ? -1 : status === 'out_of_stock' ? 0 : (si.stockQuantity ?? (status === 'in_stock' ? 100 : 5));
      this.addSku(p, {
        id: this.nextSkuId++,
        skuCode: si.skuCode ?? `SKU-${String(id).padStart(5, '0')}-${k + 1}`,
        productId: id,
        specValues: si.specValues ?? { duration: DURATIONS[k % DURATIONS.length][1] },
        priceCents: parseMoney(si.price ?? '10.00'),
        originalCents: si.originalPrice !== undefined ? parseMoney(si.originalPrice) : null,
        memberCents: si.memberPrice !== undefined ? parseMoney(si.memberPrice) : null,
        stockStatus: status,
        stockQuantity: quantity,
        isActive: si.isActive ?? true,
      });
    });
    this.productsById.set(id, p);
    this.dropListings();
    return this.fullWire(p);
  }

  /** Adds a product that sorts first in the listing. Returns its wire shape. */
  insertAtFront(input: AddProductInput = {}): SandboxProduct {
    const added = this.addProduct(input);
    const p = this.product(added.id);
    p.sortOrder = ++this.frontSortOrder;
    this.dropListings();
    return added;
  }

  /**
   * Another product (the next listed one after the SKU's own) gets a new SKU with the same sku_code.
   * Returns that product's id and the new SKU's id.
   */
  duplicateSkuCode(fromSkuCode: string): { productId: number; skuId: number } {
    const from = this.sku(fromSkuCode);
    const listing = this.listing();
    const at = listing.findIndex((p) => p.id === from.productId);
    let target = listing[(at + 1) % Math.max(1, listing.length)];
    if (!target || target.id === from.productId) target = this.product(this.addProduct().id);
    const copy: SkuRecord = { ...from, id: this.nextSkuId++, productId: target.id, specValues: { ...from.specValues } };
    this.addSku(target, copy);
    this.touch(target.id);
    return { productId: target.id, skuId: copy.id };
  }

  /**
   * `n` listed products, spread over the listing, get a new price on their first SKU (+1 %, at least
   * one cent) and a new updated_at. Returns their ids.
   */
  touchProducts(n: number): number[] {
    const listing = this.listing();
    if (listing.length === 0 || n <= 0) return [];
    const count = Math.min(n, listing.length);
    const stride = Math.max(1, Math.floor(listing.length / count));
    const ids: number[] = [];
    const seen = new Set<number>();
    let i = this.touchCursor++ % listing.length;
    while (ids.length < count) {
      const p = listing[i % listing.length];
      if (!seen.has(p.id)) {
        seen.add(p.id);
        const s = p.skus[0];
        const bump = percentOf(s.priceCents, 1);
        s.priceCents += bump > 0n ? bump : 1n;
        if (s.originalCents !== null && s.originalCents <= s.priceCents) s.originalCents = null;
        this.touch(p.id);
        ids.push(p.id);
        i += stride;
      } else {
        i += 1;
      }
    }
    return ids;
  }

  // ------------------------------------------------------------------------------ order side

  /**
   * Takes stock for an order. The caller has checked that there is enough. The product's `updated_at`
   * stays (see the header): only what is served changes.
   */
  takeStock(s: SkuRecord, quantity: number): void {
    if (s.stockQuantity < 0) return;
    s.stockQuantity = Math.max(0, s.stockQuantity - quantity);
    s.stockStatus = stockStatusFor(s.stockQuantity);
    this.product(s.productId).json = null;
  }

  /** Gives stock back (cancel). Nothing for unlimited stock. `updated_at` stays, as in takeStock. */
  returnStock(skuId: number, quantity: number): void {
    const s = this.skusById.get(skuId);
    if (!s || s.stockQuantity < 0) return;
    s.stockQuantity += quantity;
    s.stockStatus = stockStatusFor(s.stockQuantity);
    this.product(s.productId).json = null;
  }
}
