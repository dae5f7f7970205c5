import type { UpstreamProduct } from '../upstream/upstream.types.js';
import {
  addCounts,
  diffSku,
  emptyCounts,
  eventsForDiff,
  FINGERPRINT_VERSION,
  isAvailable,
  jsonEqual,
  moneyEqual,
  productFingerprint,
  skuRowsFromProduct,
  type SkuRow,
} from './sku-diff.js';

function row(over: Partial<SkuRow> = {}): SkuRow {
  return {
    sku_key: '1:SKU-1',
    sku_code: 'SKU-1',
    upstream_sku_id: 1001,
    product_id: 1,
    product_slug: 'product-1',
    product_title: { en: 'One', 'zh-CN': '一' },
    product_description: { en: 'Desc' },
    category_id: 101,
    spec_values: { duration: '1 month' },
    cost_price: '10.00',
    sale_price: '11.00',
    original_price: null,
    member_price: null,
    stock_status: 'in_stock',
    stock_quantity: 100,
    sku_active: true,
    product_active: true,
    fulfillment_type: 'auto',
    manual_form_schema: null,
    listed: true,
    ...over,
  };
}

describe('diffSku', () => {
  it('a new SKU is one created change', () => {
    const d = diffSku(null, row());
    expect(d).toMatchObject({ created: true, kinds: ['created'], relisted: false, delisted: false });
    expect(d.changes).toEqual([{ field: 'created', kind: 'created', old: null, new: null }]);
  });

  it('the same SKU is no change', () => {
    const d = diffSku(row(), row());
    expect(d.changes).toEqual([]);
    expect(d.kinds).toEqual([]);
  });

  it('money compares by value, JSON by value whatever the key order', () => {
    const d = diffSku(
      row({ cost_price: '10.0', product_title: { 'zh-CN': '一', en: 'One' }, spec_values: { duration: '1 month' } }),
      row(),
    );
    expect(d.changes).toEqual([]);
    expect(moneyEqual('1.50', '1.5')).toBe(true);
    expect(moneyEqual('1.50', null)).toBe(false);
    expect(moneyEqual(null, null)).toBe(true);
    expect(jsonEqual({ a: [1, { b: 2 }] }, { a: [1, { b: 2 }] })).toBe(true);
    expect(jsonEqual({ a: [1, 2] }, { a: [2, 1] })).toBe(false);
    expect(jsonEqual({ a: 1 }, { a: 1, b: null })).toBe(false);
    expect(jsonEqual(null, {})).toBe(false);
  });

  it.each([
    [{ cost_price: '12.00', sale_price: '13.20' }, ['price'], ['cost_price', 'sale_price']],
    [{ original_price: '15.00' }, ['price'], ['original_price']],
    [{ member_price: '9.50' }, ['price'], ['member_price']],
    [{ stock_status: 'low_stock', stock_quantity: 3 }, ['stock'], ['stock_status', 'stock_quantity']],
    [{ stock_quantity: 99 }, ['stock'], ['stock_quantity']],
    [{ upstream_sku_id: 2002 }, ['sku_id'], ['upstream_sku_id']],
    [{ listed: false }, ['listing'], ['listed']],
    [{ sku_active: false }, ['listing'], ['sku_active']],
    [{ product_active: false }, ['listing'], ['product_active']],
    [{ product_title: { en: 'Two' } }, ['other'], ['product_title']],
    [{ category_id: 102 }, ['other'], ['category_id']],
    [{ spec_values: { duration: '3 months' } }, ['other'], ['spec_values']],
    [{ manual_form_schema: { fields: [] } }, ['other'], ['manual_form_schema']],
    [{ product_id: 2 }, ['other'], ['product_id']],
    [
      { cost_price: '1.00', stock_quantity: 5, upstream_sku_id: 7, listed: false, fulfillment_type: 'manual' },
      ['price', 'stock', 'sku_id', 'listing', 'other'],
      ['upstream_sku_id', 'cost_price', 'stock_quantity', 'listed', 'fulfillment_type'],
    ],
  ] as Array<[Partial<SkuRow>, string[], string[]]>)('%j → kinds %j', (change, kinds, fields) => {
    const old = row();
    const d = diffSku(old, row(change));
    expect(d.kinds).toEqual(kinds);
    expect(d.changes.map((c) => c.field)).toEqual(fields);
    for (const c of d.changes) {
      expect(c.old).toEqual(old[c.field as keyof SkuRow] ?? null);
      expect(c.new).toEqual((change as Record<string, unknown>)[c.field]);
    }
  });

  it('tells delisting and relisting apart', () => {
    expect(diffSku(row(), row({ listed: false }))).toMatchObject({ delisted: true, relisted: false });
    expect(diffSku(row({ listed: false }), row())).toMatchObject({ delisted: false, relisted: true });
  });

  it('counts each kind once per SKU', () => {
    const counts = emptyCounts();
    addCounts(counts, diffSku(null, row()));
    addCounts(counts, diffSku(row(), row({ cost_price: '1.00', sale_price: '1.10' })));
    addCounts(counts, diffSku(row(), row({ stock_quantity: 1, listed: false })));
    expect(counts).toEqual({ created: 1, price: 1, stock: 1, sku_id: 0, listing: 1, other: 0 });
  });
});

describe('eventsForDiff', () => {
  it('announces price, stock and listing changes, nothing for other fields', () => {
    const old = row();
    const next = row({
      cost_price: '12.00',
      sale_price: '13.20',
      stock_status: 'out_of_stock',
      stock_quantity: 0,
      product_title: { en: 'x' },
    });
    const events = eventsForDiff(old, next, diffSku(old, next), 'CNY', 'main');
    expect(events.map((e) => e.type)).toEqual(['sku.price_changed', 'sku.stock_changed']);
    expect(events[0].payload).toMatchObject({
      supplier: 'main',
      sku_code: 'SKU-1',
      cost_price: '12.00',
      sale_price: '13.20',
      old_cost_price: '10.00',
      currency: 'CNY',
    });
    expect(events[1].payload).toMatchObject({ stock_status: 'out_of_stock', old_stock_status: 'in_stock', available: false });
    expect(
      eventsForDiff(old, row({ product_title: { en: 'x' } }), diffSku(old, row({ product_title: { en: 'x' } })), 'CNY', 'main'),
    ).toEqual([]);
  });

  it('a created SKU and a delisting are listing changes', () => {
    const created = eventsForDiff(null, row(), diffSku(null, row()), null, 'main');
    expect(created).toEqual([expect.objectContaining({ type: 'sku.listing_changed', subject: 'SKU-1' })]);
    expect(created[0].payload).toMatchObject({ created: true, listed: true, available: true });
    const delisted = eventsForDiff(row(), row({ listed: false }), diffSku(row(), row({ listed: false })), null, 'second');
    expect(delisted[0].payload).toMatchObject({
      supplier: 'second',
      listed: false,
      available: false,
      old_listed: true,
      old_available: true,
    });
  });
});

describe('productFingerprint', () => {
  const product = (over: Partial<UpstreamProduct> = {}): UpstreamProduct => ({
    id: 7,
    slug: 'product-7',
    title: { en: 'Seven' },
    description: {},
    price_amount: '5.00',
    fulfillment_type: 'auto',
    is_active: true,
    category_id: 102,
    skus: [{ id: 11, sku_code: 'A', spec_values: {}, price_amount: '5.00', stock_status: 'in_stock', stock_quantity: 20, is_active: true }],
    ...over,
  });

  it('is the same for the same product, and carries its version', () => {
    expect(productFingerprint(product())).toBe(productFingerprint(product()));
    expect(productFingerprint(product())).toMatch(new RegExp(`^${FINGERPRINT_VERSION}\\.[A-Za-z0-9_-]{27}$`));
  });

  it('moves with any field of the product or of a SKU', () => {
    const base = productFingerprint(product());
    expect(productFingerprint(product({ title: { en: 'Eight' } }))).not.toBe(base);
    expect(productFingerprint(product({ category_id: 103 }))).not.toBe(base);
    const sku = product().skus[0];
    for (const change of [{ id: 12 }, { price_amount: '5.01' }, { stock_quantity: 19 }, { is_active: false }, { sku_code: 'B' }]) {
      expect(productFingerprint(product({ skus: [{ ...sku, ...change }] }))).not.toBe(base);
    }
    expect(productFingerprint(product({ skus: [sku, { ...sku, sku_code: 'C' }] }))).not.toBe(base);
    expect(productFingerprint(product({ skus: [{ ...sku, spec_values: { d: '1' } }] }))).not.toBe(base);
    expect(productFingerprint(product({ manual_form_schema: { fields: [] } }))).not.toBe(base);
    // the product's own row: content, images, tags, SEO (an unchanged page still costs nothing)
    expect(productFingerprint(product({ images: ['x.png'] }))).not.toBe(base);
    expect(productFingerprint(product({ content: { en: '<p>x</p>' } }))).not.toBe(base);
    expect(productFingerprint(product({ tags: ['t'] }))).not.toBe(base);
    expect(productFingerprint(product({ seo_meta: { a: 1 } }))).not.toBe(base);
  });

  it('ignores what the catalog does not keep', () => {
    const base = productFingerprint(product());
    expect(
      productFingerprint(product({ updated_at: '2026-01-01T00:00:00Z', created_at: '2025-01-01T00:00:00Z', price_amount: '1.00' })),
    ).toBe(base);
  });
});

describe('isAvailable', () => {
  it('is listed, active and not out of stock', () => {
    expect(isAvailable(row())).toBe(true);
    expect(isAvailable(row({ listed: false }))).toBe(false);
    expect(isAvailable(row({ sku_active: false }))).toBe(false);
    expect(isAvailable(row({ product_active: false }))).toBe(false);
    expect(isAvailable(row({ stock_status: 'out_of_stock' }))).toBe(false);
    expect(isAvailable(row({ stock_status: 'unlimited', stock_quantity: -1 }))).toBe(true);
  });
});

describe('skuRowsFromProduct', () => {
  const product: UpstreamProduct = {
    id: 7,
    slug: 'product-7',
    title: { en: 'Seven' },
    description: { en: 'About seven' },
    price_amount: '5.00',
    fulfillment_type: 'manual',
    manual_form_schema: { fields: [{ key: 'account' }] },
    is_active: true,
    category_id: 102,
    skus: [
      {
        id: 11,
        sku_code: 'A',
        spec_values: { d: '1' },
        price_amount: ' 5.00 ',
        original_price: '6.00',
        stock_status: 'in_stock',
        stock_quantity: 20,
        is_active: true,
      },
      {
        id: 12,
        sku_code: 'B',
        spec_values: {},
        price_amount: '9.00',
        member_price: '',
        stock_status: 'unlimited',
        stock_quantity: -1,
        is_active: false,
      },
      { id: 13, sku_code: 'A', spec_values: {}, price_amount: '1.00', stock_status: 'in_stock', stock_quantity: 1, is_active: true },
    ],
  };

  it('maps every SKU with its product, prices it, and keeps the first of a repeated code', () => {
    const calls: string[] = [];
    const { rows, duplicates } = skuRowsFromProduct(product, (cost, s) => {
      calls.push(`${s.skuCode}@${s.categoryId}:${cost}`);
      return `${cost}!`;
    });
    expect(duplicates).toEqual(['A']);
    expect(calls).toEqual(['A@102:5.00', 'B@102:9.00']);
    expect(rows).toHaveLength(2);
    expect(rows[0]).toEqual({
      sku_key: '7:A',
      sku_code: 'A',
      upstream_sku_id: 11,
      product_id: 7,
      product_slug: 'product-7',
      product_title: { en: 'Seven' },
      product_description: { en: 'About seven' },
      category_id: 102,
      spec_values: { d: '1' },
      cost_price: '5.00',
      sale_price: '5.00!',
      original_price: '6.00',
      member_price: null,
      stock_status: 'in_stock',
      stock_quantity: 20,
      sku_active: true,
      product_active: true,
      fulfillment_type: 'manual',
      manual_form_schema: { fields: [{ key: 'account' }] },
      listed: true,
    });
    expect(rows[1]).toMatchObject({ sku_code: 'B', sku_active: false, member_price: null, original_price: null });
  });

  it('maps the SKUs of an inactive (withdrawn) product unlisted; an inactive SKU of an active product stays listed', () => {
    const { rows } = skuRowsFromProduct({ ...product, is_active: false }, (cost) => cost);
    expect(rows.map((r) => [r.sku_code, r.listed, r.product_active])).toEqual([
      ['A', false, false],
      ['B', false, false],
    ]);
    expect(skuRowsFromProduct(product, (cost) => cost).rows.map((r) => r.listed)).toEqual([true, true]);
  });
});
