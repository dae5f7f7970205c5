/**
 * An order's fresh read of a product during a full pass, before the pass reaches the product's page.
 * The pass compares its pages with the fingerprints stored at its start: a product it then sees
 * exactly as it was at the start is not written. When the fresh read changed the product meanwhile
 * (unlisted it on a 404, or wrote the price the upstream gave for a moment), what the pass saw must
 * still win: the product is read again after the pass, rather than staying unlisted, or keeping the
 * passing price, until the next full pass. Both ways of keeping what a pass saw: in memory
 * (the default) and in the database (knownFingerprintsLimit = 0).
 */
import { jest } from '@jest/globals';
import { CatalogRepository } from '../src/catalog/catalog.repository.js';
import { CatalogService } from '../src/catalog/catalog.service.js';
import { CatalogSyncService } from '../src/catalog/catalog-sync.service.js';
import { UpstreamClient } from '../src/upstream/upstream.client.js';
import { useAppSuite } from './support/app-suite.js';
import { waitRun, type SyncRunView as Run } from './support/sync-run.js';

describe.each([
  ['fingerprints kept in memory (default)', undefined],
  ['fingerprints compared in the database (knownFingerprintsLimit = 0)', 0],
])('catalog sync: an order fresh read during a full pass — %s', (_name, limit) => {
  const suite = useAppSuite({
    sandbox: { pageSizeCap: 7, catalog: { products: 30, seed: 5 } },
    env: { SYNC_CONCURRENCY: '2', SYNC_ON_START: 'false', SYNC_CRON: 'off' },
  });

  beforeAll(async () => {
    const { app } = suite;
    if (limit !== undefined) app.relay.app.get(CatalogSyncService).knownFingerprintsLimit = limit;
    const first = await app.http.post('/internal/catalog/sync', { mode: 'full' });
    expect((await waitRun(app.http, first.data.run_id)).status).toBe('succeeded');
  });

  const sku = async (code: string) =>
    (await suite.app.http.get(`/internal/catalog/skus/${code}`)).data.sku as { listed: boolean; cost_price: string };

  /**
   * A full pass held before its first page: `meanwhile` runs once the pass has read the stored
   * fingerprints, and the pass asks the upstream for its first page only once `meanwhile` is done.
   */
  async function passWith(meanwhile: () => Promise<void>): Promise<Run> {
    const { app } = suite;
    // the pass's read of the stored fingerprints, as it resolves (the real read, watched)
    const repo = app.relay.app.get(CatalogRepository);
    const realIndex = repo.fingerprintIndex.bind(repo);
    let read!: () => void;
    const fingerprintsRead = new Promise<void>((r) => (read = r));
    const watch = jest.spyOn(repo, 'fingerprintIndex').mockImplementationOnce(async (supplier: string, limit: number) => {
      const index = await realIndex(supplier, limit);
      read();
      return index;
    });
    // the pass's first page, asked of the upstream once the fresh read is done (the real call, held)
    const upstream = app.relay.app.get(UpstreamClient);
    const realPage = upstream.listProductsRecognizing.bind(upstream);
    let release!: () => void;
    const released = new Promise<void>((r) => (release = r));
    let held = 0;
    const hold = jest.spyOn(upstream, 'listProductsRecognizing').mockImplementationOnce(async (...args) => {
      held++;
      await released;
      return realPage(...args);
    });
    try {
      const started = await app.http.post('/internal/catalog/sync', { mode: 'full' });
      expect(started.status).toBe(202);
      await fingerprintsRead;
      await meanwhile();
      release();
      const run = await waitRun(app.http, started.data.run_id);
      expect(held).toBe(1);
      return run;
    } finally {
      release();
      watch.mockRestore();
      hold.mockRestore();
    }
  }

  it('unlisted by a fresh read (404), live again when the pass reads its page: listed after the pass', async () => {
    const { app, sandbox } = suite;
    const p = sandbox.catalog.listedProducts().at(-1)!;
    const code = p.skus[0].sku_code;
    const run = await passWith(async () => {
      sandbox.catalog.delistProduct(p.id);
      expect(await app.relay.app.get(CatalogService).refreshProduct(p.id)).toBeNull();
      expect((await sku(code)).listed).toBe(false);
      sandbox.catalog.relistProduct(p.id); // back, unchanged
    });
    expect(run.status).toBe('succeeded');
    expect(await sku(code)).toMatchObject({ listed: true });
  });

  it('written by a fresh read at a passing price, back to the old one as the pass reads its page: old price after the pass', async () => {
    // a SKU whose price can go and come back with nothing else of the product changed (setPrice drops an
    // original or member price the passing price crosses)
    const { app, sandbox } = suite;
    const p = sandbox.catalog
      .listedProducts()
      .slice(0, -1)
      .reverse()
      .find((x) => x.skus[0].original_price == null && x.skus[0].member_price == null)!;
    const code = p.skus[0].sku_code;
    const price = p.skus[0].price_amount;
    const run = await passWith(async () => {
      sandbox.catalog.setPrice(code, '999.00');
      expect(await app.relay.app.get(CatalogService).refreshProduct(p.id)).not.toBeNull();
      expect((await sku(code)).cost_price).toBe('999.00');
      sandbox.catalog.setPrice(code, price);
    });
    expect(run.status).toBe('succeeded');
    expect(await sku(code)).toMatchObject({ listed: true, cost_price: price });
  });
});
