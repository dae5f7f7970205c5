/**
 * A real Dujiao-Next catalog's codes (profile dujiao-next): `sku_code` is unique only within a
 * product, and a product without specifications has the one code `DEFAULT`. Every SKU has a
 * `sku_key`, `<product id>:<sku_code>`, and is stored by that pair:
 * - two products whose only SKU is `DEFAULT` are both synced (no conflict, and a full pass reads no
 *   product again for them) and both orderable by `sku_key`;
 * - a plain `DEFAULT` is 409 `sku_ambiguous` with both keys, and records nothing;
 * - a code carried by one listed SKU (and unlisted ones) names the listed one; one carried only by
 *   unlisted SKUs is 409 `sku_unavailable` for an order, 409 `sku_ambiguous` for a read;
 * - a unique code works as before, by code or by key; the SKU read and its history take either;
 * - a pricing rule set by key applies to that SKU only;
 * - rows stored while sku_code was the key come out of the migration with their keys and history.
 */
import { migrateDown, migrateUp } from '../src/database/migrator.js';
import type { SandboxServer } from '../src/sandbox/sandbox.server.js';
import type { SandboxProduct } from '../src/sandbox/sandbox.types.js';
import { useAppSuite } from './support/app-suite.js';
import { freePort, seedCatalog } from './support/child-app.js';
import { openTestDatabase, startSandbox, startTestApp, type TestApp, type TestDatabase } from './support/test-app.js';
import { waitFor } from './support/wait.js';

interface Sku {
  sku_key: string;
  sku_code: string;
  product_id: number;
  upstream_sku_id: number;
  cost_price: string;
  sale_price: string;
  listed: boolean;
}

interface Run {
  run_id: string;
  status: string;
  conflicts: number;
  skus_created: number;
}

const env = { UPSTREAM_PROFILE: 'dujiao-next' };

async function fullSync(app: TestApp): Promise<Run> {
  const started = await app.http.post('/internal/catalog/sync', { mode: 'full' });
  expect(started.status).toBe(202);
  const runId = (started.data as { run_id: string }).run_id;
  return waitFor(
    async () => ((await app.http.get(`/internal/catalog/sync-runs/${runId}`)).data as { run: Run }).run,
    (r) => r.status !== 'running',
    'the sync',
    60_000,
  );
}

const path = (ref: string) => `/internal/catalog/skus/${encodeURIComponent(ref)}`;

describe('sku_key: a SKU is its product and its code (profile dujiao-next)', () => {
  let one: SandboxProduct;
  let two: SandboxProduct;
  let unique: SandboxProduct;
  const key = (p: SandboxProduct, code = p.skus[0].sku_code) => `${p.id}:${code}`;
  const t = useAppSuite({
    sandbox: { profile: 'dujiao-next', catalog: { products: 2 } },
    prepare: (sandbox) => {
      one = sandbox.catalog.addProduct({ skus: [{ skuCode: 'DEFAULT', price: '3.00' }] });
      two = sandbox.catalog.addProduct({ skus: [{ skuCode: 'DEFAULT', price: '4.00' }] });
      unique = sandbox.catalog.addProduct({ skus: [{ skuCode: 'UNIQ-1', price: '5.00' }] });
    },
    env: async () => ({ ...env, PORT: String(await freePort()) }),
    seed: true,
  });

  it('two products whose only SKU is DEFAULT are two SKUs: both synced, no conflict, no product read again on a full pass', async () => {
    for (const p of [one, two]) {
      const r = await t.app.http.get(path(key(p)));
      expect(r.status).toBe(200);
      expect((r.data as { sku: Sku }).sku).toMatchObject({
        sku_key: key(p),
        sku_code: 'DEFAULT',
        product_id: p.id,
        upstream_sku_id: p.skus[0].id,
        listed: true,
      });
    }
    t.sandbox.resetStats();
    const run = await fullSync(t.app);
    expect(run).toMatchObject({ status: 'succeeded', conflicts: 0, skus_created: 0 });
    expect(t.sandbox.stats.requests.product).toBe(0);
    expect((await t.app.http.get('/internal/catalog/conflicts')).data).toMatchObject({ ok: true, total: 0 });
    const listed = (await t.app.http.get('/internal/catalog/skus', { params: { page_size: 500 } })).data as { items: Sku[] };
    expect(listed.items.filter((s) => s.sku_code === 'DEFAULT').map((s) => s.sku_key)).toEqual([key(one), key(two)]);
    for (const s of listed.items) expect(s.sku_key).toBe(`${s.product_id}:${s.sku_code}`);
  });

  it("each is orderable by its sku_key; the order keeps what was sent and answers with the SKU's key and code", async () => {
    for (const [p, no] of [
      [one, 'KEY-1'],
      [two, 'KEY-2'],
    ] as const) {
      const r = await t.app.http.post('/internal/orders', { shop_order_no: no, sku_code: key(p), quantity: 1 });
      expect(r.status).toBe(201);
      expect((r.data as { order: Record<string, unknown> }).order).toMatchObject({
        shop_order_no: no,
        sku_key: key(p),
        sku_code: 'DEFAULT',
      });
      const upstream = t.sandbox.orders().find((o) => o.downstream_order_no === no);
      expect(upstream).toMatchObject({ product_id: p.id, sku_id: p.skus[0].id });
      const [row] = await t.db.query<{ sku_code: string; sku_key: string }>(
        'SELECT sku_code, sku_key FROM orders WHERE shop_order_no = $1',
        [no],
      );
      expect(row).toEqual({ sku_code: key(p), sku_key: key(p) });
    }
    // the same body again is the same order (the fingerprint is over what was sent)
    const again = await t.app.http.post('/internal/orders', { shop_order_no: 'KEY-1', sku_code: key(one), quantity: 1 });
    expect(again.status).toBe(200);
    const other = await t.app.http.post('/internal/orders', { shop_order_no: 'KEY-1', sku_code: 'DEFAULT', quantity: 1 });
    expect(other.data).toMatchObject({ ok: false, error_code: 'idempotency_conflict' });
  });

  it('a plain DEFAULT is 409 sku_ambiguous with both keys, and records nothing', async () => {
    const creates = t.sandbox.stats.createsReceived;
    const reads = t.sandbox.stats.requests.product;
    const r = await t.app.http.post('/internal/orders', { shop_order_no: 'AMB-1', sku_code: 'DEFAULT', quantity: 1 });
    expect(r.status).toBe(409);
    expect(r.data).toMatchObject({ ok: false, error_code: 'sku_ambiguous', candidates: [key(one), key(two)].sort() });
    expect(r.data).not.toHaveProperty('order');
    expect(t.sandbox.stats.createsReceived).toBe(creates);
    expect(t.sandbox.stats.requests.product).toBe(reads);
    expect((await t.app.http.get('/internal/orders/AMB-1')).status).toBe(404);
    for (const p of [path('DEFAULT'), `${path('DEFAULT')}/changes`]) {
      const read = await t.app.http.get(p);
      expect([read.status, read.data]).toEqual([
        409,
        expect.objectContaining({ error_code: 'sku_ambiguous', candidates: [key(one), key(two)].sort() }),
      ]);
    }
  });

  it('a unique code works as before, by code or by key: the order, the SKU and its history', async () => {
    const byCode = await t.app.http.post('/internal/orders', { shop_order_no: 'UNQ-1', sku_code: 'UNIQ-1', quantity: 1 });
    expect(byCode.status).toBe(201);
    expect((byCode.data as { order: Record<string, unknown> }).order).toMatchObject({ sku_key: key(unique), sku_code: 'UNIQ-1' });
    const byKey = await t.app.http.post('/internal/orders', { shop_order_no: 'UNQ-2', sku_code: key(unique), quantity: 1 });
    expect(byKey.status).toBe(201);
    expect((byKey.data as { order: Record<string, unknown> }).order).toMatchObject({ sku_key: key(unique), sku_code: 'UNIQ-1' });
    expect(
      t.sandbox
        .orders()
        .filter((o) => o.downstream_order_no?.startsWith('UNQ-'))
        .map((o) => o.sku_id),
    ).toEqual([unique.skus[0].id, unique.skus[0].id]);

    const [a, b] = [await t.app.http.get(path('UNIQ-1')), await t.app.http.get(path(key(unique)))];
    expect(a.status).toBe(200);
    expect(a.data).toEqual(b.data);
    expect((a.data as { sku: Sku }).sku).toMatchObject({ sku_key: key(unique), sku_code: 'UNIQ-1', product_id: unique.id });
    // the `:` of a key may also come unencoded in the path
    expect((await t.app.http.get(`/internal/catalog/skus/${key(unique)}`)).data).toEqual(a.data);

    // a change: its history under either name, each entry with the key
    t.sandbox.catalog.setPrice(key(unique), '5.50');
    expect((await fullSync(t.app)).status).toBe('succeeded');
    const [ca, cb] = [await t.app.http.get(`${path('UNIQ-1')}/changes`), await t.app.http.get(`${path(key(unique))}/changes`)];
    expect(ca.status).toBe(200);
    expect(ca.data).toEqual(cb.data);
    const items = (ca.data as { items: Array<{ sku_key: string; sku_code: string; field: string }> }).items;
    expect(items.map((i) => i.field)).toEqual(expect.arrayContaining(['cost_price', 'created']));
    for (const i of items) expect(i).toMatchObject({ sku_key: key(unique), sku_code: 'UNIQ-1' });
    expect((await t.app.http.get(path(`${unique.id + 1000}:UNIQ-1`))).data).toMatchObject({ error_code: 'sku_not_found' });
  });

  it('a pricing rule set by key applies to that SKU only; a plain code several SKUs carry is refused, nothing changed', async () => {
    const before = (await t.app.http.get('/internal/pricing/rules')).data as { version: number };
    const amb = await t.app.http.put('/internal/pricing/rules', {
      rules: [{ scope: 'sku', sku_code: 'DEFAULT', markup_percent: '0', markup_fixed: '1' }],
    });
    expect([amb.status, amb.data]).toEqual([
      409,
      expect.objectContaining({ error_code: 'sku_ambiguous', candidates: [key(one), key(two)].sort() }),
    ]);
    expect(((await t.app.http.get('/internal/pricing/rules')).data as { version: number }).version).toBe(before.version);

    const [oneBefore, twoBefore] = await Promise.all(
      [one, two].map(async (p) => ((await t.app.http.get(path(key(p)))).data as { sku: Sku }).sku),
    );
    try {
      const put = await t.app.http.put('/internal/pricing/rules', {
        rules: [{ scope: 'sku', sku_code: key(one), markup_percent: '0', markup_fixed: '1.00', rounding: '0.01' }],
      });
      expect(put.status).toBe(200);
      expect((put.data as { rules: unknown[] }).rules).toEqual([
        expect.objectContaining({ scope: 'sku', sku_key: key(one), sku_code: 'DEFAULT', markup_fixed: '1.00' }),
      ]);
      const [oneAfter, twoAfter] = await Promise.all(
        [one, two].map(async (p) => ((await t.app.http.get(path(key(p)))).data as { sku: Sku }).sku),
      );
      expect(oneAfter.sale_price).toBe('4.00'); // 3.00 + 1.00
      expect(oneAfter.sale_price).not.toBe(oneBefore.sale_price);
      expect(twoAfter.sale_price).toBe(twoBefore.sale_price);
      // a sync prices it the same way
      expect((await fullSync(t.app)).status).toBe('succeeded');
      expect(((await t.app.http.get(path(key(one)))).data as { sku: Sku }).sku.sale_price).toBe('4.00');
    } finally {
      await t.app.http.put('/internal/pricing/rules', { rules: [] });
    }
  });

  it('a code of one listed SKU and unlisted ones names the listed one; carried only by unlisted ones it orders nothing', async () => {
    const m1 = t.sandbox.catalog.addProduct({ skus: [{ skuCode: 'MONTHLY', price: '8.00' }] });
    const m2 = t.sandbox.catalog.addProduct({ skus: [{ skuCode: 'MONTHLY', price: '9.00' }] });
    expect((await fullSync(t.app)).status).toBe('succeeded');
    t.sandbox.catalog.delistProduct(m2.id);
    expect((await fullSync(t.app)).status).toBe('succeeded');
    expect(((await t.app.http.get(path(key(m2)))).data as { sku: Sku }).sku.listed).toBe(false);

    expect(((await t.app.http.get(path('MONTHLY'))).data as { sku: Sku }).sku.sku_key).toBe(key(m1));
    const ordered = await t.app.http.post('/internal/orders', { shop_order_no: 'MON-1', sku_code: 'MONTHLY', quantity: 1 });
    expect(ordered.status).toBe(201);
    expect((ordered.data as { order: Record<string, unknown> }).order).toMatchObject({ sku_key: key(m1), sku_code: 'MONTHLY' });

    t.sandbox.catalog.delistProduct(m1.id);
    expect((await fullSync(t.app)).status).toBe('succeeded');
    const creates = t.sandbox.stats.createsReceived;
    const refused = await t.app.http.post('/internal/orders', { shop_order_no: 'MON-2', sku_code: 'MONTHLY', quantity: 1 });
    expect([refused.status, (refused.data as { error_code: string }).error_code]).toEqual([409, 'sku_unavailable']);
    expect(t.sandbox.stats.createsReceived).toBe(creates);
    expect((await t.app.http.get('/internal/orders/MON-2')).status).toBe(404);
    const read = await t.app.http.get(path('MONTHLY'));
    expect([read.status, read.data]).toEqual([
      409,
      expect.objectContaining({ error_code: 'sku_ambiguous', candidates: [key(m1), key(m2)].sort() }),
    ]);
    // the recorded order is still answered as recorded
    expect((await t.app.http.post('/internal/orders', { shop_order_no: 'MON-1', sku_code: 'MONTHLY', quantity: 1 })).status).toBe(200);
  });
});

describe('sku_key migration: rows stored while sku_code was the key', () => {
  let db: TestDatabase;
  let sandbox: SandboxServer;
  let app: TestApp | null = null;

  beforeAll(async () => {
    db = await openTestDatabase();
    sandbox = await startSandbox({ profile: 'dujiao-next', catalog: { products: 3 } });
    app = await startTestApp(db, sandbox, env, { workers: false });
    await seedCatalog(app.http);
  });

  afterAll(async () => {
    await app?.close();
    await sandbox?.stop();
    await db?.close();
  });

  it('come out with their keys, their history (by the product that had the code then), their rules and their orders', async () => {
    const [first, second] = sandbox.catalog.listedProducts();
    const code = first.skus[0].sku_code;
    const moved = second.skus[0].sku_code;
    const ordered = await app!.http.post('/internal/orders', { shop_order_no: 'MIG-1', sku_code: code, quantity: 1 });
    expect(ordered.status).toBe(201);
    await app!.close();
    app = null;

    // back to sku_code as the key (this migration and those after it, their down files too)
    const [{ n }] = await db.query<{ n: string | number }>("SELECT count(*) AS n FROM schema_migrations WHERE version >= '20261127235000'");
    const reverted = await migrateDown(db.url, Number(n));
    expect(reverted.at(-1)).toBe('20261127235000_sku_key');
    // rows as the old schema holds them: a change of `code`, a rule by code, and the history of a code
    // that belonged to product 777 before it moved to `second` (a product_id change)
    await db.query(
      `INSERT INTO catalog_sku_changes (sku_code, field, kind, old_value, new_value, run_id, source, changed_at) VALUES
         ($1, 'cost_price', 'price', '"1.00"', '"2.00"', 'run_a', 'sync', now()),
         ($2, 'cost_price', 'price', '"3.00"', '"4.00"', 'run_b', 'sync', now()),
         ($2, 'product_id', 'other', '777', $3::jsonb, 'run_c', 'sync', now()),
         ($2, 'stock_quantity', 'stock', '5', '4', 'run_d', 'sync', now())`,
      [code, moved, String(second.id)],
    );
    await db.query(
      "INSERT INTO catalog_pricing_rules (scope, sku_code, markup_percent, markup_fixed) VALUES ('sku', $1, 0, 1), ('sku', " +
        "'NOT-YET', 0, 2)",
      [code],
    );
    expect(await db.query<{ version: string }>("SELECT version FROM schema_migrations WHERE version >= '20261127235000'")).toEqual([]);

    await migrateUp(db.url);
    const skus = await db.query<{ product_id: string; sku_code: string; sku_key: string }>(
      'SELECT product_id::text AS product_id, sku_code, sku_key FROM catalog_skus',
    );
    expect(skus.length).toBeGreaterThan(3);
    for (const s of skus) expect(s.sku_key).toBe(`${s.product_id}:${s.sku_code}`);
    const history = await db.query<{ run_id: string; sku_key: string }>(
      "SELECT run_id, sku_key FROM catalog_sku_changes WHERE run_id IN ('run_a', 'run_b', 'run_c', 'run_d') ORDER BY run_id",
    );
    expect(history).toEqual([
      { run_id: 'run_a', sku_key: `${first.id}:${code}` },
      { run_id: 'run_b', sku_key: `777:${moved}` },
      { run_id: 'run_c', sku_key: `${second.id}:${moved}` },
      { run_id: 'run_d', sku_key: `${second.id}:${moved}` },
    ]);
    expect(await db.query('SELECT sku_code, sku_key FROM catalog_pricing_rules ORDER BY sku_code')).toEqual([
      { sku_code: 'NOT-YET', sku_key: null },
      { sku_code: code, sku_key: `${first.id}:${code}` },
    ]);
    expect(await db.query("SELECT sku_code, sku_key FROM orders WHERE shop_order_no = 'MIG-1'")).toEqual([
      { sku_code: code, sku_key: `${first.id}:${code}` },
    ]);

    // the API reads them: the SKU and its history by key or code, the order with its key
    app = await startTestApp(db, sandbox, env, { workers: false });
    const changes = (await app.http.get(`/internal/catalog/skus/${encodeURIComponent(`${first.id}:${code}`)}/changes`)).data as {
      items: Array<{ run_id: string; sku_key: string }>;
    };
    expect(changes.items.map((i) => i.run_id)).toEqual(expect.arrayContaining(['run_a']));
    expect((await app.http.get(`/internal/catalog/skus/${encodeURIComponent(code)}/changes`)).data).toEqual(changes);
    // the history the code had under product 777 stays readable by that key
    const old = (await app.http.get(`/internal/catalog/skus/${encodeURIComponent(`777:${moved}`)}/changes`)).data as {
      items: Array<{ run_id: string }>;
    };
    expect(old.items.map((i) => i.run_id)).toEqual(['run_b']);
    expect((await app.http.get('/internal/orders/MIG-1')).data).toMatchObject({
      order: { sku_key: `${first.id}:${code}`, sku_code: code },
    });
    const rules = (await app.http.get('/internal/pricing/rules')).data as { rules: Array<{ sku_code: string; sku_key: string | null }> };
    expect(rules.rules.map((r) => [r.sku_code, r.sku_key])).toEqual([
      ['NOT-YET', null],
      [code, `${first.id}:${code}`],
    ]);
    await app.http.put('/internal/pricing/rules', { rules: [] });
  });
});
