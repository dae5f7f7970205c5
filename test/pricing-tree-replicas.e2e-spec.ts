/**
 * The category tree is part of the pricing (a parent's rule applies to its children, CONTRACT §5) and
 * each replica caches it beside the rules (§9): a sync that stores a new child category moves the
 * pricing version on, so that another replica reloads the tree before it prices that category's SKUs
 * (a fresh read on the order path) instead of pricing them without the parent's rule, a price the next
 * sync then leaves alone (the product's fingerprint is unchanged).
 */
import { Decimal } from 'decimal.js';
import { CatalogService } from '../src/catalog/catalog.service.js';
import { useAppSuite } from './support/app-suite.js';
import { waitRun } from './support/sync-run.js';
import type { TestApp } from './support/test-app.js';

type Sku = { sku_code: string; cost_price: string; sale_price: string; category_id: number; listed: boolean };

async function sku(app: TestApp, code: string): Promise<Sku> {
  const r = await app.http.get(`/internal/catalog/skus/${encodeURIComponent(code)}`);
  expect(r.status).toBe(200);
  return (r.data as { sku: Sku }).sku;
}

async function fullSync(app: TestApp) {
  const r = await app.http.post('/internal/catalog/sync', { mode: 'full' });
  expect(r.status).toBe(202);
  return waitRun(app.http, (r.data as { run_id: string }).run_id);
}

describe('pricing across replicas: a category tree changed by a sync', () => {
  const suite = useAppSuite({ instances: 2, seed: true, sandbox: { catalog: { products: 30, seed: 5 } } });

  it("a SKU of a new child category written by replica B gets its parent's rule, and a later sync does not leave it wrong", async () => {
    const { sandbox, db } = suite;
    const [a, b] = suite.apps;
    const child = sandbox.catalog
      .categories()
      .find((c) => c.parent_id !== 0 && sandbox.catalog.listedProducts().some((p) => p.category_id === c.id))!;
    const product = sandbox.catalog.listedProducts().find((p) => p.category_id === child.id)!;
    const code = product.skus[0].sku_code;

    // The relay has never seen the child category nor its products (the upstream added them since the
    // last sync): what a replica's state is before the sync that brings them.
    const productIds = sandbox.catalog
      .listedProducts()
      .filter((p) => p.category_id === child.id)
      .map((p) => p.id);
    await db.query('DELETE FROM catalog_skus WHERE category_id = $1', [child.id]);
    await db.query('DELETE FROM catalog_product_fingerprints WHERE product_id = ANY($1::bigint[])', [productIds]);
    await db.query('DELETE FROM catalog_categories WHERE id = $1', [child.id]);

    // A rule on the parent, set through replica B: B now holds the rules (and the tree, without the child) in its cache.
    const rules = {
      rules: [{ scope: 'category', category_id: child.parent_id, markup_percent: '50', markup_fixed: '0', rounding: '0.01' }],
    };
    expect((await b.http.put('/internal/pricing/rules', rules)).status).toBe(200);

    // Replica A syncs: it stores the child under its parent and its products, priced with the parent's rule.
    expect((await fullSync(a)).status).toBe('succeeded');
    const ruled = (cost: string) => new Decimal(cost).mul('1.5').toDecimalPlaces(2, Decimal.ROUND_CEIL).toFixed(2);
    const afterSync = await sku(a, code);
    expect(afterSync.sale_price).toBe(ruled(afterSync.cost_price));

    // The upstream changes the SKU's cost; an order on replica B reads the product fresh (price guard).
    sandbox.catalog.setPrice(code, '20.00');
    await b.relay.app.get(CatalogService).refreshProduct(product.id);
    const fresh = await sku(a, code);
    expect(fresh.cost_price).toBe('20.00');
    // The next full sync (the product's fingerprint is the one B stored).
    expect((await fullSync(a)).status).toBe('succeeded');
    const later = await sku(a, code);
    // CONTRACT §5: sale_price = the pricing rules applied to the current cost (the parent's +50 %),
    // right after B's write and still after the next sync.
    expect({ afterFreshRead: fresh.sale_price, afterNextSync: later.sale_price }).toEqual({
      afterFreshRead: '30.00',
      afterNextSync: '30.00',
    });
  });
});
