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
  abstract ping(): Promise<UpstreamPing>;
  abstract listCategories(): Promise<UpstreamCategory[]>;
  abstract listProducts(query: ProductPageQuery): Promise<UpstreamProductPage>;
  /** Rejects with a definitive `product_not_found` / `product_unavailable` (404) when gone. */
  abstract getProduct(id: number): Promise<UpstreamProduct>;
  /** `payment_failed` (HTTP 200, ok false) rejects as definitive. */
  abstract createOrder(request: UpstreamCreateOrderRequest): Promise<UpstreamCreatedOrder>;
  abstract getOrder(id: number): Promise<UpstreamOrder>;
  /** `cancel_not_allowed` (409) rejects as definitive. */
  abstract cancelOrder(id: number): Promise<UpstreamCanceledOrder>;
}
