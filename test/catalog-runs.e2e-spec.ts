/**
 * A sync run's claim across replicas: its row is held by the process that runs it. The heartbeat and
 * the stale check go by the database's clock (replicas' clocks may be minutes apart); a process never
 * recovers the run it is executing; a run whose row another process recovered, or whose heartbeat
 * cannot be written, stops at once, unlists nothing, and is recorded failed saying it lost its claim.
 */
import { CatalogSyncService } from '../src/catalog/catalog-sync.service.js';
import { Clock } from '../src/common/clock.js';
import { useAppSuite } from './support/app-suite.js';
import type { TestApp } from './support/test-app.js';
import { waitFor } from './support/wait.js';
import type { SyncRunView as Run } from './support/sync-run.js';

/** The wall clock, off by a fixed amount (a replica whose clock is wrong). */
class SkewedClock extends Clock {
  constructor(private readonly offsetMs: number) {
    super();
  }
  now(): Date {
    return new Date(Date.now() + this.offsetMs);
  }
}

/** An instance, and its sync service. */
const syncOf = (app: TestApp) => app.relay.app.get(CatalogSyncService);

async function getRun(app: TestApp, runId: string): Promise<Run> {
  const r = await app.http.get(`/internal/catalog/sync-runs/${runId}`);
  expect(r.status).toBe(200);
  return (r.data as { run: Run }).run;
}

const finished = (app: TestApp, runId: string) =>
  waitFor(
    () => getRun(app, runId),
    (r) => r.status !== 'running',
    `run ${runId}`,
  );

async function startRun(app: TestApp, body: Record<string, unknown> = { mode: 'full' }): Promise<string> {
  const r = await app.http.post('/internal/catalog/sync', body);
  expect(r.status).toBe(202);
  return (r.data as { run_id: string }).run_id;
}

describe('the claim of a running sync run', () => {
  const t = useAppSuite({
    sandbox: { pageSizeCap: 5, catalog: { products: 40, seed: 21 } },
    instances: [{ env: { SYNC_CONCURRENCY: '1' }, clock: new SkewedClock(-3 * 60_000) }, {}],
  });
  /** A replica whose clock is 3 minutes behind, fetching one page at a time. */
  let a: TestApp;
  /** A replica with the right time. */
  let b: TestApp;

  beforeAll(async () => {
    [a, b] = t.apps;
    await finished(b, await startRun(b));
  });
  afterEach(async () => {
    await waitFor(
      () => t.db.query<{ n: number }>("SELECT count(*)::int AS n FROM catalog_sync_runs WHERE status = 'running'"),
      ([{ n }]) => n === 0,
      'no run left running',
    );
  });

  it('a replica whose clock is minutes behind keeps its live run: the heartbeat and the stale check go by the database clock', async () => {
    t.sandbox.faults.set({ latencyMs: 200 });
    const [{ before }] = await t.db.query<{ before: Date }>('SELECT clock_timestamp() AS before');
    const runId = await startRun(a);

    // B (right time) sees A's run as live, not abandoned three minutes ago.
    const other = await b.http.post('/internal/catalog/sync', { mode: 'full' });
    expect(other.status).toBe(409);
    expect(other.data).toMatchObject({ error_code: 'sync_in_progress', run_id: runId });
    // its heartbeat is the database's time since the run began, not A's (three minutes earlier)
    const [row] = await t.db.query<{ since_start: boolean; not_ahead: boolean }>(
      `SELECT heartbeat_at >= $2::timestamptz AS since_start, heartbeat_at <= clock_timestamp() AS not_ahead
         FROM catalog_sync_runs WHERE run_id = $1`,
      [runId, before],
    );
    expect(row).toEqual({ since_start: true, not_ahead: true });

    expect(await finished(a, runId)).toMatchObject({ status: 'succeeded', error: null });
  });

  it('a process never recovers the run it is executing itself, however late its heartbeat', async () => {
    t.sandbox.faults.set({ latencyMs: 200 });
    const runId = await startRun(a);
    await t.db.query(`UPDATE catalog_sync_runs SET heartbeat_at = clock_timestamp() - interval '10 minutes' WHERE run_id = $1`, [runId]);
    const again = await a.http.post('/internal/catalog/sync', { mode: 'full' });
    expect(again.status).toBe(409);
    expect(again.data).toMatchObject({ error_code: 'sync_in_progress', run_id: runId });
    expect(await finished(a, runId)).toMatchObject({ status: 'succeeded', error: null });
  });

  it('a run that another process recovered as abandoned stops: failed, saying it lost its claim, and unlists nothing', async () => {
    const gone = t.sandbox.catalog.listedProducts()[12];
    t.sandbox.catalog.delistProduct(gone.id);
    try {
      t.sandbox.faults.set({ latencyMs: 300 });
      const runA = await startRun(a);
      await waitFor(
        () => getRun(a, runA),
        (r) => r.pages_done >= 1,
        'the first pages of run A',
      );

      // As if A's heartbeat had not landed for ten minutes: B recovers A's row and starts its own run
      // (A's own progress may land in between: then B is refused and tries again).
      let runB: string | null = null;
      for (let i = 0; i < 10 && runB === null; i++) {
        await t.db.query(
          `UPDATE catalog_sync_runs SET heartbeat_at = clock_timestamp() - interval '10 minutes' WHERE run_id = $1 AND status = 'running'`,
          [runA],
        );
        const r = await b.http.post('/internal/catalog/sync', { mode: 'full' });
        if (r.status === 202) runB = (r.data as { run_id: string }).run_id;
        else expect(r.data).toMatchObject({ error_code: 'sync_in_progress', run_id: runA });
      }
      expect(runB).not.toBeNull();

      const lost = await waitFor(
        () => getRun(a, runA),
        (r) => /lost its claim/.test(r.error ?? ''),
        'run A to record that it lost its claim',
        15_000,
      );
      expect(lost.status).toBe('failed');
      expect(lost.error).toMatch(/^lost its claim on the run: another process recovered it as abandoned; stopped, nothing was unlisted/);
      expect(lost.error).toMatch(/\(recorded by the other process: abandoned: no heartbeat since /);
      expect(lost.skus_delisted).toBe(0);

      // B's run is the one run: it completes and unlists what is gone; A unlisted nothing.
      expect(await finished(b, runB!)).toMatchObject({ status: 'succeeded', skus_delisted: gone.skus.length });
      const [{ n }] = await t.db.query<{ n: number }>(
        "SELECT count(*)::int AS n FROM catalog_sku_changes WHERE run_id = $1 AND kind = 'listing'",
        [runA],
      );
      expect(n).toBe(0);
      expect(await getRun(a, runA)).toMatchObject({ status: 'failed', error: lost.error });
    } finally {
      t.sandbox.catalog.relistProduct(gone.id);
    }
  });

  it('a run whose heartbeat cannot be written stops itself before another process may take it over', async () => {
    const timing = syncOf(a).claimTiming;
    syncOf(a).claimTiming = { heartbeatMs: 100, lostAfterMs: 600 };
    // Every write of a running row as running fails (its end, which makes it failed, goes through).
    await t.db.query(`CREATE FUNCTION test_refuse_heartbeat() RETURNS trigger LANGUAGE plpgsql AS $$
                    BEGIN RAISE EXCEPTION 'heartbeat refused by the test'; END $$`);
    await t.db.query(`CREATE TRIGGER test_refuse_heartbeat BEFORE UPDATE ON catalog_sync_runs FOR EACH ROW
                    WHEN (OLD.status = 'running' AND NEW.status = 'running') EXECUTE FUNCTION test_refuse_heartbeat()`);
    try {
      t.sandbox.faults.set({ latencyMs: 1000 });
      const runId = await startRun(a);
      const run = await finished(a, runId);
      expect(run.status).toBe('failed');
      expect(run.error).toMatch(
        new RegExp(
          String.raw`^lost its claim on the run: its heartbeat could not be written for \d+ s ` +
            String.raw`\(another process may recover it after 60 s\); stopped, nothing was unlisted$`,
        ),
      );
    } finally {
      await t.db.query('DROP TRIGGER test_refuse_heartbeat ON catalog_sync_runs');
      await t.db.query('DROP FUNCTION test_refuse_heartbeat()');
      syncOf(a).claimTiming = timing;
    }
  });
});
