/**
 * Two catalog writes at once on one sku_code, interleaved deterministically: the first holds its
 * transaction open once it has written, the second starts, then the first commits. This is what the
 * sync's two page writers, a page and an order's fresh read, or a fresh read and a rule change do on a
 * PostgreSQL server (READ COMMITTED). There the second write of one SKU waits on the SKUs' locks
 * (without them it read the SKU before the first committed and lost what it found: a second
 * `created`); two products carrying one code are two SKUs, whose writes do not wait for each other.
 * PGlite runs one transaction at a time, so the second waits for the first anyway, and the same
 * assertions hold on both.
 */
import { jest } from '@jest/globals';
import { DataSource } from 'typeorm';
import { CatalogWriter, type WriteOptions } from '../src/catalog/catalog-writer.service.js';
import { CatalogReadRepository } from '../src/catalog/catalog-read.repository.js';
import { SkuWriteRepository } from '../src/catalog/sku-write.repository.js';
import { PricingService } from '../src/catalog/pricing.service.js';
import type { UpstreamProduct } from '../src/upstream/upstream.types.js';
import { useAppSuite } from './support/app-suite.js';
import { waitsForLock } from './support/db-waits.js';
import type { TestDatabase } from './support/test-app.js';

let nextId = 950_000;

function product(codePrefix: string, skus = 2): UpstreamProduct {
  const id = ++nextId;
  return {
    id,
    slug: `slug-${id}`,
    title: { en: `Product ${id}` },
    description: { en: '' },
    price_amount: '10.00',
    fulfillment_type: 'auto',
    is_active: true,
    category_id: 7,
    skus: Array.from({ length: skus }, (_, i) => ({
      id: id * 10 + i,
      sku_code: `${codePrefix}-${id}-${i}`,
      spec_values: {},
      price_amount: `${10 + i}.25`,
      stock_status: 'in_stock',
      stock_quantity: 5,
      is_active: true,
    })),
  };
}

interface Held {
  /** Resolves once the held call is done (its transaction still open). */
  reached: Promise<void>;
  release(): void;
}

/** Holds the transaction of the next call to `repo[method]` open once that call is done, until released. */
function holdAfter(
  repo: SkuWriteRepository,
  method: 'writeFingerprints' | 'unlistProductSkus',
): Held & { spy: { mock: { calls: unknown[] } } } {
  let reached!: () => void;
  let release!: () => void;
  const reachedP = new Promise<void>((r) => (reached = r));
  const gate = new Promise<void>((r) => (release = r));
  const original = (repo[method] as (...args: unknown[]) => Promise<unknown>).bind(repo);
  const spy = jest.spyOn(repo, method).mockImplementationOnce((async (...args: unknown[]) => {
    const result = await original(...args);
    reached();
    await gate;
    return result;
  }) as never);
  return { reached: reachedP, release, spy };
}

/** Runs `first` until `held`, then `second` until it waits, then lets `first` commit; both outcomes. */
async function interleave<A, B>(db: TestDatabase, first: () => Promise<A>, held: Held, second: () => Promise<B>): Promise<[A, B]> {
  const a = first();
  await Promise.race([
    held.reached,
    a.then(() => {
      throw new Error('the first write ended without being held');
    }),
  ]);
  const b = second();
  b.catch(() => undefined); // awaited below, after the first
  // PostgreSQL shows the second waiting for the lock the first holds; PGlite runs one transaction at
  // a time, so there the second runs after the first in any case (waitsForLock)
  await waitsForLock(db, b, 'the second write');
  held.release();
  return [await a, await b];
}

describe('catalog writes at once on one sku_code', () => {
  const t = useAppSuite({ sandbox: { catalog: { products: 1 } } });
  const writer = () => t.app.relay.app.get(CatalogWriter);
  const repo = () => t.app.relay.app.get(SkuWriteRepository);
  const reads = () => t.app.relay.app.get(CatalogReadRepository);
  const pricing = () => t.app.relay.app.get(PricingService);
  afterEach(() => jest.restoreAllMocks());

  beforeAll(async () => {
    // The start reprices with the configured defaults without waiting for it: let it end first, so
    // that the only lock waits are those of the writes under test.
    for (let i = 0; ; i++) {
      const [{ stored }] = await t.db.query<{ stored: boolean }>(
        'SELECT defaults IS NOT NULL AS stored FROM catalog_pricing_state WHERE id = 1',
      );
      if (stored) break;
      if (i > 500) throw new Error('the start never stored the pricing defaults');
      await new Promise((r) => setTimeout(r, 20));
    }
  });

  /** The SKU with this code (of product `productId`, when two products carry it). */
  async function stored(
    code: string,
    productId?: number,
  ): Promise<{ product_id: string; upstream_sku_id: string; cost_price: string; listed: boolean }> {
    const [row] = await t.db.query<{ product_id: string; upstream_sku_id: string; cost_price: string; listed: boolean }>(
      'SELECT product_id::text AS product_id, upstream_sku_id::text AS upstream_sku_id, cost_price::text AS cost_price, listed ' +
        'FROM catalog_skus WHERE sku_code = $1 AND ($2::bigint IS NULL OR product_id = $2)',
      [code, productId ?? null],
    );
    return row;
  }

  /** A SKU's history, oldest first, as the API reads it (its `created` entry included); by code, or by code and product. */
  async function history(
    code: string,
    productId?: number,
  ): Promise<Array<{ field: string; kind: string; old_value: unknown; new_value: unknown }>> {
    const [{ key }] = await t.db.query<{ key: string }>(
      'SELECT sku_key AS key FROM catalog_skus WHERE sku_code = $1 AND ($2::bigint IS NULL OR product_id = $2)',
      [code, productId ?? null],
    );
    return (await reads().skuChanges('main', key, 0, 500)).items.reverse();
  }

  /**
   * `first` until `held`, then `second` to its end, then `first` released: on PostgreSQL `second`
   * ends while `first` still holds its transaction (PGlite runs one transaction at a time: there
   * `first` is released at once).
   */
  async function overlap<A, B>(first: () => Promise<A>, held: Held, second: () => Promise<B>): Promise<[A, B]> {
    const a = first();
    await held.reached;
    if (t.db.kind === 'pglite') held.release();
    const b = await second().finally(() => held.release());
    return [await a, b];
  }

  async function fingerprinted(ids: number[]): Promise<number[]> {
    const rows = await t.db.query<{ id: string }>(
      'SELECT product_id::text AS id FROM catalog_product_fingerprints WHERE product_id = ANY($1) ORDER BY 1',
      [ids],
    );
    return rows.map((r) => Number(r.id));
  }

  it.each<[NonNullable<WriteOptions['strategy']>, NonNullable<WriteOptions['strategy']>]>([
    ['write', 'write'],
    ['insert', 'write'], // by COPY on PostgreSQL, then an upsert
    ['write', 'check'],
    ['write', 'insert'], // an upsert, then a COPY (whose unique violation sends the page to the upsert)
  ])(
    'a page carrying a code another page is creating for another product: two SKUs, each created once, both fingerprints kept, ' +
      'neither write waiting for the other (%s, then %s)',
    async (first, second) => {
      const a = product('PAGE');
      const b = product('PAGE');
      const code = a.skus[0].sku_code;
      b.skus[0].sku_code = code;
      const held = holdAfter(repo(), 'writeFingerprints');
      const [ra, rb] = await overlap(
        () => writer().applyProducts([a], { supplier: 'main', runId: null, source: 'sync', strategy: first }),
        held,
        () => writer().applyProducts([b], { supplier: 'main', runId: null, source: 'sync', strategy: second }),
      );
      expect(ra).toMatchObject({ created: 2 });
      expect(rb).toMatchObject({ skus: 2, created: 2, changed: 0 });
      expect(rb.unfingerprinted).toEqual([]);
      expect(await fingerprinted([a.id, b.id])).toEqual([a.id, b.id]);
      expect(await stored(code, a.id)).toMatchObject({ product_id: String(a.id), upstream_sku_id: String(a.skus[0].id), listed: true });
      expect(await stored(code, b.id)).toMatchObject({ product_id: String(b.id), upstream_sku_id: String(b.skus[0].id), listed: true });
      expect((await history(code, a.id)).map((h) => h.kind)).toEqual(['created']);
      expect((await history(code, b.id)).map((h) => h.kind)).toEqual(['created']);
      expect(await t.db.query('SELECT 1 FROM catalog_sku_conflicts WHERE sku_code = $1', [code])).toEqual([]);
    },
  );

  it('one product on two pages written at once (a listing shift): created once, the second write a change with its new price', async () => {
    const p = product('SAME');
    const moved: UpstreamProduct = structuredClone(p);
    moved.skus[0].price_amount = '12.50';
    const held = holdAfter(repo(), 'writeFingerprints');
    const [r1, r2] = await interleave(
      t.db,
      () => writer().applyProducts([p], { supplier: 'main', runId: null, source: 'sync', strategy: 'write' }),
      held,
      () => writer().applyProducts([moved], { supplier: 'main', runId: null, source: 'sync', strategy: 'write' }),
    );
    expect(r1).toMatchObject({ created: 2, changed: 0 });
    expect(r2).toMatchObject({ written: 1, created: 0, changed: 1 });
    expect(r2.counts).toMatchObject({ created: 0, price: 1 });
    const code = p.skus[0].sku_code;
    expect(await stored(code)).toMatchObject({ cost_price: '12.50' });
    const changes = await history(code);
    expect(changes.map((h) => [h.field, h.kind])).toEqual([
      ['created', 'created'],
      ['cost_price', 'price'],
      ['sale_price', 'price'],
    ]);
    expect(changes[1]).toMatchObject({ old_value: '10.25', new_value: '12.50' });
    expect((await history(p.skus[1].sku_code)).map((h) => h.kind)).toEqual(['created']);
  });

  it("an order's fresh read of a product carrying a code a page is creating for another: two SKUs, each its product's", async () => {
    const a = product('FRESH');
    const b = product('FRESH');
    const code = a.skus[0].sku_code;
    b.skus[1].sku_code = code;
    const held = holdAfter(repo(), 'writeFingerprints');
    const [, rb] = await overlap(
      () => writer().applyProducts([a], { supplier: 'main', runId: null, source: 'sync', strategy: 'write' }),
      held,
      () => writer().applyFreshProduct(b, { supplier: 'main', runId: null, source: 'refresh' }),
    );
    expect(rb).toMatchObject({ created: 2, changed: 0, unfingerprinted: [] });
    expect(await stored(code, a.id)).toMatchObject({ product_id: String(a.id), upstream_sku_id: String(a.skus[0].id) });
    expect(await stored(code, b.id)).toMatchObject({ product_id: String(b.id), upstream_sku_id: String(b.skus[1].id) });
    expect((await history(code, a.id)).map((h) => h.kind)).toEqual(['created']);
    expect((await history(code, b.id)).map((h) => h.kind)).toEqual(['created']);
  });

  it("an order's fresh read that unlists a SKU while a rule change reprices it: both done, in turn (no deadlock)", async () => {
    const p = product('UNLIST');
    await writer().applyProducts([p], { supplier: 'main', runId: null, source: 'sync', strategy: 'write' });
    const fresh: UpstreamProduct = structuredClone(p);
    const gone = fresh.skus.pop()!;
    const held = holdAfter(repo(), 'unlistProductSkus');
    try {
      const [r, change] = await interleave(
        t.db,
        () => writer().applyFreshProduct(fresh, { supplier: 'main', runId: null, source: 'refresh' }),
        held,
        () => pricing().replaceRules([{ scope: 'sku', skuCode: gone.sku_code, markupPercent: '10', markupFixed: '0' }]),
      );
      expect(r).toMatchObject({ delisted: 1 });
      expect(held.spy.mock.calls).toHaveLength(1); // not written again after a deadlock
      expect(change.repriced).toBe(1);
      const [row] = await t.db.query<{ listed: boolean; sale: string }>(
        'SELECT listed, sale_price::text AS sale FROM catalog_skus WHERE sku_code = $1',
        [gone.sku_code],
      );
      expect(row).toEqual({ listed: false, sale: '12.38' }); // 11.25 + 10 %, rounded up to the cent
    } finally {
      await pricing().replaceRules([]);
    }
  });

  it.each([
    ['a write of a few codes: the lock over all codes shared, then one lock per code', 10, { ShareLock: 1, ExclusiveLock: 10 }],
    ['a write of more codes than the lock table should hold: the lock over all codes, exclusive, alone', 2001, { ExclusiveLock: 1 }],
  ])('%s', async (_name, n, modes) => {
    const codes = Array.from({ length: n }, (_, i) => `LOCKS-${n}-${i}`);
    const held = await t.app.relay.app.get(DataSource).transaction(async (em) => {
      await repo().lockSkuCodes(em, 'main', codes);
      return em.query<Array<{ mode: string; n: number }>>(
        "SELECT mode, count(*)::int AS n FROM pg_locks WHERE locktype = 'advisory' AND pid = pg_backend_pid() GROUP BY mode",
      );
    });
    expect(Object.fromEntries(held.map((r) => [r.mode, r.n]))).toEqual(modes);
  });

  it('changed_since never skips a write committed after a later one: rows stamped in an open transaction show once it ends', async () => {
    const since = new Date(Date.now() - 1000).toISOString();
    const listed = async () => {
      const r = await t.app.http.get('/internal/catalog/skus', { params: { changed_since: since, page_size: 200 } });
      expect(r.status).toBe(200);
      return (r.data as { items: Array<{ sku_code: string; updated_at: string }> }).items;
    };
    const a = product('FENCE-A');
    const b = product('FENCE-B');
    const held = holdAfter(repo(), 'writeFingerprints');
    const first = writer().applyProducts([a], { supplier: 'main', runId: null, source: 'sync', strategy: 'write' });
    await held.reached;
    if (t.db.kind === 'postgres') {
      // B's write begins after A's and commits before it (PGlite runs one transaction at a time: there
      // B, and the list, simply wait for A)
      await writer().applyProducts([b], { supplier: 'main', runId: null, source: 'sync', strategy: 'write' });
      const seen = await listed();
      expect(seen.filter((i) => i.sku_code.startsWith('FENCE-'))).toEqual([]);
      held.release();
      await first;
    } else {
      held.release();
      await first;
      await writer().applyProducts([b], { supplier: 'main', runId: null, source: 'sync', strategy: 'write' });
    }
    const after = (await listed()).filter((i) => i.sku_code.startsWith('FENCE-'));
    // A's rows first: stamped with its transaction's start, before B's
    expect(after.map((i) => i.sku_code)).toEqual([...a.skus, ...b.skus].map((x) => x.sku_code));
    // a cursor at the newest row seen leaves nothing behind
    const cursor = after[after.length - 1].updated_at;
    const r = await t.app.http.get('/internal/catalog/skus', { params: { changed_since: cursor } });
    expect((r.data as { items: Array<{ sku_code: string }> }).items.filter((i) => i.sku_code.startsWith('FENCE-'))).toEqual([]);
  });
});
