/**
 * Types of the sandbox upstream: its wire shapes (../../shared/upstream-api.md) and its options.
 * The sandbox is its own small world: it imports nothing from the service but `src/signing/`, so these
 * shapes are declared here again on purpose.
 */
export type MultiLanguageText = Record<string, string>;

export type SandboxStockStatus = 'unlimited' | 'in_stock' | 'low_stock' | 'out_of_stock';
export const SANDBOX_STOCK_STATUSES: readonly SandboxStockStatus[] = ['unlimited', 'in_stock', 'low_stock', 'out_of_stock'];

export type SandboxFulfillmentType = 'auto' | 'manual';

export type SandboxOrderStatus =
  | 'pending_payment'
  | 'paid'
  | 'fulfilling'
  | 'partially_delivered'
  | 'delivered'
  | 'completed'
  | 'canceled'
  | 'refunded'
  | 'partially_refunded';
export const SANDBOX_ORDER_STATUSES: readonly SandboxOrderStatus[] = [
  'pending_payment',
  'paid',
  'fulfilling',
  'partially_delivered',
  'delivered',
  'completed',
  'canceled',
  'refunded',
  'partially_refunded',
];

/** The operations of the API, as named in fault rules, stats and request events. */
export type SandboxOperation = 'ping' | 'categories' | 'products' | 'product' | 'createOrder' | 'getOrder' | 'cancelOrder';
export const SANDBOX_OPERATIONS: readonly SandboxOperation[] = [
  'ping',
  'categories',
  'products',
  'product',
  'createOrder',
  'getOrder',
  'cancelOrder',
];

export type SandboxProfile = 'spec' | 'dujiao-next';

/** How a create the wallet cannot pay is answered (option `lowBalance`). */
export type SandboxLowBalance = 'payment_failed' | 'insufficient_balance';

// ---------------------------------------------------------------------------------------------- wire

export interface SandboxErrorBody {
  ok: false;
  error_code: string;
  error_message: string;
}

export interface SandboxMemberLevel {
  id?: number;
  name?: MultiLanguageText;
  slug?: string;
  icon?: string;
}

export interface SandboxPing {
  ok: true;
  site_name: string;
  protocol_version: string;
  user_id: number;
  balance: string;
  currency: string;
  member_level: SandboxMemberLevel | null;
}

export interface SandboxCategory {
  id: number;
  parent_id: number;
  slug: string;
  name: MultiLanguageText;
  icon: string;
  sort_order: number;
}

export interface SandboxSku {
  id: number;
  sku_code: string;
  spec_values: Record<string, string>;
  price_amount: string;
  original_price?: string;
  member_price?: string;
  stock_status: SandboxStockStatus;
  stock_quantity: number;
  is_active: boolean;
}

export interface SandboxProduct {
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
  fulfillment_type: SandboxFulfillmentType;
  manual_form_schema: Record<string, unknown> | null;
  is_active: boolean;
  category_id: number;
  skus: SandboxSku[];
  created_at: string;
  updated_at: string;
}

export interface SandboxProductPage {
  ok: true;
  items: SandboxProduct[];
  total: number;
  page: number;
  page_size: number;
  /** Newer Dujiao-Next (option `listsInactiveProducts`): whether this page includes the inactive products. */
  includes_inactive?: boolean;
}

export interface SandboxFulfillment {
  type: SandboxFulfillmentType;
  status: 'delivered';
  payload: string;
  delivery_data: Record<string, unknown> | null;
  delivered_at: string;
}

export interface SandboxCreatedOrder {
  ok: true;
  order_id: number;
  order_no: string;
  status: SandboxOrderStatus;
  amount: string;
  currency: string;
}

export interface SandboxOrderItem {
  product_id: number;
  sku_id: number;
  title: MultiLanguageText;
  quantity: number;
  unit_price: string;
  total_price: string;
  fulfillment_type: SandboxFulfillmentType;
}

export interface SandboxOrderDetail {
  ok: true;
  order_id: number;
  order_no: string;
  status: SandboxOrderStatus;
  amount: string;
  currency: string;
  items: SandboxOrderItem[];
  fulfillment?: SandboxFulfillment;
  /**
   * Not in upstream-api.md §2.7 and not returned by Dujiao-Next's GetOrder (only callbacks carry it):
   * present only with the option `orderDetailShowsDownstreamNo`, when one was given at creation.
   */
  downstream_order_no?: string;
  /** Present for `refunded` / `partially_refunded`: the total given back. */
  refunded_amount?: string;
  /**
   * Option `refundRecords` (default under `dujiao-next`): the refunds made on the order, oldest first,
   * as Dujiao-Next's GetOrder lists them (an empty list when there are none).
   */
  refund_records?: SandboxRefundRecord[];
}

/**
 * One refund in Dujiao-Next's `refund_records` (its BuildLocalRefundRecordsForOrder): `id` is the
 * record's 1-based place in the list (never a database key), `order_id` the order it was recorded on,
 * `type` `wallet` (given back to the API user's wallet) or `manual`, `amount` a decimal string, the
 * times RFC 3339.
 */
export interface SandboxRefundRecord {
  id: number;
  user_id: number;
  guest_email: string;
  order_id: number;
  type: 'wallet' | 'manual';
  amount: string;
  currency: string;
  remark: string;
  created_at: string;
  updated_at: string;
}

export interface SandboxCanceledOrder {
  ok: true;
  order_id: number;
  order_no: string;
  status: 'canceled';
}

export type SandboxCallbackEvent = 'order.fulfilled' | 'order.status_changed';

export interface SandboxCallbackBody {
  event: SandboxCallbackEvent;
  order_id: number;
  order_no: string;
  downstream_order_no?: string;
  status: SandboxOrderStatus;
  fulfillment?: SandboxFulfillment;
  /** Unix seconds when the body was taken: the status change for a first try, the retry itself for a retry. */
  timestamp: number;
}

// ------------------------------------------------------------------------------------------- options

/**
 * Delays, measured from the creation of an order, at which an auto order moves
 * pending_payment→paid→fulfilling→delivered→completed. `null` switches a step off: the order stops
 * before it (only `advanceAll()` / operator helpers move it on). Manual orders stop at `fulfilling`
 * until `deliverManual()`. Where the create pays the order (`paysInCreate`, profile `dujiao-next`)
 * it starts at `paid` and `paidMs` plays no part.
 */
export interface SandboxTimetable {
  paidMs: number | null;
  fulfillingMs: number | null;
  deliveredMs: number | null;
  completedMs: number | null;
}

export interface SandboxCatalogOptions {
  /** Number of generated products (all listed). Default 40. */
  products?: number;
  /** PRNG seed: the same seed gives the same catalog. Default 1. */
  seed?: number;
}

export interface SandboxWalletOptions {
  /** Decimal string. Default '1000000.00'. */
  balance?: string;
  /** Default 'CNY'. */
  currency?: string;
}

/** The limiter's rule (option `rateLimit`, control API `POST /__sandbox/rate-limit`). */
export interface SandboxRateLimit {
  /** Requests admitted per window (≥ 1). */
  requests: number;
  /** The window's length, from the key's first request (ms). */
  windowMs: number;
  /** How long the first refused request blocks the key (ms, ≥ 0). */
  blockMs: number;
}

export interface SandboxOptions {
  /** Presets: header prefix (`Service` / `Dujiao-Next`) and the path callbacks are signed over. Default 'spec'. */
  profile?: SandboxProfile;
  /** Overrides the profile's header prefix. */
  headerPrefix?: string;
  /** Canonical string template (see src/signing). Default DEFAULT_SIGNATURE_TEMPLATE. */
  signatureTemplate?: string;
  /** Default 'sandbox-api-key'. */
  apiKey?: string;
  /** Default 'sandbox-api-secret'. */
  apiSecret?: string;
  /** HMAC key of outgoing callbacks. Default: apiSecret. */
  callbackSecret?: string;
  /**
   * Path callbacks are signed over. Default by profile: `spec` → the path of each callback_url,
   * `dujiao-next` → `/api/v1/upstream/callback`.
   */
  callbackSignaturePath?: string;
  /** Allowed request timestamp skew, seconds either way. Default 60. */
  timestampToleranceS?: number;
  /** `GET /products` silently caps page_size at this and echoes the used size. Default 50. */
  pageSizeCap?: number;
  /** Check-then-insert deduplication of `downstream_order_no`. Default true. */
  dedupeDownstreamOrderNo?: boolean;
  /**
   * Callbacks sent for each status change of an order. Default by profile: `dujiao-next` → 2
   * (Dujiao-Next enqueues one for the order and one for its child order; both resolve to the order's
   * one callback reference and carry the same body), `spec` → 1. Each is signed and retried on its own.
   */
  callbacksPerChange?: 1 | 2;
  /**
   * `GET /orders/{id}` carries `refund_records` (always, an empty list before any refund). Default by
   * profile: `dujiao-next` → true, `spec` → false.
   */
  refundRecords?: boolean;
  /**
   * A refund made upstream (`refundOrder`, `POST /__sandbox/orders/{id}/refund`) is called back.
   * Default by profile: `dujiao-next` → false (its admin refund changes the order and the wallet and
   * sends no callback: the relay's reconciliation finds it), `spec` → true.
   */
  refundCallbacks?: boolean;
  /**
   * `GET /orders/{id}` also carries the order's `downstream_order_no`, as an upstream beyond the spec
   * might. Default false in both profiles: neither upstream-api.md §2.7 nor Dujiao-Next shows it
   * (only callbacks carry it).
   */
  orderDetailShowsDownstreamNo?: boolean;
  /**
   * The create call pays the order from the wallet and answers `paid` (its timetable then starts at
   * `paid`). Default by profile: `dujiao-next` → true (Dujiao-Next pays inside CreateOrder), `spec` →
   * false (the spec: payment runs asynchronously; the create answers `pending_payment`).
   */
  paysInCreate?: boolean;
  /**
   * An automatic order moves from `paid` straight to `delivered` at `deliveredMs`, with no
   * `fulfilling` step (so no fulfilling callback): the callbacks are `paid`, then `delivered` with its
   * fulfillment, as the real upstream sends them for an automatic delivery. Manual orders still stop
   * at `fulfilling`. Default false (both profiles).
   */
  skipsFulfilling?: boolean;
  /**
   * The states `POST /orders/{id}/cancel` accepts (any other: 409 cancel_not_allowed). Default by
   * profile: `dujiao-next` → `pending_payment` only (Dujiao-Next's CancelOrder), `spec` →
   * `pending_payment` and `paid` (the spec does not show them).
   */
  cancelableStatuses?: SandboxOrderStatus[];
  /**
   * How a create that the wallet cannot pay is answered. Default by profile: `dujiao-next` →
   * `payment_failed` (Dujiao-Next creates the order, its wallet payment fails, it cancels the order and
   * answers 200 `{ok:false, error_code:'payment_failed', order_id, order_no, status:'canceled'}`; the
   * `downstream_order_no` stays tied to that canceled order), `spec` → `insufficient_balance` (402,
   * nothing recorded, as upstream-api.md §7 lists it).
   */
  lowBalance?: SandboxLowBalance;
  /**
   * Whether a product's inactive SKUs are served (with `is_active` false) in `GET /products` and
   * `GET /products/{id}`. Default by profile: `dujiao-next` → false (Dujiao-Next's product JSON leaves
   * inactive SKUs out), `spec` → true (upstream-api.md §2.5 gives each SKU an `is_active` flag).
   */
  servesInactiveSkus?: boolean;
  /**
   * `GET /products?include_inactive=true` also lists the delisted products (with `is_active` false),
   * and every page echoes `includes_inactive`, as newer Dujiao-Next servers do. Default by profile:
   * `dujiao-next` → true, `spec` → false (the parameter is ignored, as upstream-api.md does not know it).
   */
  listsInactiveProducts?: boolean;
  /**
   * How `manual_form_data` is checked against a manual product's form schema. `dujiao-next`: as
   * Dujiao-Next does: no data at all is accepted unless a field is required, a key the schema does not
   * have is refused (400 bad_request "manual form data is invalid: manual form field invalid", also
   * every key of a schema without fields), a required field missing or empty is refused ("… manual form
   * required missing"). `spec`: the data is
   * required for every manual product (upstream-api.md §3.1), and its required fields must be there.
   * Default by profile.
   */
  manualFormCheck?: 'dujiao-next' | 'spec';
  /**
   * `GET /products/{id}` of a delisted (withdrawn) product answers 200 with `is_active` false, as newer
   * Dujiao-Next servers do (404 `product_not_found` only once the product is deleted). Default by
   * profile: `dujiao-next` → true, `spec` → false (404 `product_unavailable`).
   */
  servesWithdrawnProducts?: boolean;
  /**
   * Dujiao-Next's limiter of the whole API (sandbox-rate-limit.ts): per API key (the `<prefix>-Api-Key`
   * header; the client IP without one), at most `requests` per fixed window of `windowMs` from the
   * key's first request, and the first request over it blocks the key for `blockMs`. It runs before
   * the authentication and before any work; a refused request is answered HTTP 429 with the server's
   * generic body `{"status_code":429,"msg":"…","data":{"request_id":"…"}}` and no `Retry-After`.
   * Default null (off); `relay sandbox` under profile `dujiao-next` starts with Dujiao-Next's numbers
   * (60 per 60 s, block 30 s: see sandbox.main.ts).
   */
  rateLimit?: SandboxRateLimit | null;
  /** Largest accepted quantity (a larger one is 400 bad_request). Default 10000. */
  maxQuantity?: number;
  catalog?: SandboxCatalogOptions;
  /** Default { paidMs: 50, fulfillingMs: 100, deliveredMs: 200, completedMs: null }. */
  timetable?: Partial<SandboxTimetable>;
  wallet?: SandboxWalletOptions;
  /** Delays before the 2nd, 3rd, … try of a callback. Default [30000, 60000, 120000, 300000] (5 tries). */
  callbackRetryDelaysMs?: number[];
  /** Per-try timeout of an outgoing callback. Default 5000. */
  callbackTimeoutMs?: number;
  /** Default false: a callback_url on a loopback/private address is 400 invalid_callback_url. */
  allowPrivateCallbackUrls?: boolean;
  /** Wall clock in ms, used for every timestamp (auth, created_at, updated_at, delivered_at, callbacks). */
  clock?: () => number;
  /** Ping's site_name. Default 'Sandbox Upstream'. */
  siteName?: string;
  /** Ping's user_id. Default 1. */
  userId?: number;
  /** Ping's member_level. Default a `gold` level; `null` for none. */
  memberLevel?: SandboxMemberLevel | null;
}

// ------------------------------------------------------------------------------------- observability

export interface SandboxStats {
  /** Every API request received (faulted and unauthenticated ones included), by operation. */
  requests: Record<SandboxOperation | 'unknown', number>;
  totalRequests: number;
  /** `POST /orders` requests received. */
  createsReceived: number;
  /** Orders actually recorded (payment_failed ones included; deduplicated answers not). */
  createsExecuted: number;
  /** Successful cancels. */
  cancelsExecuted: number;
  /** Fault rules applied. */
  faultsApplied: number;
  /** Callback tries made (each retry and each duplicate counts). */
  callbacksAttempted: number;
  /** Callback tries answered 200 {"ok":true}. */
  callbacksSucceeded: number;
  /** Callback snapshots dropped by the `drop` fault. */
  callbacksDropped: number;
  /** API requests answered 429 by the limiter (option `rateLimit`), by operation. */
  rateLimited: Record<SandboxOperation, number>;
  /** Blocks the limiter started (the first refused request of a window). */
  rateLimitBlocks: number;
}

/** One API request as the limiter saw it (SandboxServer.rateLimitLog()). */
export interface SandboxRateLimitEntry {
  /** performance.now() when the request reached the limiter. */
  at: number;
  /** The limiter's key: the API key header's value, or the client IP. */
  key: string;
  operation: SandboxOperation;
  /** False: answered 429. */
  admitted: boolean;
}

export type SandboxRequestOutcome = 'answered' | 'reset' | 'hang';

export interface SandboxRequestEvent {
  operation: SandboxOperation | 'unknown';
  phase: 'received' | 'done';
  method: string;
  path: string;
  /** The request's query string, URL-encoded, without `?` ('' when none). */
  query: string;
  /** On `done`: the HTTP status written (absent for reset/hang). */
  status?: number;
  /** On `done`. */
  outcome?: SandboxRequestOutcome;
}

export interface SandboxOrderView {
  id: number;
  order_no: string;
  downstream_order_no: string | null;
  status: SandboxOrderStatus;
  amount: string;
  currency: string;
  product_id: number;
  sku_id: number;
  sku_code: string;
  quantity: number;
  fulfillment_type: SandboxFulfillmentType;
  /** The delivered payload (null until delivered). */
  payload: string | null;
  refunded_amount: string | null;
  callback_url: string | null;
  trace_id: string | null;
  manual_form_data: Record<string, unknown> | null;
  created_at: string;
  /** Every status the order has had, in order. */
  history: SandboxOrderStatus[];
}

export interface SandboxOrderEvent {
  orderId: number;
  from: SandboxOrderStatus | null;
  to: SandboxOrderStatus;
  order: SandboxOrderView;
}

/** Every counter of the sandbox's stats at 0 (each operation's too). */
export function emptySandboxStats(): SandboxStats {
  const requests = { unknown: 0 } as Record<SandboxOperation | 'unknown', number>;
  const rateLimited = {} as Record<SandboxOperation, number>;
  for (const op of SANDBOX_OPERATIONS) requests[op] = rateLimited[op] = 0;
  return {
    requests,
    rateLimited,
    rateLimitBlocks: 0,
    totalRequests: 0,
    createsReceived: 0,
    createsExecuted: 0,
    cancelsExecuted: 0,
    faultsApplied: 0,
    callbacksAttempted: 0,
    callbacksSucceeded: 0,
    callbacksDropped: 0,
  };
}
