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
 */
import { formatMoney, parseMoney, percentOf } from './sandbox-money.js';
import {
  SANDBOX_STOCK_STATUSES,
  type MultiLanguageText,
  type SandboxCategory,
  type SandboxFulfillmentType,
  type SandboxProduct,
  type SandboxSku,
  type SandboxStockStatus,
} from './sandbox.types.js';

/**
 * A finite stock at or below this is `low_stock` (1–20), above it `in_stock`: Dujiao-Next's stock
 * computation and its docs use 20.
 */
export const LOW_STOCK_THRESHOLD = 20;
/** Generated products are created from here on, one a minute. */
const BASE_TIME = Date.UTC(2024, 0, 1);
const DAY_MS = 86_400_000;

export interface SkuRecord {
  id: number;
  skuCode: string;
  productId: number;
  specValues: Record<string, string>;
  priceCents: bigint;
  originalCents: bigint | null;
  memberCents: bigint | null;
  stockStatus: SandboxStockStatus;
  /** -1 for unlimited. */
  stockQuantity: number;
  isActive: boolean;
}

export interface ProductRecord {
  id: number;
  slug: string;
  title: MultiLanguageText;
  description: MultiLanguageText;
  content: MultiLanguageText | null;
  seoMeta: Record<string, unknown> | null;
  images: string[];
  tags: string[];
  fulfillmentType: SandboxFulfillmentType;
  manualFormSchema: Record<string, unknown> | null;
  categoryId: number;
  skus: SkuRecord[];
  createdAt: number;
  updatedAt: number;
  /** False once delisted: out of the listing, 404 product_unavailable on detail. */
  listed: boolean;
  sortOrder: number;
  /** Cached wire JSON; null when it must be rebuilt. */
  json: string | null;
}

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

export interface FoundSku {
  product: SandboxProduct;
  sku: SandboxSku;
}

interface CategoryDef {
  id: number;
  parentId: number;
  slug: string;
  zh: string;
  en: string;
  icon: string;
  sortOrder: number;
}

const TOP_CATEGORIES: ReadonlyArray<Omit<CategoryDef, 'parentId' | 'sortOrder'> & { children: [string, string, string][] }> = [
  {
    id: 1,
    slug: 'games',
    zh: '游戏',
    en: 'Games',
    icon: 'https://sandbox.invalid/icons/games.png',
    children: [
      ['steam-keys', 'Steam 激活码', 'Steam keys'],
      ['mobile-topup', '手游充值', 'Mobile top-up'],
      ['console', '主机点卡', 'Console cards'],
    ],
  },
  {
    id: 2,
    slug: 'streaming',
    zh: '影音会员',
    en: 'Streaming',
    icon: '',
    children: [
      ['video', '视频会员', 'Video memberships'],
      ['music', '音乐会员', 'Music memberships'],
      ['reading', '阅读会员', 'Reading memberships'],
    ],
  },
  {
    id: 3,
    slug: 'software',
    zh: '软件授权',
    en: 'Software',
    icon: 'https://sandbox.invalid/icons/software.png',
    children: [
      ['office', '办公软件', 'Office suites'],
      ['security', '安全软件', 'Security'],
      ['dev-tools', '开发工具', 'Developer tools'],
    ],
  },
  {
    id: 4,
    slug: 'gift-cards',
    zh: '礼品卡',
    en: 'Gift cards',
    icon: '',
    children: [
      ['app-store', 'App Store 礼品卡', 'App Store cards'],
      ['google-play', 'Google Play 礼品卡', 'Google Play cards'],
      ['shopping', '购物卡', 'Shopping cards'],
    ],
  },
];

const DURATIONS: ReadonlyArray<[string, string]> = [
  ['1个月', '1 month'],
  ['3个月', '3 months'],
  ['6个月', '6 months'],
  ['12个月', '12 months'],
];

const MANUAL_FORM_SCHEMA: Record<string, unknown> = {
  fields: [
    { key: 'account', type: 'text', required: true, label: { 'zh-CN': '充值账号', en: 'Account' } },
    { key: 'region', type: 'select', required: false, options: ['CN', 'HK', 'US'], label: { 'zh-CN': '区服', en: 'Region' } },
  ],
};

function buildCategories(): CategoryDef[] {
  const out: CategoryDef[] = [];
  TOP_CATEGORIES.forEach((top, i) => {
    out.push({ id: top.id, parentId: 0, slug: top.slug, zh: top.zh, en: top.en, icon: top.icon, sortOrder: (TOP_CATEGORIES.length - i) * 100 });
    top.children.forEach(([slug, zh, en], j) => {
      out.push({
        id: top.id * 100 + j + 1,
        parentId: top.id,
        slug: `${top.slug}-${slug}`,
        zh,
        en,
        icon: j === 0 ? `https://sandbox.invalid/icons/${slug}.png` : '',
        sortOrder: (top.children.length - j) * 10,
      });
    });
  });
  return out;
}

/** Small, fast, seeded PRNG (mulberry32). */
function prng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

export function stockStatusFor(quantity: number): SandboxStockStatus {
  if (quantity < 0) return 'unlimited';
  if (quantity === 0) return 'out_of_stock';
  return quantity <= LOW_STOCK_THRESHOLD ? 'low_stock' : 'in_stock';
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

export class SandboxCatalog {
  private readonly categoryDefs = buildCategories();
  private productsById = new Map<number, ProductRecord>();
  private skusById = new Map<number, SkuRecord>();
  private skusByCode = new Map<string, SkuRecord[]>();
  private listingCache: ProductRecord[] | null = null;
  private categoriesJsonCache: string | null = null;
  private nextProductId = 1;
  private nextSkuId = 1001;
  private lastStamp = 0;
  private frontSortOrder = 0;
  private touchCursor = 0;

  constructor(
    private readonly size: number,
    private readonly seed: number,
    private readonly clock: () => number,
    /** False: inactive SKUs are left out of what is served (see the header). */
    private readonly servesInactiveSkus = true,
  ) {
    this.generate();
  }

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

  /** Ids of the child (leaf) categories that products belong to. */
  leafCategoryIds(): number[] {
    return this.categoryDefs.filter((c) => c.parentId !== 0).map((c) => c.id);
  }

  categoriesJson(): string {
    this.categoriesJsonCache ??= JSON.stringify(this.categories());
    return this.categoriesJsonCache;
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
   * One page of the listing, as cached product JSON strings, with the id of its first product.
   * `updated_after` keeps the products updated strictly after it, or, `inclusive` (an upstream with
   * whole-second timestamps that filters with `>=`), those updated in its second or later.
   */
  page(page: number, pageSize: number, updatedAfterMs?: number, inclusive = false): { items: string[]; total: number; firstId: number | null } {
    let list = this.listing();
    if (updatedAfterMs !== undefined) {
      const second = (ms: number) => Math.floor(ms / 1000);
      list = inclusive ? list.filter((p) => second(p.updatedAt) >= second(updatedAfterMs)) : list.filter((p) => p.updatedAt > updatedAfterMs);
    }
    const start = (page - 1) * pageSize;
    const items = start < list.length ? list.slice(start, start + pageSize).map((p) => this.productJson(p)) : [];
    return { items, total: list.length, firstId: start < list.length ? list[start].id : null };
  }

  /** Builds the cached JSON of every product now (benchmarks: keeps the first pass off the clock). */
  warm(): void {
    for (const p of this.productsById.values()) this.productJson(p);
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
  setStock(skuCode: string, status: SandboxStockStatus, quantity?: number): void {
    if (!SANDBOX_STOCK_STATUSES.includes(status)) throw new RangeError(`unknown stock status ${status}`);
    const s = this.sku(skuCode);
    s.stockStatus = status;
    s.stockQuantity =
      status === 'unlimited' ? -1 : status === 'out_of_stock' ? 0 : (quantity ?? (status === 'in_stock' ? 100 : 5));
    if (!Number.isInteger(s.stockQuantity)) throw new RangeError('stock quantity must be an integer');
    this.touch(s.productId);
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
    this.listingCache = null;
    this.touch(productId);
  }

  relistProduct(productId: number): void {
    const p = this.product(productId);
    p.listed = true;
    this.listingCache = null;
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
      content: null,
      seoMeta: null,
      images: [],
      tags: [],
      fulfillmentType,
      manualFormSchema: input.manualFormSchema !== undefined ? input.manualFormSchema : fulfillmentType === 'manual' ? MANUAL_FORM_SCHEMA : null,
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
    this.listingCache = null;
    return this.fullWire(p);
  }

  /** Adds a product that sorts first in the listing. Returns its wire shape. */
  insertAtFront(input: AddProductInput = {}): SandboxProduct {
    const added = this.addProduct(input);
    const p = this.product(added.id);
    p.sortOrder = ++this.frontSortOrder;
    this.listingCache = null;
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

  // ----------------------------------------------------------------------------------- private

  /** The wire shape with every SKU (a fresh copy): the served JSON where that has them all. */
  private fullWire(p: ProductRecord): SandboxProduct {
    const json = this.servesInactiveSkus || p.skus.every((s) => s.isActive) ? this.productJson(p) : JSON.stringify(this.toWire(p, true));
    return JSON.parse(json) as SandboxProduct;
  }

  private found(s: SkuRecord): FoundSku {
    const product = this.fullWire(this.product(s.productId));
    const sku = product.skus.find((x) => x.id === s.id);
    if (!sku) throw new Error(`sku ${s.id} missing from product ${s.productId}`);
    return { product, sku };
  }

  private sku(skuCode: string): SkuRecord {
    const s = this.skusByCode.get(skuCode)?.[0];
    if (!s) throw new RangeError(`unknown sku_code ${skuCode}`);
    return s;
  }

  private product(id: number): ProductRecord {
    const p = this.productsById.get(id);
    if (!p) throw new RangeError(`unknown product ${id}`);
    return p;
  }

  private listing(): ProductRecord[] {
    if (!this.listingCache) {
      const list: ProductRecord[] = [];
      for (const p of this.productsById.values()) if (p.listed) list.push(p);
      list.sort((a, b) => b.sortOrder - a.sortOrder || a.id - b.id);
      this.listingCache = list;
    }
    return this.listingCache;
  }

  /** A strictly increasing timestamp (ms) from the clock. */
  private stamp(): number {
    this.lastStamp = Math.max(this.clock(), this.lastStamp + 1);
    return this.lastStamp;
  }

  private touch(productId: number): void {
    const p = this.product(productId);
    p.updatedAt = Math.max(this.stamp(), p.updatedAt + 1);
    this.lastStamp = Math.max(this.lastStamp, p.updatedAt);
    p.json = null;
  }

  private addSku(p: ProductRecord, s: SkuRecord): void {
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
      title: p.title,
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

  /**
   * The seeded catalog. Features follow fixed patterns of the product id so that even a small catalog
   * holds every kind (manual products, every stock status, inactive SKUs, original and member prices);
   * the seed drives categories, SKU counts, prices, quantities and dates.
   */
  private generate(): void {
    this.productsById = new Map();
    this.skusById = new Map();
    this.skusByCode = new Map();
    this.listingCache = null;
    this.categoriesJsonCache = null;
    this.nextProductId = 1;
    this.nextSkuId = 1001;
    this.frontSortOrder = 0;
    this.touchCursor = 0;
    const rnd = prng(this.seed * 2654435761 + 17);
    const leaves = this.categoryDefs.filter((c) => c.parentId !== 0);
    const stockPattern: SandboxStockStatus[] = ['unlimited', 'unlimited', 'in_stock', 'in_stock', 'in_stock', 'low_stock', 'out_of_stock'];
    for (let n = 0; n < this.size; n++) {
      const id = this.nextProductId++;
      const cat = leaves[Math.floor(rnd() * leaves.length)];
      const manual = id % 7 === 4;
      const skuCount = 1 + Math.floor(rnd() * 4);
      const base = BigInt(100 + Math.floor(rnd() * 49_900));
      const createdAt = BASE_TIME + id * 60_000;
      const updatedAt = createdAt + Math.floor(rnd() * 30 * DAY_MS);
      const code = String(id).padStart(5, '0');
      const p: ProductRecord = {
        id,
        slug: `product-${id}`,
        title: { 'zh-CN': `${cat.zh} 商品 ${id}`, en: `${cat.en} product ${id}` },
        description: { 'zh-CN': `${cat.zh}：示例商品 ${id}`, en: `${cat.en}: sample product ${id}` },
        content: id % 2 === 0 ? { 'zh-CN': `<p>商品 ${id} 详情</p>`, en: `<p>Details of product ${id}</p>` } : null,
        seoMeta: id % 3 === 0 ? { title: `Product ${id}`, keywords: [cat.slug] } : null,
        images: [`https://sandbox.invalid/img/p${id}.png`],
        tags: id % 5 === 0 ? ['hot', cat.slug] : [cat.slug],
        fulfillmentType: manual ? 'manual' : 'auto',
        manualFormSchema: manual ? MANUAL_FORM_SCHEMA : null,
        categoryId: cat.id,
        skus: [],
        createdAt,
        updatedAt,
        listed: true,
        sortOrder: 0,
        json: null,
      };
      for (let k = 0; k < skuCount; k++) {
        const status = stockPattern[(id + k) % stockPattern.length];
        const quantity =
          status === 'unlimited'
            ? -1
            : status === 'out_of_stock'
              ? 0
              : status === 'low_stock'
                ? 1 + Math.floor(rnd() * LOW_STOCK_THRESHOLD)
                : LOW_STOCK_THRESHOLD + 1 + Math.floor(rnd() * 990);
        const price = base * BigInt(k + 1);
        const [zh, en] = DURATIONS[k % DURATIONS.length];
        this.addSku(p, {
          id: this.nextSkuId++,
          skuCode: `SKU-${code}-${k + 1}`,
          productId: id,
          specValues: { '规格': zh, duration: en },
          priceCents: price,
          originalCents: (id + k) % 4 === 1 ? percentOf(price, 120) : null,
          memberCents: (id + 2 * k) % 5 === 2 ? percentOf(price, 95) : null,
          stockStatus: status,
          stockQuantity: quantity,
          isActive: (id * 3 + k) % 13 !== 5,
        });
      }
      this.productsById.set(id, p);
    }
  }
}
