/**
 * The catalog of a one-upstream database becomes the supplier `main`'s (migrations 20261129130100 and
 * 20261129131000): every row kept, each naming `main`, and the relay reads and syncs it as before (a
 * re-sync finds nothing new). The database is made by the previous migrations: a synced catalog, then
 * every migration from 20261129130100 on taken down (their down files too), then up again.
 */
import { migrateDown, migrateUp } from '../src/database/migrator.js';
import type { SandboxServer } from '../src/sandbox/sandbox.server.js';
import { seedCatalog } from './support/child-app.js';
import { runSync } from './support/sync-run.js';
import { openTestDatabase, startSandbox, startTestApp, type TestApp, type TestDatabase } from './support/test-app.js';

const TABLES = [
  'catalog_categories',
  'catalog_skus',
  'catalog_sku_changes',
  'catalog_sync_runs',
  'catalog_products',
  'catalog_product_fingerprints',
  'catalog_product_media',
] as const;

describe('catalog migration to suppliers', () => {
  let db: TestDatabase;
  let sandbox: SandboxServer;
  let app: TestApp | null = null;
  beforeAll(async () => {
    db = await openTestDatabase();
    sandbox = await startSandbox({ catalog: { products: 8 } });
    app = await startTestApp(db, sandbox, {}, { workers: false });
    await seedCatalog(app.http);
    // a change recorded in the history, and a product with an image
    const [first, second] = sandbox.catalog.listedProducts();
    sandbox.catalog.setPrice(first.skus[0].sku_code, '91.00');
    sandbox.catalog.setProductMedia(second.id, { images: ['/uploads/migration.png'] });
    await runSync(app.http, 'full');
  });
  afterAll(async () => {
    await app?.close();
    await sandbox?.stop();
    await db?.close();
  });

  const counts = async () => {
    const out: Record<string, number> = {};
    for (const t of TABLES) out[t] = (await db.query<{ n: number }>(`SELECT count(*)::int AS n FROM ${t}`))[0].n;
    return out;
  };

  it("keeps every catalog row, each the supplier main's, and the relay syncs it as before", async () => {
    await app!.close();
    app = null;
    const [{ n }] = await db.query<{ n: string | number }>("SELECT count(*) AS n FROM schema_migrations WHERE version >= '20261129130100'");
    const reverted = await migrateDown(db.url, Number(n));
    expect(reverted.at(-1)).toBe('20261129130100_supplier_columns');
    const columns = await db.query<{ table_name: string }>(
      `SELECT table_name FROM information_schema.columns WHERE column_name = 'supplier' AND table_name LIKE 'catalog_%'`,
    );
    expect(columns).toEqual([]); // a one-upstream database
    const before = await counts();
    expect(TABLES.filter((t) => before[t] === 0)).toEqual([]);
    const currency = await db.query<{ key: string }>(`SELECT key FROM relay_state WHERE key LIKE 'catalog.currency%'`);
    expect(currency).toEqual([{ key: 'catalog.currency' }]);

    await migrateUp(db.url);
    expect(await counts()).toEqual(before);
    for (const t of TABLES) {
      const suppliers = await db.query<{ supplier: string }>(`SELECT DISTINCT supplier FROM ${t}`);
      expect([t, suppliers]).toEqual([t, [{ supplier: 'main' }]]);
    }
    expect(await db.query<{ key: string }>(`SELECT key FROM relay_state WHERE key LIKE 'catalog.currency%'`)).toEqual([
      { key: 'catalog.currency:main' },
    ]);

    app = await startTestApp(db, sandbox, {}, { workers: false });
    const skus = (await app.http.get('/internal/catalog/skus', { params: { page_size: 500 } })).data as {
      items: Array<{ supplier: string; currency: string | null }>;
      total: number;
    };
    expect(skus.total).toBe(before.catalog_skus);
    expect(skus.items.every((s) => s.supplier === 'main' && s.currency !== null)).toBe(true);
    const again = await runSync(app.http, 'full');
    expect([again.supplier, again.status, again.skus_created, again.skus_changed, again.skus_delisted]).toEqual([
      'main',
      'succeeded',
      0,
      0,
      0,
    ]);
  });
});
