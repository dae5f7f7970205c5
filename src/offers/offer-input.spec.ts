import { SHOP_ORDER_NO_RE } from '../orders/orders.dto.js';
import { checkOfferSources, MAX_SOURCES, OFFER_CODE_RE, parseOfferInput, sourceKey, type OfferSourceRef } from './offer-input.js';

const body = (over: Record<string, unknown> = {}) => ({
  routing: 'priority',
  sources: [
    { supplier: 'main', sku_key: '1:A' },
    { supplier: 'second', sku_key: '9001:A' },
  ],
  ...over,
});
const fieldsOf = (code: string, b: unknown) => {
  const r = parseOfferInput(code, b);
  return r.ok ? null : r.fields;
};

describe('parseOfferInput', () => {
  it("takes the code's pattern from shop_order_no's", () => {
    expect(OFFER_CODE_RE.source).toBe(SHOP_ORDER_NO_RE.source);
  });

  it('accepts a full offer and keeps the sources in their order', () => {
    const r = parseOfferInput('steam-50', body({ title: 'Steam 50', sale_price: '55.00', routing: 'cheapest' }));
    expect(r).toEqual({
      ok: true,
      input: {
        code: 'steam-50',
        title: 'Steam 50',
        routing: 'cheapest',
        salePrice: '55.00',
        sources: [
          { supplier: 'main', sku_key: '1:A' },
          { supplier: 'second', sku_key: '9001:A' },
        ],
      },
    });
  });

  it('takes title and sale_price as optional (absent or null)', () => {
    const r = parseOfferInput('x', body({ title: null, sale_price: null }));
    expect(r.ok && { title: r.input.title, salePrice: r.input.salePrice }).toEqual({ title: null, salePrice: null });
  });

  it.each([
    ['a bad code', 'has space', body(), ['code']],
    ['a code too long', 'x'.repeat(65), body(), ['code']],
    ['no routing', 'x', body({ routing: undefined }), ['routing']],
    ['an unknown routing', 'x', body({ routing: 'random' }), ['routing']],
    ['no sources', 'x', body({ sources: [] }), ['sources']],
    ['sources not a list', 'x', body({ sources: 'main' }), ['sources']],
    [
      'more than 10 sources',
      'x',
      body({ sources: Array.from({ length: MAX_SOURCES + 1 }, (_, i) => ({ supplier: 'main', sku_key: `${i + 1}:A` })) }),
      ['sources'],
    ],
    ['a source not an object', 'x', body({ sources: ['main'] }), ['sources.0']],
    ['a bad supplier name', 'x', body({ sources: [{ supplier: 'Main', sku_key: '1:A' }] }), ['sources.0.supplier']],
    ['a bad sku_key', 'x', body({ sources: [{ supplier: 'main', sku_key: 'A' }] }), ['sources.0.sku_key']],
    ['an extra member of a source', 'x', body({ sources: [{ supplier: 'main', sku_key: '1:A', cost: '1' }] }), ['sources.0.cost']],
    ['an extra member', 'x', body({ margin: '1' }), ['margin']],
    ['a numeric sale price', 'x', body({ sale_price: 12.5 }), ['sale_price']],
    ['a zero sale price', 'x', body({ sale_price: '0.00' }), ['sale_price']],
    ['a negative sale price', 'x', body({ sale_price: '-1' }), ['sale_price']],
    ['a title not a string', 'x', body({ title: 5 }), ['title']],
    ['a title too long', 'x', body({ title: 't'.repeat(201) }), ['title']],
  ])('refuses %s, naming its fields', (_what, code, b, fields) => {
    expect(Object.keys(fieldsOf(code, b) ?? {})).toEqual(fields);
  });

  it('refuses a SKU twice, naming the second with the first', () => {
    const fields = fieldsOf(
      'x',
      body({
        sources: [
          { supplier: 'main', sku_key: '1:A' },
          { supplier: 'second', sku_key: '1:A' },
          { supplier: 'main', sku_key: '1:A' },
        ],
      }),
    );
    expect(fields).toEqual({ 'sources.2': ['the SKU 1:A of main is sources.0 already'] });
  });

  it('refuses a body that is not an object', () => {
    expect(fieldsOf('x', [])).toEqual({ body: ['the body must be a JSON object'] });
    expect(fieldsOf('x', null)).toEqual({ body: ['the body must be a JSON object'] });
  });
});

describe('checkOfferSources', () => {
  const sources: OfferSourceRef[] = [
    { supplier: 'main', sku_key: '1:A' },
    { supplier: 'second', sku_key: '9001:A' },
  ];
  const facts = (skus: Array<[OfferSourceRef, string | null]>, suppliers = ['main', 'second']) => ({
    supplierKnown: (n: string) => suppliers.includes(n),
    skus: new Map(skus.map(([s, currency]) => [sourceKey(s), { currency }])),
  });

  it('passes known SKUs of known suppliers in one currency (an unknown currency agrees with any)', () => {
    expect(
      checkOfferSources(
        sources,
        facts([
          [sources[0], 'CNY'],
          [sources[1], 'CNY'],
        ]),
      ),
    ).toBeNull();
    expect(
      checkOfferSources(
        sources,
        facts([
          [sources[0], 'CNY'],
          [sources[1], null],
        ]),
      ),
    ).toBeNull();
  });

  it('refuses an unknown supplier', () => {
    expect(checkOfferSources(sources, facts([[sources[0], 'CNY']], ['main']))).toEqual({
      'sources.1.supplier': ['no supplier named second'],
    });
  });

  it("refuses a SKU its supplier's catalog lacks (another supplier's SKU of that key does not count)", () => {
    const other = { supplier: 'main', sku_key: '9001:A' };
    expect(
      checkOfferSources(
        sources,
        facts([
          [sources[0], 'CNY'],
          [other, 'CNY'],
        ]),
      ),
    ).toEqual({
      'sources.1.sku_key': ['the supplier second has no SKU 9001:A'],
    });
  });

  it('refuses sources of different currencies', () => {
    expect(
      checkOfferSources(
        sources,
        facts([
          [sources[0], 'CNY'],
          [sources[1], 'USD'],
        ]),
      ),
    ).toEqual({
      sources: ['the sources must share one currency: CNY (sources 0), USD (sources 1)'],
    });
  });
});
