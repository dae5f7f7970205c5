/**
 * Following the catalog with `changed_since` by keyset (`after_sku_code`), as the README says: ask
 * page 1 with `changed_since=C&after_sku_code=K&page_size=N`, continue from the last item's
 * `updated_at` and `sku_code`, stop at a page shorter than N. Nothing is missed and nothing is listed
 * twice, although SKUs change while the follower reads and one write stamps more SKUs than a page
 * holds. Without `after_sku_code` the list is the plain `changed_since` list. Then query input that
 * would fail in the database (500) is refused as 400 `bad_request` naming the field; and, on
 * PostgreSQL, the fence of a full pass's start read (fingerprintIndex) against concurrent writes.
 */
import { CatalogRepository } from '../src/catalog/catalog.repository.js';
import { CatalogService } from '../src/catalog/catalog.service.js';
import { MAX_PAGE } from '../src/common/pagination.js';
import { useAppSuite } from './support/app-suite.js';
import { databaseMillisecondPassed } from './support/db-waits.js';

type Sku = { sku_code: string; updated_at: string; product_id: number; category_id: number; sale_price: string };
type List = { ok: boolean; items: Sku[]; total: number; page: number; page_size: number };
type Params = Record<string, string | number | boolean>;

describe('following changed_since by keyset (after_sku_code)', () => {
  const suite = useAppSuite({ seed: true, sandbox: { catalog: { products: 30, seed: 5 } } });

  const list = async (params: Params): Promise<List> => {
    const r = await suite.app.http.get('/internal/catalog/skus', { params });
    expect([params, r.status]).toEqual([params, 200]);
    return r.data as List;
  };
  /** One request of a follower; the next position is the last item's (updated_at, sku_code). */
  const step = (c: string, k: string | null, pageSize: number) =>
    list({ changed_since: c, ...(k === null ? {} : { after_sku_code: k }), page: 1, page_size: pageSize });
  /** Every SKU of the product changes price (one write, one stamp). */
  const bump = async (productId: number) => {
    const { sandbox, app } = suite;
    for (const s of sandbox.catalog.getProduct(productId)!.skus) {
      const now = Number(sandbox.catalog.getSku(s.sku_code)!.sku.price_amount);
      sandbox.catalog.setPrice(s.sku_code, (now + 0.01).toFixed(2));
    }
    await app.relay.app.get(CatalogService).refreshProduct(productId);
    // the next write is stamped later (stamps are the database's, to the millisecond)
    await databaseMillisecondPassed(suite.db);
  };
  /** A changed_since after every stamp so far and before every later one. */
  const cursorNow = async () => (await databaseMillisecondPassed(suite.db)).toISOString();
  /**
   * Nothing listed twice, in the list's order: (updated_at, sku_code) pairs distinct, updated_at never
   * going back (the order of codes within a time is the database's collation, compared with the
   * server's own one-page answers where it matters).
   */
  const expectFollowOrder = (items: Sku[]) => {
    expect(new Set(items.map((s) => `${s.updated_at} ${s.sku_code}`)).size).toBe(items.length);
    expect(items.filter((s, i) => i > 0 && s.updated_at < items[i - 1].updated_at)).toEqual([]);
  };

  it('a SKU that changes again mid-follow is listed again at its new place; no change is missed, none is listed twice', async () => {
    const { sandbox } = suite;
    const [p1, p2, p3] = sandbox.catalog.listedProducts().slice(0, 3);
    const cursor0 = await cursorNow();
    await bump(p1.id);
    await bump(p2.id);
    await bump(p3.id);
    const pageSize = p1.skus.length;
    const codes = (p: typeof p1) => p.skus.map((s) => s.sku_code);

    const seen: Sku[] = [];
    let c = cursor0;
    let k: string | null = null;
    let changedAgain = false;
    for (let n = 0; n < 50; n++) {
      const page = await step(c, k, pageSize);
      seen.push(...page.items);
      if (page.items.length > 0) ({ updated_at: c, sku_code: k } = page.items[page.items.length - 1]);
      if (!changedAgain) {
        // the first page held p1's SKUs; p1 changes again while the follower reads on
        expect(page.items.map((s) => s.sku_code)).toEqual(codes(p1));
        await bump(p1.id);
        changedAgain = true;
      }
      if (page.items.length < pageSize) break;
    }
    expectFollowOrder(seen);
    // every change once: p1's SKUs twice (their first and their second change), p2's and p3's once
    expect(seen.map((s) => s.sku_code)).toEqual([...codes(p1), ...codes(p2), ...codes(p3), ...codes(p1)]);
    const firstP1 = seen.slice(0, pageSize);
    const secondP1 = seen.slice(-pageSize);
    for (let i = 0; i < pageSize; i++) expect(secondP1[i].updated_at > firstP1[i].updated_at).toBe(true);
    // caught up: the next poll from where the follower stands answers nothing
    expect((await step(c, k, 500)).items).toEqual([]);
  });

  it('a reprice that stamps more SKUs than a page holds is followed page by page, each SKU once', async () => {
    const { app } = suite;
    const all = (await list({ page_size: 500 })).items;
    const parents = [...new Set(all.map((s) => Math.floor(s.category_id / 100)))].filter((p) => p > 0);
    const cursor0 = await cursorNow();
    const put = await app.http.put('/internal/pricing/rules', {
      rules: parents.map((id) => ({ scope: 'category', category_id: id, markup_percent: '37', markup_fixed: '0.01' })),
    });
    expect(put.status).toBe(200);
    try {
      const changed = (await list({ changed_since: cursor0, page_size: 500 })).items;
      const stamps = new Set(changed.map((s) => s.updated_at));
      expect(stamps.size).toBe(1); // one write, one stamp
      const pageSize = 7;
      expect(changed.length).toBeGreaterThan(3 * pageSize);

      // "continue from the newest updated_at" loses the rest of the stamp: nothing is later than it
      const first = await step(cursor0, null, pageSize);
      expect(first.items).toHaveLength(pageSize);
      expect((await step(first.items[pageSize - 1].updated_at, null, pageSize)).items).toEqual([]);

      // keyset: every SKU of the stamp, once, in (updated_at, sku_code) order
      const seen: Sku[] = [];
      let requests = 0;
      let c = cursor0;
      let k: string | null = null;
      for (;;) {
        const page = await step(c, k, pageSize);
        requests++;
        seen.push(...page.items);
        if (page.items.length > 0) ({ updated_at: c, sku_code: k } = page.items[page.items.length - 1]);
        if (page.items.length < pageSize) break;
      }
      expectFollowOrder(seen);
      expect(seen.map((s) => s.sku_code)).toEqual(changed.map((s) => s.sku_code));
      expect(requests).toBe(Math.floor(changed.length / pageSize) + 1);
    } finally {
      expect((await app.http.put('/internal/pricing/rules', { rules: [] })).status).toBe(200);
    }
  });

  it("changed_since alone lists as it did; after_sku_code adds that very time's rows after the code; total counts the rest", async () => {
    const { app } = suite;
    const parent = Math.floor((await list({ page_size: 1 })).items[0].category_id / 100);
    const cursor0 = await cursorNow();
    expect(
      (
        await app.http.put('/internal/pricing/rules', {
          rules: [{ scope: 'category', category_id: parent, markup_percent: '11', markup_fixed: '0' }],
        })
      ).status,
    ).toBe(200);
    try {
      const batch = (await list({ changed_since: cursor0, page_size: 500 })).items;
      expect(batch.length).toBeGreaterThan(4);
      const stamp = batch[0].updated_at;
      expect(batch.every((s) => s.updated_at === stamp)).toBe(true);
      const codes = batch.map((s) => s.sku_code);
      const earlier = new Date(Date.parse(stamp) - 1).toISOString();

      // without after_sku_code: updated_at later than changed_since
      expect((await list({ changed_since: earlier, page_size: 500 })).items.map((s) => s.sku_code)).toEqual(codes);
      const atStamp = await list({ changed_since: stamp, page_size: 500 });
      expect([atStamp.items, atStamp.total]).toEqual([[], 0]);
      // paging by page as before (offset), with total
      const p2 = await list({ changed_since: earlier, page: 2, page_size: 2 });
      expect([p2.items.map((s) => s.sku_code), p2.total, p2.page, p2.page_size]).toEqual([codes.slice(2, 4), codes.length, 2, 2]);

      // with it: (updated_at, sku_code) after (changed_since, after_sku_code)
      const after = await list({ changed_since: stamp, after_sku_code: codes[2], page_size: 500 });
      expect([after.items.map((s) => s.sku_code), after.total]).toEqual([codes.slice(3), codes.length - 3]);
      // a code that sorts before every code of the stamp: the whole stamp
      expect((await list({ changed_since: stamp, after_sku_code: ' ', page_size: 500 })).items.map((s) => s.sku_code)).toEqual(codes);
      // the last code: nothing left
      expect((await list({ changed_since: stamp, after_sku_code: codes[codes.length - 1] })).items).toEqual([]);
      // page 2 of a keyset answer is offset within it
      expect((await list({ changed_since: stamp, after_sku_code: codes[0], page: 2, page_size: 2 })).items.map((s) => s.sku_code)).toEqual(
        codes.slice(3, 5),
      );

      // the same instant written otherwise is the same position: another offset, more digits that are zero
      const ms = Date.parse(stamp);
      const plus8 = new Date(ms + 8 * 3600_000).toISOString().replace('Z', '000+08:00');
      expect((await list({ changed_since: plus8, after_sku_code: codes[2] })).items.map((s) => s.sku_code)).toEqual(codes.slice(3));
      // a digit beyond the millisecond: after the stamp's millisecond, whatever the code (no row equals it)
      const beyond = stamp.replace('Z', '001Z');
      expect((await list({ changed_since: beyond, after_sku_code: codes[2] })).items).toEqual([]);
      expect((await list({ changed_since: beyond })).items).toEqual([]);
    } finally {
      expect((await app.http.put('/internal/pricing/rules', { rules: [] })).status).toBe(200);
    }
  });

  it('the docs describe after_sku_code and the follow procedure on the route, and the bound of category_id', async () => {
    const doc = (await suite.app.http.get(`${suite.app.url}/docs-json`)).data as {
      paths: Record<
        string,
        {
          get: {
            description: string;
            parameters: Array<{ name: string; in: string; schema: Record<string, unknown>; description?: string }>;
          };
        }
      >;
    };
    const op = doc.paths['/internal/catalog/skus'].get;
    const param = (name: string) => op.parameters.find((p) => p.in === 'query' && p.name === name);
    expect(param('after_sku_code')).toMatchObject({
      schema: { type: 'string', minLength: 1 },
      description: expect.stringContaining('only with `changed_since`'),
    });
    expect(param('category_id')?.schema).toMatchObject({ type: 'integer', minimum: 1, maximum: Number.MAX_SAFE_INTEGER });
    expect(op.description).toContain('changed_since=C&after_sku_code=K&page_size=500');
  });

  describe('bad query input is 400 bad_request naming the field, never a 500', () => {
    const refused: Array<[string, Params, string]> = [
      ['/internal/catalog/skus', { after_sku_code: 'SKU-00001-1' }, 'after_sku_code'],
      ['/internal/catalog/skus', { after_sku_code: 'SKU-00001-1', page: 2 }, 'after_sku_code'],
      ['/internal/catalog/skus', { changed_since: '2026-01-01T00:00:00Z', after_sku_code: '' }, 'after_sku_code'],
      ['/internal/catalog/skus', { changed_since: '2026-01-01T00:00:00Z', after_sku_code: 'A\u0000B' }, 'after_sku_code'],
      ['/internal/catalog/skus', { changed_since: '2016-12-31T23:59:60Z' }, 'changed_since'],
      ['/internal/catalog/skus', { changed_since: '2026-02-30T00:00:00Z' }, 'changed_since'],
      ['/internal/catalog/skus', { changed_since: '2025-02-29T00:00:00Z' }, 'changed_since'],
      ['/internal/catalog/skus', { changed_since: '2026-04-31T00:00:00Z' }, 'changed_since'],
      ['/internal/catalog/skus', { changed_since: '2026-01-01T24:00:00Z' }, 'changed_since'],
      ['/internal/catalog/skus', { changed_since: '2026-01-01T00:00:00+24:00' }, 'changed_since'],
      ['/internal/catalog/skus', { changed_since: '2026-01-01T00:00:00' }, 'changed_since'],
      ['/internal/catalog/skus', { category_id: '100000000000000000000' }, 'category_id'],
      ['/internal/catalog/skus', { category_id: '9223372036854775808' }, 'category_id'],
      ['/internal/catalog/skus', { category_id: String(Number.MAX_SAFE_INTEGER + 1) }, 'category_id'],
      ['/internal/catalog/skus', { page: '100000000000000000' }, 'page'],
      ['/internal/catalog/skus', { page: String(MAX_PAGE + 1) }, 'page'],
      ['/internal/catalog/sync-runs', { page: '100000000000000000' }, 'page'],
      ['/internal/catalog/conflicts', { page: '100000000000000000' }, 'page'],
      ['/internal/catalog/skus/SKU-00001-1/changes', { page: '100000000000000000' }, 'page'],
      ['/internal/orders', { page: '100000000000000000' }, 'page'],
      ['/internal/webhooks/deliveries', { page: '100000000000000000' }, 'page'],
    ];
    it.each(refused)('GET %s %j', async (path, params, field) => {
      const r = await suite.app.http.get(path, { params });
      expect([r.status, r.data]).toEqual([400, expect.objectContaining({ ok: false, error_code: 'bad_request' })]);
      expect(Object.keys((r.data as { fields: object }).fields)).toEqual([field]);
    });

    const accepted: Array<[string, Params]> = [
      ['/internal/catalog/skus', { changed_since: '2024-02-29T00:00:00Z' }],
      ['/internal/catalog/skus', { changed_since: '2026-01-01t00:00:00z' }],
      ['/internal/catalog/skus', { changed_since: '2026-01-01 00:00:00.5+08:00' }],
      ['/internal/catalog/skus', { changed_since: '0000-01-01T00:00:00Z', after_sku_code: 'A' }],
      ['/internal/catalog/skus', { changed_since: '9999-12-31T23:59:59.999999-23:59' }],
      ['/internal/catalog/skus', { category_id: String(Number.MAX_SAFE_INTEGER) }],
      ['/internal/catalog/skus', { page: String(MAX_PAGE), page_size: 500 }],
      ['/internal/catalog/sync-runs', { page: String(MAX_PAGE), page_size: 500 }],
      ['/internal/orders', { page: String(MAX_PAGE), page_size: 500 }],
      ['/internal/webhooks/deliveries', { page: String(MAX_PAGE), page_size: 500 }],
    ];
    it.each(accepted)('GET %s %j is answered', async (path, params) => {
      const r = await suite.app.http.get(path, { params });
      expect([r.status, (r.data as { ok: boolean }).ok]).toEqual([200, true]);
    });

    it('the largest page is an empty page of the list, with its number', async () => {
      const r = await list({ page: String(MAX_PAGE), page_size: 500 });
      expect([r.items, r.page, r.page_size, r.total > 0]).toEqual([[], MAX_PAGE, 500, true]);
    });

    it('a key with a NUL character (which the database cannot hold) names no SKU and no run: 404, not 500', async () => {
      const { app } = suite;
      for (const path of ['/internal/catalog/skus/A%00B', '/internal/catalog/skus/A%00B/changes']) {
        const r = await app.http.get(path);
        expect([path, r.status, (r.data as { error_code: string }).error_code]).toEqual([path, 404, 'sku_not_found']);
      }
      const run = await app.http.get('/internal/catalog/sync-runs/run%00x');
      expect([run.status, (run.data as { error_code: string }).error_code]).toEqual([404, 'sync_run_not_found']);
    });

    it('PUT /internal/pricing/rules with a NUL in a sku_code is refused naming it, and changes nothing', async () => {
      const { app } = suite;
      const before = (await app.http.get('/internal/pricing/rules')).data as { version: number };
      const r = await app.http.put('/internal/pricing/rules', {
        rules: [{ scope: 'sku', sku_code: 'A\u0000B', markup_percent: '5', markup_fixed: '0' }],
      });
      expect([r.status, (r.data as { error_code: string }).error_code]).toEqual([400, 'bad_request']);
      expect(Object.keys((r.data as { fields: object }).fields)).toEqual(['rules.0.sku_code']);
      expect(((await app.http.get('/internal/pricing/rules')).data as { version: number }).version).toBe(before.version);
    });

    it('PUT /internal/pricing/rules with a category_id beyond the ids taken is refused, and changes nothing', async () => {
      const { app } = suite;
      const before = (await app.http.get('/internal/pricing/rules')).data as { version: number };
      for (const id of ['100000000000000000000', '9223372036854775808', String(Number.MAX_SAFE_INTEGER + 1)]) {
        const r = await app.http.put(
          '/internal/pricing/rules',
          `{"rules":[{"scope":"sku","sku_code":"SKU-00001-1","markup_percent":"5","markup_fixed":"0"},` +
            `{"scope":"category","category_id":${id},"markup_percent":"5","markup_fixed":"0"}]}`,
          { headers: { 'content-type': 'application/json' } },
        );
        expect([id, r.status, (r.data as { error_code: string }).error_code]).toEqual([id, 400, 'bad_request']);
        expect(Object.keys((r.data as { fields: object }).fields)).toEqual(['rules.1.category_id']);
      }
      expect(((await app.http.get('/internal/pricing/rules')).data as { version: number }).version).toBe(before.version);
    });
  });
});

const onServer = Boolean(process.env.TEST_DATABASE_URL);

(onServer ? describe : describe.skip)("a full pass's start read: the fence vs. concurrent catalog writes (PostgreSQL)", () => {
  const suite = useAppSuite({ seed: true, sandbox: { catalog: { products: 150, seed: 13 } } });

  it('every write the fingerprint read did not see is stamped at or after its fence (productsWrittenSince finds it)', async () => {
    const { app, sandbox, db } = suite;
    const catalog = app.relay.app.get(CatalogService);
    const repo = app.relay.app.get(CatalogRepository);
    // Many more fingerprints (of products that do not exist) make the read long: writes commit while
    // it streams its rows, which is when a fence read after the rows' snapshot went wrong.
    await db.query(
      `INSERT INTO catalog_product_fingerprints (product_id, fingerprint, sku_codes, updated_at)
       SELECT 1000000000 + g, md5(g::text), ARRAY[]::text[], now() - interval '1 day' FROM generate_series(1, 20000) g`,
    );

    const products = sandbox.catalog.listedProducts().map((p) => p.id);
    const queue = [...products];
    const writer = async () => {
      for (let id = queue.shift(); id !== undefined; id = queue.shift()) {
        for (const s of sandbox.catalog.getProduct(id)!.skus) {
          sandbox.catalog.setPrice(s.sku_code, (Number(sandbox.catalog.getSku(s.sku_code)!.sku.price_amount) + 1.23).toFixed(2));
        }
        await catalog.refreshProduct(id);
      }
    };
    let writing = true;
    const reads: Array<{ fingerprints: Map<number, string | undefined>; fence: Date }> = [];
    const reader = async () => {
      while (writing) {
        const r = await repo.fingerprintIndex('main', 1_000_000);
        reads.push({ fingerprints: new Map(products.map((p) => [p, r!.fingerprints.get(p)])), fence: r!.fence });
      }
    };
    // (With the fence read in the fingerprints' statement, as before, this missed 50–100 writes a run.)
    const readers = [reader()];
    await Promise.all(Array.from({ length: 8 }, writer));
    writing = false;
    await Promise.all(readers);
    expect(reads.length).toBeGreaterThan(3);

    const now = (await repo.fingerprintIndex('main', 1_000_000))!.fingerprints;
    let unseenChecked = 0;
    const missed: Array<{ read: number; product: number }> = [];
    for (const [i, read] of reads.entries()) {
      const writtenSince = new Set(await repo.productsWrittenSince('main', read.fence));
      for (const p of products) {
        if (read.fingerprints.get(p) === now.get(p)) continue; // the read saw its write (each product is written once)
        unseenChecked++;
        if (!writtenSince.has(p)) missed.push({ read: i, product: p });
      }
    }
    expect(unseenChecked).toBeGreaterThan(0);
    expect(missed).toEqual([]);
  }, 240_000);
});
