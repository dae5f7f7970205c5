import { valueChanged, valueOffer, type SourceFacts } from './offer-value.js';

const src = (over: Partial<SourceFacts>): SourceFacts => ({
  supplier: 'main',
  sku_key: '1:A',
  cost_price: '10.00',
  sale_price: '11.00',
  currency: 'CNY',
  available: true,
  stock_status: 'in_stock',
  ...over,
});

describe('valueOffer', () => {
  it("takes the operator's sale price when set", () => {
    expect(valueOffer([src({ cost_price: '90.00', sale_price: '99.00' })], '50.00')).toEqual({
      sale_price: '50.00',
      currency: 'CNY',
      available: true,
    });
  });

  it('prices the highest cost among the available sources, so that every one is bought at or below it', () => {
    const v = valueOffer(
      [
        src({ sku_key: '1:A', cost_price: '10.00', sale_price: '11.00' }),
        src({ supplier: 'second', sku_key: '2:A', cost_price: '12.00', sale_price: '13.20' }),
        src({ sku_key: '3:A', cost_price: '50.00', sale_price: '55.00', available: false, stock_status: 'out_of_stock' }),
      ],
      null,
    );
    expect(v).toEqual({ sale_price: '13.20', currency: 'CNY', available: true });
  });

  it('compares costs as decimals, not as text', () => {
    const v = valueOffer(
      [src({ cost_price: '9.50', sale_price: '10.00' }), src({ sku_key: '2:A', cost_price: '10.00', sale_price: '11.00' })],
      null,
    );
    expect(v.sale_price).toBe('11.00');
  });

  it('of sources tied at the highest cost, takes the highest sale price (their rules differ)', () => {
    const v = valueOffer(
      [src({ sale_price: '11.00' }), src({ sku_key: '2:A', sale_price: '12.00' }), src({ sku_key: '3:A', sale_price: '11.50' })],
      null,
    );
    expect(v.sale_price).toBe('12.00');
  });

  it('with no source available, prices the highest cost of all and is unavailable', () => {
    const v = valueOffer(
      [
        src({ available: false, cost_price: '10.00', sale_price: '11.00' }),
        src({ sku_key: '2:A', available: false, cost_price: '20.00', sale_price: '22.00' }),
      ],
      null,
    );
    expect(v).toEqual({ sale_price: '22.00', currency: 'CNY', available: false });
  });

  it('ignores a source its catalog lacks; with no known cost the sale price is null', () => {
    const gone = src({ sku_key: '2:A', cost_price: null, sale_price: null, currency: null, available: false, stock_status: null });
    expect(valueOffer([src({}), gone], null)).toEqual({ sale_price: '11.00', currency: 'CNY', available: true });
    expect(valueOffer([gone], null)).toEqual({ sale_price: null, currency: null, available: false });
  });
});

describe('valueChanged', () => {
  const v = { sale_price: '12.50', currency: 'CNY', available: true };
  it('sees a new offer, a price, an availability or a currency change', () => {
    expect(valueChanged(null, v)).toBe(true);
    expect(valueChanged(v, { ...v, sale_price: '12.51' })).toBe(true);
    expect(valueChanged(v, { ...v, available: false })).toBe(true);
    expect(valueChanged(v, { ...v, currency: 'USD' })).toBe(true);
    expect(valueChanged(v, { ...v, sale_price: null })).toBe(true);
    expect(valueChanged({ ...v, sale_price: null }, v)).toBe(true);
  });
  it('does not see the same value written another way', () => {
    expect(valueChanged(v, { ...v, sale_price: '12.5' })).toBe(false);
    expect(valueChanged({ ...v, sale_price: null }, { ...v, sale_price: null })).toBe(false);
  });
});
