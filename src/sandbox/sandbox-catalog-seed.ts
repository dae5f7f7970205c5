/**
 * The seeded part of the sandbox's catalog: the record types the catalog keeps, the fixed two-level
 * categories, and `seedProducts()`, the deterministic products and SKUs of a seed. Features follow
 * fixed patterns of the product id so that even a small catalog holds every kind (manual products,
 * every stock status, inactive SKUs, original and member prices); the seed drives categories, SKU
 * counts, prices, quantities and dates.
 */
import { percentOf } from './sandbox-money.js';
import type { MultiLanguageText, SandboxFulfillmentType, SandboxStockStatus } from './sandbox.types.js';

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
  /** Served with `title: null` (a badly shaped product, see SandboxCatalog.setTitleNull). */
  titleNull?: boolean;
}

export interface CategoryDef {
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
    icon: '/uploads/icons/games.png',
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
    icon: '/uploads/icons/software.png',
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

export const DURATIONS: ReadonlyArray<[string, string]> = [
  ['1个月', '1 month'],
  ['3个月', '3 months'],
  ['6个月', '6 months'],
  ['12个月', '12 months'],
];

export const MANUAL_FORM_SCHEMA: Record<string, unknown> = {
  fields: [
    { key: 'account', type: 'text', required: true, label: { 'zh-CN': '充值账号', en: 'Account' } },
    { key: 'region', type: 'select', required: false, options: ['CN', 'HK', 'US'], label: { 'zh-CN': '区服', en: 'Region' } },
  ],
};

export function buildCategories(): CategoryDef[] {
  const out: CategoryDef[] = [];
  TOP_CATEGORIES.forEach((top, i) => {
    out.push({
      id: top.id,
      parentId: 0,
      slug: top.slug,
      zh: top.zh,
      en: top.en,
      icon: top.icon,
      sortOrder: (TOP_CATEGORIES.length - i) * 100,
    });
    top.children.forEach(([slug, zh, en], j) => {
      out.push({
        id: top.id * 100 + j + 1,
        parentId: top.id,
        slug: `${top.slug}-${slug}`,
        zh,
        en,
        icon: j === 0 ? `/uploads/icons/${slug}.png` : '',
        sortOrder: (top.children.length - j) * 10,
      });
    });
  });
  return out;
}

/** Where the sandbox serves its own images (product images, content images): see sandbox-media.ts. */
export const SANDBOX_UPLOADS_PREFIX = '/uploads';

/** The image of a seeded product, as its `images` names it (a path on the sandbox's origin). */
export function productImagePath(id: number): string {
  return `${SANDBOX_UPLOADS_PREFIX}/products/p${id}.png`;
}

/** The links and image references of a rich detail page, all on the supplier's origin. */
function richContent(id: number): string {
  const img = productImagePath(id);
  return (
    `<p><a href="/products/${id}" class="more">More</a> · <a href="#top">Top</a></p>` +
    `<div style="background: url('${img}') no-repeat"><picture><source srcset="${img} 1x"><img src="${img}" ` +
    `srcset="${img} 2x" alt=""></picture></div>` +
    `<video poster="${img}" controls><source src="${SANDBOX_UPLOADS_PREFIX}/videos/p${id}.mp4" type="video/mp4">Video</video>`
  );
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

/** The seeded products (ids from 1) with their SKUs (ids from `firstSkuId`), in id order. */
export function seedProducts(size: number, seed: number, leaves: readonly CategoryDef[], firstSkuId: number): ProductRecord[] {
  const rnd = prng(seed * 2654435761 + 17);
  const stockPattern: SandboxStockStatus[] = ['unlimited', 'unlimited', 'in_stock', 'in_stock', 'in_stock', 'low_stock', 'out_of_stock'];
  const products: ProductRecord[] = [];
  let skuId = firstSkuId;
  for (let id = 1; id <= size; id++) {
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
      // Images are the sandbox's own (served under SANDBOX_UPLOADS_PREFIX), named by a path as Dujiao-Next
      // names its uploads: relative to the supplier's origin. The content shows the product's image again.
      // Every fourth product's content also links to the supplier's own pages and names its image in a
      // srcset, an inline style and a video poster, as a rich detail page does (all relative).
      content:
        id % 2 === 0
          ? {
              'zh-CN': `<p>商品 ${id} 详情</p><p><img src="${productImagePath(id)}" alt="商品 ${id}"></p>${id % 4 === 0 ? richContent(id) : ''}`,
              en:
                `<p>Details of product ${id}</p><p><img src="${productImagePath(id)}" alt="product ` +
                `${id}"></p>${id % 4 === 0 ? richContent(id) : ''}`,
            }
          : null,
      seoMeta: id % 3 === 0 ? { title: `Product ${id}`, keywords: [cat.slug] } : null,
      images: [productImagePath(id)],
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
      p.skus.push({
        id: skuId++,
        skuCode: `SKU-${code}-${k + 1}`,
        productId: id,
        specValues: { 规格: zh, duration: en },
        priceCents: price,
        originalCents: (id + k) % 4 === 1 ? percentOf(price, 120) : null,
        memberCents: (id + 2 * k) % 5 === 2 ? percentOf(price, 95) : null,
        stockStatus: status,
        stockQuantity: quantity,
        isActive: (id * 3 + k) % 13 !== 5,
      });
    }
    products.push(p);
  }
  return products;
}
