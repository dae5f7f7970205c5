/**
 * The catalog sync under the upstream request budget, end to end: the relay on a real database, the
 * sandbox as a real HTTP server with Dujiao-Next's limiter scaled down in time (20 requests per 2 s,
 * a 1 s block), the relay's budget set by UPSTREAM_RATE_LIMIT. A sync is paced by the budget, never
 * failed by it, and its run says how long its requests waited. Under the dujiao-next profile the
 * listing carries the inactive products (`include_inactive=true`), which are unlisted without a read.
 * Each test has its own sandbox, database and relay: a describe block of its own on useAppSuite.
 */
import type { SandboxRequestEvent, SandboxServer } from '../src/sandbox/sandbox.server.js';
import type { SandboxProduct } from '../src/sandbox/sandbox.types.js';
import { useAppSuite, type AppSuite } from './support/app-suite.js';
import type { StartSandboxOptions, TestApp } from './support/test-app.js';
import { waitRun, type SyncRunView as Run } from './support/sync-run.js';

/** Dujiao-Next's limiter scaled down in time (same ratios: a window of N requests, a block after it). */
const LIMITER = { requests: 20, windowMs: 2000, blockMs: 1000 };
/** Dujiao-Next's page size cap: 50 products a page. */
const PAGE = 50;

interface Sku {
  sku_code: string;
  product_id: number;
  listed: boolean;
  available: boolean;
}

/** The SKUs of a product that the dujiao-next sandbox serves (it leaves inactive SKUs out), so the relay stores. */
function served(p: SandboxProduct): number {
  return p.skus.filter((s) => s.is_active).length;
}

function refused(sandbox: SandboxServer): number {
  return Object.values(sandbox.stats.rateLimited).reduce((n, v) => n + v, 0);
}

async function startSync(app: TestApp): Promise<Run> {
  const r = await app.http.post('/internal/catalog/sync', { mode: 'full' });
  expect(r.status).toBe(202);
  return waitRun(app.http, (r.data as { run_id: string }).run_id, 120_000);
}

async function skusOf(app: TestApp, productId: number): Promise<Sku[]> {
  const out: Sku[] = [];
  for (let page = 1; ; page++) {
    const r = await app.http.get('/internal/catalog/skus', { params: { page, page_size: 500 } });
    expect(r.status).toBe(200);
    const data = r.data as { items: Sku[]; total: number };
    out.push(...data.items.filter((s) => s.product_id === productId));
    if (page * 500 >= data.total) return out;
  }
}

/** A sandbox under the dujiao-next profile with `products` and the limiter `rateLimit`, and the relay on it with `env`. */
function budgetSuite(products: number, env: Record<string, string>, rateLimit: StartSandboxOptions['rateLimit'] | null): AppSuite {
  return useAppSuite({
    sandbox: { profile: 'dujiao-next', pageSizeCap: PAGE, rateLimit, catalog: { products, seed: 5 } },
    env: { UPSTREAM_PROFILE: 'dujiao-next', SYNC_CONCURRENCY: '4', ...env },
  });
}

describe("catalog sync under the request budget: within the upstream's limit", () => {
  const t = budgetSuite(40 * PAGE, { UPSTREAM_RATE_LIMIT: '20/2s', UPSTREAM_RATE_LIMIT_BLOCK_S: '1' }, LIMITER);
  it(
    'a full sync of 40 pages within the same limit as the upstream is paced: it completes, no request is refused, ' +
      'no page fails, and the run shows its wait',
    async () => {
      const { app, sandbox } = t;
      const run = await startSync(app);
      expect(run).toMatchObject({ status: 'succeeded', error: null, pages_total: 40, pages_done: 40, products_seen: 40 * PAGE });
      expect(refused(sandbox)).toBe(0);
      expect(sandbox.stats.rateLimitBlocks).toBe(0);
      // every page asked for once: none failed and was tried again
      expect(sandbox.stats.requests.products).toBe(40);
      expect(run.budget_wait_ms).toBeGreaterThan(0);
    },
  );
});

describe("catalog sync under the request budget: a budget far above the upstream's limit", () => {
  const t = budgetSuite(20 * PAGE, { UPSTREAM_RATE_LIMIT: '200/2s', UPSTREAM_RATE_LIMIT_BLOCK_S: '1' }, { ...LIMITER, requests: 8 });
  it('a 429 block in the middle of a sync does not fail it: the pages wait for the block and the run completes after it', async () => {
    // The relay's budget far above the sandbox's limit: the sandbox refuses once its window is full
    // (the ping, the categories and a few pages) and blocks the key; every page after it waits for the
    // block's end through the budget.
    const { app, sandbox } = t;
    const answers: string[] = [];
    sandbox.events.on('request', (e: SandboxRequestEvent) => {
      if (e.phase === 'done' && e.operation === 'products') answers.push(String(e.status));
    });
    const run = await startSync(app);
    expect(run).toMatchObject({ status: 'succeeded', error: null, pages_total: 20, pages_done: 20, products_seen: 20 * PAGE });
    expect(sandbox.stats.rateLimited.products).toBeGreaterThan(0);
    expect(sandbox.stats.rateLimitBlocks).toBeGreaterThan(0);
    // pages were answered before the first 429 and after the last one
    expect(answers.indexOf('429')).toBeGreaterThan(0);
    expect(answers.lastIndexOf('200')).toBeGreaterThan(answers.lastIndexOf('429'));
    expect(answers.filter((a) => a === '200')).toHaveLength(20);
    expect(run.budget_wait_ms).toBeGreaterThan(0);
  });
});

describe('catalog sync under the request budget: the budget off', () => {
  const t = budgetSuite(2 * PAGE, { UPSTREAM_RATE_LIMIT: 'off' }, null);
  it('with the budget off, a run waits for nothing: budget_wait_ms is 0', async () => {
    const { app } = t;
    expect(await startSync(app)).toMatchObject({ status: 'succeeded', pages_done: 2, budget_wait_ms: 0 });
  });

  // UPSTREAM_LIST_INACTIVE (default on under dujiao-next): the listing asks include_inactive=true.
});

describe('catalog sync under the request budget: the listing with the inactive products', () => {
  const t = budgetSuite(4 * PAGE, {}, null);
  it(
    'under dujiao-next, the listing carries the inactive products: a full pass unlists them without reading ' +
      'any product, and lists them again once active',
    async () => {
      const { app, sandbox } = t;
      const queries: string[] = [];
      sandbox.events.on('request', (e: SandboxRequestEvent) => {
        if (e.phase === 'received' && e.operation === 'products') queries.push(e.query);
      });
      expect(await startSync(app)).toMatchObject({ status: 'succeeded', skus_delisted: 0 });
      expect(queries.length).toBeGreaterThan(0);
      expect(queries.every((q) => new URLSearchParams(q).get('include_inactive') === 'true')).toBe(true);

      const withdrawn = sandbox.catalog.listedProducts().slice(3, 8);
      const skuCount = withdrawn.reduce((n, p) => n + served(p), 0);
      for (const p of withdrawn) sandbox.catalog.delistProduct(p.id);
      const reads = sandbox.stats.requests.product;
      const run = await startSync(app);
      expect(run).toMatchObject({ status: 'succeeded', skus_delisted: skuCount, confirmed_live: 0, unconfirmed: 0 });
      expect(sandbox.stats.requests.product - reads).toBe(0);
      for (const p of withdrawn) {
        const skus = await skusOf(app, p.id);
        expect(skus).toHaveLength(served(p));
        expect(skus.every((s) => !s.listed && !s.available)).toBe(true);
      }

      // unchanged inactive products cost nothing more and stay unlisted
      expect(await startSync(app)).toMatchObject({ status: 'succeeded', skus_delisted: 0, skus_relisted: 0, skus_changed: 0 });
      expect(sandbox.stats.requests.product - reads).toBe(0);

      sandbox.catalog.relistProduct(withdrawn[0].id);
      expect(await startSync(app)).toMatchObject({ status: 'succeeded', skus_relisted: served(withdrawn[0]), skus_delisted: 0 });
      expect((await skusOf(app, withdrawn[0].id)).every((s) => s.listed)).toBe(true);
    },
  );
});

describe('catalog sync under the request budget: the listing without the inactive products', () => {
  const t = budgetSuite(2 * PAGE, { UPSTREAM_LIST_INACTIVE: 'false' }, null);
  it(
    'a product missing from a complete pass is read: 200 with is_active false → unlisted (not deleted); ' +
      '404 product_not_found → unlisted',
    async () => {
      // Without include_inactive the listing leaves a withdrawn product out: the pass reads it.
      const { app, sandbox } = t;
      expect(await startSync(app)).toMatchObject({ status: 'succeeded' });
      const [withdrawn, deleted] = sandbox.catalog.listedProducts().slice(1, 3);
      sandbox.catalog.delistProduct(withdrawn.id);
      sandbox.catalog.deleteProduct(deleted.id);
      const reads = sandbox.stats.requests.product;
      const run = await startSync(app);
      expect(run).toMatchObject({
        status: 'succeeded',
        skus_delisted: served(withdrawn) + served(deleted),
        confirmed_live: 0,
        unconfirmed: 0,
      });
      expect(sandbox.stats.requests.product - reads).toBe(2);
      for (const p of [withdrawn, deleted]) {
        const skus = await skusOf(app, p.id);
        expect(skus).toHaveLength(served(p));
        expect(skus.every((s) => !s.listed && !s.available)).toBe(true);
      }
    },
  );
});
