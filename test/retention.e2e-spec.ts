/**
 * The retention job on a real database (PGlite by default, PostgreSQL with TEST_DATABASE_URL): rows
 * of every table it cleans are written with SQL, old and new, final and not, then one run is made
 * through the service (`runOnce`) and exactly the old final rows are gone; the sync runs that planning
 * and /health read survive however old; orders and what hangs on them are never touched; one instance
 * at a time across replicas; RETENTION_DAYS=off deletes nothing; a shutdown stops a run cleanly.
 */
import { jest } from '@jest/globals';
import { SyncRunRepository } from '../src/catalog/sync-run.repository.js';
import { RETENTION_BATCH_SIZE, RETENTION_CLAIM_STALE_MS, RETENTION_FIRST_RUN_DELAY_MS } from '../src/retention/retention-policy.js';
import { RETENTION_CLAIM_KEY, RetentionRepository } from '../src/retention/retention.repository.js';
import { RetentionService, type RetentionReport } from '../src/retention/retention.service.js';
import { useAppSuite } from './support/app-suite.js';
import { startTestApp, type TestApp, type TestDatabase } from './support/test-app.js';
import { waitFor } from './support/wait.js';

/** An instance, with its retention job and repository at hand. */
interface App extends TestApp {
  retention: RetentionService;
  repo: RetentionRepository;
}

const withJob = (app: TestApp): App => ({
  ...app,
  retention: app.relay.app.get(RetentionService),
  repo: app.relay.app.get(RetentionRepository),
});

/** SQL for a time `days` days before the database's clock. */
const ago = (days: number) => `now() - interval '${days} days'`;

/** 2 full batches and one more row: the job must loop. */
const MANY = 2 * RETENTION_BATCH_SIZE + 1;

async function seedChanges(db: TestDatabase, oldRows: number): Promise<void> {
  await db.query(
    `INSERT INTO catalog_sku_changes (sku_code, field, kind, source, changed_at)
     SELECT 'old-' || i, 'stock_quantity', 'stock', 'sync', ${ago(100)} FROM generate_series(1, $1::int) i`,
    [oldRows],
  );
  await db.query(
    `INSERT INTO catalog_sku_changes (sku_code, field, kind, source, changed_at)
     VALUES ('new-89d', 'created', 'created', 'sync', ${ago(89)}), ('new-now', 'sale_price', 'price', 'pricing', now())`,
  );
}

/** A finished (or running) run: `started` and `finished` in days ago. */
async function insertRun(
  db: TestDatabase,
  r: { id: string; mode: string; planned: string; status: string; started: number; finished: number | null; fallback?: string },
) {
  await db.query(
    `INSERT INTO catalog_sync_runs (run_id, mode, planned_mode, trigger, status, owner, started_at, heartbeat_at, finished_at, fallback)
     VALUES ($1, $2, $3, 'schedule', $4, 'test', ${ago(r.started)}, ${ago(r.finished ?? r.started)},
             CASE WHEN $5::int IS NULL THEN NULL ELSE now() - $5::int * interval '1 day' END, $6)`,
    [r.id, r.mode, r.planned, r.status, r.finished, r.fallback ?? null],
  );
}

async function insertCallback(
  db: TestDatabase,
  id: string,
  state: string,
  received: number,
  processed: number | null,
  orderId: string | null = null,
) {
  await db.query(
    `INSERT INTO callback_inbox (body_sha256, event, upstream_order_id, reported_status, state, order_id, next_try_at,
                                 received_at, processed_at)
     VALUES ($1, 'order.status_changed', 42, 'delivered', $2, $3, now() + interval '1 day', ${ago(received)},
             CASE WHEN $4::int IS NULL THEN NULL ELSE now() - $4::int * interval '1 day' END)`,
    [id, state, orderId, processed],
  );
}

/** An outbox event; null times stay NULL. */
async function insertEvent(
  db: TestDatabase,
  subject: string,
  status: string,
  t: { created: number; lastAttempt: number | null; delivered: number | null },
) {
  const at = (n: string) => `CASE WHEN ${n}::int IS NULL THEN NULL ELSE now() - ${n}::int * interval '1 day' END`;
  await db.query(
    `INSERT INTO outbox_events (event_type, subject, payload, status, next_attempt_at, created_at, last_attempt_at, delivered_at)
     VALUES ('order.status_changed', $1, '{}'::jsonb, $2, now() + interval '1 day', ${ago(t.created)}, ${at('$3')}, ${at('$4')})`,
    [subject, status, t.lastAttempt, t.delivered],
  );
}

/** A year-old refunded order with its attempt, event and refund: never the job's. */
async function insertOldOrder(db: TestDatabase): Promise<string> {
  const [{ id }] = await db.query<{ id: string }>(
    `INSERT INTO orders (shop_order_no, sku_code, quantity, request_fingerprint, trace_id, status, downstream_order_no,
                         status_changed_at, progress_at, created_at, updated_at)
     VALUES ('year-old', 'SKU-1', 1, 'fp', 'trace', 'canceled', 'year-old', ${ago(400)}, ${ago(400)}, ${ago(400)}, ${ago(400)})
     RETURNING id::text AS id`,
  );
  await db.query(
    `INSERT INTO order_attempts (order_id, attempt_no, downstream_order_no, status, request, created_at, finished_at)
     VALUES ($1, 1, 'year-old', 'accepted', '{}'::jsonb, ${ago(400)}, ${ago(400)})`,
    [id],
  );
  await db.query(
    `INSERT INTO order_events (order_id, source, kind, new_status, created_at) VALUES ($1, 'api', 'status', 'canceled', ${ago(400)})`,
    [id],
  );
  await db.query(`INSERT INTO order_refunds (order_id, amount, currency, created_at) VALUES ($1, '9.90', 'CNY', ${ago(399)})`, [id]);
  return id;
}

const column = async (db: TestDatabase, sql: string): Promise<string[]> => (await db.query<{ v: string }>(sql)).map((r) => r.v).sort();
const remainingChanges = (db: TestDatabase) => column(db, "SELECT sku_code AS v FROM catalog_sku_changes WHERE sku_code NOT LIKE 'old-%'");
const countOldChanges = async (db: TestDatabase) =>
  (await db.query<{ n: number }>("SELECT count(*)::int AS n FROM catalog_sku_changes WHERE sku_code LIKE 'old-%'"))[0].n;
const remainingRuns = (db: TestDatabase) => column(db, 'SELECT run_id AS v FROM catalog_sync_runs');
const remainingCallbacks = (db: TestDatabase) => column(db, 'SELECT body_sha256 AS v FROM callback_inbox');
const remainingEvents = (db: TestDatabase) => column(db, 'SELECT subject AS v FROM outbox_events');
const claimRows = (db: TestDatabase) =>
  db.query<{ token: string }>("SELECT value->>'token' AS token FROM relay_state WHERE key = $1", [RETENTION_CLAIM_KEY]);

/**
 * Runs `app`'s job once, holding it after its first batch (the batch's statement committed; the run is
 * between two batches, holding no transaction) while `between` works; `between` may let the run go on
 * itself (`release`), else it goes on once `between` returns. Resolves with the run's report.
 */
async function runHeldAfterFirstBatch(app: App, between: (release: () => void) => Promise<void>): Promise<RetentionReport> {
  const real = app.repo.deleteBatch.bind(app.repo);
  let reached!: () => void;
  let release!: () => void;
  const atHold = new Promise<void>((r) => (reached = r));
  const released = new Promise<void>((r) => (release = r));
  const spy = jest
    .spyOn(app.repo, 'deleteBatch')
    .mockImplementationOnce(async (...args: Parameters<RetentionRepository['deleteBatch']>) => {
      const n = await real(...args);
      reached();
      await released;
      return n;
    });
  try {
    const running = app.retention.runOnce();
    await atHold;
    await between(release);
    release();
    return await running;
  } finally {
    release();
    spy.mockRestore();
  }
}

/** A few old final rows in every table (for the tests that look at how a run ends). */
async function seedSomeOfEach(db: TestDatabase): Promise<void> {
  await seedChanges(db, 3);
  await insertRun(db, { id: 'r-old', mode: 'full', planned: 'full', status: 'failed', started: 300, finished: 300 });
  await insertRun(db, { id: 'r-kept', mode: 'full', planned: 'full', status: 'succeeded', started: 200, finished: 200 });
  await insertCallback(db, 'cb-old', 'applied', 100, 100);
  await insertEvent(db, 'ev-old', 'delivered', { created: 100, lastAttempt: 100, delivered: 100 });
}

describe('the retention job', () => {
  /**
   * Two instances on the test database, without background work, so that nothing but the test's own
   * `runOnce` deletes anything; the JSON log lines of every instance of this file in one place.
   */
  const t = useAppSuite({ sandbox: false, instances: 2, workers: false, logs: true, env: { LOG_LEVEL: 'info' } });
  let db: TestDatabase;
  let a: App;
  let b: App;
  const retentionLines = () => t.logs.lines().filter((l) => l.context === 'retention');
  /** Another instance on the test database (without background work unless `workers`), its log lines with the others'. */
  const startApp = async (env: Record<string, string> = {}, options: { workers?: boolean } = {}): Promise<App> =>
    withJob(await startTestApp(t.db, null, { LOG_LEVEL: 'info', ...env }, { logs: t.logs, workers: options.workers ?? false }));

  beforeAll(() => {
    db = t.db;
    [a, b] = t.apps.map(withJob);
  });
  beforeEach(async () => {
    await db.query('TRUNCATE catalog_sku_changes, catalog_sync_runs, callback_inbox, outbox_events, orders CASCADE');
    await db.query('DELETE FROM relay_state WHERE key = $1', [RETENTION_CLAIM_KEY]);
  });

  it('deletes exactly the final rows past RETENTION_DAYS, in batches, and keeps the sync runs that planning and /health read', async () => {
    await seedChanges(db, MANY);

    // Every run is older than the cutoff but two; the four that something reads survive however old.
    const runs = [
      { id: 'run-01', mode: 'full', planned: 'full', status: 'succeeded', started: 300, finished: 300 }, // an older full pass
      { id: 'run-02', mode: 'full', planned: 'full', status: 'succeeded', started: 200, finished: 200 }, // newest succeeded full: kept
      { id: 'run-03', mode: 'incremental', planned: 'incremental', status: 'succeeded', started: 180, finished: 180 },
      // newest succeeded: kept
      { id: 'run-04', mode: 'incremental', planned: 'incremental', status: 'succeeded', started: 150, finished: 150 },
      { id: 'run-05', mode: 'incremental', planned: 'incremental', status: 'failed', started: 145, finished: 145 },
      // newest finished run planned incremental (the upstream refused the filter): kept
      { id: 'run-06', mode: 'full', planned: 'incremental', status: 'failed', started: 130, finished: 130, fallback: 'filter_refused' },
      { id: 'run-07', mode: 'full', planned: 'full', status: 'failed', started: 125, finished: 125 },
      // started long ago, recovered as failed within the retention: its age is its end
      { id: 'run-08', mode: 'full', planned: 'full', status: 'failed', started: 122, finished: 89 },
      { id: 'run-09', mode: 'full', planned: 'full', status: 'failed', started: 120, finished: 120 }, // newest finished: kept
      { id: 'run-10', mode: 'full', planned: 'full', status: 'running', started: 100, finished: null }, // running: never
    ];
    for (const r of runs) await insertRun(db, r);

    const orderId = await insertOldOrder(db);
    for (const state of ['applied', 'unknown_order', 'read_failed', 'ignored'])
      await insertCallback(db, `cb-old-${state}`, state, 100, 100);
    await insertCallback(db, 'cb-old-of-order', 'applied', 390, 390, orderId);
    await insertCallback(db, 'cb-pending-old', 'pending', 100, null); // still waiting for its order
    await insertCallback(db, 'cb-applied-new', 'applied', 10, 10);
    await insertCallback(db, 'cb-processed-late', 'ignored', 100, 89); // final only since 89 days

    await insertEvent(db, 'ev-delivered-old', 'delivered', { created: 100, lastAttempt: 100, delivered: 100 });
    await insertEvent(db, 'ev-dead-old', 'dead', { created: 100, lastAttempt: 99, delivered: null });
    await insertEvent(db, 'ev-delivered-no-times', 'delivered', { created: 100, lastAttempt: null, delivered: null });
    await insertEvent(db, 'ev-pending-old', 'pending', { created: 100, lastAttempt: 100, delivered: null }); // still retried
    await insertEvent(db, 'ev-delivered-new', 'delivered', { created: 100, lastAttempt: 10, delivered: 10 });
    // delivered long ago, replayed, dead since 5 days: aged from its last attempt
    await insertEvent(db, 'ev-replayed-dead', 'dead', { created: 120, lastAttempt: 5, delivered: 120 });

    // alert keys: those of a stuck order and of a failed run go once old; the wallet's (an active alert) and other state stay
    for (const [key, days] of [
      ['alert:order_stuck:SO-OLD', 100],
      ['alert:sync_failed:run-old', 100],
      ['alert:order_stuck:SO-NEW', 10],
      ['alert:wallet_low:wallet', 100],
      ['alert:order_stuckX:SO-OLD', 100], // not a key of ours: the pattern matches exactly
      ['wallet:snapshot', 100],
    ] as const) {
      await db.query(
        `INSERT INTO relay_state (key, value, updated_at) VALUES ($1, '{}'::jsonb, ${ago(days)})
           ON CONFLICT (key) DO UPDATE SET updated_at = EXCLUDED.updated_at`,
        [key],
      );
    }

    const runsRepo = a.relay.app.get(SyncRunRepository);
    const health = async () => ((await a.http.get('/health')).data as { last_sync: unknown }).last_sync;
    const before = {
      planning: await runsRepo.planningFacts('main'),
      lastFinished: await runsRepo.lastFinished(),
      health: await health(),
    };

    const linesBefore = retentionLines().length;
    const [{ now: startedAt }] = await db.query<{ now: Date }>('SELECT now() AS now');
    const report = await a.retention.runOnce();

    expect(report.outcome).toBe('done');
    expect(report.deleted).toEqual({
      catalog_sku_changes: MANY,
      catalog_sync_runs: 4,
      callback_inbox: 5,
      outbox_events: 3,
      relay_state: 2,
    });
    // 90 days before the database's time during the run
    const [{ now: endedAt }] = await db.query<{ now: Date }>('SELECT now() AS now');
    const cutoffPlus90 = report.cutoff!.getTime() + 90 * 86_400_000;
    expect([cutoffPlus90 >= startedAt.getTime(), cutoffPlus90 <= endedAt.getTime()]).toEqual([true, true]);

    expect(await countOldChanges(db)).toBe(0);
    expect(await remainingChanges(db)).toEqual(['new-89d', 'new-now']);
    expect(await remainingRuns(db)).toEqual(['run-02', 'run-04', 'run-06', 'run-08', 'run-09', 'run-10']);
    expect(await remainingCallbacks(db)).toEqual(['cb-applied-new', 'cb-pending-old', 'cb-processed-late']);
    expect(await remainingEvents(db)).toEqual(['ev-delivered-new', 'ev-pending-old', 'ev-replayed-dead']);
    expect(
      await column(
        db,
        "SELECT key AS v FROM relay_state WHERE key IN ('alert:order_stuck:SO-OLD', 'alert:sync_failed:run-old', " +
          "'alert:order_stuck:SO-NEW', 'alert:wallet_low:wallet', 'alert:order_stuckX:SO-OLD', 'wallet:snapshot')",
      ),
    ).toEqual(['alert:order_stuck:SO-NEW', 'alert:order_stuckX:SO-OLD', 'alert:wallet_low:wallet', 'wallet:snapshot']);
    const [money] = await db.query<Record<string, number>>(
      `SELECT (SELECT count(*)::int FROM orders) AS orders, (SELECT count(*)::int FROM order_attempts) AS attempts,
              (SELECT count(*)::int FROM order_events) AS events, (SELECT count(*)::int FROM order_refunds) AS refunds`,
    );
    expect(money).toEqual({ orders: 1, attempts: 1, events: 1, refunds: 1 });

    // What incremental planning and /health read did not move.
    expect(await runsRepo.planningFacts('main')).toEqual(before.planning);
    expect(await runsRepo.lastFinished()).toEqual(before.lastFinished);
    expect(await health()).toEqual(before.health);

    // One log line with the counts, the counter by table; the claim was given back.
    const lines = retentionLines().slice(linesBefore);
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatchObject({ level: 'info', outcome: 'done', deleted: report.deleted, cutoff: report.cutoff!.toISOString() });
    const metrics = (await a.http.get('/metrics')).data as string;
    expect(metrics).toContain(`relay_retention_deleted_rows_total{table="catalog_sku_changes"} ${MANY}`);
    expect(metrics).toContain('relay_retention_deleted_rows_total{table="catalog_sync_runs"} 4');
    expect(metrics).toContain('relay_retention_deleted_rows_total{table="callback_inbox"} 5');
    expect(metrics).toContain('relay_retention_deleted_rows_total{table="outbox_events"} 3');
    expect(await claimRows(db)).toEqual([]);

    // Run again: nothing left to delete, and nothing logged at info.
    const again = await a.retention.runOnce();
    expect(again).toMatchObject({
      outcome: 'done',
      deleted: { catalog_sku_changes: 0, catalog_sync_runs: 0, callback_inbox: 0, outbox_events: 0, relay_state: 0 },
    });
    expect(retentionLines().slice(linesBefore)).toHaveLength(1);
    expect(await remainingRuns(db)).toEqual(['run-02', 'run-04', 'run-06', 'run-08', 'run-09', 'run-10']);
  });

  it("keeps an old final callback while its order's attempt is still unknown (it may be the upstream order's only record)", async () => {
    const [{ id: unknownId }] = await db.query<{ id: string }>(
      `INSERT INTO orders (shop_order_no, sku_code, quantity, request_fingerprint, trace_id, status, downstream_order_no,
                             status_changed_at, progress_at, created_at, updated_at)
         VALUES ('still-unknown', 'SKU-1', 1, 'fp', 'trace', 'submit_unknown', 'still-unknown',
                 ${ago(200)}, ${ago(200)}, ${ago(200)}, ${ago(200)})
         RETURNING id::text AS id`,
    );
    const settledId = await insertOldOrder(db);
    await insertCallback(db, 'cb-of-unknown', 'read_failed', 150, 150, unknownId);
    await insertCallback(db, 'cb-of-settled', 'read_failed', 150, 150, settledId);
    const report = await a.retention.runOnce();
    expect(report.deleted.callback_inbox).toBe(1);
    expect(await remainingCallbacks(db)).toEqual(['cb-of-unknown']);
    // once the order is settled, the callback goes as any other
    await db.query("UPDATE orders SET status = 'rejected' WHERE id = $1", [unknownId]);
    expect((await a.retention.runOnce()).deleted.callback_inbox).toBe(1);
    expect(await remainingCallbacks(db)).toEqual([]);
  });

  it('runs on one instance at a time: while one runs, another skips without error, and runs once it is free', async () => {
    await seedSomeOfEach(db);
    const report = await runHeldAfterFirstBatch(a, async () => {
      const other = await b.retention.runOnce();
      expect(other).toEqual({
        outcome: 'skipped',
        cutoff: null,
        deleted: { catalog_sku_changes: 0, catalog_sync_runs: 0, callback_inbox: 0, outbox_events: 0, relay_state: 0 },
      });
      expect(await remainingCallbacks(db)).toEqual(['cb-old']); // B deleted nothing
      expect(await claimRows(db)).toHaveLength(1);
    });
    expect(report.deleted).toEqual({ catalog_sku_changes: 3, catalog_sync_runs: 1, callback_inbox: 1, outbox_events: 1, relay_state: 0 });
    expect(await claimRows(db)).toEqual([]);
    expect(await b.retention.runOnce()).toMatchObject({ outcome: 'done' });
    expect(await remainingRuns(db)).toEqual(['r-kept']);
  });

  it('takes over a claim whose holder stopped renewing it, never a live one', async () => {
    await seedSomeOfEach(db);
    await db.query(
      `INSERT INTO relay_state (key, value, updated_at)
       VALUES ($1, '{"token": "dead-process", "owner": "elsewhere"}'::jsonb, clock_timestamp())`,
      [RETENTION_CLAIM_KEY],
    );
    expect((await a.retention.runOnce()).outcome).toBe('skipped');
    expect(await countOldChanges(db)).toBe(3);

    await db.query(`UPDATE relay_state SET updated_at = clock_timestamp() - $2::int * interval '1 millisecond' WHERE key = $1`, [
      RETENTION_CLAIM_KEY,
      RETENTION_CLAIM_STALE_MS + 60_000,
    ]);
    expect(await a.retention.runOnce()).toMatchObject({
      outcome: 'done',
      deleted: { catalog_sku_changes: 3, catalog_sync_runs: 1, callback_inbox: 1, outbox_events: 1, relay_state: 0 },
    });
    expect(await claimRows(db)).toEqual([]);
  });

  it('stops before its next batch once its claim was taken over, and leaves the new holder its claim', async () => {
    await seedSomeOfEach(db);
    const report = await runHeldAfterFirstBatch(a, async () => {
      await db.query(`UPDATE relay_state SET value = jsonb_set(value, '{token}', '"the-new-holder"') WHERE key = $1`, [
        RETENTION_CLAIM_KEY,
      ]);
    });
    expect(report.outcome).toBe('claim_lost');
    expect(report.deleted).toEqual({ catalog_sku_changes: 3, catalog_sync_runs: 0, callback_inbox: 0, outbox_events: 0, relay_state: 0 });
    expect(await remainingRuns(db)).toEqual(['r-kept', 'r-old']);
    expect(await claimRows(db)).toEqual([{ token: 'the-new-holder' }]);
    expect(retentionLines().some((l) => l.level === 'warn' && l.outcome === 'claim_lost')).toBe(true);
  });

  it('with RETENTION_DAYS=off deletes nothing and schedules nothing', async () => {
    await seedSomeOfEach(db);
    const off = await startApp({ RETENTION_DAYS: 'off' }, { workers: true });
    try {
      expect(off.retention.nextRunAt).toBeNull();
      expect(await off.retention.runOnce()).toEqual({
        outcome: 'disabled',
        cutoff: null,
        deleted: { catalog_sku_changes: 0, catalog_sync_runs: 0, callback_inbox: 0, outbox_events: 0, relay_state: 0 },
      });
    } finally {
      await off.close();
    }
    expect(await countOldChanges(db)).toBe(3);
    expect(await remainingRuns(db)).toEqual(['r-kept', 'r-old']);
    expect(await remainingCallbacks(db)).toEqual(['cb-old']);
    expect(await remainingEvents(db)).toEqual(['ev-old']);
  });

  it('is scheduled a minute after the start when the instance runs background work, and no more once it stops', async () => {
    // The job schedules on the wall clock as the instance starts: its due time is RETENTION_FIRST_RUN_DELAY_MS
    // after a moment between these two readings of that clock (an order of instants, no duration measured).
    const before = Date.now();
    const worker = await startApp({}, { workers: true });
    const after = Date.now();
    const due = worker.retention.nextRunAt;
    await worker.close();
    expect(due).not.toBeNull();
    expect(due!.getTime() - RETENTION_FIRST_RUN_DELAY_MS).toBeGreaterThanOrEqual(before);
    expect(due!.getTime() - RETENTION_FIRST_RUN_DELAY_MS).toBeLessThanOrEqual(after);
    expect(worker.retention.nextRunAt).toBeNull();
    expect(a.retention.nextRunAt).toBeNull(); // no background work: never scheduled
  });

  it('stops cleanly at shutdown: the batch in flight ends, the claim is given back, nothing is sent once the pool is closed', async () => {
    await seedSomeOfEach(db);
    const c = await startApp();
    let closed = false;
    // the shutdown's stop of the retention job, as it begins (the real one, watched)
    const destroy = jest.spyOn(c.retention, 'onModuleDestroy');
    const report = await runHeldAfterFirstBatch(c, async (release) => {
      const closing = c.close().then(() => {
        closed = true;
      });
      await waitFor(
        () => destroy.mock.results.length,
        (n) => n === 1,
        "the shutdown's stop of the retention job",
      );
      const stopping = destroy.mock.results[0].value as Promise<void>;
      let stopped = false;
      void stopping.then(() => (stopped = true));
      // a turn of the event loop: every promise that could settle without the held run has
      await new Promise((r) => setImmediate(r));
      expect([stopped, closed]).toEqual([false, false]); // the shutdown waits for the run
      release();
      await closing;
      expect(stopped).toBe(true);
    });
    destroy.mockRestore();
    expect(report.outcome).toBe('stopped');
    expect(report.deleted).toEqual({ catalog_sku_changes: 3, catalog_sync_runs: 0, callback_inbox: 0, outbox_events: 0, relay_state: 0 });
    expect(await claimRows(db)).toEqual([]);
    expect(await remainingCallbacks(db)).toEqual(['cb-old']);
    // After the shutdown a run sends nothing (the pool is closed: a query would fail).
    expect((await c.retention.runOnce()).outcome).toBe('stopped');
  });
});
