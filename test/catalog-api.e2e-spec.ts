/**
 * The catalog's internal API (CONTRACT §5): shapes, filters and errors; pricing rules and the repricing
 * they cause at once; and the calls the orders engine uses (getSku, refreshProduct).
 */
import { Decimal } from 'decimal.js';
import { CatalogService } from '../src/catalog/catalog.service.js';
import { UpstreamUnknownError } from '../src/upstream/upstream.errors.js';
import type { SandboxServer } from '../src/sandbox/sandbox.server.js';
import { useAppSuite } from './support/app-suite.js';
import { databaseMillisecondPassed } from './support/db-waits.js';
import type { TestApp } from './support/test-app.js';

type Sku = Record<string, unknown> & {
  sku_code: string;
  cost_price: string;
  sale_price: string;
  category_id: number;
  available: boolean;
  listed: boolean;
};

const SKU_KEYS = [
  'supplier',
  'sku_key',
  'sku_code',
  'upstream_sku_id',
  'product_id',
  'product_title',
  'category_id',
  'spec_values',
  'cost_price',
  'sale_price',
  'original_price',
  'member_price',
  'currency',
  'stock_status',
  'stock_quantity',
  'fulfillment_type',
  'manual_form_schema',
  'listed',
  'available',
  'active',
  'updated_at',
].sort();

const RUN_KEYS = [
  'run_id',
  'mode',
  'status',
  'started_at',
  'finished_at',
  'pages_total',
  'pages_done',
  'products_seen',
  'skus_created',
  'skus_changed',
  'skus_delisted',
  'skus_relisted',
  'error',
];

const MONEY = /^\d+\.\d{2}$/;

/** ceil((cost × (1 + p/100) + fixed) / step) × step, never below cost, printed at two decimals. */
function expectedPrice(cost: string, percent: string, fixed: string, step: string): string {
  const c = new Decimal(cost);
  const raw = Decimal.max(c.mul(new Decimal(percent).div(100).plus(1)).plus(fixed), c);
  return raw.div(step).ceil().mul(step).toFixed(2);
}

describe('catalog internal API', () => {
  const suite = useAppSuite({
    sandbox: { pageSizeCap: 20, catalog: { products: 50, seed: 11 } },
    env: { PRICE_MARKUP_PERCENT: '10', PRICE_MARKUP_FIXED: '0', PRICE_ROUNDING: '0.1' },
  });
  let sandbox: SandboxServer;
  let app: TestApp;

  const get = async (path: string, params?: Record<string, unknown>) => app.http.get(path, { params });
  const allSkus = async (params: Record<string, unknown> = {}): Promise<Sku[]> => {
    const r = await get('/internal/catalog/skus', { page_size: 500, ...params });
    expect(r.status).toBe(200);
    return (r.data as { items: Sku[] }).items;
  };

  beforeAll(async () => {
    ({ sandbox, app } = suite);
    const r = await app.http.post('/internal/catalog/sync', { mode: 'full' });
    expect(r.status).toBe(202);
    expect(Object.keys(r.data as object).sort()).toEqual(['mode', 'ok', 'run_id']);
    const runId = (r.data as { run_id: string }).run_id;
    for (let i = 0; i < 2000; i++) {
      const run = ((await get(`/internal/catalog/sync-runs/${runId}`)).data as { run: { status: string } }).run;
      if (run.status !== 'running') break;
      await new Promise((res) => setTimeout(res, 25));
    }
  });

  it('every catalog and pricing call needs the bearer token (401 unauthorized)', async () => {
    const calls: Array<[string, string]> = [
      ['get', '/internal/catalog/categories'],
      ['get', '/internal/catalog/skus'],
      ['get', '/internal/catalog/skus/SKU-00001-1'],
      ['get', '/internal/catalog/skus/SKU-00001-1/changes'],
      ['get', '/internal/catalog/conflicts'],
      ['post', '/internal/catalog/sync'],
      ['get', '/internal/catalog/sync-runs'],
      ['get', '/internal/catalog/sync-runs/x'],
      ['get', '/internal/pricing/rules'],
      ['put', '/internal/pricing/rules'],
    ];
    for (const [method, url] of calls) {
      for (const authorization of [undefined, 'Bearer wrong-token']) {
        const r = await app.http.request({ method, url, data: method === 'get' ? undefined : {}, headers: { authorization } });
        expect([method, url, r.status, r.data]).toEqual([
          method,
          url,
          401,
          { ok: false, error_code: 'unauthorized', error_message: expect.any(String) },
        ]);
      }
    }
  });

  it('GET /internal/catalog/categories: the two-level tree, each level by sort_order descending', async () => {
    const r = await get('/internal/catalog/categories');
    expect(r.status).toBe(200);
    const { ok, categories } = r.data as {
      ok: boolean;
      categories: Array<Record<string, unknown> & { children: Array<Record<string, unknown>> }>;
    };
    expect(ok).toBe(true);
    const upstream = sandbox.catalog.categories();
    const tops = upstream.filter((c) => c.parent_id === 0).sort((x, y) => y.sort_order - x.sort_order);
    expect(categories.map((c) => c.id)).toEqual(tops.map((c) => c.id));
    for (const node of categories) {
      expect(Object.keys(node).sort()).toEqual(['children', 'icon', 'id', 'listed', 'name', 'parent_id', 'slug', 'sort_order', 'supplier']);
      const up = upstream.find((c) => c.id === node.id)!;
      // an icon is shown by the relay's copy once mirrored (the sync's media pass), '' when there is none
      expect(node).toMatchObject({
        parent_id: 0,
        slug: up.slug,
        name: up.name,
        icon: up.icon === '' ? '' : expect.stringMatching(/^\/media\/[0-9a-f]{64}\.png$/),
        sort_order: up.sort_order,
        listed: true,
      });
      const kids = upstream.filter((c) => c.parent_id === node.id).sort((x, y) => y.sort_order - x.sort_order);
      expect(node.children.map((c) => c.id)).toEqual(kids.map((c) => c.id));
      for (const child of node.children) expect(child).toMatchObject({ parent_id: node.id, listed: true, children: [] });
    }
  });

  it('GET /internal/catalog/skus: the list shape, SKU fields, money as strings, pagination', async () => {
    const r = await get('/internal/catalog/skus', { page: 2, page_size: 10 });
    expect(r.status).toBe(200);
    const body = r.data as { ok: boolean; items: Sku[]; total: number; page: number; page_size: number };
    expect(Object.keys(body).sort()).toEqual(['items', 'ok', 'page', 'page_size', 'total']);
    expect(body).toMatchObject({ ok: true, total: sandbox.catalog.skuCount, page: 2, page_size: 10 });
    expect(body.items).toHaveLength(10);
    const all = await allSkus();
    expect(body.items.map((s) => s.sku_code)).toEqual(all.slice(10, 20).map((s) => s.sku_code));
    for (const s of all) {
      expect(Object.keys(s).sort()).toEqual(SKU_KEYS);
      expect(s.cost_price).toMatch(MONEY);
      expect(s.sale_price).toMatch(MONEY);
      for (const k of ['original_price', 'member_price']) if (s[k] !== null) expect(s[k]).toMatch(MONEY);
      expect(s.currency).toBe('CNY');
      expect(typeof s.upstream_sku_id).toBe('number');
      expect(new Date(String(s.updated_at)).toISOString()).toBe(s.updated_at);
    }
    // Priced with the defaults at sync: +10 %, rounded up to 0.1.
    for (const s of all) expect(s.sale_price).toBe(expectedPrice(s.cost_price, '10', '0', '0.1'));

    const one = await get(`/internal/catalog/skus/${all[0].sku_code}`);
    expect(one.status).toBe(200);
    const sku = (one.data as { ok: boolean; sku: Sku }).sku;
    expect(Object.keys(sku).sort()).toEqual([...SKU_KEYS, 'product_description', 'product_slug'].sort());
    expect(sku).toMatchObject(all[0]);
  });

  it('filters: category_id (a top-level one includes its children), listed, available, changed_since', async () => {
    const all = await allSkus();
    const leaf = all[0].category_id;
    expect((await allSkus({ category_id: leaf })).map((s) => s.sku_code)).toEqual(
      all.filter((s) => s.category_id === leaf).map((s) => s.sku_code),
    );
    const parent = Math.floor(leaf / 100);
    const underParent = await allSkus({ category_id: parent });
    expect(underParent.length).toBeGreaterThan(0);
    expect(underParent.every((s) => Math.floor(s.category_id / 100) === parent)).toBe(true);
    expect(underParent.length).toBe(all.filter((s) => Math.floor(s.category_id / 100) === parent).length);

    const available = await allSkus({ available: true });
    expect(available.every((s) => s.available)).toBe(true);
    const unavailable = await allSkus({ available: false });
    expect(unavailable.length).toBeGreaterThan(0); // the seeded catalog has out-of-stock and inactive SKUs
    expect(available.length + unavailable.length).toBe(all.length);

    const product = sandbox.catalog.listedProducts()[5];
    // every write from here on is stamped after `since` (the database's clock, as the writes are)
    const since = (await databaseMillisecondPassed(suite.db)).toISOString();
    sandbox.catalog.delistProduct(product.id);
    await app.relay.app.get(CatalogService).refreshProduct(product.id);
    expect((await allSkus({ listed: false })).map((s) => s.sku_code).sort()).toEqual(product.skus.map((s) => s.sku_code).sort());
    expect((await allSkus({ listed: true })).length).toBe(all.length - product.skus.length);
    expect((await allSkus({ changed_since: since })).map((s) => s.sku_code).sort()).toEqual(product.skus.map((s) => s.sku_code).sort());
    expect(await allSkus({ changed_since: new Date(Date.now() + 60_000).toISOString() })).toEqual([]);
    sandbox.catalog.relistProduct(product.id);
    await app.relay.app.get(CatalogService).refreshProduct(product.id);
    expect(await allSkus({ listed: false })).toEqual([]);
  });

  it('a bad query is 400 bad_request naming the fields; unknown codes and runs are 404', async () => {
    const bad: Array<[Record<string, unknown>, string]> = [
      [{ page: 0 }, 'page'],
      [{ page: 'x' }, 'page'],
      [{ page_size: 501 }, 'page_size'],
      [{ page_size: 0 }, 'page_size'],
      [{ listed: 'maybe' }, 'listed'],
      [{ available: 'yes' }, 'available'],
      [{ changed_since: 'yesterday' }, 'changed_since'],
      [{ category_id: 'abc' }, 'category_id'],
      [{ category_id: 0 }, 'category_id'],
      [{ colour: 'red' }, 'colour'],
    ];
    for (const [params, field] of bad) {
      const r = await get('/internal/catalog/skus', params);
      expect([params, r.status]).toEqual([params, 400]);
      expect(r.data).toMatchObject({ ok: false, error_code: 'bad_request', error_message: expect.any(String) });
      expect(Object.keys((r.data as { fields: object }).fields)).toContain(field);
    }
    const runsBad = await get('/internal/catalog/sync-runs', { page_size: 1000 });
    expect(runsBad.status).toBe(400);
    expect((runsBad.data as { fields: object }).fields).toHaveProperty('page_size');

    expect((await get('/internal/catalog/skus/NO-SUCH-CODE')).data).toEqual({
      ok: false,
      error_code: 'sku_not_found',
      error_message: expect.any(String),
    });
    expect((await get('/internal/catalog/skus/NO-SUCH-CODE')).status).toBe(404);
    expect((await get('/internal/catalog/skus/NO-SUCH-CODE/changes')).status).toBe(404);
    const noRun = await get('/internal/catalog/sync-runs/run_nope');
    expect(noRun.status).toBe(404);
    expect(noRun.data).toEqual({ ok: false, error_code: 'sync_run_not_found', error_message: expect.any(String) });

    const badMode = await app.http.post('/internal/catalog/sync', { mode: 'sometimes' });
    expect(badMode.status).toBe(400);
    expect((badMode.data as { fields: object }).fields).toHaveProperty('mode');
    const notJson = await app.http.post('/internal/catalog/sync', '{"mode":', { headers: { 'content-type': 'application/json' } });
    expect(notJson.status).toBe(400);
    expect(notJson.data).toMatchObject({ ok: false, error_code: 'bad_request' });
  });

  it('GET /internal/catalog/sync-runs: runs newest first with the contract fields', async () => {
    const r = await get('/internal/catalog/sync-runs');
    expect(r.status).toBe(200);
    const { items, total } = r.data as { items: Array<Record<string, unknown>>; total: number };
    expect(total).toBeGreaterThanOrEqual(1);
    const run = items[items.length - 1];
    for (const k of RUN_KEYS) expect(run).toHaveProperty(k);
    expect(run).toMatchObject({
      mode: 'full',
      status: 'succeeded',
      error: null,
      skus_created: sandbox.catalog.skuCount,
      products_seen: 50,
      pages_total: 3,
    });
    expect(typeof run.started_at).toBe('string');
    const one = await get(`/internal/catalog/sync-runs/${String(run.run_id)}`);
    expect(one.data).toEqual({ ok: true, run });
  });

  it('list paging (CONTRACT §5): page_size defaults to 100, accepts 1–500, page ≥ 1; out of range is 400 naming the field', async () => {
    type List = { ok: boolean; items: Array<{ sku_code?: string; run_id?: string }>; total: number; page: number; page_size: number };
    for (const path of ['/internal/catalog/skus', '/internal/catalog/sync-runs']) {
      const dflt = await get(path);
      expect([path, dflt.status]).toEqual([path, 200]);
      const d = dflt.data as List;
      expect(Object.keys(d).sort()).toEqual(['items', 'ok', 'page', 'page_size', 'total']);
      expect(d).toMatchObject({ ok: true, page: 1, page_size: 100 });
      expect(d.items.length).toBeLessThanOrEqual(100);
      expect(d.items).toHaveLength(Math.min(100, d.total));

      const max = await get(path, { page_size: 500 });
      expect([path, max.status]).toEqual([path, 200]);
      const m = max.data as List;
      expect(m).toMatchObject({ ok: true, page: 1, page_size: 500, total: d.total });
      expect(m.items).toHaveLength(Math.min(500, m.total));
      // The default page is the head of the same order.
      expect(d.items).toEqual(m.items.slice(0, d.items.length));

      const one = await get(path, { page_size: 1, page: 1 });
      expect([path, one.status]).toEqual([path, 200]);
      expect(one.data).toMatchObject({ ok: true, page: 1, page_size: 1, total: d.total });
      expect((one.data as List).items).toEqual(m.items.slice(0, 1));

      const bad: Array<[Record<string, unknown>, string]> = [
        [{ page_size: 0 }, 'page_size'],
        [{ page_size: 501 }, 'page_size'],
        [{ page: 0 }, 'page'],
      ];
      for (const [params, field] of bad) {
        const r = await get(path, params);
        expect([path, params, r.status]).toEqual([path, params, 400]);
        expect(r.data).toMatchObject({ ok: false, error_code: 'bad_request', error_message: expect.any(String) });
        expect(Object.keys((r.data as { fields: object }).fields)).toContain(field);
      }
    }
    // The seeded catalog has more SKUs than a default page: the default really stops at 100.
    expect(sandbox.catalog.skuCount).toBeGreaterThan(100);
    expect(((await get('/internal/catalog/skus')).data as List).items).toHaveLength(100);
    expect(((await get('/internal/catalog/skus', { page_size: 500 })).data as List).items).toHaveLength(
      Math.min(500, sandbox.catalog.skuCount),
    );
  });

  it('pricing rules: defaults, category and sku_code rules reprice the catalog at once, without a sync', async () => {
    const initial = await get('/internal/pricing/rules');
    expect(initial.status).toBe(200);
    expect(initial.data).toMatchObject({ ok: true, defaults: { markup_percent: '10', markup_fixed: '0', rounding: '0.1' }, rules: [] });

    const all = await allSkus();
    const inTop1 = all.filter((s) => Math.floor(s.category_id / 100) === 1);
    const outside = all.find((s) => Math.floor(s.category_id / 100) !== 1)!;
    const [special, leafRuled] = [inTop1[0], inTop1.find((s) => s.category_id !== inTop1[0].category_id) ?? inTop1[1]];
    const productReads = sandbox.stats.requests.products;

    const put = await app.http.put('/internal/pricing/rules', {
      rules: [
        { scope: 'category', category_id: 1, markup_percent: '20', markup_fixed: '0.50', rounding: '1' },
        { scope: 'category', category_id: leafRuled.category_id, markup_percent: 5, markup_fixed: 0 },
        { scope: 'sku', sku_code: special.sku_code, markup_percent: '-50', markup_fixed: '0' },
      ],
    });
    expect(put.status).toBe(200);
    const body = put.data as { ok: boolean; rules: Array<Record<string, unknown>>; repriced: number };
    expect(body.ok).toBe(true);
    expect(body.repriced).toBeGreaterThan(0);
    expect(body.rules).toEqual(
      expect.arrayContaining([
        expect.objectContaining({
          scope: 'category',
          category_id: 1,
          sku_code: null,
          markup_percent: '20',
          markup_fixed: '0.50',
          rounding: '1',
        }),
        expect.objectContaining({
          scope: 'category',
          category_id: leafRuled.category_id,
          markup_percent: '5',
          markup_fixed: '0',
          rounding: null,
        }),
        expect.objectContaining({ scope: 'sku', category_id: null, sku_code: special.sku_code, markup_percent: '-50' }),
      ]),
    );
    expect(sandbox.stats.requests.products).toBe(productReads); // no sync

    const after = new Map((await allSkus()).map((s) => [s.sku_code, s]));
    // sku_code rule: a negative markup floored at cost (default step 0.1).
    expect(after.get(special.sku_code)!.sale_price).toBe(expectedPrice(special.cost_price, '0', '0', '0.1'));
    // leaf rule over the parent's: +5 %, the default step.
    for (const s of inTop1.filter((x) => x.category_id === leafRuled.category_id && x.sku_code !== special.sku_code)) {
      expect(after.get(s.sku_code)!.sale_price).toBe(expectedPrice(s.cost_price, '5', '0', '0.1'));
    }
    // parent rule for the other children: +20 % + 0.50, rounded up to 1.
    for (const s of inTop1.filter((x) => x.category_id !== leafRuled.category_id && x.sku_code !== special.sku_code)) {
      expect(after.get(s.sku_code)!.sale_price).toBe(expectedPrice(s.cost_price, '20', '0.50', '1'));
    }
    // untouched elsewhere.
    expect(after.get(outside.sku_code)!.sale_price).toBe(outside.sale_price);

    const history = (await get(`/internal/catalog/skus/${special.sku_code}/changes`)).data as { items: Array<Record<string, unknown>> };
    expect(history.items[0]).toMatchObject({
      field: 'sale_price',
      kind: 'price',
      old: special.sale_price,
      new: after.get(special.sku_code)!.sale_price,
      source: 'pricing',
      run_id: null,
    });

    // A sync after the change agrees with it: nothing to write.
    const r = await app.http.post('/internal/catalog/sync', { mode: 'full' });
    const runId = (r.data as { run_id: string }).run_id;
    let run: { status: string; skus_changed: number } = { status: 'running', skus_changed: -1 };
    while (run.status === 'running') {
      await new Promise((res) => setTimeout(res, 25));
      run = ((await get(`/internal/catalog/sync-runs/${runId}`)).data as { run: typeof run }).run;
    }
    expect(run).toMatchObject({ status: 'succeeded', skus_changed: 0 });

    const got = await get('/internal/pricing/rules');
    expect((got.data as { rules: unknown[] }).rules).toHaveLength(3);

    // Back to the defaults.
    const cleared = await app.http.put('/internal/pricing/rules', { rules: [] });
    expect(cleared.status).toBe(200);
    for (const s of await allSkus()) expect(s.sale_price).toBe(expectedPrice(s.cost_price, '10', '0', '0.1'));
  });

  it('pricing rules: a bad body is 400 bad_request naming the fields', async () => {
    const cases: Array<[unknown, string]> = [
      [{}, 'rules'],
      [{ rules: 'x' }, 'rules'],
      [{ rules: [{ scope: 'brand', markup_percent: '1', markup_fixed: '0' }] }, 'rules.0.scope'],
      [{ rules: [{ scope: 'category', markup_percent: '1', markup_fixed: '0' }] }, 'rules.0.category_id'],
      [{ rules: [{ scope: 'sku', sku_code: '', markup_percent: '1', markup_fixed: '0' }] }, 'rules.0.sku_code'],
      [{ rules: [{ scope: 'sku', sku_code: 'A', markup_percent: 'ten', markup_fixed: '0' }] }, 'rules.0.markup_percent'],
      [{ rules: [{ scope: 'sku', sku_code: 'A', markup_percent: '1', markup_fixed: '1,5' }] }, 'rules.0.markup_fixed'],
      [{ rules: [{ scope: 'sku', sku_code: 'A', markup_percent: '1', markup_fixed: '0', rounding: '0' }] }, 'rules.0.rounding'],
      [{ rules: [{ scope: 'sku', sku_code: 'A', markup_percent: '-101', markup_fixed: '0' }] }, 'rules.0.markup_percent'],
      [
        {
          rules: [
            { scope: 'sku', sku_code: 'A', markup_percent: '1', markup_fixed: '0' },
            { scope: 'sku', sku_code: 'A', markup_percent: '2', markup_fixed: '0' },
          ],
        },
        'rules.1',
      ],
    ];
    for (const [body, field] of cases) {
      const r = await app.http.put('/internal/pricing/rules', body);
      expect([body, r.status]).toEqual([body, 400]);
      expect(r.data).toMatchObject({ ok: false, error_code: 'bad_request' });
      expect(Object.keys((r.data as { fields: object }).fields)).toContain(field);
    }
    expect(((await get('/internal/pricing/rules')).data as { rules: unknown[] }).rules).toEqual([]);
  });

  describe('for the orders engine', () => {
    it('getSku: the local SKU with everything an order needs, or null', async () => {
      const catalog = app.relay.app.get(CatalogService);
      const { product, sku } = sandbox.catalog.findSku({ fulfillmentType: 'manual' })!;
      const local = await catalog.getSku(sku.sku_code);
      expect(local).toMatchObject({
        skuCode: sku.sku_code,
        upstreamSkuId: sku.id,
        productId: product.id,
        categoryId: product.category_id,
        listed: true,
        active: true,
        available: sku.stock_status !== 'out_of_stock',
        stockStatus: sku.stock_status,
        stockQuantity: sku.stock_quantity,
        costPrice: sku.price_amount,
        salePrice: expectedPrice(sku.price_amount, '10', '0', '0.1'),
        currency: 'CNY',
        fulfillmentType: 'manual',
        manualFormSchema: product.manual_form_schema,
      });
      expect(await catalog.getSku('NO-SUCH-CODE')).toBeNull();
    });

    it('refreshProduct: applies a fresh read without a sync; null and unlisted on a definitive 404; other errors rethrown', async () => {
      const catalog = app.relay.app.get(CatalogService);
      const { product, sku } = sandbox.catalog.findSku({ skip: 3 })!;
      sandbox.catalog.setPrice(sku.sku_code, '77.70');
      sandbox.catalog.setStock(sku.sku_code, 'low_stock', 3);
      const newId = sandbox.catalog.changeSkuId(sku.sku_code);
      const fresh = await catalog.refreshProduct(product.id);
      expect(fresh?.id).toBe(product.id);
      expect(fresh?.skus.find((s) => s.sku_code === sku.sku_code)).toMatchObject({ id: newId, price_amount: '77.70' });
      expect(await catalog.getSku(sku.sku_code)).toMatchObject({
        upstreamSkuId: newId,
        costPrice: '77.70',
        salePrice: '85.50', // 77.70 × 1.1 = 85.47, up to 0.1
        stockStatus: 'low_stock',
        stockQuantity: 3,
      });
      const history = (await get(`/internal/catalog/skus/${sku.sku_code}/changes`)).data as {
        items: Array<{ source: string; field: string }>;
      };
      expect(
        history.items
          .filter((h) => h.source === 'refresh')
          .map((h) => h.field)
          .sort(),
      ).toEqual(['cost_price', 'sale_price', 'stock_quantity', 'stock_status', 'upstream_sku_id'].sort());

      sandbox.faults.set({ rules: [{ operation: 'product', kind: 'error_before', status: 502, times: 1 }] });
      await expect(catalog.refreshProduct(product.id)).rejects.toBeInstanceOf(UpstreamUnknownError);
      expect(await catalog.getSku(sku.sku_code)).toMatchObject({ listed: true });

      sandbox.catalog.delistProduct(product.id);
      expect(await catalog.refreshProduct(product.id)).toBeNull();
      for (const s of product.skus) expect(await catalog.getSku(s.sku_code)).toMatchObject({ listed: false, available: false });
      expect(await catalog.refreshProduct(999_999)).toBeNull();
      sandbox.catalog.relistProduct(product.id);
      expect((await catalog.refreshProduct(product.id))?.id).toBe(product.id);
      expect(await catalog.getSku(sku.sku_code)).toMatchObject({ listed: true });
    });
  });
});
