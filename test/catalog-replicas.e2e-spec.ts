/**
 * One sync at a time across replicas (two app instances on one database), stale-run recovery, runs
 * started by the schedule and at start, and a run interrupted by a shutdown.
 */
import { openTestDatabase, startSandbox, startTestApp, type TestApp, type TestDatabase } from './support/test-app.js';
import type { SandboxServer } from '../src/sandbox/sandbox.server.js';
import { settlesWithin, waitFor } from './support/wait.js';
import type { SyncRunView as Run } from './support/sync-run.js';

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

async function runs(app: TestApp): Promise<Run[]> {
  const r = await app.http.get('/internal/catalog/sync-runs', { params: { page_size: 500 } });
  expect(r.status).toBe(200);
  return (r.data as { items: Run[] }).items;
}

describe('catalog sync across replicas', () => {
  let db: TestDatabase;
  let sandbox: SandboxServer;
  let a: TestApp;
  let b: TestApp;

  beforeAll(async () => {
    db = await openTestDatabase();
    sandbox = await startSandbox({ pageSizeCap: 10, catalog: { products: 30, seed: 5 } });
    [a, b] = await Promise.all([startTestApp(db, sandbox), startTestApp(db, sandbox)]);
  });
  afterAll(async () => {
    await a?.close();
    await b?.close();
    await sandbox?.stop();
    await db?.close();
  });
  afterEach(() => sandbox.faults.reset());

  it('concurrent sync requests to two instances: one run starts, every other request is 409 sync_in_progress with its run_id', async () => {
    sandbox.faults.set({ latencyMs: 150 }); // keeps the run going while the requests arrive
    const answers = await Promise.all([a, b, a, b, a, b].map((app) => app.http.post('/internal/catalog/sync', { mode: 'full' })));
    const accepted = answers.filter((r) => r.status === 202);
    expect(accepted).toHaveLength(1);
    const runId = (accepted[0].data as { run_id: string }).run_id;
    for (const r of answers.filter((x) => x.status !== 202)) {
      expect(r.status).toBe(409);
      expect(r.data).toEqual({ ok: false, error_code: 'sync_in_progress', error_message: expect.any(String), run_id: runId });
    }
    // Visible from both instances while it runs, with its progress.
    const running = await getRun(b, runId);
    expect(running.status).toBe('running');
    const [{ n }] = await db.query<{ n: number }>("SELECT count(*)::int AS n FROM catalog_sync_runs WHERE status = 'running'");
    expect(n).toBe(1);
    expect(await finished(a, runId)).toMatchObject({ status: 'succeeded', pages_done: 3, pages_total: 3 });

    // Once it is over, the other instance may start the next one.
    const next = await b.http.post('/internal/catalog/sync', {});
    expect(next.status).toBe(202);
    expect((await finished(b, (next.data as { run_id: string }).run_id)).status).toBe('succeeded');
  });

  it('a run left running by a process that stopped is recovered as failed by the next start', async () => {
    const stale = new Date(Date.now() - 10 * 60_000);
    await db.query(
      `INSERT INTO catalog_sync_runs (run_id, mode, planned_mode, trigger, status, owner, started_at, heartbeat_at)
       VALUES ('run_dead_process', 'full', 'full', 'schedule', 'running', 'gone-1', $1, $1)`,
      [stale],
    );
    await db.query("INSERT INTO catalog_sync_seen (run_id, product_id) VALUES ('run_dead_process', 1)");
    const r = await a.http.post('/internal/catalog/sync', {});
    expect(r.status).toBe(202);
    const dead = await getRun(a, 'run_dead_process');
    expect(dead.status).toBe('failed');
    expect(dead.error).toMatch(/^abandoned: no heartbeat since /);
    expect((await finished(a, (r.data as { run_id: string }).run_id)).status).toBe('succeeded');
    const [{ n }] = await db.query<{ n: number }>('SELECT count(*)::int AS n FROM catalog_sync_seen');
    expect(n).toBe(0);
  });

  it('a live run is not taken over: its heartbeat keeps it', async () => {
    await db.query(
      `INSERT INTO catalog_sync_runs (run_id, mode, planned_mode, trigger, status, owner, started_at, heartbeat_at)
       VALUES ('run_other_replica', 'full', 'full', 'schedule', 'running', 'other-1', now(), now())`,
    );
    const r = await b.http.post('/internal/catalog/sync', {});
    expect(r.status).toBe(409);
    expect(r.data).toMatchObject({ error_code: 'sync_in_progress', run_id: 'run_other_replica' });
    await db.query("DELETE FROM catalog_sync_runs WHERE run_id = 'run_other_replica'");
  });

  it('SYNC_ON_START runs once after the instance listens; SYNC_CRON schedules runs that never overlap', async () => {
    const before = (await runs(a)).length;
    const starting = await startTestApp(db, sandbox, { SYNC_ON_START: 'true' });
    try {
      const started = await waitFor(
        () => runs(a),
        (rs) => rs.some((r) => r.trigger === 'start'),
        'a run triggered at start',
      );
      const run = started.find((r) => r.trigger === 'start')!;
      expect((await finished(a, run.run_id)).status).toBe('succeeded');
    } finally {
      await starting.close();
    }

    const scheduled = await startTestApp(db, sandbox, { SYNC_CRON: '* * * * * *' });
    try {
      const all = await waitFor(
        () => runs(a),
        (rs) => rs.filter((r) => r.trigger === 'schedule' && r.status === 'succeeded').length >= 2,
        'two scheduled runs',
        20_000,
      );
      expect(all.length).toBeGreaterThan(before + 2);
    } finally {
      await scheduled.close();
    }
    const [{ n }] = await db.query<{ n: number }>("SELECT count(*)::int AS n FROM catalog_sync_runs WHERE status = 'running'");
    expect(n).toBe(0);
  });

  it('a shutdown during a run ends its upstream requests in flight instead of waiting for them', async () => {
    const c = await startTestApp(db, sandbox, { UPSTREAM_TIMEOUT_MS: '60000' });
    sandbox.faults.set({ latencyMs: 20_000 });
    const received = sandbox.stats.totalRequests;
    const r = await c.http.post('/internal/catalog/sync', { mode: 'full' });
    expect(r.status).toBe(202);
    await waitFor(
      () => sandbox.stats.totalRequests,
      (n) => n > received,
      "the sync's first request in flight",
    );
    // the requests in flight take 20 s and their timeout a minute: a shutdown that waited for them
    // would still be waiting when the race ends
    await settlesWithin(c.close(), 10_000, 'the shutdown, while the sync waits on its requests');
    sandbox.faults.reset();
    expect(await getRun(a, (r.data as { run_id: string }).run_id)).toMatchObject({
      status: 'failed',
      error: 'aborted: the service is shutting down',
    });
  });

  it('a shutdown during a run records it as failed (aborted), never leaves it running', async () => {
    const c = await startTestApp(db, sandbox);
    // the run's first upstream request is held: the run is in progress when the shutdown comes
    sandbox.faults.set({ rules: [{ kind: 'hold_before', times: 1 }] });
    const r = await c.http.post('/internal/catalog/sync', { mode: 'full' });
    expect(r.status).toBe(202);
    const runId = (r.data as { run_id: string }).run_id;
    await waitFor(
      () => sandbox.heldRequests,
      (n) => n === 1,
      "the run's first request held",
    );
    await c.close();
    sandbox.releaseHeld();
    const run = await getRun(a, runId);
    expect(run).toMatchObject({ status: 'failed', error: 'aborted: the service is shutting down' });
    sandbox.faults.reset();
    const next = await a.http.post('/internal/catalog/sync', {});
    expect(next.status).toBe(202);
    expect((await finished(a, (next.data as { run_id: string }).run_id)).status).toBe('succeeded');
  });
});
