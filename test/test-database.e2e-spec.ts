/**
 * The test harness's databases (test/support/test-database.ts, shared-pglite.ts): on the embedded
 * pass a Jest worker hands its PGlite to one file after another, and each file must still find the
 * migrated state, as a new database would give it. (The PostgreSQL pass makes a database per file
 * from the template: nothing is shared there.)
 */
import { startSandbox, startTestApp } from './support/test-app.js';
import { openTestDatabase } from './support/test-database.js';

const onTheEmbeddedPass = process.env.TEST_DATABASE_URL ? describe.skip : describe;

onTheEmbeddedPass('the worker-shared embedded test database', () => {
  it('is reset to the migrated state when a file closes it: its rows, sequences and session state gone', async () => {
    const first = await openTestDatabase();
    const seeded = await first.query('SELECT * FROM catalog_pricing_state ORDER BY id');
    const migrations = await first.query('SELECT * FROM schema_migrations ORDER BY 1');
    const [{ id: firstId }] = await first.query<{ id: string }>(
      `INSERT INTO outbox_events (event_type, subject, payload) VALUES ('sku.price_changed', 'R-1', '{}'::jsonb) RETURNING id::text`,
    );
    await first.query(`INSERT INTO relay_state (key, value) VALUES ('reset-test', '{}'::jsonb)`);
    await first.query('UPDATE catalog_pricing_state SET version = version + 7');
    await first.query('PREPARE reset_test_statement AS SELECT 1');
    const embedded = first.embedded;
    await first.close();

    const next = await openTestDatabase();
    try {
      expect(next.embedded).toBe(embedded); // the same PGlite, handed on
      expect(await next.query('SELECT key FROM relay_state')).toEqual([]);
      expect(await next.query('SELECT count(*)::int AS n FROM outbox_events')).toEqual([{ n: 0 }]);
      expect(await next.query('SELECT * FROM catalog_pricing_state ORDER BY id')).toEqual(seeded);
      expect(await next.query('SELECT * FROM schema_migrations ORDER BY 1')).toEqual(migrations);
      // the sequence starts again: the same first id as in a new database
      const [{ id }] = await next.query<{ id: string }>(
        `INSERT INTO outbox_events (event_type, subject, payload) VALUES ('sku.price_changed', 'R-2', '{}'::jsonb) RETURNING id::text`,
      );
      expect(id).toBe(firstId);
      // the session's prepared statement is gone: the name can be prepared again
      await next.query('PREPARE reset_test_statement AS SELECT 1');
    } finally {
      await next.close();
    }
  });

  it('is given up, not handed on, when a file changed its schema; a second one open at once is a PGlite of its own', async () => {
    const first = await openTestDatabase();
    const second = await openTestDatabase();
    expect(second.embedded).not.toBe(first.embedded);
    await second.close();
    await first.query('CREATE TABLE reset_test_extra (a int)');
    const changed = first.embedded;
    await first.close();

    const next = await openTestDatabase();
    try {
      expect(next.embedded).not.toBe(changed);
      expect(await next.query(`SELECT to_regclass('reset_test_extra') AS t`)).toEqual([{ t: null }]);
    } finally {
      await next.close();
    }
  });

  it('is given up, not handed on, when a service started on it is still running as its file closes it', async () => {
    const first = await openTestDatabase();
    const sandbox = await startSandbox();
    const app = await startTestApp(first, sandbox);
    const left = first.embedded;
    try {
      await first.close(); // the service still runs on it
      const next = await openTestDatabase();
      try {
        expect(next.embedded).not.toBe(left);
      } finally {
        await next.close();
      }
    } finally {
      await app.close();
      await sandbox.stop();
    }
  });
});
