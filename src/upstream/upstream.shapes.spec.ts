import {
  isUpstreamCanceledOrder,
  isUpstreamCreatedOrder,
  isUpstreamOrder,
  isUpstreamPing,
  isUpstreamProductPage,
  isUpstreamProductPageEnvelope,
  productShapeProblem,
  splitCategories,
  splitProductPage,
} from './upstream.shapes.js';

const sku = {
  id: 11,
  sku_code: 'SKU-1',
  spec_values: {},
  price_amount: '9.90',
  stock_status: 'in_stock',
  stock_quantity: 5,
  is_active: true,
};
const product = {
  id: 1,
  slug: 'p',
  title: { en: 'P' },
  description: { en: '' },
  price_amount: '9.90',
  fulfillment_type: 'auto',
  is_active: true,
  category_id: 3,
  skus: [sku],
};
const order = {
  ok: true,
  order_id: 7,
  order_no: 'O7',
  status: 'delivered',
  amount: '19.80',
  currency: 'CNY',
  items: [{ sku_id: 11, quantity: 2 }],
  fulfillment: { type: 'auto', status: 'delivered', payload: 'a\nb', delivered_at: '2025-01-01T00:00:00Z' },
};

describe('upstream answer shapes', () => {
  it('accepts a ping and refuses a numeric balance', () => {
    const ping = { ok: true, site_name: 's', protocol_version: '1.0', user_id: 1, balance: '10.00', currency: 'CNY' };
    expect(isUpstreamPing(ping)).toBe(true);
    expect(isUpstreamPing({ ...ping, member_level: null })).toBe(true);
    expect(isUpstreamPing({ ...ping, balance: 10 })).toBe(false);
  });

  it('checks every product and SKU of a page', () => {
    const page = { ok: true, items: [product], total: 1, page: 1, page_size: 50 };
    expect(isUpstreamProductPage(page)).toBe(true);
    expect(isUpstreamProductPage({ ...page, items: [{ ...product, skus: [{ ...sku, price_amount: 9.9 }] }] })).toBe(false);
    expect(isUpstreamProductPage({ ...page, total: '1' })).toBe(false);
    expect(isUpstreamProductPage({ ...page, items: undefined })).toBe(false);
  });

  it('names the field of a product that is wrong, and what it got', () => {
    expect(productShapeProblem(product)).toBeNull();
    expect(productShapeProblem({ ...product, title: null })).toBe('title: expected an object of texts by language, got null');
    expect(productShapeProblem({ ...product, price_amount: 9.9 })).toBe('price_amount: expected a decimal string, got a number');
    expect(productShapeProblem({ ...product, skus: [sku, { ...sku, stock_quantity: '5' }] })).toBe(
      'skus[1].stock_quantity: expected an integer, got "5"',
    );
    expect(productShapeProblem({ ...product, skus: [null] })).toBe('skus[0]: expected a SKU object, got null');
    expect(productShapeProblem('x')).toBe('expected a product object, got "x"');
  });

  it('splits a page: a product whose shape is wrong is left out and reported with its id, the others kept', () => {
    const bad = { ...product, id: 2, title: null };
    const noId = { ...product, id: 'three', slug: 5 };
    const page = { ok: true as const, items: [product, bad, noId, { ...product, id: 4 }], total: 4, page: 1, page_size: 50, digest: 'd' };
    expect(isUpstreamProductPageEnvelope(page)).toBe(true);
    expect(isUpstreamProductPage(page)).toBe(false);
    const split = splitProductPage(page);
    expect(split.items.map((p) => p.id)).toEqual([1, 4]);
    expect(split.skipped).toEqual([
      { product_id: 2, reason: 'title: expected an object of texts by language, got null' },
      { product_id: null, reason: 'id: expected an integer, got "three"' },
    ]);
    expect(split).toMatchObject({ total: 4, page: 1, page_size: 50, digest: 'd' });
    // a page without a wrong product is given back as it is, without `skipped`
    const clean = { ok: true as const, items: [product], total: 1, page: 1, page_size: 50 };
    expect(splitProductPage(clean)).toBe(clean);
    expect(splitProductPage(clean).skipped).toBeUndefined();
  });

  it('a page whose envelope is wrong is refused whatever its items', () => {
    const page = { ok: true, items: [product], total: 1, page: 1, page_size: 50 };
    expect(isUpstreamProductPageEnvelope({ ...page, total: '1' })).toBe(false);
    expect(isUpstreamProductPageEnvelope({ ...page, items: null })).toBe(false);
    expect(isUpstreamProductPageEnvelope({ ...page, ok: false })).toBe(false);
    expect(isUpstreamProductPageEnvelope({ ...page, page_size: 0 })).toBe(false);
  });

  it('lets unknown states and extra fields pass (refunded, partially_refunded)', () => {
    expect(isUpstreamOrder({ ...order, status: 'refunded', refunded_amount: '19.80' })).toBe(true);
    expect(isUpstreamOrder({ ...order, status: 'partially_refunded', refunded_amount: '5.00', extra: { a: 1 } })).toBe(true);
    expect(isUpstreamOrder({ ...order, status: 'something_new' })).toBe(true);
    expect(isUpstreamOrder({ ...order, fulfillment: null })).toBe(true);
  });

  it('refuses orders without the fields the service relies on', () => {
    expect(isUpstreamOrder({ ...order, order_id: '7' })).toBe(false);
    expect(isUpstreamOrder({ ...order, amount: 19.8 })).toBe(false);
    expect(isUpstreamOrder({ ...order, items: undefined })).toBe(false);
    expect(isUpstreamOrder({ ...order, fulfillment: { type: 'auto', status: 'delivered' } })).toBe(false);
    expect(isUpstreamOrder({ ...order, refunded_amount: 5 })).toBe(false);
    const { ok: _ok, ...withoutOk } = order;
    expect(isUpstreamOrder(withoutOk)).toBe(false);
  });

  it('checks created and canceled orders', () => {
    const created = { ok: true, order_id: 7, order_no: 'O7', status: 'paid', amount: '19.80', currency: 'CNY' };
    expect(isUpstreamCreatedOrder(created)).toBe(true);
    expect(isUpstreamCreatedOrder({ ...created, order_id: undefined })).toBe(false);
    expect(isUpstreamCanceledOrder({ ok: true, order_id: 7, order_no: 'O7', status: 'canceled' })).toBe(true);
    expect(isUpstreamCanceledOrder({ ok: true, order_no: 'O7', status: 'canceled' })).toBe(false);
  });

  it('refuses an order id below 1 and a negative amount (upstream-api.md §8: ids are integers of at least 1)', () => {
    const created = { ok: true, order_id: 7, order_no: 'O7', status: 'paid', amount: '19.80', currency: 'CNY' };
    for (const id of [0, -7]) {
      expect(isUpstreamCreatedOrder({ ...created, order_id: id })).toBe(false);
      expect(isUpstreamOrder({ ...order, order_id: id })).toBe(false);
      expect(isUpstreamCanceledOrder({ ok: true, order_id: id, order_no: 'O7', status: 'canceled' })).toBe(false);
    }
    expect(isUpstreamCreatedOrder({ ...created, amount: '-19.80' })).toBe(false);
    expect(isUpstreamOrder({ ...order, amount: '-19.80' })).toBe(false);
    expect(isUpstreamOrder({ ...order, refunded_amount: '-1.00' })).toBe(false);
    expect(isUpstreamCreatedOrder({ ...created, amount: '0.00' })).toBe(true);
  });
});

describe('splitCategories', () => {
  const category = { id: 1, parent_id: 0, slug: 'games', name: { en: 'Games' }, icon: '', sort_order: 3 };

  it('keeps the usable categories and reports the others with their id and why (a null name)', () => {
    const list = splitCategories([category, { ...category, id: 2, name: null }, 'x', { ...category, id: 0, slug: 5 }]);
    expect([...list]).toEqual([category]);
    expect(list.skipped).toEqual([
      { category_id: 2, reason: 'name: expected an object of texts by language, got null' },
      { category_id: null, reason: 'expected a category object, got "x"' },
      { category_id: null, reason: 'slug: expected a string, got a number' },
    ]);
  });

  it('sets no `skipped` when every category is usable', () => {
    expect(splitCategories([category]).skipped).toBeUndefined();
  });
});
