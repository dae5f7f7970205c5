/**
 * `/health` and `/health/ready` under load (health.service.ts): every answer comes while the database
 * still holds its checks (the one deadline of a call ends them, not the database), and a database that
 * did not answer in time is reported busy or slow (200), never down (503, which may get a healthy
 * instance restarted):
 * - every connection of the service's pool held by its own work (query runners of the app's
 *   DataSource, as transactions hold them): the checks wait for a connection → `busy`;
 * - a transaction of the app's DataSource holding the tables the checks read (`LOCK TABLE … ACCESS
 *   EXCLUSIVE`): on PostgreSQL the `SELECT 1` answers and the reads of the last ping and the last sync
 *   wait, side by side under the one deadline; on PGlite, which runs one transaction at a time, the
 *   `SELECT 1` itself waits → `slow`.
 * The database really going away is still 503 (test/ops.e2e-spec.ts).
 */
import { jest } from '@jest/globals';
import axios from 'axios';
import type { Pool } from 'pg';
import { DataSource, type QueryRunner } from 'typeorm';
import { HEALTH_DEADLINE_MS } from '../src/ops/health.service.js';
import { useAppSuite } from './support/app-suite.js';
import { UNREACHABLE_UPSTREAM } from './support/test-app.js';
import { settlesWithin, waitFor } from './support/wait.js';

/**
 * How long the test waits for the answers while it holds the database: far beyond HEALTH_DEADLINE_MS.
 * The connections and the lock are held until the answers have come, so an answer that waited for the
 * database would never come; the race only makes that failure quick and named. No duration is asserted.
 */
const HELD_RACE_MS = 6 * HEALTH_DEADLINE_MS;

const get = (url: string) => axios.get(url, { validateStatus: () => true, timeout: 30_000 });

describe('health under load', () => {
  let ds: DataSource;
  let pool: Pool;
  // No upstream and no background work: the ping is never in memory, /health reads the stored one.
  const t = useAppSuite({ sandbox: false, env: UNREACHABLE_UPSTREAM, workers: false });

  beforeAll(() => {
    ds = t.app.relay.app.get(DataSource);
    pool = (ds.driver as unknown as { master: Pool }).master;
  });

  /** Waits until the database answers /health plainly again (the checks left behind have ended). */
  const settled = () =>
    waitFor(
      async () => (await get(`${t.app.url}/health`)).data,
      (b) => b.database === 'up' && b.database_detail === undefined,
      'a plain /health',
    );

  it('answers 200 "busy" while every pooled connection is taken, before any check gets one; shares its checks between calls', async () => {
    expect((await get(`${t.app.url}/health/ready`)).status).toBe(200); // read the migrations once
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
      // background work asks too, and is not counted), and how many of them the pool has handed out
      // or refused so far.
      let asked = 0;
      let settled = 0;
      const connect = pool.connect.bind(pool) as (...args: unknown[]) => unknown;
      const spy = jest.spyOn(pool, 'connect').mockImplementation(((...args: unknown[]) => {
        if (!/[/\\]src[/\\]ops[/\\]/.test(new Error().stack ?? '')) return connect(...args);
        asked++;
        const last = args.length - 1;
        if (typeof args[last] === 'function') {
          const callback = args[last] as (...r: unknown[]) => unknown;
          return connect(...args.slice(0, last), (...r: unknown[]) => {
            settled++;
            return callback(...r);
          });
        }
        const pending = connect(...args) as Promise<unknown>;
        void pending.then(
          () => settled++,
          () => settled++,
        );
        return pending;
      }) as unknown as typeof pool.connect);
      let answers: Awaited<ReturnType<typeof get>>[];
      try {
        answers = await settlesWithin(
          Promise.all([
            get(`${t.app.url}/health`),
            get(`${t.app.url}/health/ready`),
            ...Array.from({ length: 5 }, () => get(`${t.app.url}/health`)),
          ]),
          HELD_RACE_MS,
          '/health and /health/ready while every pooled connection is held',
        );
      } finally {
        spy.mockRestore();
      }
      // Every answer came while each check still waited for its connection: the deadline
      // (HEALTH_DEADLINE_MS), not the pool handing one out or giving up on the wait, ended them.
      expect(asked).toBeGreaterThan(0);
      expect(settled).toBe(0);
      const [health, ready, ...others] = answers;
      expect(health.status).toBe(200);
      expect(health.data).toMatchObject({
        ok: true,
        status: 'ok',
        database: 'up',
        database_detail: 'busy',
        last_sync: null,
        queued: null,
        upstream: { status: 'unknown' },
      });
      expect(ready.status).toBe(200);
      // The migrations as read before the pool filled up.
      expect(ready.data).toEqual({ ok: true, database: 'up', database_detail: 'busy', migrations: { pending: [] }, shutting_down: false });
      for (const other of others) expect(other.data).toMatchObject({ ok: true, database: 'up', database_detail: 'busy' });
      // Seven calls, one connection asked for per check (the database, the stored pings, the last
      // syncs, the queued orders, the reconciliation backlog, the migrations), not one per call: a
      // burst of probes does not pile up waiters on a full pool.
      expect(asked).toBeLessThanOrEqual(6);
    } finally {
      for (const runner of held) await runner.release();
    }
    await settled();
  });

  it('answers while the tables it reads are locked by a transaction, and does not call that down', async () => {
    expect((await get(`${t.app.url}/health/ready`)).status).toBe(200);
    const holder = ds.createQueryRunner();
    await holder.connect();
    try {
      await holder.startTransaction();
      await holder.query('LOCK TABLE relay_state, catalog_sync_runs, schema_migrations IN ACCESS EXCLUSIVE MODE');

      // The lock is held until both answers have come: they came while the checks' reads wait on it.
      const health = await settlesWithin(get(`${t.app.url}/health`), HELD_RACE_MS, '/health while its tables are locked');
      expect(health.status).toBe(200);
      expect(health.data).toMatchObject({ ok: true, status: 'ok', database: 'up', last_sync: null, upstream: { status: 'unknown' } });
      // PostgreSQL answers the `SELECT 1` beside the lock; PGlite runs the holder's transaction alone.
      if (t.db.embedded) expect(health.data.database_detail).toBe('slow');
      else expect(health.data).not.toHaveProperty('database_detail');

      const ready = await settlesWithin(get(`${t.app.url}/health/ready`), HELD_RACE_MS, '/health/ready while its tables are locked');
      if (t.db.embedded) {
        // Slow: the migrations as last read.
        expect(ready.status).toBe(200);
        expect(ready.data).toEqual({
          ok: true,
          database: 'up',
          database_detail: 'slow',
          migrations: { pending: [] },
          shutting_down: false,
        });
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
    expect((await get(`${t.app.url}/health/ready`)).status).toBe(200);
  });
});
