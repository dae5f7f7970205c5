/**
 * Shapes of the internal API (CONTRACT §5) as the console reads them. Money is a decimal string
 * everywhere; the console never turns it into a number except for a margin percentage.
 */

export interface ErrorBody {
  ok: false;
  error_code: string;
  error_message: string;
  fields?: Record<string, string[] | string>;
  run_id?: string;
  order?: Order;
}

export interface ListBody<T> {
  ok: true;
  items: T[];
  total: number;
  page: number;
  page_size: number;
}

export type MultiLanguageText = Record<string, string>;

export interface Category {
  id: number;
  parent_id: number;
  slug: string;
  name: MultiLanguageText;
  icon: string;
  sort_order: number;
  listed: boolean;
  children: Category[];
}

export interface Sku {
  sku_code: string;
  upstream_sku_id: number | string;
  product_id: number | string;
  product_title: MultiLanguageText;
  category_id: number | string;
  spec_values: Record<string, string> | null;
  cost_price: string;
  sale_price: string;
  original_price: string | null;
  member_price: string | null;
  currency: string | null;
  stock_status: string;
  stock_quantity: number;
  fulfillment_type: string;
  manual_form_schema: unknown;
  listed: boolean;
  available: boolean;
  updated_at: string;
}

/** One row of a SKU's change history (`GET /internal/catalog/skus/{sku_code}/changes`). */
export interface SkuChange {
  id?: string | number;
  sku_code?: string;
  field: string;
  kind?: string;
  old_value?: unknown;
  new_value?: unknown;
  old?: unknown;
  new?: unknown;
  run_id?: string | null;
  source?: string;
  changed_at?: string;
  at?: string;
}

export type RunStatus = 'running' | 'succeeded' | 'failed';

export interface SyncRun {
  run_id: string;
  mode: 'full' | 'incremental';
  status: RunStatus;
  trigger?: string;
  started_at: string;
  finished_at: string | null;
  pages_total: number;
  pages_done: number;
  products_seen: number;
  skus_created: number;
  skus_changed: number;
  skus_delisted: number;
  skus_relisted: number;
  error: string | null;
}

export const ORDER_STATUSES = [
  'submitting',
  'submit_unknown',
  'rejected',
  'pending_payment',
  'paid',
  'fulfilling',
  'partially_delivered',
  'delivered',
  'completed',
  'canceled',
  'partially_refunded',
  'refunded',
] as const;
export type OrderStatus = (typeof ORDER_STATUSES)[number];

export type RefundState = 'not_refundable' | 'refundable' | 'refunded';

export interface Order {
  shop_order_no: string;
  sku_code: string;
  quantity: number;
  status: OrderStatus;
  attempt: number;
  downstream_order_no: string;
  upstream_order_id: number | null;
  upstream_order_no: string | null;
  amount: string | null;
  currency: string | null;
  error_code: string | null;
  error_message: string | null;
  items: string[];
  fulfillment: {
    type: string | null;
    status: string;
    delivered_at: string | null;
    delivery_data: Record<string, unknown> | null;
  };
  refund_state: RefundState;
  refundable_amount: string | null;
  refunded_amount?: string | null;
  anomaly?: string | null;
  stuck?: boolean;
  trace_id?: string;
  created_at: string;
  updated_at: string;
}

/** One event of an order's timeline (`GET /internal/orders/{shop_order_no}/events`). */
export interface OrderEvent {
  id?: string | number;
  source: string;
  kind?: string;
  from: string | null;
  to: string | null;
  detail?: Record<string, unknown> | null;
  at: string;
}

export interface Wallet {
  ok: true;
  balance: string;
  currency: string;
  member_level: { id?: number; name?: MultiLanguageText; slug?: string } | null;
  checked_at: string;
}

/** A markup: percent and fixed as decimal strings; rounding null = the default step. */
export interface Markup {
  markup_percent: string;
  markup_fixed: string;
  rounding?: string | null;
}

export interface PricingRule extends Markup {
  scope: 'category' | 'sku';
  category_id?: number | null;
  sku_code?: string | null;
}

export interface PricingRules {
  defaults: Markup & { rounding: string };
  rules: PricingRule[];
}
