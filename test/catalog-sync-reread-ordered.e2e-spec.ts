/**
 * Stock changes do not move a product's `updated_at` upstream (cards added or sold), so an incremental
 * listing never shows them. After its pages, an incremental run re-reads the products ordered in the
 * last day (SYNC_REREAD_ORDERED of them at most, `GET /products/{id}` at the lowest budget class) and
 * applies what it reads under the run: the local stock moves. Products not ordered are not read; with
 * the setting 0 nothing is; a product gone upstream is unlisted; a failed read leaves the run going.
 * What it costs is counted at the sandbox: one product read per ordered product.
 */
import { CatalogSyncService } from '../src/catalog/catalog-sync.service.js';
import { DEFAULT_RETRY_POLICY } from '../src/catalog/product-pager.js';
import { Metrics } from '../src/ops/metrics.service.js';
import type { SandboxServer } from '../src/sandbox/sandbox.server.js';
import { useAppSuite } from './support/app-suite.js';
import type { TestApp } from './support/test-app.js';
import { runSync, type SyncRunView as Run } from './support/sync-run.js';

describe('catalog sync: re-reads of ordered products after an incremental pass', () => {
  const suite = useAppSuite({ sandbox: { pageSizeCap: 10, catalog: { products: 30, seed: 7 } }, env: { SYNC_REREAD_ORDERED: '10' } });
  let sandbox: SandboxServer;
  let app: TestApp;

  const sync = (mode: 'full' | 'incremental'): Promise<Run> => runSync(app.http, mode);

  const local = async (key: string) =>
    (await app.http.get(`/internal/catalog/skus/${encodeURIComponent(key)}`)).data.sku as {
      stock_quantity: number;
      stock_status: string;
      listed: boolean;
    };

  const rereads = async (outcome: string) =>
    (await app.relay.app.get(Metrics).syncRereads.get()).values.find((v) => v.labels.outcome === outcome)?.value ?? 0;

  /** An auto product with stock counted (not unlimited), one of its SKU's key and code. */
  function stocked(skip: number) {
    const found = sandbox.catalog.findSku({ fulfillmentType: 'auto', stockStatus: 'in_stock', skip })!;
    return { productId: found.product.id, code: found.sku.sku_code, key: `${found.product.id}:${found.sku.sku_code}` };
  }

  let orderNo = 0;
  async function order(sku: { key: string }): Promise<void> {
    const r = await app.http.post('/internal/orders', { shop_order_no: `REREAD-${++orderNo}`, sku_code: sku.key, quantity: 1 });
    expect([200, 201, 202]).toContain(r.status);
  }

  beforeAll(async () => {
    ({ sandbox, app } = suite);
    expect(await sync('full')).toMatchObject({ status: 'succeeded', products_seen: 30 });
  });

  it('an ordered product whose stock changed with the same updated_at is re-read, its local stock moves; others are not read', async () => {
    const ordered = stocked(0);
    const other = stocked(1);
    expect(other.productId).not.toBe(ordered.productId);
    await order(ordered);
    const before = sandbox.catalog.getProduct(ordered.productId)!.updated_at;
    sandbox.catalog.setStock(ordered.code, 'in_stock', 42, { keepUpdatedAt: true });
    sandbox.catalog.setStock(other.code, 'in_stock', 43, { keepUpdatedAt: true });
    expect(sandbox.catalog.getProduct(ordered.productId)!.updated_at).toBe(before);
    expect((await local(ordered.key)).stock_quantity).not.toBe(42);
    const otherBefore = (await local(other.key)).stock_quantity;
    sandbox.resetStats();

    const run = await sync('incremental');
    expect(run).toMatchObject({ status: 'succeeded', mode: 'incremental', reread_products: 1, products_seen: 0 });
    // what it cost: one product read, the ordered one
    expect(sandbox.stats.requests.product).toBe(1);
    expect(await local(ordered.key)).toMatchObject({ stock_quantity: 42, listed: true });
    expect((await local(other.key)).stock_quantity).toBe(otherBefore);
    // the change is the run's
    const changes = (await app.http.get(`/internal/catalog/skus/${encodeURIComponent(ordered.key)}/changes`)).data.items as Array<{
      field: string;
      run_id: string | null;
      source: string;
    }>;
    expect(changes.find((c) => c.field === 'stock_quantity')).toMatchObject({ run_id: run.run_id, source: 'refresh' });
  });

  it('a full pass makes no re-read of its own (it reads every product)', async () => {
    sandbox.resetStats();
    expect(await sync('full')).toMatchObject({ status: 'succeeded', mode: 'full', reread_products: 0 });
    expect(sandbox.stats.requests.product).toBe(0);
  });

  it('with SYNC_REREAD_ORDERED=0 nothing is re-read', async () => {
    const ordered = stocked(0);
    sandbox.catalog.setStock(ordered.code, 'in_stock', 44, { keepUpdatedAt: true });
    app.config.sync.rereadOrdered = 0;
    try {
      sandbox.resetStats();
      expect(await sync('incremental')).toMatchObject({ status: 'succeeded', reread_products: 0 });
      expect(sandbox.stats.requests.product).toBe(0);
      expect((await local(ordered.key)).stock_quantity).toBe(42);
    } finally {
      app.config.sync.rereadOrdered = 10;
    }
  });

  it('a failed read is logged and the run goes on; a product gone upstream is unlisted', async () => {
    const ordered = stocked(0);
    const sync$ = app.relay.app.get(CatalogSyncService);
    sync$.retryPolicy = { ...DEFAULT_RETRY_POLICY, baseDelayMs: 1, maxDelayMs: 1 };
    try {
      const failedBefore = await rereads('failed');
      sandbox.faults.set({ rules: [{ operation: 'product', kind: 'error_before', status: 503 }] });
      const failed = await sync('incremental');
      expect(failed).toMatchObject({ status: 'succeeded', reread_products: 1, error: null });
      expect(await rereads('failed')).toBe(failedBefore + 1);
      sandbox.faults.reset();

      sandbox.catalog.deleteProduct(ordered.productId);
      const gone = await sync('incremental');
      expect(gone).toMatchObject({ status: 'succeeded', reread_products: 1 });
      expect(gone.skus_delisted).toBeGreaterThanOrEqual(1);
      expect((await local(ordered.key)).listed).toBe(false);
      // unlisted everywhere: it is no longer one to re-read
      sandbox.resetStats();
      expect(await sync('incremental')).toMatchObject({ status: 'succeeded', reread_products: 0 });
      expect(sandbox.stats.requests.product).toBe(0);
    } finally {
      sync$.retryPolicy = DEFAULT_RETRY_POLICY;
    }
  });
});
