/**
 * The sandbox catalog's store: the products and SKUs by id and by sku_code, the listing order
 * (`sortOrder` descending, then id ascending, listed products only), the strictly increasing
 * `updated_at` stamps of admin edits, and the wire shapes (the served JSON cached per product).
 * SandboxCatalog (sandbox-catalog.ts) reads and changes the world through it.
 */
import { formatMoney } from './sandbox-money.js';
import { buildCategories, seedProducts, type ProductRecord, type SkuRecord } from './sandbox-catalog-seed.js';
import type { SandboxCategory, SandboxProduct, SandboxSku } from './sandbox.types.js';

export interface FoundSku {
  product: SandboxProduct;
  sku: SandboxSku;
}

function skuToWire(s: SkuRecord): SandboxSku {
  const wire: SandboxSku = {
    id: s.id,
    sku_code: s.skuCode,
    spec_values: s.specValues,
    price_amount: formatMoney(s.priceCents),
    stock_status: s.stockStatus,
    stock_quantity: s.stockQuantity,
    is_active: s.isActive,
  };
  if (s.originalCents !== null) wire.original_price = formatMoney(s.originalCents);
  if (s.memberCents !== null) wire.member_price = formatMoney(s.memberCents);
  return wire;
}

export class CatalogStore {
  protected readonly categoryDefs = buildCategories();
  protected productsById = new Map<number, ProductRecord>();
  protected skusById = new Map<number, SkuRecord>();
  protected skusByCode = new Map<string, SkuRecord[]>();
  private listingCache: ProductRecord[] | null = null;
  private everyCache: ProductRecord[] | null = null;
  private categoriesJsonCache: string | null = null;
  protected nextProductId = 1;
  protected nextSkuId = 1001;
  private lastStamp = 0;
  protected frontSortOrder = 0;
  protected touchCursor = 0;

  constructor(
    private readonly size: number,
    private readonly seed: number,
    protected readonly clock: () => number,
    /** False: inactive SKUs are left out of what is served (see sandbox-catalog.ts). */
    protected readonly servesInactiveSkus = true,
  ) {
    this.generate();
  }

  categories(): SandboxCategory[] {
    return this.categoryDefs.map((c) => ({
      id: c.id,
      parent_id: c.parentId,
      slug: c.slug,
      name: { 'zh-CN': c.zh, en: c.en },
      icon: c.icon,
      sort_order: c.sortOrder,
    }));
  }

  /** Changes a category's icon (as an admin's edit). */
  setCategoryIcon(id: number, icon: string): void {
    const c = this.categoryDefs.find((d) => d.id === id);
    if (!c) throw new Error(`no category ${id}`);
    c.icon = icon;
    this.categoriesJsonCache = null;
  }

  /** Ids of the child (leaf) categories that products belong to. */
  leafCategoryIds(): number[] {
    return this.categoryDefs.filter((c) => c.parentId !== 0).map((c) => c.id);
  }

  categoriesJson(): string {
    this.categoriesJsonCache ??= JSON.stringify(this.categories());
    return this.categoriesJsonCache;
  }

  /** Internal records, for the order side of the sandbox. */
  productRecord(id: number): ProductRecord | undefined {
    return this.productsById.get(id);
  }

  skuRecord(id: number): SkuRecord | undefined {
    return this.skusById.get(id);
  }

  /** The product's JSON as served (cached): without its inactive SKUs unless `servesInactiveSkus`. */
  productJson(p: ProductRecord): string {
    p.json ??= JSON.stringify(this.toWire(p, this.servesInactiveSkus));
    return p.json;
  }

  /** Builds the cached JSON of every product now (benchmarks: keeps the first pass off the clock). */
  warm(): void {
    for (const p of this.productsById.values()) this.productJson(p);
  }

  /** Throws away every change and generates the seeded catalog again. */
  protected generate(): void {
    this.productsById = new Map();
    this.skusById = new Map();
    this.skusByCode = new Map();
    this.dropListings();
    this.categoriesJsonCache = null;
    this.frontSortOrder = 0;
    this.touchCursor = 0;
    const leaves = this.categoryDefs.filter((c) => c.parentId !== 0);
    const seeded = seedProducts(this.size, this.seed, leaves, 1001);
    this.nextProductId = seeded.length + 1;
    this.nextSkuId = 1001;
    for (const p of seeded) {
      const skus = p.skus;
      p.skus = [];
      for (const s of skus) this.addSku(p, s);
      this.nextSkuId += skus.length;
      this.productsById.set(p.id, p);
    }
  }

  /** The wire shape with every SKU (a fresh copy): the served JSON where that has them all. */
  protected fullWire(p: ProductRecord): SandboxProduct {
    const json = this.servesInactiveSkus || p.skus.every((s) => s.isActive) ? this.productJson(p) : JSON.stringify(this.toWire(p, true));
    return JSON.parse(json) as SandboxProduct;
  }

  protected found(s: SkuRecord): FoundSku {
    const product = this.fullWire(this.product(s.productId));
    const sku = product.skus.find((x) => x.id === s.id);
    if (!sku) throw new Error(`sku ${s.id} missing from product ${s.productId}`);
    return { product, sku };
  }

  /**
   * The first SKU carrying this code, or, for `<product id>:<sku_code>` (a relay's sku_key) that no SKU
   * carries as its code, that product's SKU with that code.
   */
  protected sku(skuCode: string): SkuRecord {
    let s = this.skusByCode.get(skuCode)?.[0];
    const key = s ? null : /^(\d+):([\s\S]+)$/.exec(skuCode);
    if (key) s = this.productsById.get(Number(key[1]))?.skus.find((x) => x.skuCode === key[2]);
    if (!s) throw new RangeError(`unknown sku_code ${skuCode}`);
    return s;
  }

  protected product(id: number): ProductRecord {
    const p = this.productsById.get(id);
    if (!p) throw new RangeError(`unknown product ${id}`);
    return p;
  }

  /** The listed products in listing order. */
  protected listing(): ProductRecord[] {
    this.listingCache ??= this.everyProduct().filter((p) => p.listed);
    return this.listingCache;
  }

  /** Every product, listed or not, in listing order. */
  protected everyProduct(): ProductRecord[] {
    if (!this.everyCache) {
      const list = [...this.productsById.values()];
      list.sort((a, b) => b.sortOrder - a.sortOrder || a.id - b.id);
      this.everyCache = list;
    }
    return this.everyCache;
  }

  /** After a product is added, deleted, delisted, relisted or moved in the order. */
  protected dropListings(): void {
    this.listingCache = null;
    this.everyCache = null;
  }

  /** A strictly increasing timestamp (ms) from the clock. */
  protected stamp(): number {
    this.lastStamp = Math.max(this.clock(), this.lastStamp + 1);
    return this.lastStamp;
  }

  /** An admin's edit of the product: a new `updated_at`, the cached JSON dropped. */
  protected touch(productId: number): void {
    const p = this.product(productId);
    p.updatedAt = Math.max(this.stamp(), p.updatedAt + 1);
    this.lastStamp = Math.max(this.lastStamp, p.updatedAt);
    p.json = null;
  }

  protected addSku(p: ProductRecord, s: SkuRecord): void {
    p.skus.push(s);
    this.skusById.set(s.id, s);
    const same = this.skusByCode.get(s.skuCode);
    if (same) same.push(s);
    else this.skusByCode.set(s.skuCode, [s]);
    p.json = null;
  }

  private toWire(p: ProductRecord, inactiveSkus: boolean): SandboxProduct {
    const active = p.skus.filter((s) => s.isActive);
    const priced = active.length > 0 ? active : p.skus;
    let cheapest = priced[0];
    for (const s of priced) if (s.priceCents < cheapest.priceCents) cheapest = s;
    const wire: SandboxProduct = {
      id: p.id,
      slug: p.slug,
      // a product an admin left without a title is served so (see SandboxCatalog.setTitleNull)
      title: p.titleNull ? (null as unknown as SandboxProduct['title']) : p.title,
      description: p.description,
      ...(p.content ? { content: p.content } : {}),
      ...(p.seoMeta ? { seo_meta: p.seoMeta } : {}),
      images: p.images,
      tags: p.tags,
      price_amount: formatMoney(cheapest.priceCents),
      ...(cheapest.originalCents !== null ? { original_price: formatMoney(cheapest.originalCents) } : {}),
      ...(cheapest.memberCents !== null ? { member_price: formatMoney(cheapest.memberCents) } : {}),
      fulfillment_type: p.fulfillmentType,
      manual_form_schema: p.manualFormSchema,
      is_active: p.listed,
      category_id: p.categoryId,
      skus: (inactiveSkus ? p.skus : active).map(skuToWire),
      created_at: new Date(p.createdAt).toISOString(),
      updated_at: new Date(p.updatedAt).toISOString(),
    };
    return wire;
  }
}
