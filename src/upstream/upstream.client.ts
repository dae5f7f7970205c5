/**
 * The port to the upstream purchasing API. Services depend on this abstract class; the HTTP adapter
 * (`upstream-http.adapter.ts`) is bound to it. Every method either resolves with the upstream's
 * successful answer or rejects with an `UpstreamError` of one of the three classes.
 */
import type {
  ProductPageQuery,
  UpstreamCanceledOrder,
  UpstreamCategory,
  UpstreamCreateOrderRequest,
  UpstreamCreatedOrder,
  UpstreamOrder,
  UpstreamPing,
  UpstreamProduct,
  UpstreamProductPage,
} from './upstream.types.js';

export abstract class UpstreamClient {
  /**
   * The reads take an abort signal (a sync run or the poller stopped at shutdown): an aborted call
   * ends at once and rejects with an unknown outcome, reason `aborted`. Writes (create, cancel) never
   * do: once sent, they run to their answer or their timeout.
   */
  abstract ping(signal?: AbortSignal): Promise<UpstreamPing>;
  abstract listCategories(signal?: AbortSignal): Promise<UpstreamCategory[]>;
  abstract listProducts(query: ProductPageQuery, signal?: AbortSignal): Promise<UpstreamProductPage>;
  /** Rejects with a definitive `product_not_found` / `product_unavailable` (404) when gone. */
  abstract getProduct(id: number, signal?: AbortSignal): Promise<UpstreamProduct>;
  /** `payment_failed` (HTTP 200, ok false) rejects as definitive. */
  abstract createOrder(request: UpstreamCreateOrderRequest): Promise<UpstreamCreatedOrder>;
  abstract getOrder(id: number, signal?: AbortSignal): Promise<UpstreamOrder>;
  /** `cancel_not_allowed` (409) rejects as definitive. */
  abstract cancelOrder(id: number): Promise<UpstreamCanceledOrder>;
}
