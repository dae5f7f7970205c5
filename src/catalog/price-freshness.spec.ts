import { chargeVerdict, confirmationServes, isFresh } from './price-freshness.js';

describe('isFresh', () => {
  it('is within the window, bounds included; never with a window of 0 nor for a time ahead of now', () => {
    expect(isFresh(1000, 1000, 30_000)).toBe(true);
    expect(isFresh(1000, 31_000, 30_000)).toBe(true);
    expect(isFresh(1000, 31_001, 30_000)).toBe(false);
    expect(isFresh(1000, 1000, 0)).toBe(false);
    expect(isFresh(2000, 1000, 30_000)).toBe(false);
  });
});

describe('chargeVerdict', () => {
  const checked = { unitCost: '3.10', quantity: 3, currency: 'CNY' };
  it.each([
    // amount, currency, verdict
    ['9.30', 'CNY', 'confirms'],
    ['9.3', 'CNY', 'confirms'], // decimal equality, not string equality
    ['9.300', undefined, 'confirms'],
    ['9.29', 'CNY', 'below'], // a member price, a tier, a price cut
    ['9.31', 'CNY', 'differs'], // a price rise
    ['9.30', 'USD', 'differs'], // another currency
    [undefined, 'CNY', 'differs'],
    ['', 'CNY', 'differs'],
    ['abc', 'CNY', 'differs'],
  ])('%s %s → %s', (amount, currency, verdict) => {
    expect(chargeVerdict({ amount, currency }, checked)).toBe(verdict);
  });

  it('is exact where floating point is not (0.1 × 3)', () => {
    expect(chargeVerdict({ amount: '0.3' }, { unitCost: '0.1', quantity: 3, currency: null })).toBe('confirms');
    expect(chargeVerdict({ amount: '0.30000000000000004' }, { unitCost: '0.1', quantity: 3, currency: null })).toBe('differs');
  });
});

describe('confirmationServes', () => {
  const c = { skuId: 7, unitCost: '3.10', at: 10_000 };
  const local = { upstreamSkuId: 7, costPrice: '3.1' };
  it('serves a fresh confirmation of the sku_id and cost the local catalog holds', () => {
    expect(confirmationServes(c, local, 12_000, 30_000)).toBe(true);
  });
  it('does not serve past the window, with a window of 0, for another sku_id or another local cost, or without one', () => {
    expect(confirmationServes(c, local, 40_001, 30_000)).toBe(false);
    expect(confirmationServes(c, local, 10_000, 0)).toBe(false);
    expect(confirmationServes(c, { ...local, upstreamSkuId: 8 }, 12_000, 30_000)).toBe(false);
    expect(confirmationServes(c, { ...local, costPrice: '3.20' }, 12_000, 30_000)).toBe(false);
    expect(confirmationServes(undefined, local, 12_000, 30_000)).toBe(false);
  });
});
