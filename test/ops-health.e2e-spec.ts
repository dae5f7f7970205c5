/**
 * `/health` and `/health/ready` under load (health.service.ts): every answer comes within the one
 * deadline of a call whatever its checks do, and a database that did not answer in time is reported
 * busy or slow (200), never down (503, which may get a healthy instance restarted):
 * - every connection of the service's pool held by its own work (query runners of the app's
 *   DataSource, as transactions hold them): the checks wait for a connection → `busy`;
 * - a transaction of the app's DataSource holding the tables the checks read (`LOCK TABLE … ACCESS
 *   EXCLUSIVE`): on PostgreSQL the `SELECT 1` answers and the reads of the last ping and the last sync
 *   wait (they ran one after the other, 3 s each, before); on PGlite, which runs one transaction at a
 *   time, the `SELECT 1` itself waits → `slow`.
 * The database really going away is still 503 (test/ops.e2e-spec.ts).
 */
import { jest } from '@jest/globals';
import axios from 'axios';
import type { Pool } from 'pg';
import { DataSource, type QueryRunner } from 'typeorm';
import { createRelayApp, type RelayApp } from '../src/app.factory.js';
import { loadConfig } from '../src/config/app-config.js';
import { HEALTH_DEADLINE_MS } from '../src/ops/health.service.js';
import { openTestDatabase, testEnv, type TestDatabase } from './support/test-app.js';
import { waitFor } from './support/wait.js';

/** How much later than the deadline an answer may come (HTTP, scheduling on a loaded test machine). */
const SLACK_MS = 1_500;

const get = (url: string) => axios.get(url, { validateStatus: () => true, timeout: 30_000 });

async function timed<T>(run: () => Promise<T>): Promise<{ value: T; ms: number }> {
  const t0 = Date.now();
  const value = await run();
  return { value, ms: Date.now() - t0 };
}

describe('health under load', () => {
  let db: TestDatabase;
  let relay: RelayApp;
  let ds: DataSource;
  let pool: Pool;

  beforeAll(async () => {
    db = await openTestDatabase();
    // No upstream and no background work: the ping is never in memory, /health reads the stored one.
    const config = loadConfig({ ...testEnv(null, { UPSTREAM_BASE_URL: 'http://127.0.0.1:9/api/v1/upstream', UPSTREAM_API_KEY: 'k', UPSTREAM_API_SECRET: 's' }), DATABASE_URL: db.url });
    config.workers = false;
    relay = await createRelayApp(config, { endpoint: db.endpoint, logger: false });
    ds = relay.app.get(DataSource);
    pool = (ds.driver as unknown as { master: Pool }).master;
  });
  afterAll(async () => {
    await relay?.close();
    await db?.close();
  });

  /** Waits until the database answers /health plainly again (the checks left behind have ended). */
  const settled = () => waitFor(async () => (await get(`${relay.url}/health`)).data, (b) => b.database === 'up' && b.database_detail === undefined, 'a plain /health');

  it('answers 200 "busy" within the deadline while every pooled connection is taken, and shares its checks between calls', async () => {
    expect((await get(`${relay.url}/health/ready`)).status).toBe(200); // read the migrations once
    const max = pool.options.max!;
    const held: QueryRunner[] = [];
    try {
      for (let i = 0; i < max; i++) {
        const runner = ds.createQueryRunner();
        await runner.connect();
        held.push(runner);
      }
      expect(pool.idleCount).toBe(0);

      // The connections the checks ask the pool for (the real method runs; the service's own
      // background work asks too, and is not counted).
      let asked = 0;
      const connect = pool.connect.bind(pool) as (...args: unknown[]) => unknown;
      const spy = jest.spyOn(pool, 'connect').mockImplementation(((...args: unknown[]) => {
        if (/[/\\]src[/\\]ops[/\\]/.test(new Error().stack ?? '')) asked++;
        return connect(...args);
      }) as unknown as typeof pool.connect);
      let answers: Awaited<ReturnType<typeof get>>[];
      let ms: number;
      try {
        ({ value: answers, ms } = await timed(() =>
          Promise.all([get(`${relay.url}/health`), get(`${relay.url}/health/ready`), ...Array.from({ length: 5 }, () => get(`${relay.url}/health`))]),
        ));
      } finally {
        spy.mockRestore();
      }
      expect(ms).toBeLessThan(HEALTH_DEADLINE_MS + SLACK_MS);
      const [health, ready, ...others] = answers;
      expect(health.status).toBe(200);
      expect(health.data).toMatchObject({ ok: true, status: 'ok', database: 'up', database_detail: 'busy', last_sync: null, queued: null, upstream: { status: 'unknown' } });
      expect(ready.status).toBe(200);
      // The migrations as read before the pool filled up.
      expect(ready.data).toEqual({ ok: true, database: 'up', database_detail: 'busy', migrations: { pending: [] }, shutting_down: false });
      for (const other of others) expect(other.data).toMatchObject({ ok: true, database: 'up', database_detail: 'busy' });
      // Seven calls, one connection asked for per check (the database, the stored ping, the last sync,
      // the queued orders, the migrations), not one per call: a burst of probes does not pile up
      // waiters on a full pool.
      expect(asked).toBeLessThanOrEqual(5);
    } finally {
      for (const runner of held) await runner.release();
    }
    await settled();
  });

  it('answers within the deadline when the tables it reads are locked by a transaction, and does not call that down', async () => {
    expect((await get(`${relay.url}/health/ready`)).status).toBe(200);
    const holder = ds.createQueryRunner();
    await holder.connect();
    try {
      await holder.startTransaction();
      await holder.query('LOCK TABLE relay_state, catalog_sync_runs, schema_migrations IN ACCESS EXCLUSIVE MODE');

      const { value: health, ms } = await timed(() => get(`${relay.url}/health`));
      expect(ms).toBeLessThan(HEALTH_DEADLINE_MS + SLACK_MS);
      expect(health.status).toBe(200);
      expect(health.data).toMatchObject({ ok: true, status: 'ok', database: 'up', last_sync: null, upstream: { status: 'unknown' } });
      // PostgreSQL answers the `SELECT 1` beside the lock; PGlite runs the holder's transaction alone.
      if (db.embedded) expect(health.data.database_detail).toBe('slow');
      else expect(health.data).not.toHaveProperty('database_detail');

      const { value: ready, ms: readyMs } = await timed(() => get(`${relay.url}/health/ready`));
      expect(readyMs).toBeLessThan(HEALTH_DEADLINE_MS + SLACK_MS);
      if (db.embedded) {
        // Slow: the migrations as last read.
        expect(ready.status).toBe(200);
        expect(ready.data).toEqual({ ok: true, database: 'up', database_detail: 'slow', migrations: { pending: [] }, shutting_down: false });
      } else {
        // The database answers but the migrations could not be read: not ready, as before.
        expect(ready.status).toBe(503);
        expect(ready.data).toEqual({ ok: false, database: 'up', migrations: null, shutting_down: false });
      }
    } finally {
      if (holder.isTransactionActive) await holder.rollbackTransaction();
      await holder.release();
    }
    await settled();
    expect((await get(`${relay.url}/health/ready`)).status).toBe(200);
  });
});
