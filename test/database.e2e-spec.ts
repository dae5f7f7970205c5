/**
 * The database layer on both targets (embedded PGlite by default, PostgreSQL with TEST_DATABASE_URL):
 * migrations up and down, and the service surviving connections cut from the server side.
 */
import axios from 'axios';
import { DataSource } from 'typeorm';
import type pg from 'pg';
import { createRelayApp } from '../src/app.factory.js';
import { loadConfig } from '../src/config/app-config.js';
import { migrateDown, migrateUp, pendingMigrations, readMigrations } from '../src/database/migrator.js';
import { openTestDatabase, startTestApp, testEnv, type TestApp, type TestDatabase } from './support/test-app.js';
import { waitFor } from './support/wait.js';

describe('database', () => {
  let db: TestDatabase;
  beforeAll(async () => {
    db = await openTestDatabase();
  });
  afterAll(async () => {
    await db.close();
  });

  it('every migration has a down file, and down then up again restores the schema', async () => {
    const all = readMigrations();
    expect(all.length).toBeGreaterThan(0);
    for (const m of all) expect(m.down).not.toBeNull();
    expect(await pendingMigrations(db.url)).toEqual([]);
    const tables = async () =>
      (await db.query<{ t: string }>("SELECT table_name AS t FROM information_schema.tables WHERE table_schema='public' ORDER BY 1")).map(
        (r) => r.t,
      );
    const before = await tables();
    const reverted = await migrateDown(db.url, all.length);
    expect(reverted).toHaveLength(all.length);
    expect(await tables()).toEqual(['schema_migrations']);
    expect(await pendingMigrations(db.url)).toHaveLength(all.length);
    const report = await migrateUp(db.url);
    expect(report.applied).toHaveLength(all.length);
    expect(await tables()).toEqual(before);
    expect((await migrateUp(db.url)).applied).toEqual([]);
  });

  it('the embedded database runs with a small buffer pool (it lives in the service memory)', async () => {
    if (!db.embedded) return; // a PostgreSQL server keeps its own settings
    const [{ shared_buffers }] = await db.query<{ shared_buffers: string }>('SHOW shared_buffers');
    expect(shared_buffers).toBe('16MB');
  });

  it('replicas migrating at once apply each migration once', async () => {
    await migrateDown(db.url, 1);
    const reports = await Promise.all([migrateUp(db.url), migrateUp(db.url), migrateUp(db.url)]);
    expect(reports.flatMap((r) => r.applied)).toHaveLength(1);
  });

  it('DB_MIGRATE_ON_START=false starts on an empty database, not migrating it; /health/ready reports the pending migrations', async () => {
    const all = readMigrations();
    const labels = all.map((m) => `${m.version}_${m.name}`);
    const tables = async () =>
      (await db.query<{ t: string }>("SELECT table_name AS t FROM information_schema.tables WHERE table_schema='public' ORDER BY 1")).map(
        (r) => r.t,
      );
    const migrated = await tables();
    // An empty database: every migration reverted and the bookkeeping table dropped too.
    await migrateDown(db.url, all.length);
    await db.query('DROP TABLE schema_migrations');
    expect(await tables()).toEqual([]);

    // The real start path (the service opens the database itself, as main.ts does), no upstream to reach.
    const env = {
      ...testEnv(null, { UPSTREAM_BASE_URL: 'http://127.0.0.1:9/api/v1/upstream', UPSTREAM_API_KEY: 'k', UPSTREAM_API_SECRET: 's' }),
      DATABASE_URL: db.url,
    };
    const start = async (overrides: Record<string, string | undefined>) => {
      const e: Record<string, string | undefined> = { ...env, ...overrides };
      for (const k of Object.keys(e)) if (e[k] === undefined) delete e[k];
      return createRelayApp(loadConfig(e), { logger: false });
    };

    const unmigrated = await start({ DB_MIGRATE_ON_START: 'false' });
    try {
      expect(unmigrated.config.migrateOnStart).toBe(false);
      expect(await tables()).toEqual([]); // schema_migrations absent: nothing was applied
      const ready = await axios.get(`${unmigrated.url}/health/ready`, { validateStatus: () => true });
      expect(ready.status).toBe(503);
      expect(ready.data).toMatchObject({ ok: false, database: 'up', migrations: { pending: labels } });
      const health = await axios.get(`${unmigrated.url}/health`, { validateStatus: () => true });
      expect(health.status).toBe(200);
      expect(health.data).toMatchObject({ database: 'up', last_sync: null });
    } finally {
      await unmigrated.close();
    }
    expect(await tables()).toEqual([]);

    // The default (DB_MIGRATE_ON_START unset → true) applies them all at start, and the instance is ready.
    const migrating = await start({ DB_MIGRATE_ON_START: undefined });
    try {
      expect(migrating.config.migrateOnStart).toBe(true);
      expect(await tables()).toEqual(migrated);
      const ready = await axios.get(`${migrating.url}/health/ready`, { validateStatus: () => true });
      expect(ready.status).toBe(200);
      expect(ready.data).toMatchObject({ ok: true, database: 'up', migrations: { pending: [] } });
    } finally {
      await migrating.close();
    }
    expect(await pendingMigrations(db.url)).toEqual([]);
  });

  describe('a lost connection', () => {
    /**
     * Counts the clients of the service's pool now; the function returned resolves once the pool has
     * removed as many (each client open when the connections are cut is dead, and is removed once the
     * pool notices: an idle one at its error, one in use when its query fails).
     */
    const deadConnectionsNoticed = (ds: DataSource): (() => Promise<void>) => {
      const pool = (ds.driver as unknown as { master: pg.Pool }).master;
      const open = pool.totalCount;
      let removed = 0;
      const onRemove = () => removed++;
      pool.on('remove', onRemove);
      return async () => {
        await waitFor(
          () => removed,
          (n) => n >= open,
          `the pool removing its ${open} dead clients`,
        );
        pool.off('remove', onRemove);
      };
    };

    let app: TestApp;
    beforeAll(async () => {
      // no background work: the test's queries are the pool's only ones, so every client it holds
      // when the connections are cut was connected before (and is dead)
      app = await startTestApp(
        db,
        null,
        {
          UPSTREAM_BASE_URL: 'http://127.0.0.1:9/api/v1/upstream',
          UPSTREAM_API_KEY: 'k',
          UPSTREAM_API_SECRET: 's',
        },
        { workers: false },
      );
    });
    afterAll(async () => {
      await app.close();
    });

    it('does not crash the process: the next query reconnects', async () => {
      const ds = app.relay.app.get(DataSource);
      // Open several pooled connections so there is something to cut.
      await Promise.all(Array.from({ length: 4 }, () => ds.query('SELECT 1')));
      expect((await app.http.get('/health')).status).toBe(200);

      const noticed = deadConnectionsNoticed(ds);
      const cut = await db.terminateConnections();
      expect(cut).toBeGreaterThan(0);
      // The pool notices the dead connections (each one removed); the service keeps answering.
      await noticed();
      const [row] = await ds.query('SELECT 41 + 1 AS n');
      expect(Number(row.n)).toBe(42);
      const health = await app.http.get('/health');
      expect(health.status).toBe(200);
      expect(health.data).toMatchObject({ ok: true, database: 'up' });
    });

    it('keeps working when connections are cut while queries are in flight', async () => {
      const ds = app.relay.app.get(DataSource);
      // six connected clients, which the queries below take (none is still connecting when the cut comes)
      await Promise.all(Array.from({ length: 6 }, () => ds.query('SELECT 1')));
      const inflight = Array.from({ length: 6 }, (_, i) =>
        ds.query(`SELECT pg_sleep(0.05), ${i} AS i`).then(
          () => 'ok',
          () => 'failed',
        ),
      );
      // (the cut may come before some of them reach the database: either outcome is allowed below)
      await new Promise((r) => setTimeout(r, 20));
      const noticed = deadConnectionsNoticed(ds);
      await db.terminateConnections();
      const outcomes = await Promise.all(inflight);
      expect(outcomes.every((o) => o === 'ok' || o === 'failed')).toBe(true);
      await noticed();
      const rows = await Promise.all(Array.from({ length: 4 }, () => ds.query('SELECT 1 AS one')));
      expect(rows.map((r) => Number(r[0].one))).toEqual([1, 1, 1, 1]);
    });
  });
});
