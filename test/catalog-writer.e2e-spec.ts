/**
 * The catalog writer's `insert` strategy (a first sync's pages after the first: every row believed
 * new) on a real database. On PostgreSQL its rows go by COPY (SkuWriteRepository.insertNewSkus) and
 * fall back to the upsert when one of them is not new; on PGlite it is the upsert. Either way a page
 * must end exactly as the upsert would leave it: the same stored values whatever the texts hold, one
 * `created` history row per new SKU, conflicts reported, changes counted as changes.
 */
import { jest } from '@jest/globals';
import { CatalogWriter } from '../src/catalog/catalog-writer.service.js';
import { SkuWriteRepository } from '../src/catalog/sku-write.repository.js';
import { DatabaseEndpoint } from '../src/database/database-endpoint.js';
import type { UpstreamProduct } from '../src/upstream/upstream.types.js';
import { useAppSuite } from './support/app-suite.js';
import type { TestDatabase } from './support/test-app.js';

/** Texts that COPY's text format must escape or must not mistake for its own markers. */
const AWKWARD = [
  'tab\there',
  'line\nfeed',
  'carriage\r\nreturn',
  'back\\slash',
  '\\N',
  '\\t literally',
  'quotes " \' and {braces}',
  '礼品卡 🎮 ünïcödé',
];

let nextId = 900_000;

function product(codePrefix: string, skus: number, text = 'plain'): UpstreamProduct {
  const id = ++nextId;
  return {
    id,
    slug: `slug-${id}-${text.slice(0, 12)}`,
    title: { 'zh-CN': `商品 ${text}`, en: `Product ${text}` },
    description: { 'zh-CN': `说明 ${text}`, en: text },
    price_amount: '10.00',
    fulfillment_type: 'manual',
    manual_form_schema: { fields: [{ key: 'account', label: text }] },
    is_active: true,
    category_id: 7,
    skus: Array.from({ length: skus }, (_, i) => ({
      id: id * 10 + i,
      sku_code: `${codePrefix}-${id}-${i}`,
      spec_values: { region: text, nested: { list: [1, text, null] } },
      price_amount: `${10 + i}.25`,
      original_price: i === 0 ? '19.90' : undefined,
      stock_status: 'in_stock',
      stock_quantity: 5 + i,
      is_active: i !== 1,
    })),
  };
}

/** The stored row of a SKU without its keys, as text (what was stored, not how it reads back). */
async function storedRows(db: TestDatabase, product: UpstreamProduct): Promise<string[]> {
  const rows = await db.query<{ row: string }>(
    `SELECT (to_jsonb(s) - 'sku_key' - 'sku_code' - 'upstream_sku_id' - 'product_id' - 'product_slug' - 'created_at' - ` +
      `'updated_at')::text AS row
       FROM catalog_skus s WHERE s.product_id = $1 ORDER BY s.upstream_sku_id`,
    [product.id],
  );
  return rows.map((r) => r.row);
}

/**
 * The `created` records of these codes, wherever they are kept: on the SKU row (created_source, since
 * migration 20261122008000) and as history rows (older SKUs); a SKU recorded as created twice counts twice.
 */
async function createdHistory(db: TestDatabase, codes: string[], runId?: string): Promise<number> {
  const [{ n }] = await db.query<{ n: number }>(
    `SELECT (SELECT count(*)::int FROM catalog_sku_changes WHERE kind = 'created' AND sku_code = ANY($1) ` +
      `AND ($2::text IS NULL OR run_id = $2))
          + (SELECT count(*)::int FROM catalog_skus WHERE created_source IS NOT NULL AND sku_code = ANY($1) ` +
      `AND ($2::text IS NULL OR created_run_id = $2)) AS n`,
    [codes, runId ?? null],
  );
  return n;
}

describe('catalog writer: a page of new rows (insert)', () => {
  const t = useAppSuite({ sandbox: { catalog: { products: 3, seed: 5 } } });
  const writer = () => t.app.relay.app.get(CatalogWriter);
  const repo = () => t.app.relay.app.get(SkuWriteRepository);
  afterEach(() => jest.restoreAllMocks());

  it('is sent by COPY on a PostgreSQL server only (the server is asked: PGlite may be reached by a postgres:// URL too)', async () => {
    expect(t.app.relay.app.get(DatabaseEndpoint).kind).toBe('postgres'); // what this suite hands in, on both
    expect(await repo().canCopy()).toBe(t.db.kind === 'postgres');
  });

  it('stores exactly what the upsert stores, whatever the texts hold, with one created history row per SKU', async () => {
    const copies = jest.spyOn(repo(), 'insertNewSkus');
    const inserted = AWKWARD.map((t) => product('INS', 3, t));
    const upserted = AWKWARD.map((t) => product('UPS', 3, t));
    const a = await writer().applyProducts(inserted, { supplier: 'main', runId: null, source: 'sync', strategy: 'insert' });
    const b = await writer().applyProducts(upserted, { supplier: 'main', runId: null, source: 'sync', strategy: 'write' });
    // (more than once when the pricing version moved since the app loaded it: priced again, sent again)
    if (t.db.kind === 'postgres') {
      expect(copies).toHaveBeenCalled();
      await expect(copies.mock.results.at(-1)!.value).resolves.toMatchObject({ stalePricing: null });
    } else {
      expect(copies).not.toHaveBeenCalled();
    }
    for (const r of [a, b])
      expect(r).toMatchObject({ skus: AWKWARD.length * 3, written: AWKWARD.length * 3, created: AWKWARD.length * 3, changed: 0 });
    expect(a.counts).toEqual(b.counts);
    for (let i = 0; i < AWKWARD.length; i++) {
      const stored = await storedRows(t.db, inserted[i]);
      expect(stored).toHaveLength(3);
      expect(stored).toEqual(await storedRows(t.db, upserted[i]));
    }
    // the texts arrive as sent (not only alike between the two ways)
    const [row] = await t.db.query<{ title: unknown; spec: unknown; slug: string }>(
      'SELECT product_title AS title, spec_values AS spec, product_slug AS slug FROM catalog_skus WHERE sku_code = $1',
      [inserted[3].skus[0].sku_code],
    );
    expect(row).toEqual({ title: inserted[3].title, spec: inserted[3].skus[0].spec_values, slug: inserted[3].slug });
    const codes = inserted.flatMap((p) => p.skus.map((s) => s.sku_code));
    expect(await createdHistory(t.db, codes)).toBe(codes.length);
    // their fingerprints are kept as after any write: the same page again writes nothing
    expect(await writer().applyProducts(inserted, { supplier: 'main', runId: null, source: 'sync' })).toMatchObject({ written: 0 });
  });

  it('a code another product carries: a SKU of its own, sent as new (by COPY on PostgreSQL), every SKU created once', async () => {
    const owner = product('OWN', 2);
    await writer().applyProducts([owner], { supplier: 'main', runId: null, source: 'sync', strategy: 'write' });
    const copies = jest.spyOn(repo(), 'insertNewSkus');
    const fresh = [product('NEW', 2), product('NEW', 2)];
    const other = product('CLM', 2);
    other.skus[1].sku_code = owner.skus[0].sku_code;
    const r = await writer().applyProducts([...fresh, other], {
      supplier: 'main',
      runId: 'run-insert',
      source: 'sync',
      strategy: 'insert',
    });
    if (t.db.kind === 'postgres') {
      expect(copies).toHaveBeenCalledTimes(1);
      await expect(copies.mock.results[0].value).resolves.toMatchObject({ stalePricing: null });
    }
    expect(r).toMatchObject({ skus: 6, created: 6, changed: 0 });
    const rows = await t.db.query<{ owner: string }>(
      'SELECT product_id::text AS owner FROM catalog_skus WHERE sku_code = $1 ORDER BY product_id',
      [owner.skus[0].sku_code],
    );
    expect(rows.map((x) => Number(x.owner))).toEqual([owner.id, other.id]);
    const codes = [...fresh, other].flatMap((p) => p.skus.map((s) => s.sku_code)).filter((c) => c !== owner.skus[0].sku_code);
    expect(await createdHistory(t.db, codes)).toBe(5);
    expect(await createdHistory(t.db, codes, 'run-insert')).toBe(5);
  });

  it('a stored product sent again with a new price is counted as a price change, not created', async () => {
    const p = product('CHG', 2);
    await writer().applyProducts([p], { supplier: 'main', runId: null, source: 'sync', strategy: 'write' });
    p.skus[0].price_amount = '99.00';
    const r = await writer().applyProducts([p, product('CHG', 1)], { supplier: 'main', runId: null, source: 'sync', strategy: 'insert' });
    expect(r).toMatchObject({ skus: 3, written: 2, created: 1, changed: 1 });
    expect(r.counts).toMatchObject({ created: 1, price: 1 });
    const [{ cost }] = await t.db.query<{ cost: string }>('SELECT cost_price::text AS cost FROM catalog_skus WHERE sku_code = $1', [
      p.skus[0].sku_code,
    ]);
    expect(cost).toBe('99.00');
  });

  it('a pricing version that moved since the prices were computed: repriced with the rules in force, then inserted', async () => {
    await t.db.query('UPDATE catalog_pricing_state SET version = version + 1 WHERE id = 1');
    const p = product('VER', 2);
    const r = await writer().applyProducts([p], { supplier: 'main', runId: null, source: 'sync', strategy: 'insert' });
    expect(r).toMatchObject({ created: 2 });
    const rows = await t.db.query<{ n: number }>('SELECT count(*)::int AS n FROM catalog_skus WHERE product_id = $1', [p.id]);
    expect(rows[0].n).toBe(2);
  });
});
