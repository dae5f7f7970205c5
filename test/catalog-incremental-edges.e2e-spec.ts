/**
 * Edges of incremental runs: the `updated_after` boundary of an upstream that filters with `>=` in
 * whole seconds (no proof that the filter was ignored), an upstream that ignores the filter (the
 * listing is read again, in full), a listing that moves under an incremental pass (read again), and
 * `auto` trying a refused filter again once SYNC_FULL_EVERY has passed.
 */
import type { AxiosInstance } from 'axios';
import type { SandboxRequestEvent, SandboxServer } from '../src/sandbox/sandbox.server.js';
import { useAppSuite } from './support/app-suite.js';
import { TestClock } from './support/test-clock.js';
import type { SyncRunView as Run } from './support/sync-run.js';

async function sync(http: AxiosInstance, body: Record<string, unknown> = {}): Promise<Run> {
  const r = await http.post('/internal/catalog/sync', body);
  expect(r.status).toBe(202);
  const runId = (r.data as { run_id: string }).run_id;
  const deadline = Date.now() + 60_000;
  for (;;) {
    const run = ((await http.get(`/internal/catalog/sync-runs/${runId}`)).data as { run: Run }).run;
    if (run.status !== 'running') return run;
    if (Date.now() > deadline) throw new Error(`run ${runId} still running`);
    await new Promise((res) => setTimeout(res, 25));
  }
}

async function localCost(http: AxiosInstance, skuCode: string): Promise<string> {
  return ((await http.get(`/internal/catalog/skus/${skuCode}`)).data as { sku: { cost_price: string } }).sku.cost_price;
}

/** The query strings of the listing requests the sandbox receives while `fn` runs. */
async function listingQueries(sandbox: SandboxServer, fn: () => Promise<void>): Promise<URLSearchParams[]> {
  const queries: URLSearchParams[] = [];
  const on = (e: SandboxRequestEvent) => {
    if (e.operation === 'products' && e.phase === 'received') queries.push(new URLSearchParams(e.query));
  };
  sandbox.events.on('request', on);
  try {
    await fn();
  } finally {
    sandbox.events.off('request', on);
  }
  return queries;
}

describe('the updated_after boundary, and an upstream that ignores the filter', () => {
  /** null: the wall clock; else the sandbox's time is pinned there (a product updated at an exact instant). */
  let pinned: number | null = null;
  const t = useAppSuite({ sandbox: { pageSizeCap: 10, catalog: { products: 40, seed: 13 }, clock: () => pinned ?? Date.now() } });

  it("a product updated in updated_after's very second, listed by an inclusive filter, is no proof the filter was ignored", async () => {
    const first = await sync(t.app.http);
    expect(first).toMatchObject({ status: 'succeeded', mode: 'full' });
    // The next run's updated_after is the start of this one minus 5 minutes; it is sent truncated to the second.
    const updatedAfter = Date.parse(first.started_at) - 5 * 60_000;
    const cutoff = Math.floor(updatedAfter / 1000) * 1000;
    const atCutoff = t.sandbox.catalog.listedProducts()[6];
    pinned = cutoff;
    try {
      t.sandbox.catalog.setPrice(atCutoff.skus[0].sku_code, '777.77'); // the sandbox's first change: updated_at = cutoff exactly
    } finally {
      pinned = null;
    }
    expect(t.sandbox.catalog.getProduct(atCutoff.id)!.updated_at).toBe(new Date(cutoff).toISOString());
    t.sandbox.catalog.touchProducts(3);
    t.sandbox.faults.set({ updatedAfterFilter: 'inclusive_seconds' });
    t.sandbox.resetStats();

    let inc: Run | undefined;
    const filteredBy = (
      await listingQueries(t.sandbox, async () => {
        inc = await sync(t.app.http);
      })
    ).map((q) => q.get('updated_after'));
    expect(inc).toMatchObject({
      status: 'succeeded',
      planned_mode: 'incremental',
      mode: 'incremental',
      fallback: null,
      products_seen: 4,
    });
    expect(inc!.updated_after).toBe(new Date(updatedAfter).toISOString());
    expect(filteredBy).toEqual([new Date(cutoff).toISOString().replace('.000Z', 'Z')]);
    // Not taken for a full pass: no product outside the window was read one by one.
    expect(t.sandbox.stats.requests.products).toBe(1);
    expect(t.sandbox.stats.requests.product).toBe(0);
    expect(await localCost(t.app.http, atCutoff.skus[0].sku_code)).toBe('777.77');
  });

  it('an upstream that ignores updated_after: the listing is read again from page 1 without it, a real full pass', async () => {
    const gone = t.sandbox.catalog.listedProducts()[20];
    t.sandbox.catalog.delistProduct(gone.id);
    t.sandbox.faults.set({ updatedAfterFilter: 'ignored' });
    t.sandbox.resetStats();
    let run: Run | undefined;
    const queries = await listingQueries(t.sandbox, async () => {
      run = await sync(t.app.http);
    });
    expect(run).toMatchObject({
      status: 'succeeded',
      planned_mode: 'incremental',
      mode: 'full',
      fallback: 'filter_ignored',
      products_seen: 39,
      pages_done: 4,
      pages_total: 4,
      skus_delisted: gone.skus.length,
    });
    expect(run!.note).toMatch(/the upstream ignored updated_after: full pass/);
    const filtered = queries.filter((q) => q.has('updated_after'));
    const unfiltered = queries.filter((q) => !q.has('updated_after'));
    expect(filtered.length).toBeGreaterThanOrEqual(1);
    expect(unfiltered.map((q) => Number(q.get('page'))).sort((x, y) => x - y)).toEqual([1, 2, 3, 4]);
    // Every listed product was seen: only the withdrawn one was read on its own.
    expect(t.sandbox.stats.requests.product).toBe(1);
    t.sandbox.catalog.relistProduct(gone.id);
  });
});

describe('a listing that moves under an incremental pass', () => {
  const t = useAppSuite({ sandbox: { pageSizeCap: 10, catalog: { products: 40, seed: 17 } } });

  it('a product withdrawn mid-pass shifts another onto a fetched page: the listing is read again, and nothing is missed', async () => {
    expect(await sync(t.app.http)).toMatchObject({ status: 'succeeded', mode: 'full' });
    const touched = new Set(t.sandbox.catalog.touchProducts(15));
    const window = t.sandbox.catalog.listedProducts().filter((p) => touched.has(p.id));
    expect(window).toHaveLength(15);
    // Page 1 of the window is window[0..9]; then window[0] is withdrawn, and window[10] moves onto page 1.
    const shifted = window[10];
    t.sandbox.faults.set({ withdrawWhilePaging: { afterPage: 1 } });
    t.sandbox.resetStats();

    const inc = await sync(t.app.http);
    expect(inc).toMatchObject({
      status: 'succeeded',
      planned_mode: 'incremental',
      mode: 'incremental',
      fallback: null,
      skus_delisted: 0,
      products_seen: 14,
    });
    // The shifted product's new price is stored (before: missed until the next full pass).
    const upstream = t.sandbox.catalog.getProduct(shifted.id)!.skus[0];
    expect(await localCost(t.app.http, upstream.sku_code)).toBe(upstream.price_amount);
    expect(inc.note).toMatch(/the listing changed while it was read \(total 14 to 15\): read again/);
    expect(t.sandbox.stats.requests.products).toBe(4); // two reads of two pages
    for (const p of window.slice(1)) {
      expect(await localCost(t.app.http, p.skus[0].sku_code)).toBe(t.sandbox.catalog.getProduct(p.id)!.skus[0].price_amount);
    }
    t.sandbox.catalog.relistProduct(window[0].id);
  });

  it('a listing that keeps moving falls back to a full pass', async () => {
    const touched = new Set(t.sandbox.catalog.touchProducts(15));
    // Withdrawn after page 1 of each of the three reads (the read after the withdrawal sees the new total).
    const withdrawn: number[] = [];
    const on = (e: SandboxRequestEvent) => {
      if (e.operation === 'products' && e.phase === 'done' && new URLSearchParams(e.query).get('page') === '1' && withdrawn.length < 3) {
        const first = t.sandbox.catalog.listedProducts().find((p) => touched.has(p.id));
        if (first) {
          t.sandbox.catalog.delistProduct(first.id);
          withdrawn.push(first.id);
        }
      }
    };
    t.sandbox.events.on('request', on);
    let inc: Run;
    try {
      inc = await sync(t.app.http, { mode: 'incremental' });
    } finally {
      t.sandbox.events.off('request', on);
    }
    expect(withdrawn).toHaveLength(3);
    expect(inc).toMatchObject({ status: 'succeeded', planned_mode: 'incremental', mode: 'full', fallback: 'listing_moved' });
    expect(inc.note).toMatch(/the listing kept changing while it was read \(3 times\): full pass/);
    // A full pass: the withdrawn products are unlisted.
    const delisted = withdrawn.reduce((n, id) => n + t.sandbox.catalog.getProduct(id)!.skus.length, 0);
    expect(inc.skus_delisted).toBe(delisted);
    for (const id of withdrawn) t.sandbox.catalog.relistProduct(id);
  });
});

describe('auto after the upstream refused updated_after', () => {
  /** The service's clock, moved by the test (SYNC_MODE auto, SYNC_FULL_EVERY 6h). */
  const clock = new TestClock();
  const t = useAppSuite({ sandbox: { pageSizeCap: 10, catalog: { products: 20, seed: 19 } }, clock });
  const H = 3_600_000;
  const refuseOnce = () =>
    t.sandbox.faults.set({
      rules: [
        {
          operation: 'products',
          kind: 'coded_error',
          status: 400,
          errorCode: 'bad_request',
          errorMessage: 'unknown parameter updated_after',
          times: 1,
        },
      ],
    });

  it('tries the filter again once the refusal is SYNC_FULL_EVERY old, and still makes a full pass every SYNC_FULL_EVERY', async () => {
    expect(await sync(t.app.http)).toMatchObject({ status: 'succeeded', mode: 'full' });
    clock.advance(H / 4);
    refuseOnce();
    expect(await sync(t.app.http)).toMatchObject({
      status: 'succeeded',
      planned_mode: 'incremental',
      mode: 'full',
      fallback: 'filter_refused',
    });

    clock.advance(H);
    const remembered = await sync(t.app.http);
    expect(remembered).toMatchObject({ status: 'succeeded', planned_mode: 'full', mode: 'full' });
    expect(remembered.note).toMatch(/refused updated_after last time/);

    // 6 h after the refusal (the last full pass 5 h ago): the filter is tried again, and accepted.
    clock.advance(5 * H);
    const retried = await sync(t.app.http);
    expect(retried).toMatchObject({ status: 'succeeded', planned_mode: 'incremental', mode: 'incremental', fallback: null });
    expect(retried.note).toMatch(/trying it again/);
    clock.advance(H / 2);
    expect(await sync(t.app.http)).toMatchObject({
      status: 'succeeded',
      mode: 'incremental',
      note: expect.stringMatching(/^auto: full pass not due/),
    });

    // The full pass is still made every SYNC_FULL_EVERY (the last one 6 h ago).
    clock.advance(H / 2);
    const due = await sync(t.app.http);
    expect(due).toMatchObject({ status: 'succeeded', planned_mode: 'full', mode: 'full' });
    expect(due.note).toMatch(/full pass is due/);

    // Refused again when tried: remembered again.
    clock.advance(H / 4);
    refuseOnce();
    expect(await sync(t.app.http)).toMatchObject({ planned_mode: 'incremental', mode: 'full', fallback: 'filter_refused' });
    clock.advance(H / 4);
    expect(await sync(t.app.http)).toMatchObject({ planned_mode: 'full', note: expect.stringMatching(/refused updated_after last time/) });
  });
});
