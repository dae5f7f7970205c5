import { formatMoney, isMoney, parseMoney, percentOf } from './sandbox-money.js';

describe('sandbox money', () => {
  it('parses decimal strings of at most two decimals into cents, and formats cents back', () => {
    expect(['0', '12', '12.5', '12.50', '0.01', '999999999999999.99'].map(parseMoney)).toEqual([
      0n,
      1200n,
      1250n,
      1250n,
      1n,
      99999999999999999n,
    ]);
    expect([0n, 1n, 1250n, -705n, 99999999999999999n].map(formatMoney)).toEqual(['0.00', '0.01', '12.50', '-7.05', '999999999999999.99']);
  });

  it('refuses what is not such an amount: a float, three decimals, a sign, a blank, 16 digits', () => {
    for (const bad of ['1.234', '-1', '+1', '', ' 1', '1e3', '.5', '1.', '1234567890123456']) {
      expect(isMoney(bad)).toBe(false);
      expect(() => parseMoney(bad)).toThrow(RangeError);
    }
    expect([isMoney('1.23'), isMoney(1.23), isMoney(null)]).toEqual([true, false, false]);
  });

  it('takes a percentage rounded down to the cent', () => {
    expect([percentOf(1000n, 10), percentOf(999n, 10), percentOf(1n, 50), percentOf(1234n, 100)]).toEqual([100n, 99n, 0n, 1234n]);
  });
});
