/**
 * Migration 20261122008000 keeps a SKU's creation on its row; its down migration writes the creations
 * back into the history, which is read by id (newest first). A SKU's creation must stay its oldest
 * entry there: restored rows must not take new, higher ids and come out as the newest.
 */
import { migrateDown } from '../src/database/migrator.js';
import type { SandboxServer } from '../src/sandbox/sandbox.server.js';
import { seedCatalog } from './support/child-app.js';
import { openTestDatabase, startSandbox, startTestApp, type TestApp, type TestDatabase } from './support/test-app.js';

describe('catalog history across migration 20261122008000 and back', () => {
  let db: TestDatabase;
  let sandbox: SandboxServer;
  let app: TestApp | null = null;
  beforeAll(async () => {
    db = await openTestDatabase();
    sandbox = await startSandbox({ catalog: { products: 3 } });
    app = await startTestApp(db, sandbox, {}, { workers: false });
    await seedCatalog(app.http);
  });
  afterAll(async () => {
    await app?.close();
    await sandbox?.stop();
    await db?.close();
  });

  it('down: each SKU created since the upgrade gets its created row back, older than every change recorded after it', async () => {
    const codes = (await db.query<{ code: string }>('SELECT sku_code AS code FROM catalog_skus ORDER BY created_at, sku_code')).map(
      (r) => r.code,
    );
    expect(codes.length).toBeGreaterThan(1);
    // a later change of the first SKU, as a sync would record it
    await db.query(
      `INSERT INTO catalog_sku_changes (sku_code, field, kind, old_value, new_value, run_id, source, changed_at)
       VALUES ($1, 'cost_price', 'price', '"1.00"', '"2.00"', 'run_x', 'sync', now())`,
      [codes[0]],
    );
    const before = (await app!.http.get(`/internal/catalog/skus/${codes[0]}/changes`)).data.items as Array<{
      field: string;
      kind: string;
      run_id: string | null;
    }>;
    expect(before.map((i) => i.field)).toEqual(['cost_price', 'created']);
    await app!.close();
    app = null;

    // the migrations after it first (their down files too), then this one
    const [{ n }] = await db.query<{ n: string | number }>("SELECT count(*) AS n FROM schema_migrations WHERE version >= '20261122008000'");
    const reverted = await migrateDown(db.url, Number(n));
    expect(reverted.at(-1)).toBe('20261122008000_sku_created_on_row');
    // the history as it was read before the migration: by id, newest first
    const after = await db.query<{ field: string; run_id: string | null }>(
      'SELECT field, run_id FROM catalog_sku_changes WHERE sku_code = $1 ORDER BY id DESC',
      [codes[0]],
    );
    expect(after).toEqual([
      { field: 'cost_price', run_id: 'run_x' },
      { field: 'created', run_id: before[1].run_id },
    ]);
    const created = await db.query<{ code: string }>("SELECT sku_code AS code FROM catalog_sku_changes WHERE kind = 'created' ORDER BY id");
    expect(created.map((r) => r.code)).toEqual(codes);
  });
});
