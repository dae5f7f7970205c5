/**
 * The catalog per supplier (CONTRACT §5, §10): two sandboxes with keys of their own, the same seeded
 * catalog at both (every product id and sku_code carried twice). Each supplier's sync writes its own
 * rows (`supplier` in every answer), a key or code both carry is 409 `sku_ambiguous` with
 * `{supplier, sku_key}` candidates and resolves with `?supplier=`, runs are one at a time per
 * supplier and several at once, pricing rules may name a supplier, and a deleted supplier's SKUs are
 * unlisted (CatalogService.unlistSupplier).
 */
import { CatalogService } from '../src/catalog/catalog.service.js';
import { compileRule, salePrice } from '../src/catalog/pricing.js';
import { useAppSuite } from './support/app-suite.js';
import { registerTestSupplier } from './support/suppliers.js';
import { waitRun, type SyncRunView } from './support/sync-run.js';
import { startSandbox } from './support/test-app.js';
import { waitFor } from './support/wait.js';

interface Sku {
  supplier: string;
  sku_key: string;
  sku_code: string;
  cost_price: string;
  sale_price: string;
  listed: boolean;
  category_id: number;
}

describe('catalog of two suppliers', () => {
  // shop notifications recorded in the outbox (no background work sends them)
  const suite = useAppSuite({
    suppliers: { second: {} },
    workers: false,
    env: { SHOP_WEBHOOK_URL: 'http://127.0.0.1:9/relay-events', SHOP_WEBHOOK_SECRET: 'catalog-suppliers-webhook-secret' },
  });
  const http = () => suite.app.http;

  const startSync = async (body: Record<string, unknown>) => {
    const r = await http().post('/internal/catalog/sync', body);
    expect([r.status, r.data]).toEqual([202, expect.objectContaining({ ok: true, run_id: expect.any(String) })]);
    return (r.data as { run_id: string }).run_id;
  };
  const allSkus = async (params: Record<string, unknown> = {}): Promise<{ items: Sku[]; total: number }> =>
    (await http().get('/internal/catalog/skus', { params: { page_size: 500, ...params } })).data as { items: Sku[]; total: number };

  let code = '';
  let key = '';

  it('syncs both catalogs at once, each run and row naming its supplier; a code both carry is ambiguous, ?supplier= picks', async () => {
    const second = suite.supplier('second');
    const sku = second.catalog.listedProducts()[0].skus[0];
    code = sku.sku_code;
    second.catalog.setPrice(code, '77.00');
    const before = [suite.sandbox.stats.totalRequests, second.stats.totalRequests];

    const [mainRun, secondRun] = await Promise.all([startSync({ mode: 'full' }), startSync({ mode: 'full', supplier: 'second' })]);
    expect(mainRun).not.toBe(secondRun);
    const runs = await Promise.all([waitRun(http(), mainRun), waitRun(http(), secondRun)]);
    expect(runs.map((r) => [r.supplier, r.status, r.pages_done === r.pages_total])).toEqual([
      ['main', 'succeeded', true],
      ['second', 'succeeded', true],
    ]);
    // each run read its own supplier's server
    expect(suite.sandbox.stats.totalRequests - before[0]).toBeGreaterThanOrEqual(runs[0].pages_total);
    expect(second.stats.totalRequests - before[1]).toBeGreaterThanOrEqual(runs[1].pages_total);

    const mains = await allSkus({ supplier: 'main' });
    const seconds = await allSkus({ supplier: 'second' });
    expect(mains.total).toBeGreaterThan(0);
    expect(seconds.total).toBe(mains.total);
    expect(new Set(mains.items.map((s) => s.supplier))).toEqual(new Set(['main']));
    expect(new Set(seconds.items.map((s) => s.supplier))).toEqual(new Set(['second']));
    expect((await allSkus()).total).toBe(mains.total * 2);
    // changed_since keeps working across suppliers: every row of both, in one order
    const since = await allSkus({ changed_since: '2000-01-01T00:00:00Z' });
    expect(since.total).toBe(mains.total * 2);

    key = seconds.items.find((s) => s.sku_code === code)!.sku_key;
    for (const ref of [code, key]) {
      const r = await http().get(`/internal/catalog/skus/${encodeURIComponent(ref)}`);
      expect([r.status, r.data]).toEqual([
        409,
        expect.objectContaining({
          error_code: 'sku_ambiguous',
          candidates: [
            { supplier: 'main', sku_key: key },
            { supplier: 'second', sku_key: key },
          ],
        }),
      ]);
    }
    const atSecond = await http().get(`/internal/catalog/skus/${encodeURIComponent(code)}`, { params: { supplier: 'second' } });
    expect(atSecond.data.sku).toMatchObject({ supplier: 'second', sku_key: key, cost_price: '77.00' });
    const atMain = await http().get(`/internal/catalog/skus/${encodeURIComponent(key)}`, { params: { supplier: 'main' } });
    expect(atMain.data.sku).toMatchObject({ supplier: 'main', sku_key: key });
    expect(atMain.data.sku.cost_price).not.toBe('77.00');

    // products and categories are each supplier's too
    const productId = Number(key.split(':')[0]);
    const product = await http().get(`/internal/catalog/products/${productId}`);
    expect([product.status, product.data.error_code]).toEqual([409, 'sku_ambiguous']);
    const productAtSecond = await http().get(`/internal/catalog/products/${productId}`, { params: { supplier: 'second' } });
    expect(productAtSecond.data.product).toMatchObject({ supplier: 'second', product_id: productId });
    const products = (await http().get('/internal/catalog/products', { params: { supplier: 'second', page_size: 500 } })).data as {
      items: Array<{ supplier: string }>;
    };
    expect(new Set(products.items.map((p) => p.supplier))).toEqual(new Set(['second']));
    const tree = (await http().get('/internal/catalog/categories', { params: { supplier: 'second' } })).data as {
      categories: Array<{ supplier: string }>;
    };
    expect(tree.categories.length).toBeGreaterThan(0);
    expect(new Set(tree.categories.map((c) => c.supplier))).toEqual(new Set(['second']));
    const runList = (await http().get('/internal/catalog/sync-runs', { params: { supplier: 'second' } })).data as { items: SyncRunView[] };
    expect(runList.items.map((r) => r.run_id)).toEqual([secondRun]);

    // a re-sync of one supplier finds its own rows unchanged (nothing written at the other)
    const again = await waitRun(http(), await startSync({ mode: 'full', supplier: 'second' }));
    expect([again.status, again.skus_created, again.skus_changed]).toEqual(['succeeded', 0, 0]);
  });

  it('refuses a sync of an unknown or disabled supplier', async () => {
    const nobody = await http().post('/internal/catalog/sync', { supplier: 'nobody' });
    expect([nobody.status, nobody.data.error_code]).toEqual([404, 'supplier_not_found']);
    const off = await startSandbox({ apiKey: 'off-api-key', apiSecret: 'off-api-secret' });
    try {
      await registerTestSupplier(suite.apps, 'off', off, { enabled: false });
      const before = off.stats.totalRequests;
      const r = await http().post('/internal/catalog/sync', { supplier: 'off' });
      expect([r.status, r.data.error_code]).toEqual([409, 'supplier_disabled']);
      expect(off.stats.totalRequests).toBe(before);
    } finally {
      await off.stop();
    }
  });

  it('prices by supplier: SKU > category > supplier > the defaults; a category rule is the env supplier’s by default', async () => {
    const mains = await allSkus({ supplier: 'main' });
    const categoryId = mains.items[0].category_id;
    const r = await http().put('/internal/pricing/rules', {
      rules: [
        { scope: 'supplier', supplier: 'second', markup_percent: '100', markup_fixed: '0' },
        { scope: 'category', category_id: categoryId, markup_percent: '50', markup_fixed: '0' },
      ],
    });
    expect(r.status).toBe(200);
    expect(r.data.rules).toEqual(
      expect.arrayContaining([
        expect.objectContaining({ scope: 'supplier', supplier: 'second' }),
        expect.objectContaining({ scope: 'category', supplier: 'main', category_id: categoryId }),
      ]),
    );
    const byPercent = (s: Sku, percent: string) =>
      salePrice(s.cost_price, compileRule({ markupPercent: percent, markupFixed: '0' }, '0.01', 'supplier'));
    for (const s of (await allSkus({ supplier: 'second' })).items) expect(s.sale_price).toBe(byPercent(s, '100'));
    for (const s of (await allSkus({ supplier: 'main' })).items)
      expect(s.sale_price).toBe(byPercent(s, s.category_id === categoryId ? '50' : '0'));
    // a SKU rule by a key both suppliers carry must name its supplier
    const ambiguous = await http().put('/internal/pricing/rules', {
      rules: [{ scope: 'sku', sku_code: key, markup_percent: '0', markup_fixed: '1' }],
    });
    expect([ambiguous.status, ambiguous.data.error_code]).toEqual([409, 'sku_ambiguous']);
    const named = await http().put('/internal/pricing/rules', {
      rules: [{ scope: 'sku', supplier: 'second', sku_code: key, markup_percent: '0', markup_fixed: '1' }],
    });
    expect(named.status).toBe(200);
    const atSecond = (await http().get(`/internal/catalog/skus/${encodeURIComponent(key)}`, { params: { supplier: 'second' } })).data.sku;
    const atMain = (await http().get(`/internal/catalog/skus/${encodeURIComponent(key)}`, { params: { supplier: 'main' } })).data.sku;
    expect(atSecond.sale_price).toBe(salePrice(atSecond.cost_price, compileRule({ markupPercent: '0', markupFixed: '1' }, '0.01', 'sku')));
    // (the PUT replaced every rule: main's SKU is back on the defaults)
    expect(atMain.sale_price).toBe(byPercent(atMain, '0'));
    await http().put('/internal/pricing/rules', { rules: [] });
  });

  it("unlists a deleted supplier's SKUs (unlistSupplier), announced with its name; the other's stay, the code names them", async () => {
    const listedBefore = (await allSkus({ supplier: 'second', listed: true })).total;
    const mainsBefore = (await allSkus({ supplier: 'main', listed: true })).total;
    const unlisted = await suite.app.relay.app.get(CatalogService).unlistSupplier('second');
    expect(unlisted).toBe(listedBefore);
    expect((await allSkus({ supplier: 'second', listed: true })).total).toBe(0);
    expect((await allSkus({ supplier: 'main', listed: true })).total).toBe(mainsBefore);
    const events = await suite.db.query<{ supplier: string; n: number }>(
      `SELECT payload->>'supplier' AS supplier, count(*)::int AS n FROM outbox_events
        WHERE event_type = 'sku.listing_changed' AND (payload->>'listed')::boolean = false GROUP BY 1`,
    );
    expect(events).toEqual([{ supplier: 'second', n: listedBefore }]);
    const history = await suite.db.query<{ n: number }>(
      `SELECT count(*)::int AS n FROM catalog_sku_changes WHERE supplier = 'second' AND source = 'supplier' AND field = 'listed'`,
    );
    expect(history[0].n).toBe(listedBefore);
    // the unlisted SKUs no longer make the key ambiguous
    const r = await http().get(`/internal/catalog/skus/${encodeURIComponent(key)}`);
    expect(r.data.sku).toMatchObject({ supplier: 'main', sku_key: key, listed: true });
  });
});

describe('a supplier that fails never holds another one’s sync', () => {
  const suite = useAppSuite({ suppliers: { second: {} }, workers: false });
  const http = () => suite.app.http;

  it('one run per supplier: a second start of a running supplier is 409 with its run_id; the other supplier syncs to the end', async () => {
    const second = suite.supplier('second');
    // second's listing never answers: its run stays in its products pass
    second.faults.set({ rules: [{ operation: 'products', kind: 'hang_before' }] });
    const stuck = (await http().post('/internal/catalog/sync', { mode: 'full', supplier: 'second' })).data.run_id as string;
    await waitFor(
      async () => second.stats.requests.products,
      (n) => n > 0,
      "second's first page asked",
    );
    const again = await http().post('/internal/catalog/sync', { supplier: 'second' });
    expect([again.status, again.data.error_code, again.data.run_id]).toEqual([409, 'sync_in_progress', stuck]);

    const before = suite.sandbox.stats.requests.products;
    const started = await http().post('/internal/catalog/sync', { mode: 'full' });
    expect(started.status).toBe(202);
    const run = await waitRun(http(), started.data.run_id as string);
    expect([run.supplier, run.status, run.pages_done]).toEqual(['main', 'succeeded', run.pages_total]);
    expect(suite.sandbox.stats.requests.products - before).toBe(run.pages_total);
    const stillStuck = (await http().get(`/internal/catalog/sync-runs/${stuck}`)).data.run as SyncRunView;
    expect([stillStuck.supplier, stillStuck.status, stillStuck.pages_done]).toEqual(['second', 'running', 0]);
  });

  it("a supplier whose server refuses connections fails its own run; the other's sync goes on", async () => {
    const gone = await startSandbox({ apiKey: 'gone-api-key', apiSecret: 'gone-api-secret' });
    await registerTestSupplier(suite.apps, 'gone', gone);
    await gone.stop();
    const goneRun = (await http().post('/internal/catalog/sync', { mode: 'full', supplier: 'gone' })).data.run_id as string;
    const before = suite.sandbox.stats.requests.products;
    const mainRun = (await http().post('/internal/catalog/sync', { mode: 'full' })).data.run_id as string;
    const [main, failed] = await Promise.all([waitRun(http(), mainRun), waitRun(http(), goneRun)]);
    expect([main.status, main.pages_done]).toEqual(['succeeded', main.pages_total]);
    expect(suite.sandbox.stats.requests.products - before).toBe(main.pages_total);
    expect([failed.supplier, failed.status, failed.error]).toEqual(['gone', 'failed', expect.stringContaining('categories')]);
  });

  it("a supplier whose key is blocked (429) waits on its own: the other's sync goes on", async () => {
    const runs = (await http().get('/internal/catalog/sync-runs', { params: { supplier: 'second' } })).data.items as SyncRunView[];
    expect(runs.filter((r) => r.status === 'running')).toHaveLength(1); // still held by the first test's hang
    const blocked = await startSandbox({ apiKey: 'blocked-api-key', apiSecret: 'blocked-api-secret' });
    try {
      await registerTestSupplier(suite.apps, 'blocked', blocked);
      blocked.faults.set({ rules: [{ operation: '*', kind: 'rate_limit', retryAfterS: 3600 }] });
      const blockedRun = (await http().post('/internal/catalog/sync', { mode: 'full', supplier: 'blocked' })).data.run_id as string;
      await waitFor(
        async () => blocked.stats.totalRequests,
        (n) => n > 0,
        'the blocked key asked once',
      );
      const before = suite.sandbox.stats.requests.products;
      const mainRun = await waitRun(http(), (await http().post('/internal/catalog/sync', { mode: 'full' })).data.run_id as string);
      expect([mainRun.status, mainRun.pages_done]).toEqual(['succeeded', mainRun.pages_total]);
      expect(suite.sandbox.stats.requests.products - before).toBe(mainRun.pages_total);
      const held = (await http().get(`/internal/catalog/sync-runs/${blockedRun}`)).data.run as SyncRunView;
      expect([held.supplier, held.status, held.pages_done]).toEqual(['blocked', 'running', 0]);
    } finally {
      await blocked.stop();
    }
  });
});

describe('the schedule syncs every enabled supplier, each in its own slot', () => {
  const suite = useAppSuite({
    suppliers: { second: {}, off: { enabled: false } },
    env: { SYNC_CRON: '* * * * * *' },
  });

  it('starts a run of main and of second on its ticks, none of a disabled supplier', async () => {
    const runs = async () =>
      ((await suite.app.http.get('/internal/catalog/sync-runs', { params: { page_size: 500 } })).data.items as SyncRunView[]).filter(
        (r) => r.trigger === 'schedule',
      );
    const seen = await waitFor(
      runs,
      (rs) =>
        rs.some((r) => r.supplier === 'main' && r.status === 'succeeded') &&
        rs.some((r) => r.supplier === 'second' && r.status === 'succeeded'),
      'a scheduled run of each enabled supplier',
      50_000,
    );
    expect(seen.filter((r) => r.supplier === 'off')).toEqual([]);
  });
});
