import { priceReadFailureRoute } from './price-read.js';

describe('priceReadFailureRoute', () => {
  it('a read that reached nothing for the budget or a 429 defers a placement that may be queued', () => {
    expect(priceReadFailureRoute({ budgetWaitExceeded: true, rateLimited: false }, true)).toBe('defer');
    expect(priceReadFailureRoute({ budgetWaitExceeded: false, rateLimited: true }, true)).toBe('defer');
  });

  it('any other failure, or a placement that cannot be queued, is unavailable', () => {
    expect(priceReadFailureRoute({ budgetWaitExceeded: false, rateLimited: false }, true)).toBe('unavailable');
    expect(priceReadFailureRoute({ budgetWaitExceeded: true, rateLimited: false }, false)).toBe('unavailable');
    expect(priceReadFailureRoute({ budgetWaitExceeded: false, rateLimited: true }, false)).toBe('unavailable');
  });
});
