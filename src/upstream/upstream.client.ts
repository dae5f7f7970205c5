/**
 * The port to the upstream purchasing API. Services depend on this abstract class; the module binds it
 * to the `BudgetedUpstreamClient`, which takes a token of the upstream request budget (src/budget) for
 * each call and then sends it through the HTTP adapter (`upstream-http.adapter.ts`). Every method
 * either resolves with the upstream's successful answer or rejects with an `UpstreamError` of one of
 * the three classes.
 *
 * Each method takes `opts` last: `priority`, the budget class of the call (default by operation, see
 * DEFAULT_PRIORITY), and `maxWaitMs`, the longest wait for the budget (default: no limit). A call that
 * could not get its token in time rejects with `BudgetWaitExceeded` (src/budget/budget.errors.ts:
 * retryable, reason `budget_wait_exceeded`; nothing was sent). Under the budget, a 429 blocks the key
 * for every caller; a read is then sent again after the block (within its signal and maxWaitMs), a
 * create or cancel rejects with the retryable `rate_limited` error (nothing was processed: send the
 * same request again later).
 *
 * `listProductsRecognizing` is `listProducts` with an optional capability for a caller that remembers
 * listing pages by their bytes (the catalog sync, src/catalog/page-fingerprints.ts): it is offered the
 * digest of the answer's body before the body is parsed, and a page it recognises is not parsed at all.
 */
import type { BudgetClass } from '../budget/request-budget.js';
import type {
  ProductPageQuery,
  UpstreamCanceledOrder,
  UpstreamCategoryList,
  UpstreamCreateOrderRequest,
  UpstreamCreatedOrder,
  UpstreamOrder,
  UpstreamPing,
  UpstreamProduct,
  UpstreamProductPage,
} from './upstream.types.js';

export interface UpstreamCallOptions {
  /** The budget class of this call; default by operation (DEFAULT_PRIORITY). */
  priority?: BudgetClass;
  /** The longest wait for the request budget, in milliseconds; past it, `BudgetWaitExceeded`. Default: no limit. */
  maxWaitMs?: number;
  /**
   * The caller already took this call's token (UpstreamBudgetService.take): it is sent without taking
   * another (a resend after a 429 takes its own). For a caller that must know it can send before it
   * commits to sending (the order queue moves an order to `submitting` only then).
   */
  granted?: boolean;
}

/**
 * A caller's memory of listing pages by their bytes: given the SHA-256 (base64url) of a 200 answer's
 * body, before the body is parsed, what the caller knows those bytes hold, else undefined. Two
 * answers with one digest are the same bytes, so they hold the same products.
 */
export type PageRecognizer<K> = (bodyDigest: string) => K | undefined;

/**
 * What `listProductsRecognizing` resolves with: the caller's own value for a body it recognised
 * (nothing was parsed), else the page parsed as `listProducts` gives it, with its body's digest.
 */
export type RecognizedPage<K> = { kind: 'recognized'; known: K } | { kind: 'parsed'; page: UpstreamProductPage; digest: string };

export type UpstreamOperation = 'ping' | 'listCategories' | 'listProducts' | 'getProduct' | 'createOrder' | 'getOrder' | 'cancelOrder';

/**
 * The budget class of each operation when the caller names none: a read that can hand items to the
 * shop (`deliver`) or a catalog read of the order path (`price`) must say so where it is made.
 */
export const DEFAULT_PRIORITY: Readonly<Record<UpstreamOperation, BudgetClass>> = {
  createOrder: 'create',
  cancelOrder: 'create',
  getProduct: 'price',
  getOrder: 'poll',
  ping: 'poll',
  listProducts: 'sync',
  listCategories: 'sync',
};

export abstract class UpstreamClient {
  /**
   * The reads take an abort signal (a sync run or the poller stopped at shutdown): an aborted call
   * ends at once and rejects with an unknown outcome, reason `aborted` (also while it waits for the
   * budget). Writes (create, cancel) never do: once sent, they run to their answer or their timeout.
   */
  abstract ping(signal?: AbortSignal, opts?: UpstreamCallOptions): Promise<UpstreamPing>;
  abstract listCategories(signal?: AbortSignal, opts?: UpstreamCallOptions): Promise<UpstreamCategoryList>;
  abstract listProducts(query: ProductPageQuery, signal?: AbortSignal, opts?: UpstreamCallOptions): Promise<UpstreamProductPage>;
  /**
   * `listProducts` (the same request, budget class and errors), offering the body of a 200 answer to
   * `recognize` by its digest before it is parsed (an error answer is classified as ever).
   */
  abstract listProductsRecognizing<K>(
    query: ProductPageQuery,
    recognize: PageRecognizer<K>,
    signal?: AbortSignal,
    opts?: UpstreamCallOptions,
  ): Promise<RecognizedPage<K>>;
  /** Rejects with a definitive `product_not_found` / `product_unavailable` (404) when gone. */
  abstract getProduct(id: number, signal?: AbortSignal, opts?: UpstreamCallOptions): Promise<UpstreamProduct>;
  /** `payment_failed` (HTTP 200, ok false) rejects as definitive. */
  abstract createOrder(request: UpstreamCreateOrderRequest, opts?: UpstreamCallOptions): Promise<UpstreamCreatedOrder>;
  abstract getOrder(id: number, signal?: AbortSignal, opts?: UpstreamCallOptions): Promise<UpstreamOrder>;
  /** `cancel_not_allowed` (409) rejects as definitive. */
  abstract cancelOrder(id: number, opts?: UpstreamCallOptions): Promise<UpstreamCanceledOrder>;
}
