import { Decimal } from 'decimal.js';
import { compileRule, PricingError, PricingRuleSet, salePrice, validateMarkup, validateMarkupInput } from './pricing.js';

const rule = (markupPercent: string, markupFixed: string, rounding: string) =>
  compileRule({ markupPercent, markupFixed, rounding }, rounding, 'default');

describe('salePrice', () => {
  it.each([
    // cost, percent, fixed, step, expected
    ['10.00', '0', '0', '0.01', '10.00'],
    ['10.00', '10', '0', '0.01', '11.00'],
    ['10.00', '12.5', '0', '0.01', '11.25'],
    ['10.01', '12.5', '0', '0.01', '11.27'], // 11.26125 rounded up
    ['0.99', '33.333', '0', '0.01', '1.32'], // 1.3199967 up to 1.32
    ['10.00', '0', '0.30', '0.01', '10.30'],
    ['10.00', '10', '0.30', '0.01', '11.30'],
    ['19.99', '5', '0', '0.1', '21.00'], // 20.9895 up to 21.0, printed at the cost's scale
    ['19.90', '0', '0', '0.1', '19.90'], // already on the step
    ['19.91', '0', '0', '0.1', '20.00'],
    ['10.00', '12.5', '0', '1', '12.00'],
    ['11.00', '0', '0', '1', '11.00'],
    ['11.01', '0', '0', '1', '12.00'],
    ['10.00', '0', '0', '0.05', '10.00'],
    ['10.01', '0', '0', '0.05', '10.05'],
    ['10.06', '0', '0', '0.05', '10.10'],
    ['7.00', '0', '0', '5', '10.00'],
    ['10.00', '0', '0', '0.25', '10.00'],
    ['10.001', '0', '0', '0.25', '10.250'],
    ['10.3', '0', '0', '0.3', '10.5'],
    ['100', '0', '0', '0.01', '100.00'], // integer cost printed at the step's scale
    ['10.00', '-20', '0', '0.01', '10.00'], // negative markup floored at cost
    ['10.00', '-100', '0', '0.01', '10.00'],
    ['10.00', '0', '-5', '0.01', '10.00'], // negative fixed floored at cost
    ['10.00', '-10', '0.50', '0.01', '10.00'], // 9.50 < cost
    ['10.00', '-5', '1.00', '0.01', '10.50'], // 9.5 + 1 above cost
    ['10.005', '-50', '0', '0.01', '10.010'], // floored at a cost off the grid, then up to the grid
    ['0.00', '50', '0', '0.01', '0.00'],
    ['0.00', '50', '0.10', '0.01', '0.10'],
    ['123456789012.34', '1', '0', '0.01', '124691356902.47'], // big amounts stay exact (124691356902.4634 up)
    ['0.01', '1', '0', '0.01', '0.02'], // 0.0101 up
    ['3.33', '200', '0', '0.01', '9.99'],
    ['1.10', '0.1', '0', '0.001', '1.102'], // 1.1011 → 1.102 at step 0.001
  ])('cost %s, +%s %%, +%s, step %s → %s', (cost, percent, fixed, step, expected) => {
    expect(salePrice(cost, rule(percent, fixed, step))).toBe(expected);
  });

  it('is never below cost and always on the step grid', () => {
    const steps = ['0.01', '0.1', '1', '0.05', '0.25'];
    const percents = ['-50', '-1', '0', '0.5', '7', '33.3'];
    const fixeds = ['-1', '0', '0.07'];
    const costs = ['0.01', '0.99', '1.00', '9.99', '10.00', '12.34', '999.99'];
    for (const step of steps)
      for (const p of percents)
        for (const f of fixeds)
          for (const c of costs) {
            const price = salePrice(c, rule(p, f, step));
            expect(Number(price)).toBeGreaterThanOrEqual(Number(c));
            const ratio = Number(price) / Number(step);
            expect(Math.abs(ratio - Math.round(ratio))).toBeLessThan(1e-9);
          }
  });

  it('the no-markup shortcut agrees with the arithmetic', () => {
    for (const step of ['1', '0.1', '0.01', '0.001']) {
      const identity = rule('0', '0', step);
      expect(identity.identity).toBe(true);
      const slow = { ...identity, identity: false };
      for (const cost of ['0', '0.00', '1', '10.00', '10.5', '10.50', '10.05', '10.005', '99.999', '123456.7'])
        expect([step, cost, salePrice(cost, identity)]).toEqual([step, cost, salePrice(cost, slow)]);
    }
    expect(rule('0', '0', '0.05').identity).toBe(false);
    expect(rule('1', '0', '0.01').identity).toBe(false);
  });

  it('refuses money that is not a decimal string', () => {
    expect(() => salePrice('1e3', rule('0', '0', '0.01'))).toThrow(PricingError);
    expect(() => salePrice('abc', rule('0', '0', '0.01'))).toThrow(PricingError);
  });
});

describe('validateMarkup', () => {
  it('names the field at fault', () => {
    const fieldOf = (f: () => void) => {
      try {
        f();
      } catch (e) {
        return (e as PricingError).field;
      }
      return null;
    };
    expect(fieldOf(() => validateMarkup({ markupPercent: 'x', markupFixed: '0' }))).toBe('markup_percent');
    expect(fieldOf(() => validateMarkup({ markupPercent: '-100.01', markupFixed: '0' }))).toBe('markup_percent');
    expect(fieldOf(() => validateMarkup({ markupPercent: '1', markupFixed: '1,5' }))).toBe('markup_fixed');
    expect(fieldOf(() => validateMarkup({ markupPercent: '1', markupFixed: '0', rounding: '0' }))).toBe('rounding');
    expect(fieldOf(() => validateMarkup({ markupPercent: '1', markupFixed: '0', rounding: '-0.01' }))).toBe('rounding');
    expect(fieldOf(() => validateMarkup({ markupPercent: '-100', markupFixed: '-3', rounding: '0.5' }))).toBeNull();
  });
});

describe('PricingRuleSet', () => {
  const defaults = { markupPercent: '10', markupFixed: '0', rounding: '0.01' };
  const set = new PricingRuleSet(defaults, [
    { scope: 'category', categoryId: 1, markupPercent: '20', markupFixed: '0' },
    { scope: 'category', categoryId: 101, markupPercent: '30', markupFixed: '0', rounding: '1' },
    { scope: 'sku', skuCode: 'SKU-A', markupPercent: '0', markupFixed: '0.50' },
  ]);

  it('uses the defaults without a rule', () => {
    expect(set.priceOf('10.00', { skuCode: 'X', categoryId: 201, parentCategoryId: 2 })).toBe('11.00');
    expect(set.ruleFor({ skuCode: 'X', categoryId: 201, parentCategoryId: 2 }).source).toBe('default');
  });

  it('a parent category rule applies to its children', () => {
    expect(set.priceOf('10.00', { skuCode: 'X', categoryId: 102, parentCategoryId: 1 })).toBe('12.00');
    expect(set.ruleFor({ skuCode: 'X', categoryId: 102, parentCategoryId: 1 }).source).toBe('parent_category');
  });

  it('the leaf category beats its parent, with its own rounding', () => {
    expect(set.priceOf('10.01', { skuCode: 'X', categoryId: 101, parentCategoryId: 1 })).toBe('14.00'); // 13.013 up to 14
  });

  it('a sku_code rule beats every category rule', () => {
    expect(set.priceOf('10.00', { skuCode: 'SKU-A', categoryId: 101, parentCategoryId: 1 })).toBe('10.50');
  });

  it('a rule by sku_key applies to that SKU only, and beats a rule by its code', () => {
    const keyed = new PricingRuleSet(defaults, [
      { scope: 'sku', skuCode: 'DEFAULT', skuKey: '12:DEFAULT', markupPercent: '0', markupFixed: '1' },
      { scope: 'sku', skuCode: 'SKU-A', markupPercent: '0', markupFixed: '0.50' },
      { scope: 'sku', skuCode: 'SKU-A', skuKey: '3:SKU-A', markupPercent: '0', markupFixed: '2' },
    ]);
    expect(keyed.priceOf('10.00', { skuKey: '12:DEFAULT', skuCode: 'DEFAULT', categoryId: 101 })).toBe('11.00');
    expect(keyed.ruleFor({ skuKey: '13:DEFAULT', skuCode: 'DEFAULT', categoryId: 101 }).source).toBe('default');
    expect(keyed.priceOf('10.00', { skuKey: '3:SKU-A', skuCode: 'SKU-A', categoryId: 101 })).toBe('12.00');
    expect(keyed.priceOf('10.00', { skuKey: '4:SKU-A', skuCode: 'SKU-A', categoryId: 101 })).toBe('10.50');
  });

  it('rules are per supplier: SKU > category > supplier > default', () => {
    const scoped = new PricingRuleSet(defaults, [
      { scope: 'supplier', supplier: 'second', markupPercent: '50', markupFixed: '0' },
      { scope: 'category', supplier: 'second', categoryId: 1, markupPercent: '20', markupFixed: '0' },
      { scope: 'category', supplier: 'main', categoryId: 1, markupPercent: '30', markupFixed: '0' },
      { scope: 'sku', supplier: 'second', skuCode: 'DEFAULT', skuKey: '1:DEFAULT', markupPercent: '0', markupFixed: '1' },
    ]);
    const sku = { skuKey: '1:DEFAULT', skuCode: 'DEFAULT', categoryId: 1 };
    expect(scoped.priceOf('10.00', { ...sku, supplier: 'second' })).toBe('11.00');
    expect(scoped.ruleFor({ ...sku, supplier: 'main' }).source).toBe('category');
    expect(scoped.priceOf('10.00', { ...sku, supplier: 'main' })).toBe('13.00');
    expect(scoped.priceOf('10.00', { ...sku, skuKey: '2:DEFAULT', supplier: 'second' })).toBe('12.00');
    expect(scoped.ruleFor({ ...sku, skuKey: '2:DEFAULT', categoryId: 5, supplier: 'second' }).source).toBe('supplier');
    expect(scoped.priceOf('10.00', { ...sku, skuKey: '2:DEFAULT', categoryId: 5, supplier: 'second' })).toBe('15.00');
    expect(scoped.ruleFor({ ...sku, skuKey: '2:DEFAULT', categoryId: 5, supplier: 'main' }).source).toBe('default');
  });

  it('a rule without rounding uses the default step', () => {
    expect(set.priceOf('10.01', { skuCode: 'X', categoryId: 1, parentCategoryId: 0 })).toBe('12.02'); // 12.012 up
  });

  it('memoizes without changing answers', () => {
    const small = new PricingRuleSet(defaults, [], new Map(), 2);
    const answers = ['1.00', '2.00', '3.00', '1.00', '2.00'].map((c) => small.priceOf(c, { skuCode: 'X', categoryId: 1 }));
    expect(answers).toEqual(['1.10', '2.20', '3.30', '1.10', '2.20']);
  });
});

describe('validateMarkupInput: markups given to the service', () => {
  it.each([
    ['markup_percent', { markupPercent: '1000000000000000', markupFixed: '0', rounding: '0.01' }],
    ['markup_percent', { markupPercent: `0.${'0'.repeat(60)}1`, markupFixed: '0', rounding: '0.01' }],
    ['markup_percent', { markupPercent: `1${'0'.repeat(1000)}`, markupFixed: '0', rounding: '0.01' }],
    ['markup_fixed', { markupPercent: '0', markupFixed: '-0.123456789', rounding: '0.01' }],
    ['rounding', { markupPercent: '0', markupFixed: '0', rounding: '0.000000001' }],
    ['markup_percent', { markupPercent: '-100.5', markupFixed: '0', rounding: '0.01' }],
  ])('refuses %s of %j, naming it', (field, input) => {
    expect(() => validateMarkupInput(input, 'rules.0.')).toThrow(PricingError);
    try {
      validateMarkupInput(input, 'rules.0.');
    } catch (e) {
      expect((e as PricingError).field).toBe(`rules.0.${field}`);
    }
  });

  it('takes markups at its limits, and prices them exactly (rounded up)', () => {
    const limits = { markupPercent: '0.00000001', markupFixed: '-999999999999999.99999999', rounding: '0.00000001' };
    expect(() => validateMarkupInput(limits)).not.toThrow();
    expect(() => validateMarkupInput({ markupPercent: '000000000000000012.5', markupFixed: '0', rounding: null })).not.toThrow();
    // 10.00 × (1 + 0.00000001 %) is above 10.00: rounded up to the cent it is 10.01
    expect(salePrice('10.00', rule('0.00000001', '0', '0.01'))).toBe('10.01');
    expect(salePrice('10.00', rule('0', '0.00000001', '0.01'))).toBe('10.01');
    // the largest markup on a large cost: exact (the product has 33 significant digits)
    const Exact = Decimal.clone({ precision: 200 });
    const exact = new Exact('999999999999999.99').mul(new Exact('999999999999999').div(100).plus(1));
    expect(salePrice('999999999999999.99', rule('999999999999999', '0', '0.01'))).toBe(exact.toFixed(2, Decimal.ROUND_CEIL));
  });
});
