/** Response shapes of the catalog's internal API (CONTRACT §5): field names exact, money as strings. */
import type { StoredCategory, StoredChange, StoredConflict, StoredSku } from './catalog.records.js';
import type { CategoryNode } from './catalog.service.js';
import type { PricingRulesView, RulesChange } from './pricing.service.js';
import { CHANGE_KINDS, type ChangeCounts } from './sku-diff.js';
import type { SyncRunRecord } from './sync-run.repository.js';

function iso(d: Date): string;
function iso(d: Date | null | undefined): string | null;
function iso(d: Date | null | undefined): string | null {
  return d ? new Date(d).toISOString() : null;
}

export interface SkuResponse {
  /** The supplier whose SKU it is (CONTRACT §10). */
  supplier: string;
  /** `<product_id>:<sku_code>`: the SKU within its supplier (sku_code is unique only within its product). */
  sku_key: string;
  sku_code: string;
  upstream_sku_id: number;
  product_id: number;
  product_title: Record<string, string>;
  category_id: number;
  spec_values: Record<string, unknown>;
  cost_price: string;
  sale_price: string;
  original_price: string | null;
  member_price: string | null;
  currency: string | null;
  stock_status: string;
  stock_quantity: number;
  fulfillment_type: string;
  manual_form_schema: Record<string, unknown> | null;
  listed: boolean;
  available: boolean;
  /** The SKU and its product are enabled upstream (an extra of this service). */
  active: boolean;
  updated_at: string;
}

export function toSkuResponse(s: StoredSku, currency: string | null): SkuResponse {
  return {
    supplier: s.supplier,
    sku_key: s.sku_key,
    sku_code: s.sku_code,
    upstream_sku_id: s.upstream_sku_id,
    product_id: s.product_id,
    product_title: s.product_title,
    category_id: s.category_id,
    spec_values: s.spec_values,
    cost_price: s.cost_price,
    sale_price: s.sale_price,
    original_price: s.original_price,
    member_price: s.member_price,
    currency,
    stock_status: s.stock_status,
    stock_quantity: s.stock_quantity,
    fulfillment_type: s.fulfillment_type,
    manual_form_schema: s.manual_form_schema,
    listed: s.listed,
    available: s.available,
    active: s.sku_active && s.product_active,
    updated_at: iso(s.updated_at)!,
  };
}

/** The single-SKU answer also carries the product's slug and description. */
export function toSkuDetailResponse(s: StoredSku, currency: string | null) {
  return { ...toSkuResponse(s, currency), product_slug: s.product_slug, product_description: s.product_description };
}

/** A stored category as the API shows it (without its bookkeeping time), with its children. */
export interface CategoryResponse extends Omit<StoredCategory, 'updated_at' | 'icon'> {
  icon: string | null;
  children: CategoryResponse[];
}

function toCategory(c: CategoryNode['category'], children: CategoryResponse[]): CategoryResponse {
  return {
    supplier: c.supplier,
    id: c.id,
    parent_id: c.parent_id,
    slug: c.slug,
    name: c.name,
    icon: c.icon,
    sort_order: c.sort_order,
    listed: c.listed,
    children,
  };
}

export function toCategoryTreeResponse(nodes: CategoryNode[]): CategoryResponse[] {
  return nodes.map((n) => toCategory(n.category, toCategoryTreeResponse(n.children)));
}

function counts(c: Partial<ChangeCounts> | null | undefined): ChangeCounts {
  const out = {} as ChangeCounts;
  for (const k of CHANGE_KINDS) out[k] = Number(c?.[k] ?? 0);
  return out;
}

export function toSyncRunResponse(r: SyncRunRecord) {
  return {
    run_id: r.run_id,
    supplier: r.supplier,
    mode: r.mode,
    status: r.status,
    started_at: iso(r.started_at),
    finished_at: iso(r.finished_at),
    pages_total: r.pages_total,
    pages_done: r.pages_done,
    products_seen: r.products_seen,
    skus_created: r.skus_created,
    skus_changed: r.skus_changed,
    skus_delisted: r.skus_delisted,
    skus_relisted: r.skus_relisted,
    error: r.error,
    // Extras of this service:
    trigger: r.trigger,
    planned_mode: r.planned_mode,
    requested_mode: r.requested_mode,
    fallback: r.fallback,
    updated_after: iso(r.updated_after),
    skus_seen: r.skus_seen,
    changes: counts(r.changes),
    conflicts: r.conflicts,
    confirmed_live: r.confirmed_live,
    unconfirmed: r.unconfirmed,
    budget_wait_ms: Number(r.budget_wait_ms),
    skipped_products: (r.skipped_products ?? []).map((x) => ({ product_id: x.product_id, reason: x.reason })),
    skipped_categories: (r.skipped_categories ?? []).map((x) => ({ category_id: x.category_id, reason: x.reason })),
    reread_products: r.reread_products ?? 0,
    skipped_images: (r.skipped_images ?? []).map((x) => ({
      product_id: x.product_id,
      ...(x.category_id !== undefined ? { category_id: x.category_id } : {}),
      url: x.url,
      reason: x.reason,
    })),
    images_fetched: r.images_fetched ?? 0,
    image_bytes: Number(r.image_bytes ?? 0),
    media_ms: r.media_ms ?? 0,
    note: r.note,
    heartbeat_at: iso(r.heartbeat_at),
  };
}

export function toSkuChangeResponse(c: StoredChange) {
  return {
    id: c.id,
    supplier: c.supplier,
    sku_key: c.sku_key,
    sku_code: c.sku_code,
    field: c.field,
    kind: c.kind,
    old: c.old_value ?? null,
    new: c.new_value ?? null,
    run_id: c.run_id,
    source: c.source,
    changed_at: iso(c.changed_at),
  };
}

export function toConflictResponse(c: StoredConflict) {
  return {
    sku_code: c.sku_code,
    owner_product_id: Number(c.owner_product_id),
    claimant_product_id: Number(c.claimant_product_id),
    claimant_sku_id: c.claimant_sku_id === null ? null : Number(c.claimant_sku_id),
    run_id: c.run_id,
    occurrences: c.occurrences,
    first_seen_at: iso(c.first_seen_at),
    last_seen_at: iso(c.last_seen_at),
  };
}

export function toPricingRulesResponse(v: PricingRulesView | RulesChange) {
  return {
    ok: true as const,
    defaults: { markup_percent: v.defaults.markupPercent, markup_fixed: v.defaults.markupFixed, rounding: v.defaults.rounding },
    rules: v.rules.map((r) => ({
      scope: r.scope,
      supplier: r.supplier ?? null,
      category_id: r.scope === 'category' ? (r.categoryId ?? null) : null,
      sku_code: r.scope === 'sku' ? (r.skuCode ?? null) : null,
      sku_key: r.scope === 'sku' ? (r.skuKey ?? null) : null,
      markup_percent: r.markupPercent,
      markup_fixed: r.markupFixed,
      rounding: r.rounding ?? null,
      updated_at: iso(r.updatedAt),
    })),
    version: v.version,
    ...('repriced' in v ? { repriced: v.repriced } : {}),
  };
}
