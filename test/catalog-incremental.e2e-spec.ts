/**
 * Incremental runs (`updated_after`), the full pass every SYNC_FULL_EVERY, SYNC_MODE, and the fallback
 * to a full pass when the upstream refuses the filter.
 */
import { useAppSuite } from './support/app-suite.js';
import { startTestApp, type TestApp } from './support/test-app.js';
import type { SyncRunView as Run } from './support/sync-run.js';
import { TestClock } from './support/test-clock.js';

async function sync(app: TestApp, body: Record<string, unknown> = {}): Promise<Run> {
  const r = await app.http.post('/internal/catalog/sync', body);
  expect(r.status).toBe(202);
  const runId = (r.data as { run_id: string }).run_id;
  const deadline = Date.now() + 60_000;
  for (;;) {
    const run = ((await app.http.get(`/internal/catalog/sync-runs/${runId}`)).data as { run: Run }).run;
    if (run.status !== 'running') return run;
    if (Date.now() > deadline) throw new Error(`run ${runId} still running`);
    await new Promise((res) => setTimeout(res, 25));
  }
}

describe('incremental catalog sync', () => {
  // SYNC_MODE auto, SYNC_FULL_EVERY 6h
  const t = useAppSuite({ sandbox: { pageSizeCap: 10, catalog: { products: 40, seed: 9 } } });

  it('the first run is a full pass; the next ones fetch only what changed since the last complete run', async () => {
    const first = await sync(t.app);
    expect(first).toMatchObject({ status: 'succeeded', mode: 'full', planned_mode: 'full', products_seen: 40, updated_after: null });
    expect(first.note).toMatch(/no complete run yet/);

    const touched = t.sandbox.catalog.touchProducts(5);
    t.sandbox.resetStats();
    const inc = await sync(t.app);
    expect(inc).toMatchObject({
      status: 'succeeded',
      mode: 'incremental',
      planned_mode: 'incremental',
      fallback: null,
      products_seen: 5,
      skus_changed: 5,
    });
    expect(inc.changes).toMatchObject({ created: 0, price: 5, stock: 0, listing: 0 });
    expect(t.sandbox.stats.requests.products).toBe(1);
    // Since the last complete run, minus the safety window.
    expect(new Date(first.started_at).getTime() - new Date(inc.updated_after!).getTime()).toBe(5 * 60_000);
    for (const id of touched) {
      const p = t.sandbox.catalog.getProduct(id)!;
      const local = (await t.app.http.get(`/internal/catalog/skus/${p.skus[0].sku_code}`)).data as { sku: { cost_price: string } };
      expect(local.sku.cost_price).toBe(p.skus[0].price_amount);
    }

    // Nothing changed since: the filtered listing still holds the touched products (within the safety
    // window), and nothing is written.
    const again = await sync(t.app);
    expect(again).toMatchObject({ status: 'succeeded', mode: 'incremental', skus_changed: 0, skus_created: 0 });
  });

  it('an incremental run never unlists; the next full pass does', async () => {
    const product = t.sandbox.catalog.listedProducts()[3];
    t.sandbox.catalog.delistProduct(product.id);
    const inc = await sync(t.app, { mode: 'incremental' });
    expect(inc).toMatchObject({ status: 'succeeded', mode: 'incremental', skus_delisted: 0 });
    const full = await sync(t.app, { mode: 'full' });
    expect(full).toMatchObject({ status: 'succeeded', mode: 'full', skus_delisted: product.skus.length });
    t.sandbox.catalog.relistProduct(product.id);
    expect(await sync(t.app)).toMatchObject({ mode: 'incremental', status: 'succeeded' });
  });

  it('falls back to a full pass when the upstream refuses updated_after, and auto remembers it', async () => {
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
    const refused = await sync(t.app);
    expect(refused).toMatchObject({
      status: 'succeeded',
      planned_mode: 'incremental',
      mode: 'full',
      fallback: 'filter_refused',
      products_seen: 40,
    });
    expect(refused.note).toMatch(/refused updated_after/);

    const next = await sync(t.app);
    expect(next).toMatchObject({ status: 'succeeded', mode: 'full', planned_mode: 'full' });
    expect(next.note).toMatch(/refused updated_after last time/);

    // Asked for explicitly, the filter is tried again.
    expect(await sync(t.app, { mode: 'incremental' })).toMatchObject({ status: 'succeeded', mode: 'incremental', fallback: null });
    expect(await sync(t.app)).toMatchObject({ mode: 'incremental' });
  });

  it('makes a full pass at least every SYNC_FULL_EVERY; SYNC_MODE=full always does', async () => {
    // an instance whose clock is past SYNC_FULL_EVERY since the last full pass
    const later = new TestClock();
    later.advance(2_000);
    const often = await startTestApp(t.db, t.sandbox, { SYNC_FULL_EVERY: '1s' }, { clock: later });
    try {
      const run = await sync(often);
      expect(run).toMatchObject({ status: 'succeeded', mode: 'full' });
      expect(run.note).toMatch(/full pass is due/);
    } finally {
      await often.close();
    }
    const fullOnly = await startTestApp(t.db, t.sandbox, { SYNC_MODE: 'full' });
    try {
      expect(await sync(fullOnly)).toMatchObject({
        status: 'succeeded',
        mode: 'full',
        planned_mode: 'full',
        note: expect.stringMatching(/^SYNC_MODE=full/),
      });
    } finally {
      await fullOnly.close();
    }
  });
});
