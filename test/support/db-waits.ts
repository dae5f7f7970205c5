/**
 * Waits on what the database shows, for tests that set up a race or need a later timestamp: a
 * statement waiting for a lock, the database's clock past a stamp. Each is a condition polled with a
 * deadline (waitFor), never a guessed delay.
 */
import type { TestDatabase } from './test-database.js';
import { waitFor } from './wait.js';

/**
 * Resolves once `work` waits for a lock, for a test that holds the lock in a transaction of its own
 * and means `work` to meet it. On PostgreSQL the wait is seen in pg_stat_activity (a backend of the
 * test's database in `wait_event_type = 'Lock'`), and `work` ending first is an error: the race the
 * test sets up did not happen. PGlite cannot be asked while the test holds a transaction, and needs no
 * wait: it runs one transaction at a time, so every statement of `work` runs after the held
 * transaction ends in any case.
 */
export async function waitsForLock(db: TestDatabase, work: Promise<unknown>, what: string): Promise<void> {
  if (db.kind === 'pglite') return;
  let ended = false;
  work.then(
    () => (ended = true),
    () => (ended = true),
  );
  const waiting = async () =>
    (
      await db.query<{ n: number }>(
        "SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'",
      )
    )[0].n > 0;
  const seen = await waitFor(async () => (ended ? 'ended' : (await waiting()) ? 'waiting' : null), Boolean, `${what} waiting for the lock`);
  if (seen === 'ended') throw new Error(`${what} ended without waiting for the lock the test holds`);
}

/**
 * The database's time now, to the millisecond (as the service stamps rows: `date_trunc('milliseconds',
 * transaction_timestamp())`), once its clock has moved past it: every transaction begun after this
 * returns is stamped later than the value returned, and every one committed before is stamped at or
 * before it.
 */
export async function databaseMillisecondPassed(db: TestDatabase): Promise<Date> {
  const [{ now }] = await db.query<{ now: Date }>("SELECT date_trunc('milliseconds', clock_timestamp()) AS now");
  await waitFor(
    async () =>
      (await db.query<{ past: boolean }>("SELECT date_trunc('milliseconds', clock_timestamp()) > $1::timestamptz AS past", [now]))[0].past,
    Boolean,
    `the database's clock past ${now.toISOString()}`,
  );
  return now;
}
