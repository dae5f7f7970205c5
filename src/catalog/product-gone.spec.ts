import { UpstreamDefinitiveError, UpstreamRetryableError, UpstreamUnknownError } from '../upstream/upstream.errors.js';
import { isProductGone } from './product-gone.js';

describe('when a product is gone', () => {
  it('is gone on a 404 product_not_found or product_unavailable, and on nothing else', () => {
    expect(isProductGone(new UpstreamDefinitiveError('getProduct', 'product_not_found', 404, 'no such product'))).toBe(true);
    expect(isProductGone(new UpstreamDefinitiveError('getProduct', 'product_unavailable', 404, 'withdrawn'))).toBe(true);
  });

  it.each([
    ['a 404 without those codes (a wrong base URL)', new UpstreamDefinitiveError('getProduct', 'not_found', 404, 'Not Found')],
    ['product_not_found under another status', new UpstreamDefinitiveError('getProduct', 'product_not_found', 400, 'odd')],
    ['a retryable failure (a 429, a refused connection)', new UpstreamRetryableError('getProduct', 'rate_limited', 30_000, 429)],
    ['an unknown outcome (a timeout, a 5xx)', new UpstreamUnknownError('getProduct', 'http_502', 502)],
    ['an error that is not the upstream’s', new Error('product_not_found')],
    ['no error', undefined],
  ])('proves nothing on %s', (_what, error) => {
    expect(isProductGone(error)).toBe(false);
  });
});
