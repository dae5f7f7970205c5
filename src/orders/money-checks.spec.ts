import { aboveCeiling, expectedAmount, overcharge, priceCeiling, sameAmount } from './money-checks.js';

describe('priceCeiling', () => {
  it('is the max_unit_cost when the shop sent one, even below the known sale price', () => {
    expect(priceCeiling('9.00', '12.00')).toBe('9.00');
    expect(priceCeiling('15.00', '12.00')).toBe('15.00');
  });

  it('defaults to the sale price known before the fresh read', () => {
    expect(priceCeiling(undefined, '12.00')).toBe('12.00');
    expect(priceCeiling(null, '12.00')).toBe('12.00');
  });

  it('is 0 when neither is known', () => {
    expect(priceCeiling(undefined, undefined)).toBe('0');
    expect(priceCeiling(null, null)).toBe('0');
  });
});

describe('aboveCeiling (the price guard)', () => {
  it.each([
    // unit cost, ceiling, refused
    ['12.00', '12.00', false],
    ['12', '12.000', false],
    ['12.01', '12.00', true],
    ['11.99', '12.00', false],
    ['12.000000000000000000000000001', '12', true], // beyond a JavaScript number's digits
    ['99999999999999999999.99', '99999999999999999999.98', true],
    ['0.00', '0', false],
  ])('%s against %s: %s', (unitCost, ceiling, refused) => {
    expect(aboveCeiling(unitCost, ceiling)).toBe(refused);
  });
});

describe('expectedAmount', () => {
  it.each([
    // unit cost, quantity, expected
    ['10.00', 2, '20.00'],
    ['10', 3, '30'],
    ['0.10', 3, '0.30'], // 0.1 × 3 is exact, not 0.30000000000000004
    ['1.005', 7, '7.035'],
    ['12345678901234567890.12', 1000, '12345678901234567890120.00'], // more digits than a default Decimal keeps
    ['0.00', 5, '0.00'],
  ])('%s × %d = %s', (unitCost, quantity, expected) => {
    expect(expectedAmount(unitCost, quantity)).toBe(expected);
  });
});

describe('overcharge', () => {
  it('is the expected amount when the charge is above it', () => {
    expect(overcharge('22.00', '10.00', 2)).toEqual({ expected: '20.00' });
    expect(overcharge('20.01', '10.00', 2)).toEqual({ expected: '20.00' });
  });

  it('is null for a charge equal to or below the expected amount, whatever its scale', () => {
    expect(overcharge('20.00', '10.00', 2)).toBeNull();
    expect(overcharge('20', '10.00', 2)).toBeNull();
    expect(overcharge('19.99', '10.00', 2)).toBeNull();
  });

  it('is null when the charge or the checked unit cost is unknown', () => {
    expect(overcharge(undefined, '10.00', 2)).toBeNull();
    expect(overcharge(null, '10.00', 2)).toBeNull();
    expect(overcharge('', '10.00', 2)).toBeNull();
    expect(overcharge('22.00', null, 2)).toBeNull();
  });
});

describe('sameAmount', () => {
  it('compares as numbers, not as text', () => {
    expect(sameAmount('20', '20.00')).toBe(true);
    expect(sameAmount('20.00', '20.01')).toBe(false);
  });

  it('takes two absent amounts as the same and one absent as different', () => {
    expect(sameAmount(null, undefined)).toBe(true);
    expect(sameAmount(null, null)).toBe(true);
    expect(sameAmount('0', null)).toBe(false);
    expect(sameAmount(undefined, '0')).toBe(false);
  });
});
