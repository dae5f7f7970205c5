/**
 * The local SKU row and its diff (pure).
 *
 * A `SkuRow` is what the catalog keeps per SKU, the pair (product_id, sku_code) named by its `sku_key`
 * (see sku-key.ts): the SKU's upstream fields, its product's fields
 * (id, texts, category, fulfillment), the derived sale price and the `listed` flag. It is built from an
 * upstream product by `skuRowsFromProduct`, and compared with the stored row by `diffSku`, which names
 * every changed field with its kind (created, price, stock, sku_id, listing, other) — the change history
 * and the shop notifications are made from that, and nothing is written when it is empty.
 *
 * Equality follows the database: money compares as numbers (`10.0` = `10.00`), JSON as values (key order
 * does not matter), so that this diff and the SQL guard (`IS DISTINCT FROM`) agree.
 */
import { hash } from 'node:crypto';
import type { CatalogSkusRow } from '../database/rows.generated.js';
import type { OutboxEvent } from '../notifications/outbox.writer.js';
import type { UpstreamProduct } from '../upstream/upstream.types.js';
import { Money } from './pricing.js';
import { skuKeyOf } from './sku-key.js';

export type MultiLanguageText = Record<string, string>;

/**
 * The columns of `catalog_skus` (rows.generated.ts) that the catalog sets from the upstream, with the
 * ids as numbers and the JSON columns' shapes (toSkuRow maps a stored row to it).
 */
export interface SkuRow extends Pick<
  CatalogSkusRow,
  | 'sku_code'
  | 'product_slug'
  | 'cost_price'
  | 'sale_price'
  | 'original_price'
  | 'member_price'
  | 'stock_status'
  | 'stock_quantity'
  | 'sku_active'
  | 'product_active'
  | 'fulfillment_type'
  | 'listed'
> {
  /** `<product_id>:<sku_code>` (see sku-key.ts). */
  sku_key: string;
  upstream_sku_id: number;
  product_id: number;
  product_title: MultiLanguageText;
  product_description: MultiLanguageText;
  category_id: number;
  spec_values: Record<string, unknown>;
  manual_form_schema: Record<string, unknown> | null;
}

export type SkuField = keyof SkuRow;
export type ChangeKind = 'created' | 'price' | 'stock' | 'sku_id' | 'listing' | 'other';
export const CHANGE_KINDS: readonly ChangeKind[] = ['created', 'price', 'stock', 'sku_id', 'listing', 'other'];

type FieldType = 'money' | 'json' | 'plain';

/** Every compared field, its kind and how it compares. `sku_key` (with `sku_code`) is the key, never a change. */
export const SKU_FIELDS: ReadonlyArray<{
  field: Exclude<SkuField, 'sku_code' | 'sku_key'>;
  kind: Exclude<ChangeKind, 'created'>;
  type: FieldType;
}> = [
  { field: 'upstream_sku_id', kind: 'sku_id', type: 'plain' },
  { field: 'cost_price', kind: 'price', type: 'money' },
  { field: 'sale_price', kind: 'price', type: 'money' },
  { field: 'original_price', kind: 'price', type: 'money' },
  { field: 'member_price', kind: 'price', type: 'money' },
  { field: 'stock_status', kind: 'stock', type: 'plain' },
  { field: 'stock_quantity', kind: 'stock', type: 'plain' },
  { field: 'listed', kind: 'listing', type: 'plain' },
  { field: 'sku_active', kind: 'listing', type: 'plain' },
  { field: 'product_active', kind: 'listing', type: 'plain' },
  { field: 'product_id', kind: 'other', type: 'plain' },
  { field: 'product_slug', kind: 'other', type: 'plain' },
  { field: 'product_title', kind: 'other', type: 'json' },
  { field: 'product_description', kind: 'other', type: 'json' },
  { field: 'category_id', kind: 'other', type: 'plain' },
  { field: 'spec_values', kind: 'other', type: 'json' },
  { field: 'fulfillment_type', kind: 'other', type: 'plain' },
  { field: 'manual_form_schema', kind: 'other', type: 'json' },
];

export interface FieldChange {
  field: SkuField | 'created';
  kind: ChangeKind;
  old: unknown;
  new: unknown;
}

export interface SkuDiff {
  skuKey: string;
  skuCode: string;
  created: boolean;
  changes: FieldChange[];
  /** Distinct kinds among the changes, in CHANGE_KINDS order. */
  kinds: ChangeKind[];
  /** `listed` went false → true / true → false. */
  relisted: boolean;
  delisted: boolean;
}

export type ChangeCounts = Record<ChangeKind, number>;

export function emptyCounts(): ChangeCounts {
  return { created: 0, price: 0, stock: 0, sku_id: 0, listing: 0, other: 0 };
}

export function addCounts(into: ChangeCounts, diff: SkuDiff): void {
  for (const k of diff.kinds) into[k]++;
}

// ------------------------------------------------------------------------------------- equality

export function moneyEqual(a: string | null, b: string | null): boolean {
  if (a === b) return true;
  if (a === null || b === null) return false;
  return new Money(a).eq(new Money(b));
}

/** JSON value equality with jsonb semantics: object key order is ignored, numbers compare by value. */
export function jsonEqual(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (a === null || b === null || typeof a !== 'object' || typeof b !== 'object') {
    return typeof a === 'number' && typeof b === 'number' ? a === b : false;
  }
  if (Array.isArray(a) !== Array.isArray(b)) return false;
  if (Array.isArray(a)) {
    const bb = b as unknown[];
    return a.length === bb.length && a.every((v, i) => jsonEqual(v, bb[i]));
  }
  const ao = a as Record<string, unknown>;
  const bo = b as Record<string, unknown>;
  const ak = Object.keys(ao);
  if (ak.length !== Object.keys(bo).length) return false;
  return ak.every((k) => Object.prototype.hasOwnProperty.call(bo, k) && jsonEqual(ao[k], bo[k]));
}

function fieldEqual(type: FieldType, a: unknown, b: unknown): boolean {
  if (type === 'money') return moneyEqual(a as string | null, b as string | null);
  if (type === 'json') return jsonEqual(a ?? null, b ?? null);
  return a === b;
}

// ----------------------------------------------------------------------------------------- hash

/** Bumped when the mapping from upstream products to rows changes: every product is then written again. */
export const FINGERPRINT_VERSION = 3;

/**
 * A fingerprint of what the catalog keeps of an upstream product (its fields and every SKU's): equal
 * products have equal fingerprints, so a sync maps, prices and writes only the products whose
 * fingerprint moved. A difference of form only (JSON keys in another order) also moves it: that
 * product is then compared in full, and nothing is written when no field changed.
 */
export function productFingerprint(product: UpstreamProduct): string {
  // Only what the catalog keeps (its SKUs, and the product's own row: content, images, tags, SEO; not
  // its dates), in a fixed order.
  const parts: unknown[] = [
    product.id,
    product.slug,
    product.title,
    product.description,
    product.category_id,
    product.is_active,
    product.fulfillment_type,
    product.manual_form_schema ?? null,
    product.content ?? null,
    product.images ?? null,
    product.tags ?? null,
    product.seo_meta ?? null,
  ];
  for (const s of product.skus) {
    parts.push(
      s.id,
      s.sku_code,
      s.spec_values,
      s.price_amount,
      s.original_price ?? null,
      s.member_price ?? null,
      s.stock_status,
      s.stock_quantity,
      s.is_active,
    );
  }
  return `${FINGERPRINT_VERSION}.${hash('sha1', JSON.stringify(parts), 'base64url')}`;
}

// ----------------------------------------------------------------------------------------- diff

/** What changed from `old` (null: a new SKU) to `next`. */
export function diffSku(old: SkuRow | null, next: SkuRow): SkuDiff {
  if (old === null) {
    return {
      skuKey: next.sku_key,
      skuCode: next.sku_code,
      created: true,
      changes: [{ field: 'created', kind: 'created', old: null, new: null }],
      kinds: ['created'],
      relisted: false,
      delisted: false,
    };
  }
  const changes: FieldChange[] = [];
  const kinds = new Set<ChangeKind>();
  for (const { field, kind, type } of SKU_FIELDS) {
    const a = old[field];
    const b = next[field];
    if (!fieldEqual(type, a, b)) {
      changes.push({ field, kind, old: a ?? null, new: b ?? null });
      kinds.add(kind);
    }
  }
  return {
    skuKey: next.sku_key,
    skuCode: next.sku_code,
    created: false,
    changes,
    kinds: CHANGE_KINDS.filter((k) => kinds.has(k)),
    relisted: !old.listed && next.listed,
    delisted: old.listed && !next.listed,
  };
}

export function isAvailable(row: Pick<SkuRow, 'listed' | 'sku_active' | 'product_active' | 'stock_status'>): boolean {
  return row.listed && row.sku_active && row.product_active && row.stock_status !== 'out_of_stock';
}

/** The shop notifications (CONTRACT §7) of one SKU's diff, naming its supplier: price, stock and listing changes. */
export function eventsForDiff(old: SkuRow | null, next: SkuRow, diff: SkuDiff, currency: string | null, supplier: string): OutboxEvent[] {
  const events: OutboxEvent[] = [];
  // The SKU is (supplier, product_id, sku_code), all in the payload. The subject (the outbox keeps a
  // subject's events in order) stays the code: SKUs sharing a code share an order, which only orders more.
  const subject = next.sku_code;
  const base = { supplier, sku_code: subject, upstream_sku_id: next.upstream_sku_id, product_id: next.product_id };
  if (diff.created) {
    if (next.listed) {
      events.push({
        type: 'sku.listing_changed',
        subject,
        payload: { ...base, created: true, listed: true, available: isAvailable(next), old_listed: null, old_available: null },
      });
    }
    return events;
  }
  if (old === null) return events;
  if (diff.kinds.includes('price')) {
    events.push({
      type: 'sku.price_changed',
      subject,
      payload: {
        ...base,
        currency,
        cost_price: next.cost_price,
        sale_price: next.sale_price,
        original_price: next.original_price,
        member_price: next.member_price,
        old_cost_price: old.cost_price,
        old_sale_price: old.sale_price,
      },
    });
  }
  if (diff.kinds.includes('stock')) {
    events.push({
      type: 'sku.stock_changed',
      subject,
      payload: {
        ...base,
        stock_status: next.stock_status,
        stock_quantity: next.stock_quantity,
        old_stock_status: old.stock_status,
        old_stock_quantity: old.stock_quantity,
        available: isAvailable(next),
      },
    });
  }
  if (diff.kinds.includes('listing')) {
    events.push({
      type: 'sku.listing_changed',
      subject,
      payload: {
        ...base,
        created: false,
        listed: next.listed,
        available: isAvailable(next),
        old_listed: old.listed,
        old_available: isAvailable(old),
      },
    });
  }
  return events;
}

// ------------------------------------------------------------------------------------ mapping

function money(v: string | null | undefined): string | null {
  if (v === undefined || v === null) return null;
  const t = v.trim();
  return t === '' ? null : t;
}

function text(v: unknown): MultiLanguageText {
  return typeof v === 'object' && v !== null && !Array.isArray(v) ? (v as MultiLanguageText) : {};
}

/** Prices a SKU: `(cost, which SKU and where it sits) → sale price`. */
export type SalePriceFn = (cost: string, subject: { supplier?: string; skuKey: string; skuCode: string; categoryId: number }) => string;

/**
 * The rows of an upstream product as seen live (in a listing page or a detail read): `listed` is
 * the product's `is_active`. A SKU code that the product lists twice keeps its first occurrence (the second is returned in
 * `duplicates`).
 */
export function skuRowsFromProduct(product: UpstreamProduct, price: SalePriceFn): { rows: SkuRow[]; duplicates: string[] } {
  const rows: SkuRow[] = [];
  const duplicates: string[] = [];
  const seen = new Set<string>();
  for (const s of product.skus) {
    if (seen.has(s.sku_code)) {
      duplicates.push(s.sku_code);
      continue;
    }
    seen.add(s.sku_code);
    const cost = s.price_amount.trim();
    const key = skuKeyOf(product.id, s.sku_code);
    rows.push({
      sku_key: key,
      sku_code: s.sku_code,
      upstream_sku_id: s.id,
      product_id: product.id,
      product_slug: product.slug,
      product_title: text(product.title),
      product_description: text(product.description),
      category_id: product.category_id,
      spec_values: (s.spec_values ?? {}) as Record<string, unknown>,
      cost_price: cost,
      sale_price: price(cost, { skuKey: key, skuCode: s.sku_code, categoryId: product.category_id }),
      original_price: money(s.original_price),
      member_price: money(s.member_price),
      stock_status: s.stock_status,
      stock_quantity: s.stock_quantity,
      sku_active: s.is_active,
      product_active: product.is_active,
      fulfillment_type: product.fulfillment_type,
      manual_form_schema: product.manual_form_schema ?? null,
      // A product the upstream marks inactive is withdrawn from sale: listed with `is_active: false`
      // (`include_inactive=true`) or read with it (`GET /products/{id}` of a withdrawn product on newer
      // Dujiao-Next), it is unlisted here, and listed again once it comes back active.
      listed: product.is_active,
    });
  }
  return { rows, duplicates };
}
