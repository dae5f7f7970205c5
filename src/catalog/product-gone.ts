/**
 * When may a product be called gone? Only on the upstream's definitive, documented answer to
 * `GET /products/{id}`: 404 `product_not_found` or `product_unavailable` (withdrawn). Any other failure
 * — a 404 without those codes (a wrong base URL answers 404 to everything), a timeout, a 5xx — proves
 * nothing, and nothing is unlisted on it.
 */
import { UpstreamDefinitiveError } from '../upstream/upstream.errors.js';

export const PRODUCT_GONE_CODES: ReadonlySet<string> = new Set(['product_not_found', 'product_unavailable']);

export function isProductGone(error: unknown): boolean {
  return error instanceof UpstreamDefinitiveError && error.httpStatus === 404 && PRODUCT_GONE_CODES.has(error.errorCode);
}
