/**
 * Shapes of the internal API (CONTRACT §5) as the console reads them, named from the types generated
 * out of the service's OpenAPI document (api.generated.ts, `npm run console:types`): a page reads
 * only what the document describes. Money is a decimal string everywhere; the console never turns it
 * into a number except for a margin percentage.
 *
 * The document declares the response bodies inline in each operation (only request bodies and the
 * error envelope are named schemas), so the names below are taken from the operations' answers.
 */
import type { components, paths } from './api.generated.js';

type Method = 'get' | 'post' | 'put' | 'delete';
type JsonOf<R> = R extends { content: { 'application/json': infer B } } ? B : never;

/** The JSON body `method path` answers with HTTP `status` (200 unless said), as documented. */
export type Answer<P extends keyof paths, M extends Method, S extends number = 200> =
  NonNullable<paths[P][M]> extends { responses: infer R } ? (S extends keyof R ? JsonOf<R[S]> : never) : never;

/** The JSON body `method path` takes, as documented. */
export type RequestBody<P extends keyof paths, M extends Method> =
  NonNullable<paths[P][M]> extends { requestBody?: infer B } ? JsonOf<NonNullable<B>> : never;

/** The error envelope `{ok: false, error_code, error_message, …}` (schema `ErrorResponse`). */
export type ErrorBody = components['schemas']['ErrorResponse'];

// ------------------------------------------------------------------------------------- catalog

export type CategoriesAnswer = Answer<'/internal/catalog/categories', 'get'>;
type CategoryNode = Omit<CategoriesAnswer['categories'][number], 'children'>;
/**
 * A category and its sub-categories. The document describes two levels (its deeper `children` are
 * "the same shape", untyped objects); the recursion is stated here.
 */
export type Category = CategoryNode & { children: Category[] };
export type MultiLanguageText = CategoryNode['name'];

export type SkuList = Answer<'/internal/catalog/skus', 'get'>;
/** A SKU as the list gives it; `SkuDetail` (one SKU) adds the product's slug and description. */
export type Sku = SkuList['items'][number];
export type SkuAnswer = Answer<'/internal/catalog/skus/{sku_code}', 'get'>;
export type SkuDetail = SkuAnswer['sku'];

export type ProductAnswer = Answer<'/internal/catalog/products/{product_id}', 'get'>;
export type Product = ProductAnswer['product'];

export type SkuChangeList = Answer<'/internal/catalog/skus/{sku_code}/changes', 'get'>;
/** One row of a SKU's change history. */
export type SkuChange = SkuChangeList['items'][number];

export type SyncRunList = Answer<'/internal/catalog/sync-runs', 'get'>;
export type SyncRun = SyncRunList['items'][number];
export type SyncRunAnswer = Answer<'/internal/catalog/sync-runs/{run_id}', 'get'>;
export type RunStatus = SyncRun['status'];
export type StartSyncAnswer = Answer<'/internal/catalog/sync', 'post', 202>;
export type StartSyncBody = components['schemas']['StartSyncBody'];

// -------------------------------------------------------------------------------------- pricing

export type PricingRules = Answer<'/internal/pricing/rules', 'get'>;
export type PutPricingRulesAnswer = Answer<'/internal/pricing/rules', 'put'>;
/** A saved rule. */
export type PricingRule = PricingRules['rules'][number];
/** A rule as `PUT /internal/pricing/rules` takes it. */
export type PricingRuleBody = components['schemas']['PricingRuleBody'];
/** A markup: percent and fixed as decimal strings; rounding null = the default step. */
export type Markup = Pick<PricingRule, 'markup_percent' | 'markup_fixed' | 'rounding'>;

// --------------------------------------------------------------------------------------- orders

export type OrderList = Answer<'/internal/orders', 'get'>;
export type OrderAnswer = Answer<'/internal/orders/{shop_order_no}', 'get'>;
export type Order = OrderAnswer['order'];
export type OrderStatus = Order['status'];
export type RefundState = Order['refund_state'];

/** Every status, in the contract's order of ranks (the orders filter and the dashboard's tiles). */
export const ORDER_STATUSES = [
  'queued',
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
] as const satisfies readonly OrderStatus[];
// A status the document adds and the list above lacks fails the type check here.
const _everyStatusListed: Exclude<OrderStatus, (typeof ORDER_STATUSES)[number]> extends never ? true : never = true;
void _everyStatusListed;

export type OrderEvents = Answer<'/internal/orders/{shop_order_no}/events', 'get'>;
/** One event of an order's timeline. */
export type OrderEvent = OrderEvents['events'][number];
/** What the operator actions (cancel, refund, refresh, resolve) answer. */
export type OrderActionAnswer = Answer<'/internal/orders/{shop_order_no}/cancel', 'post'>;

// ------------------------------------------------------------------------------- reconciliation

export type ReconciliationRunList = Answer<'/internal/reconciliation/runs', 'get'>;
/** An on-demand reconciliation run with its progress (orders_done of orders_total). */
export type ReconciliationRun = ReconciliationRunList['items'][number];
export type ReconciliationRunAnswer = Answer<'/internal/reconciliation/runs/{run_id}', 'get'>;
export type StartReconciliationAnswer = Answer<'/internal/reconciliation', 'post', 202>;
export type StartReconciliationBody = components['schemas']['StartReconciliationBody'];
export type ReconciliationItemList = Answer<'/internal/reconciliation/items', 'get'>;
/** A difference found between an order and the upstream's read of it (money fields: decimal strings). */
export type ReconciliationItem = ReconciliationItemList['items'][number];

// ----------------------------------------------------------------------------------- the wallet

/**
 * The upstream's member level (upstream API §2.3: every field optional). The service passes it on
 * as the ping reports it and its document gives it as a free-form object (`{id, name, slug, icon}` in
 * words only), so this one shape is written by hand.
 */
export interface MemberLevel {
  id?: number;
  name?: MultiLanguageText;
  slug?: string;
  icon?: string;
}

export type Wallet = Omit<Answer<'/internal/wallet', 'get'>, 'member_level'> & { member_level: MemberLevel | null };

// ----------------------------------------------------------------------------------------- health

/** `GET /health` (no token): the database, the upstream, the last sync, the request budget, the queue. */
export type Health = Answer<'/health', 'get'>;

// --------------------------------------------------------------------------------------- offers

export type OfferList = Answer<'/internal/offers', 'get'>;
export type Offer = OfferList['items'][number];
export type OfferSource = Offer['sources'][number];
export type OfferAnswer = Answer<'/internal/offers/{code}', 'get'>;
export type PutOfferBody = RequestBody<'/internal/offers/{code}', 'put'>;

/** One supplier in `/health` (`suppliers.<name>`): its upstream, budget, last sync and wallet. */
export type SupplierHealth = Health['suppliers'][string];
/** A supplier's upstream as `/health` names it (`auth_failed`: it refuses our credentials). */
export type UpstreamState = SupplierHealth['upstream'];

// -------------------------------------------------------------------------------------- suppliers

/**
 * A supplier as `GET /internal/suppliers` answers it (CONTRACT §10). Written by hand from the
 * contract: the console reads only these fields, and every one of them may be missing from an older
 * service (the page then shows what `/health` tells).
 */
export interface Supplier {
  name: string;
  base_url?: string;
  profile?: string;
  api_key_hint?: string;
  enabled?: boolean;
  settings?: Record<string, unknown>;
  callback_url?: string;
  health?: { upstream?: string; budget?: unknown; checked_at?: string | null };
  wallet?: { balance: string | null; currency: string | null; checked_at?: string | null } | null;
  last_sync?: unknown;
  managed_by_env?: boolean;
}
export interface SupplierList {
  ok: true;
  items?: Supplier[];
  suppliers?: Supplier[];
}
export interface SupplierAnswer {
  ok: true;
  supplier: Supplier;
}
/** What `POST /internal/suppliers` takes (`PATCH` takes any of it but the name). */
export interface SupplierBody {
  name?: string;
  base_url?: string;
  api_key?: string;
  api_secret?: string;
  profile?: string;
  enabled?: boolean;
}

/** The supplier of a SKU or an order: the field the service adds with several suppliers (absent from an older one). */
export const supplierOf = (x: object): string | null => {
  const s = (x as { supplier?: unknown }).supplier;
  return typeof s === 'string' ? s : null;
};
