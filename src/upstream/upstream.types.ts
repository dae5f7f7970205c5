/**
 * Wire types of the upstream purchasing API (../shared/upstream-api.md). Money is a decimal string.
 * Fields the spec marks optional are optional here; unknown extra fields pass through untouched.
 */
export type MultiLanguageText = Record<string, string>;

export interface UpstreamMemberLevel {
  id?: number;
  name?: MultiLanguageText;
  slug?: string;
  icon?: string;
}

export interface UpstreamPing {
  ok: true;
  site_name: string;
  protocol_version: string;
  user_id: number;
  balance: string;
  currency: string;
  member_level?: UpstreamMemberLevel | null;
}

export interface UpstreamCategory {
  id: number;
  parent_id: number;
  slug: string;
  name: MultiLanguageText;
  icon?: string;
  sort_order: number;
}

/** A category of `GET /categories` left out because its shape is wrong: its id when usable, and why. */
export interface SkippedCategory {
  category_id: number | null;
  reason: string;
}

/**
 * The usable categories of `GET /categories`; `skipped` (set only when some were left out) names the
 * others: one badly shaped category (a null name) does not make the whole tree unusable.
 */
export type UpstreamCategoryList = UpstreamCategory[] & { skipped?: SkippedCategory[] };

export type StockStatus = 'unlimited' | 'in_stock' | 'low_stock' | 'out_of_stock';
export type FulfillmentType = 'auto' | 'manual';

export interface UpstreamSku {
  id: number;
  sku_code: string;
  spec_values: Record<string, unknown>;
  price_amount: string;
  original_price?: string;
  member_price?: string;
  stock_status: StockStatus | string;
  stock_quantity: number;
  is_active: boolean;
}

export interface UpstreamProduct {
  id: number;
  slug: string;
  title: MultiLanguageText;
  description: MultiLanguageText;
  content?: MultiLanguageText;
  seo_meta?: Record<string, unknown>;
  images?: string[];
  tags?: string[];
  price_amount: string;
  original_price?: string;
  member_price?: string;
  fulfillment_type: FulfillmentType | string;
  manual_form_schema?: Record<string, unknown> | null;
  is_active: boolean;
  category_id: number;
  skus: UpstreamSku[];
  created_at?: string;
  updated_at?: string;
}

export interface UpstreamProductPage {
  ok: true;
  items: UpstreamProduct[];
  /** Not the upstream's: the items left out of `items` for their shape (see splitProductPage). */
  skipped?: Array<{ product_id: number | null; reason: string }>;
  total: number;
  page: number;
  /** The page size the upstream actually used: it may cap what was asked. */
  page_size: number;
}

export interface ProductPageQuery {
  page: number;
  pageSize: number;
  /** Undocumented filter of the real upstream: only products changed after this instant. */
  updatedAfter?: Date;
  /** Newer Dujiao-Next: `include_inactive=true` lists inactive products too, with `is_active: false`. */
  includeInactive?: boolean;
}

/** Upstream order states, including the undocumented refund states. Unknown strings pass through. */
export type UpstreamOrderStatus =
  | 'pending_payment'
  | 'paid'
  | 'fulfilling'
  | 'partially_delivered'
  | 'delivered'
  | 'completed'
  | 'canceled'
  | 'refunded'
  | 'partially_refunded';

export interface UpstreamCreateOrderRequest {
  sku_id: number;
  quantity: number;
  manual_form_data?: Record<string, unknown>;
  downstream_order_no?: string;
  trace_id?: string;
  callback_url?: string;
}

export interface UpstreamCreatedOrder {
  ok: true;
  order_id: number;
  order_no: string;
  status: UpstreamOrderStatus | string;
  amount: string;
  currency: string;
}

export interface UpstreamOrderItem {
  product_id?: number;
  sku_id?: number;
  title?: MultiLanguageText;
  quantity?: number;
  unit_price?: string;
  total_price?: string;
  fulfillment_type?: FulfillmentType | string;
}

export interface UpstreamFulfillment {
  type: FulfillmentType | string;
  status: 'delivered' | string;
  payload: string;
  delivery_data?: Record<string, unknown> | null;
  delivered_at: string;
}

export interface UpstreamOrder {
  ok: true;
  order_id: number;
  order_no: string;
  status: UpstreamOrderStatus | string;
  amount: string;
  currency: string;
  items: UpstreamOrderItem[];
  fulfillment?: UpstreamFulfillment | null;
  /** Present on the real upstream's detail; the spec does not list it. */
  downstream_order_no?: string;
  /** With `partially_refunded` (and `refunded`): the amount given back. */
  refunded_amount?: string;
  /** Newer Dujiao-Next: the refunds made on the order (read leniently: src/orders/refund-records.ts). */
  refund_records?: unknown;
}

export interface UpstreamCanceledOrder {
  ok: true;
  order_id: number;
  order_no: string;
  status: 'canceled' | string;
}

/** Body of a status callback from the upstream (§6 of the spec). */
export interface UpstreamCallbackBody {
  event?: 'order.fulfilled' | 'order.status_changed' | string;
  order_id: number;
  order_no?: string;
  downstream_order_no?: string;
  status: UpstreamOrderStatus | string;
  fulfillment?: UpstreamFulfillment | null;
  timestamp?: number;
}

/** The error envelope of the upstream. */
export interface UpstreamErrorBody {
  ok: false;
  error_code: string;
  error_message: string;
}
