/**
 * A product of the listing whose shape is wrong (a `null` title, as a real Dujiao-Next catalog served
 * one): the sync leaves it out and reports it in the run (`skipped_products`: its id and why), stores
 * the rest of its page, stays complete, and never unlists the product for it: its stored SKUs stay as
 * they were. Once its shape is right again, the next sync stores it. A page whose envelope is wrong
 * still fails the run. Both ways of keeping what a full pass saw: in memory (the default) and in the
 * database (knownFingerprintsLimit = 0).
 */
import { CatalogSyncService } from '../src/catalog/catalog-sync.service.js';
import { DEFAULT_RETRY_POLICY } from '../src/catalog/product-pager.js';
import { Metrics } from '../src/ops/metrics.service.js';
import type { SandboxServer } from '../src/sandbox/sandbox.server.js';
import { productShapeProblem } from '../src/upstream/upstream.shapes.js';
import { useAppSuite } from './support/app-suite.js';
import type { TestApp } from './support/test-app.js';
import { runSync, type SyncRunView as Run } from './support/sync-run.js';

describe.each([
  ['what a full pass saw kept in memory (default)', undefined],
  ['what a full pass saw kept in the database (knownFingerprintsLimit = 0)', 0],
])('catalog sync: a product whose shape is wrong — %s', (_name, limit) => {
  const suite = useAppSuite({ sandbox: { pageSizeCap: 10, catalog: { products: 30, seed: 4 } }, env: { SYNC_CONCURRENCY: '2' } });
  let sandbox: SandboxServer;
  let app: TestApp;

  const sync = (mode: 'full' | 'incremental'): Promise<Run> => runSync(app.http, mode);

  const sku = async (code: string) =>
    (await app.http.get(`/internal/catalog/skus/${code}`)).data.sku as {
      listed: boolean;
      cost_price: string;
      product_title: Record<string, string>;
    };

  const skippedCount = async () => (await app.relay.app.get(Metrics).syncProductsSkipped.get()).values[0]?.value ?? 0;

  beforeAll(async () => {
    ({ sandbox, app } = suite);
    if (limit !== undefined) app.relay.app.get(CatalogSyncService).knownFingerprintsLimit = limit;
    expect(await sync('full')).toMatchObject({ status: 'succeeded', products_seen: 30, skipped_products: [] });
  });

  it('leaves the product out, reports it, stores the rest of its page, stays complete, unlists nothing; stores it once fixed', async () => {
    const page1 = sandbox.catalog.listedProducts().slice(0, 10);
    const bad = page1[4];
    const neighbour = page1[6];
    const badCode = bad.skus[0].sku_code;
    const neighbourCode = neighbour.skus[0].sku_code;
    sandbox.catalog.setTitleNull(bad.id, true);
    // changes while it is broken: its own (not stored until fixed) and its neighbour's on the same page
    sandbox.catalog.setPrice(badCode, '777.00');
    sandbox.catalog.setPrice(neighbourCode, '555.00');
    const reason = productShapeProblem(sandbox.catalog.getProduct(bad.id));
    expect(reason).toBe('title: expected an object of texts by language, got null');
    const skippedBefore = await skippedCount();
    sandbox.resetStats();

    const run = await sync('full');
    expect(run).toMatchObject({ status: 'succeeded', mode: 'full', error: null, products_seen: 30, skus_delisted: 0, unconfirmed: 0 });
    expect(run.skipped_products).toEqual([{ product_id: bad.id, reason }]);
    expect(await skippedCount()).toBe(skippedBefore + 1);
    // the rest of its page is stored; the product keeps its stored SKUs as they were, and was not read on its own
    expect(await sku(neighbourCode)).toMatchObject({ listed: true, cost_price: '555.00' });
    for (const s of bad.skus) expect(await sku(s.sku_code)).toMatchObject({ listed: true, product_title: bad.title });
    expect((await sku(badCode)).cost_price).toBe(bad.skus[0].price_amount);
    expect(sandbox.stats.requests.product).toBe(0);

    // The same bytes again: the page is parsed again (never remembered), the product reported again.
    const again = await sync('full');
    expect(again).toMatchObject({ status: 'succeeded', products_seen: 30, skus_delisted: 0 });
    expect(again.skipped_products).toEqual([{ product_id: bad.id, reason }]);
    expect((await sku(badCode)).listed).toBe(true);

    // Fixed (an admin's edit moves its updated_at): the next incremental run stores it.
    sandbox.catalog.setTitleNull(bad.id, false);
    const fixed = await sync('incremental');
    expect(fixed).toMatchObject({ status: 'succeeded', mode: 'incremental', skipped_products: [] });
    expect(await sku(badCode)).toMatchObject({ listed: true, cost_price: '777.00', product_title: bad.title });
  });

  it('an incremental pass reports the product too', async () => {
    const p = sandbox.catalog.listedProducts()[12];
    sandbox.catalog.setTitleNull(p.id, true);
    try {
      const run = await sync('incremental');
      expect(run).toMatchObject({ status: 'succeeded', mode: 'incremental', skus_delisted: 0 });
      expect(run.skipped_products).toEqual([{ product_id: p.id, reason: 'title: expected an object of texts by language, got null' }]);
      expect((await sku(p.skus[0].sku_code)).listed).toBe(true);
    } finally {
      sandbox.catalog.setTitleNull(p.id, false);
    }
  });

  it('a page whose envelope is wrong still fails the run, naming the page, and unlists nothing', async () => {
    const sync$ = app.relay.app.get(CatalogSyncService);
    sync$.retryPolicy = { ...DEFAULT_RETRY_POLICY, baseDelayMs: 1, maxDelayMs: 1 };
    try {
      sandbox.faults.set({
        rules: [{ operation: 'products', kind: 'garbage_after', body: '{"ok":true,"items":[],"total":"30","page":1,"page_size":10}' }],
      });
      const run = await sync('full');
      expect(run.status).toBe('failed');
      expect(run.error).toMatch(/^page 1: .*unexpected_shape.*nothing was unlisted$/);
      expect(run.skus_delisted).toBe(0);
    } finally {
      sync$.retryPolicy = DEFAULT_RETRY_POLICY;
    }
  });
});
