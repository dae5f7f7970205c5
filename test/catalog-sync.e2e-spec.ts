/**
 * Catalog sync end to end: the relay on a real database, the sandbox upstream as a real HTTP server
 * (page size capped at 7, so that a 60-product catalog takes 9 pages), runs started over the internal
 * API. Tests run in order and build on each other's catalog.
 */
import { Decimal } from 'decimal.js';
import { jest } from '@jest/globals';
import { CatalogSyncService } from '../src/catalog/catalog-sync.service.js';
import { CatalogWriter } from '../src/catalog/catalog-writer.service.js';
import { CatalogRepository } from '../src/catalog/catalog.repository.js';
import { SkuWriteRepository } from '../src/catalog/sku-write.repository.js';
import type { SandboxRequestEvent } from '../src/sandbox/sandbox.server.js';
import { UpstreamClient } from '../src/upstream/upstream.client.js';
import { useAppSuite } from './support/app-suite.js';
import { databaseMillisecondPassed } from './support/db-waits.js';
import type { TestApp, TestDatabase } from './support/test-app.js';
import type { SandboxServer } from '../src/sandbox/sandbox.server.js';
import { waitRun, type SyncRunView as Run } from './support/sync-run.js';

interface Sku {
  sku_code: string;
  upstream_sku_id: number;
  product_id: number;
  cost_price: string;
  sale_price: string;
  stock_status: string;
  stock_quantity: number;
  listed: boolean;
  available: boolean;
  updated_at: string;
}

const PRODUCTS = 60;
const CAP = 7;
/** SYNC_CONCURRENCY of the app under test. */
const CONCURRENCY = 3;

async function sync(app: TestApp, body: Record<string, unknown> = { mode: 'full' }): Promise<Run> {
  const r = await app.http.post('/internal/catalog/sync', body);
  expect(r.status).toBe(202);
  expect(r.data).toMatchObject({ ok: true, run_id: expect.any(String) });
  return waitRun(app.http, (r.data as { run_id: string }).run_id);
}

async function sku(app: TestApp, code: string): Promise<Sku> {
  const r = await app.http.get(`/internal/catalog/skus/${encodeURIComponent(code)}`);
  expect(r.status).toBe(200);
  return (r.data as { sku: Sku }).sku;
}

/** Row versions of every SKU: a write of any kind changes a row's xmin. */
async function rowVersions(db: TestDatabase): Promise<Map<string, string>> {
  const rows = await db.query<{ sku_code: string; x: string }>('SELECT sku_code, xmin::text AS x FROM catalog_skus');
  return new Map(rows.map((r) => [r.sku_code, r.x]));
}

function rowsWritten(before: Map<string, string>, after: Map<string, string>): number {
  let n = 0;
  for (const [code, x] of after) if (before.get(code) !== x) n++;
  return n;
}

describe('catalog sync', () => {
  const suite = useAppSuite({
    sandbox: { pageSizeCap: CAP, catalog: { products: PRODUCTS, seed: 3 } },
    env: { SYNC_CONCURRENCY: String(CONCURRENCY) },
  });
  let db: TestDatabase;
  let sandbox: SandboxServer;
  let app: TestApp;

  beforeAll(() => {
    ({ db, sandbox, app } = suite);
  });
  afterEach(() => {
    sandbox.events.removeAllListeners('request');
  });

  it('maps the whole catalog by sku_code, following the page size the upstream echoes (capped below the request)', async () => {
    sandbox.resetStats();
    const copies = jest.spyOn(app.relay.app.get(SkuWriteRepository), 'insertNewSkus');
    const run = await sync(app);
    // Once a page came back all new, the next ones are sent as new rows: by COPY on a PostgreSQL server
    // (all of them new indeed: none fell back to the upsert), never on PGlite.
    if (db.kind === 'postgres') {
      expect(copies).toHaveBeenCalled();
      await Promise.all(copies.mock.results.map((r) => expect(r.value).resolves.toMatchObject({ stalePricing: null })));
    } else {
      expect(copies).not.toHaveBeenCalled();
    }
    copies.mockRestore();
    expect(run).toMatchObject({
      status: 'succeeded',
      mode: 'full',
      pages_total: Math.ceil(PRODUCTS / CAP),
      pages_done: Math.ceil(PRODUCTS / CAP),
      products_seen: PRODUCTS,
      skus_created: sandbox.catalog.skuCount,
      skus_changed: 0,
      skus_delisted: 0,
      error: null,
    });
    expect(run.changes).toEqual({ created: sandbox.catalog.skuCount, price: 0, stock: 0, sku_id: 0, listing: 0, other: 0 });
    expect(sandbox.stats.requests.products).toBe(Math.ceil(PRODUCTS / CAP));
    // pages written together still count one by one
    const metrics = String((await app.http.get('/metrics')).data);
    expect(metrics).toMatch(new RegExp(`^relay_sync_pages_total ${Math.ceil(PRODUCTS / CAP)}$`, 'm'));
    const [{ n }] = await db.query<{ n: number }>('SELECT count(*)::int AS n FROM catalog_skus WHERE listed');
    expect(n).toBe(sandbox.catalog.skuCount);

    // Every upstream SKU is there with its fields.
    for (const p of sandbox.catalog.listedProducts().slice(0, 10)) {
      for (const s of p.skus) {
        const local = await sku(app, s.sku_code);
        expect(local).toMatchObject({
          upstream_sku_id: s.id,
          product_id: p.id,
          cost_price: s.price_amount,
          sale_price: s.price_amount, // no markup by default, already on the 0.01 step
          stock_status: s.stock_status,
          stock_quantity: s.stock_quantity,
          listed: true,
          available: s.is_active && s.stock_status !== 'out_of_stock',
        });
      }
    }
  });

  it('a re-sync with no upstream change writes no SKU row and reports 0 changes', async () => {
    sandbox.resetStats();
    const before = await rowVersions(db);
    const [{ n: historyBefore }] = await db.query<{ n: number }>('SELECT count(*)::int AS n FROM catalog_sku_changes');
    const copies = jest.spyOn(app.relay.app.get(SkuWriteRepository), 'insertNewSkus');
    const run = await sync(app);
    expect(copies).not.toHaveBeenCalled();
    copies.mockRestore();
    expect(run).toMatchObject({ status: 'succeeded', skus_created: 0, skus_changed: 0, skus_delisted: 0, skus_relisted: 0 });
    expect(Object.values(run.changes).every((v) => v === 0)).toBe(true);
    expect(rowsWritten(before, await rowVersions(db))).toBe(0);
    const [{ n: historyAfter }] = await db.query<{ n: number }>('SELECT count(*)::int AS n FROM catalog_sku_changes');
    expect(historyAfter).toBe(historyBefore);
    const [{ n: seenLeft }] = await db.query<{ n: number }>('SELECT count(*)::int AS n FROM catalog_sync_seen');
    expect(seenLeft).toBe(0);
    // every product counted as seen by the pass: none read again to confirm it
    expect(sandbox.stats.requests.product).toBe(0);
    // every page came byte for byte as in the previous pass, its products as stored: no fingerprint computed, and none
    // parsed but those that arrived before the stored fingerprints were read (their fingerprints from memory; how many
    // arrive that early depends on timing, which pages they are does not)
    const stats = app.relay.app.get(CatalogSyncService).pageFingerprints.stats;
    expect(stats).toMatchObject({ computed: 0, unchanged: Math.ceil(PRODUCTS / CAP) - stats.remembered, remembered: stats.beforeIndex });
    expect(run).toMatchObject({ products_seen: PRODUCTS, skus_seen: sandbox.catalog.skuCount, pages_done: Math.ceil(PRODUCTS / CAP) });
  });

  it('applies price, stock and sku_id changes, counted by kind and kept as history behind changed_since', async () => {
    const [a, b, c] = sandbox.catalog
      .listedProducts()
      .slice(20, 23)
      .map((p) => p.skus[0]);
    // every write from here on is stamped after `since` (the database's clock, as the writes are)
    const since = (await databaseMillisecondPassed(db)).toISOString();
    sandbox.catalog.setPrice(a.sku_code, '123.45');
    sandbox.catalog.setStock(b.sku_code, 'out_of_stock');
    const newId = sandbox.catalog.changeSkuId(c.sku_code);
    const before = await rowVersions(db);

    const run = await sync(app);
    expect(run).toMatchObject({ status: 'succeeded', skus_created: 0, skus_changed: 3 });
    expect(run.changes).toMatchObject({ price: 1, stock: 1, sku_id: 1, listing: 0 });
    expect(rowsWritten(before, await rowVersions(db))).toBe(3);
    // the pages of the changed products (20, 21 and 22 in listing order) were parsed and fingerprinted, the others not parsed
    const changedPages = new Set([20, 21, 22].map((i) => Math.floor(i / CAP))).size;
    const stats = app.relay.app.get(CatalogSyncService).pageFingerprints.stats;
    expect(stats).toMatchObject({ computed: changedPages, unchanged: Math.ceil(PRODUCTS / CAP) - changedPages - stats.remembered });

    expect(await sku(app, a.sku_code)).toMatchObject({ cost_price: '123.45', sale_price: '123.45' });
    expect(await sku(app, b.sku_code)).toMatchObject({ stock_status: 'out_of_stock', stock_quantity: 0, available: false, listed: true });
    expect(await sku(app, c.sku_code)).toMatchObject({ upstream_sku_id: newId });

    const changed = await app.http.get('/internal/catalog/skus', { params: { changed_since: since } });
    expect(changed.status).toBe(200);
    expect((changed.data as { items: Sku[] }).items.map((s) => s.sku_code).sort()).toEqual([a.sku_code, b.sku_code, c.sku_code].sort());

    const history = await app.http.get(`/internal/catalog/skus/${a.sku_code}/changes`);
    expect(history.status).toBe(200);
    const items = (history.data as { items: Array<Record<string, unknown>> }).items;
    expect(items.filter((h) => h.run_id === run.run_id)).toEqual(
      expect.arrayContaining([
        expect.objectContaining({
          sku_code: a.sku_code,
          field: 'cost_price',
          kind: 'price',
          old: a.price_amount,
          new: '123.45',
          source: 'sync',
        }),
        expect.objectContaining({ field: 'sale_price', kind: 'price', new: '123.45' }),
      ]),
    );
    const idHistory = (await app.http.get(`/internal/catalog/skus/${c.sku_code}/changes`)).data as {
      items: Array<Record<string, unknown>>;
    };
    expect(idHistory.items[0]).toMatchObject({ field: 'upstream_sku_id', kind: 'sku_id', old: c.id, new: newId, run_id: run.run_id });
    // the oldest entry: the SKU's creation, kept on its row (id null) with the run that created it, counted and paged
    const runs = (await app.http.get('/internal/catalog/sync-runs', { params: { page_size: 500 } })).data as { items: Run[] };
    const first = [...runs.items].sort((x, y) => Date.parse(x.started_at) - Date.parse(y.started_at))[0];
    expect(items[items.length - 1]).toEqual({
      id: null,
      supplier: 'main',
      sku_key: `${sandbox.catalog.getSku(a.sku_code)!.product.id}:${a.sku_code}`,
      sku_code: a.sku_code,
      field: 'created',
      kind: 'created',
      old: null,
      new: null,
      run_id: first.run_id,
      source: 'sync',
      changed_at: expect.any(String),
    });
    expect(items.filter((h) => h.kind === 'created')).toHaveLength(1);
    const total = (history.data as { total: number }).total;
    expect(total).toBe(items.length);
    const last = await app.http.get(`/internal/catalog/skus/${a.sku_code}/changes`, { params: { page: total, page_size: 1 } });
    expect((last.data as { items: unknown[]; total: number }).items).toEqual([items[items.length - 1]]);
    expect((last.data as { total: number }).total).toBe(total);
  });

  it('a page received before whose product lost its stored fingerprint is parsed again, and that product looked at in full', async () => {
    expect(await sync(app)).toMatchObject({ status: 'succeeded', skus_changed: 0 });
    const product = sandbox.catalog.listedProducts()[10];
    await db.query('DELETE FROM catalog_product_fingerprints WHERE product_id = $1', [product.id]);
    const before = await rowVersions(db);
    const run = await sync(app);
    expect(run).toMatchObject({ status: 'succeeded', skus_changed: 0, skus_created: 0, skus_delisted: 0, products_seen: PRODUCTS });
    // its page was parsed (its fingerprints from memory), the unchanged ones not (but those that arrived before the
    // stored fingerprints were read); the product's SKUs equal, no row written
    const stats = app.relay.app.get(CatalogSyncService).pageFingerprints.stats;
    expect(stats).toMatchObject({ computed: 0, remembered: Math.ceil(PRODUCTS / CAP) - stats.unchanged });
    expect(stats.unchanged).toBeLessThanOrEqual(Math.ceil(PRODUCTS / CAP) - 1);
    expect(rowsWritten(before, await rowVersions(db))).toBe(0);
    const [{ n }] = await db.query<{ n: number }>('SELECT count(*)::int AS n FROM catalog_product_fingerprints WHERE product_id = $1', [
      product.id,
    ]);
    expect(n).toBe(1);
  });

  it('unlists a product gone upstream only after confirming it with GET /products/{id}, and relists it', async () => {
    const product = sandbox.catalog.listedProducts()[30];
    sandbox.catalog.delistProduct(product.id);
    const productReads = sandbox.stats.requests.product;
    const run = await sync(app);
    expect(run).toMatchObject({ status: 'succeeded', skus_delisted: product.skus.length, skus_relisted: 0 });
    expect(sandbox.stats.requests.product).toBeGreaterThan(productReads);
    for (const s of product.skus) expect(await sku(app, s.sku_code)).toMatchObject({ listed: false, available: false });
    const unlisted = await app.http.get('/internal/catalog/skus', { params: { listed: false } });
    expect((unlisted.data as { items: Sku[] }).items.map((s) => s.sku_code).sort()).toEqual(product.skus.map((s) => s.sku_code).sort());

    sandbox.catalog.relistProduct(product.id);
    const again = await sync(app);
    expect(again).toMatchObject({ status: 'succeeded', skus_relisted: product.skus.length, skus_delisted: 0 });
    expect(again.changes.listing).toBe(product.skus.length);
    for (const s of product.skus) expect(await sku(app, s.sku_code)).toMatchObject({ listed: true });
  });

  it('a product not in the listing that cannot be read to confirm it stays listed (unconfirmed), unlisted once it can', async () => {
    const product = sandbox.catalog.listedProducts()[20];
    sandbox.catalog.delistProduct(product.id);
    sandbox.faults.set({ rules: [{ operation: 'product', kind: 'error_before', status: 503 }] });
    expect(await sync(app)).toMatchObject({ status: 'succeeded', skus_delisted: 0, unconfirmed: 1 });
    for (const s of product.skus) expect(await sku(app, s.sku_code)).toMatchObject({ listed: true });

    sandbox.faults.reset();
    expect(await sync(app)).toMatchObject({ status: 'succeeded', skus_delisted: product.skus.length, unconfirmed: 0 });
    sandbox.catalog.relistProduct(product.id);
    expect(await sync(app)).toMatchObject({ status: 'succeeded', skus_relisted: product.skus.length });
  });

  it('above the in-memory limit, a pass asks the database page by page, records what it saw there: same unlisting, relisting', async () => {
    const service = app.relay.app.get(CatalogSyncService);
    const limit = service.knownFingerprintsLimit;
    service.knownFingerprintsLimit = 0;
    try {
      const product = sandbox.catalog.listedProducts()[12];
      sandbox.catalog.delistProduct(product.id);
      const productReads = sandbox.stats.requests.product;
      expect(await sync(app)).toMatchObject({ status: 'succeeded', skus_delisted: product.skus.length, skus_changed: product.skus.length });
      expect(sandbox.stats.requests.product).toBe(productReads + 1); // that product alone was confirmed
      for (const s of product.skus) expect(await sku(app, s.sku_code)).toMatchObject({ listed: false });
      sandbox.catalog.relistProduct(product.id);
      expect(await sync(app)).toMatchObject({ status: 'succeeded', skus_relisted: product.skus.length, skus_delisted: 0 });
      expect(await sync(app)).toMatchObject({ status: 'succeeded', skus_changed: 0, skus_delisted: 0 });
      expect(sandbox.stats.requests.product).toBe(productReads + 1);
    } finally {
      service.knownFingerprintsLimit = limit;
    }
  });

  it('a pass over a stored catalog with no fingerprint keeps what it saw in memory: confirms, unlists the unseen one alone', async () => {
    await db.query('DELETE FROM catalog_product_fingerprints');
    const product = sandbox.catalog.listedProducts()[14];
    sandbox.catalog.delistProduct(product.id);
    const productReads = sandbox.stats.requests.product;
    const before = await rowVersions(db);
    expect(await sync(app)).toMatchObject({
      status: 'succeeded',
      skus_delisted: product.skus.length,
      skus_changed: product.skus.length,
      unconfirmed: 0,
    });
    expect(sandbox.stats.requests.product).toBe(productReads + 1); // that product alone was confirmed
    expect(rowsWritten(before, await rowVersions(db))).toBe(product.skus.length);
    for (const s of product.skus) expect(await sku(app, s.sku_code)).toMatchObject({ listed: false });
    const [{ n }] = await db.query<{ n: number }>('SELECT count(*)::int AS n FROM catalog_sync_seen');
    expect(n).toBe(0);
    sandbox.catalog.relistProduct(product.id);
    expect(await sync(app)).toMatchObject({ status: 'succeeded', skus_relisted: product.skus.length, skus_delisted: 0 });
  });

  it("a full pass finds unchanged products by its start's fingerprints; one unlisted since is not relisted by an equal page", async () => {
    expect(await sync(app)).toMatchObject({ status: 'succeeded' });
    const writer = app.relay.app.get(CatalogWriter);
    const upstream = app.relay.app.get(UpstreamClient);
    const [a, b] = sandbox.catalog.listedProducts().slice(40, 42);
    const known = (await app.relay.app.get(CatalogRepository).fingerprintIndex('main', 1000))!.fingerprints;
    expect(known.size).toBe(sandbox.catalog.listedProducts().length);
    // the page as listed at the start of the pass
    const page = [await upstream.getProduct(a.id), await upstream.getProduct(b.id)];
    // meanwhile an order's fresh read found b gone: its SKUs unlisted, its fingerprint dropped
    await writer.unlistProduct(b.id, { supplier: 'main', runId: null, source: 'refresh' });

    const r = await writer.applyProducts(page, { supplier: 'main', runId: null, source: 'sync', known });
    expect(r).toMatchObject({ skus: a.skus.length + b.skus.length, written: 0, relisted: 0 });
    for (const s of b.skus) expect(await sku(app, s.sku_code)).toMatchObject({ listed: false });

    // without them, the page is compared with the database: b differs (no fingerprint) and is written
    const checked = await writer.applyProducts(page, { supplier: 'main', runId: null, source: 'sync' });
    expect(checked).toMatchObject({ written: b.skus.length, relisted: b.skus.length });
    expect(await sync(app)).toMatchObject({ status: 'succeeded', skus_changed: 0, skus_delisted: 0 });
  });

  it("a product fingerprinted during the pass (an order's fresh read) the pass did not see is confirmed: gone, unlisted", async () => {
    expect(await sync(app)).toMatchObject({ status: 'succeeded' });
    const writer = app.relay.app.get(CatalogWriter);
    const gone = sandbox.catalog.listedProducts()[33];
    const asRead = await app.relay.app.get(UpstreamClient).getProduct(gone.id);
    // no fingerprint at the start of the next pass, and no longer listed upstream
    await db.query('DELETE FROM catalog_product_fingerprints WHERE product_id = $1', [gone.id]);
    sandbox.catalog.delistProduct(gone.id);
    // once the pass has begun, an order's fresh read (made just before the product went) writes it
    let fresh: Promise<unknown> | null = null;
    sandbox.faults.set({ latencyMs: 30 });
    sandbox.events.on('request', (e: SandboxRequestEvent) => {
      if (e.operation === 'products' && !fresh)
        fresh = writer.applyFreshProduct(asRead, { supplier: 'main', runId: null, source: 'refresh' });
    });
    const run = await sync(app);
    await fresh;
    expect(run).toMatchObject({ status: 'succeeded', skus_delisted: gone.skus.length });
    for (const s of gone.skus) expect(await sku(app, s.sku_code)).toMatchObject({ listed: false });
    sandbox.catalog.relistProduct(gone.id);
    expect(await sync(app)).toMatchObject({ status: 'succeeded', skus_relisted: gone.skus.length });
  });

  it('a listing that shifts during paging never unlists a live product (confirmed found → kept)', async () => {
    // After two pages are served, a product of page 1 (already read) is withdrawn: every later product
    // moves one place forward, so a live product slips into a page already read and the pass misses it.
    const first = sandbox.catalog.listedProducts()[1];
    let served = 0;
    sandbox.events.on('request', (e: SandboxRequestEvent) => {
      if (e.operation === 'products' && e.phase === 'done' && ++served === 2) sandbox.catalog.delistProduct(first.id);
    });
    const run = await sync(app);
    expect(run).toMatchObject({ status: 'succeeded', skus_delisted: 0 });
    expect(run.confirmed_live).toBeGreaterThanOrEqual(1);
    const [{ n }] = await db.query<{ n: number }>('SELECT count(*)::int AS n FROM catalog_skus WHERE NOT listed');
    expect(n).toBe(0);

    // The withdrawn product was seen live by that pass; the next one unlists it, and only it.
    sandbox.events.removeAllListeners('request');
    expect(await sync(app)).toMatchObject({ status: 'succeeded', skus_delisted: first.skus.length });
    const unlisted = await app.http.get('/internal/catalog/skus', { params: { listed: false, page_size: 500 } });
    expect((unlisted.data as { items: Sku[] }).items.map((s) => s.sku_code).sort()).toEqual(first.skus.map((s) => s.sku_code).sort());
    sandbox.catalog.relistProduct(first.id);
    expect((await sync(app)).skus_relisted).toBe(first.skus.length);
  });

  it('a product inserted at the front during paging: nothing live is unlisted, the newcomer comes with the next run', async () => {
    sandbox.faults.set({ insertAtFrontWhilePaging: { afterPage: 2 } });
    const run = await sync(app);
    expect(run).toMatchObject({ status: 'succeeded', skus_delisted: 0 });
    const [{ n }] = await db.query<{ n: number }>('SELECT count(*)::int AS n FROM catalog_skus WHERE NOT listed');
    expect(n).toBe(0);
    const newcomer = sandbox.catalog.listedProducts()[0];
    const next = await sync(app);
    expect(next).toMatchObject({ status: 'succeeded', skus_delisted: 0 });
    expect(await sku(app, newcomer.skus[0].sku_code)).toMatchObject({ product_id: newcomer.id, listed: true });
  });

  it('one page failing for good fails the run, naming the page and why, and unlists nothing', async () => {
    const gone = sandbox.catalog.listedProducts()[40];
    sandbox.catalog.delistProduct(gone.id);
    let received = 0;
    sandbox.events.on('request', (e: SandboxRequestEvent) => {
      if (e.operation === 'products' && e.phase === 'received' && ++received === 3) {
        sandbox.faults.set({ rules: [{ operation: 'products', kind: 'error_before', status: 503 }] });
      }
    });
    const run = await sync(app);
    expect(run.status).toBe('failed');
    expect(run.error).toMatch(/^page \d+: upstream listProducts outcome unknown: http_503 \(after 4 tries\); nothing was unlisted$/);
    expect(run.skus_delisted).toBe(0);
    for (const s of gone.skus) expect(await sku(app, s.sku_code)).toMatchObject({ listed: true });
    const [{ n }] = await db.query<{ n: number }>('SELECT count(*)::int AS n FROM catalog_sync_seen');
    expect(n).toBe(0);

    sandbox.faults.reset();
    sandbox.events.removeAllListeners('request');
    const after = await sync(app);
    expect(after).toMatchObject({ status: 'succeeded', skus_delisted: gone.skus.length });
    sandbox.catalog.relistProduct(gone.id);
    expect((await sync(app)).skus_relisted).toBe(gone.skus.length);
  });

  it('a 429 once: the run waits for Retry-After and completes', async () => {
    sandbox.faults.set({ rules: [{ operation: 'products', kind: 'rate_limit', times: 1, retryAfterS: 1 }] });
    sandbox.resetStats();
    const run = await sync(app);
    expect(run).toMatchObject({ status: 'succeeded', pages_done: run.pages_total, skus_delisted: 0 });
    expect(sandbox.stats.faultsApplied).toBe(1);
    expect(sandbox.stats.requests.products).toBe(run.pages_total + 1);
  });

  it('a category gone upstream is unlisted, not deleted; it comes back listed', async () => {
    await db.query(
      `INSERT INTO catalog_categories (id, parent_id, slug, name, icon, sort_order, listed) VALUES (9, 0, 'retired', ` +
        `'{"en":"Retired"}', '', 1, true),
       (901, 9, 'retired-child', '{"en":"Retired child"}', '', 1, true)`,
    );
    expect((await sync(app)).status).toBe('succeeded');
    const tree = (await app.http.get('/internal/catalog/categories')).data as {
      categories: Array<{ id: number; listed: boolean; children: Array<{ id: number; listed: boolean }> }>;
    };
    const retired = tree.categories.find((c) => c.id === 9);
    expect(retired).toMatchObject({ listed: false, children: [{ id: 901, listed: false }] });
    expect(tree.categories.filter((c) => c.id !== 9).every((c) => c.listed && c.children.every((k) => k.listed))).toBe(true);
    await db.query('UPDATE catalog_categories SET listed = false WHERE id = 2');
    expect((await sync(app)).status).toBe('succeeded');
    const [{ slug, listed }] = await db.query<{ slug: string; listed: boolean }>(
      'SELECT slug, listed FROM catalog_categories WHERE id = 2',
    );
    expect({ slug, listed }).toEqual({ slug: 'streaming', listed: true });
  });

  it("a child category new to the relay whose SKUs are already stored: they are repriced with its parent's rule", async () => {
    const child = sandbox.catalog
      .categories()
      .find((c) => c.parent_id !== 0 && sandbox.catalog.listedProducts().some((p) => p.category_id === c.id))!;
    const code = sandbox.catalog.listedProducts().find((p) => p.category_id === child.id)!.skus[0].sku_code;
    expect((await sync(app)).status).toBe('succeeded');
    try {
      const rules = {
        rules: [{ scope: 'category', category_id: child.parent_id, markup_percent: '50', markup_fixed: '0', rounding: '0.01' }],
      };
      expect((await app.http.put('/internal/pricing/rules', rules)).status).toBe(200);
      const ruled = await sku(app, code);
      expect(ruled.sale_price).toBe(new Decimal(ruled.cost_price).mul('1.5').toDecimalPlaces(2, Decimal.ROUND_CEIL).toFixed(2));
      // The relay does not know the child (e.g. an order's fresh read stored its products first, or the
      // upstream did not list it before): its SKUs are priced without the parent's rule.
      await db.query('DELETE FROM catalog_categories WHERE id = $1', [child.id]);
      expect((await app.http.put('/internal/pricing/rules', rules)).status).toBe(200);
      expect((await sku(app, code)).sale_price).not.toBe(ruled.sale_price);
      // The sync stores the child under its parent and reprices its SKUs, which did not change upstream.
      const run = await sync(app);
      expect(run.status).toBe('succeeded');
      expect((await sku(app, code)).sale_price).toBe(ruled.sale_price);
    } finally {
      await app.http.put('/internal/pricing/rules', { rules: [] });
    }
  });

  it('a sku_code another product carries too is a second SKU (own sku_key), no conflict; a plain code names the listed one', async () => {
    const owner = sandbox.catalog.listedProducts()[10];
    const code = owner.skus[0].sku_code;
    const dup = sandbox.catalog.duplicateSkuCode(code);
    const [ownerKey, dupKey] = [`${owner.id}:${code}`, `${dup.productId}:${code}`];
    const run = await sync(app);
    expect(run.status).toBe('succeeded');
    expect(run.conflicts).toBe(0);
    expect(await sku(app, ownerKey)).toMatchObject({
      sku_key: ownerKey,
      sku_code: code,
      product_id: owner.id,
      upstream_sku_id: owner.skus[0].id,
      listed: true,
    });
    expect(await sku(app, dupKey)).toMatchObject({
      sku_key: dupKey,
      sku_code: code,
      product_id: dup.productId,
      upstream_sku_id: dup.skuId,
      listed: true,
    });
    const plain = await app.http.get(`/internal/catalog/skus/${encodeURIComponent(code)}`);
    expect([plain.status, (plain.data as { error_code: string }).error_code, (plain.data as { candidates: string[] }).candidates]).toEqual([
      409,
      'sku_ambiguous',
      [ownerKey, dupKey].sort(),
    ]);
    expect((await app.http.get('/internal/catalog/conflicts')).data).toMatchObject({ ok: true, total: 0 });

    // The owner is withdrawn: once that is confirmed, its SKUs are unlisted and the plain code names the other product's.
    sandbox.catalog.delistProduct(owner.id);
    const moved = await sync(app);
    expect(moved.status).toBe('succeeded');
    expect(await sku(app, code)).toMatchObject({ sku_key: dupKey, product_id: dup.productId, upstream_sku_id: dup.skuId, listed: true });
    expect(await sku(app, ownerKey)).toMatchObject({ listed: false });
    for (const s of owner.skus.slice(1)) expect(await sku(app, s.sku_code)).toMatchObject({ listed: false });
  });

  // last: the removed SKU stays unlisted (the sandbox cannot put it back)
  it('a SKU removed from a live product is unlisted after the pass; the product and its other SKUs stay', async () => {
    const product = sandbox.catalog.listedProducts().find((p, i) => i > 40 && p.skus.length >= 3)!;
    const [gone, ...kept] = product.skus;
    sandbox.catalog.removeSku(gone.sku_code);
    const run = await sync(app);
    expect(run).toMatchObject({ status: 'succeeded', skus_delisted: 1, skus_relisted: 0, skus_created: 0 });
    expect(run.changes.listing).toBe(1);
    expect(await sku(app, gone.sku_code)).toMatchObject({ listed: false, available: false });
    for (const s of kept) expect(await sku(app, s.sku_code)).toMatchObject({ listed: true });
    // and the next pass finds nothing more to do
    const again = await sync(app);
    expect(again).toMatchObject({ status: 'succeeded', skus_delisted: 0, skus_changed: 0, skus_relisted: 0 });
  });
});
