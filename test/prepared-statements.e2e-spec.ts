/**
 * Hot statements run as named prepared statements through `PreparedExecution` (src/database/
 * prepared-statements.ts), which asks the server to describe a statement's result only the first
 * time a connection runs it. Its rows must be exactly pg's own, its errors pg's, and a result shape
 * the server changed must never be read with the old one.
 */
import type { Pool, PoolClient } from 'pg';
import { DataSource } from 'typeorm';
import { ParameterRefused, runPrepared, type PreparedStatement } from '../src/database/prepared-statements.js';
import { openTestDatabase, type TestDatabase } from './support/test-database.js';

describe('prepared statements: described once per connection, rows as pg gives them', () => {
  let db: TestDatabase;
  let ds: DataSource;
  let pool: Pool;
  /** RowDescription messages received, on every connection of the pool. */
  let descriptions = 0;

  beforeAll(async () => {
    db = await openTestDatabase();
    ds = new DataSource({ type: 'postgres', url: db.url, poolSize: 1 });
    await ds.initialize();
    pool = (ds.driver as unknown as { master: Pool }).master;
    const count = (client: PoolClient) =>
      (client as unknown as { connection: { on(e: string, f: () => void): void } }).connection.on('rowDescription', () => descriptions++);
    pool.on('connect', count);
    const open = await pool.connect(); // the pool's one connection, opened by initialize
    count(open);
    open.release();
  });
  afterAll(async () => {
    await ds?.destroy();
    await db?.close();
  });

  const WIDE: PreparedStatement = {
    key: 'wide_row',
    text: `SELECT $1::int AS n, now() AS at, NULL::timestamptz AS never, 12.50::numeric(10,2) AS price, 9007199254740993::bigint AS big,
            true AS yes, '{"a":[1,"x"]}'::jsonb AS doc, ARRAY['a','b,c']::text[] AS tags, 'tab\there'::text AS txt, '\\x00ff'::bytea AS bin,
            $2::text AS echo`,
  };

  it("gives the rows pg's own query gives, for every type the repositories read", async () => {
    const client = await pool.connect();
    let expected: Record<string, unknown>;
    try {
      expected = (await client.query({ text: WIDE.text, values: [7, 'héllo'] })).rows[0] as Record<string, unknown>;
    } finally {
      client.release();
    }
    for (let i = 0; i < 3; i++) {
      const [row] = await runPrepared<Record<string, unknown>>(ds, null, WIDE, [7, 'héllo']);
      expect(Object.keys(row)).toEqual(Object.keys(expected));
      expect({ ...row, at: null }).toEqual({ ...expected, at: null });
      expect(row.at).toBeInstanceOf(Date);
    }
  });

  it("asks for the description on a connection's first run of a statement only", async () => {
    const statement: PreparedStatement = { key: 'once', text: 'SELECT $1::int + 1 AS next, $1::text AS seen' };
    const before = descriptions;
    expect(await runPrepared(ds, null, statement, [1])).toEqual([{ next: 2, seen: '1' }]);
    expect(descriptions - before).toBe(1);
    for (let i = 2; i < 6; i++) expect(await runPrepared(ds, null, statement, [i])).toEqual([{ next: i + 1, seen: String(i) }]);
    expect(descriptions - before).toBe(1);
  });

  it('a statement without rows (no RETURNING) gives [], its empty shape kept', async () => {
    await db.query('CREATE TABLE IF NOT EXISTS prepared_probe (id int PRIMARY KEY, v text)');
    const statement: PreparedStatement = {
      key: 'no_rows',
      text: 'INSERT INTO prepared_probe (id, v) VALUES ($1, $2) ON CONFLICT (id) DO UPDATE SET v = excluded.v',
    };
    expect(await runPrepared(ds, null, statement, [1, 'a'])).toEqual([]);
    expect(await runPrepared(ds, null, statement, [1, 'b'])).toEqual([]);
    expect(await db.query('SELECT v FROM prepared_probe WHERE id = 1')).toEqual([{ v: 'b' }]);
  });

  it("a server error is pg's error, with its SQLSTATE; the connection and its statement are fine afterwards", async () => {
    const statement: PreparedStatement = { key: 'divide', text: 'SELECT 10 / $1::int AS q' };
    // the first run fails after the statement is parsed but before its result is described
    await expect(runPrepared(ds, null, statement, [0])).rejects.toMatchObject({ code: '22012', severity: 'ERROR' });
    expect(await runPrepared(ds, null, statement, [5])).toEqual([{ q: 2 }]);
    await expect(runPrepared(ds, null, statement, [0])).rejects.toMatchObject({ code: '22012' });
    expect(await runPrepared(ds, null, statement, [2])).toEqual([{ q: 5 }]);
  });

  it('a result shape changed by the server is refused by it, never read with the old shape', async () => {
    await db.query('CREATE TABLE IF NOT EXISTS prepared_shape (id int PRIMARY KEY, amount int)');
    await db.query('INSERT INTO prepared_shape VALUES (1, 42) ON CONFLICT DO NOTHING');
    const statement: PreparedStatement = { key: 'shape', text: 'SELECT * FROM prepared_shape WHERE id = $1' };
    expect(await runPrepared(ds, null, statement, [1])).toEqual([{ id: 1, amount: 42 }]);
    await db.query('ALTER TABLE prepared_shape ALTER COLUMN amount TYPE text');
    await expect(runPrepared(ds, null, statement, [1])).rejects.toMatchObject({ code: '0A000' });
  });

  it("a value pg cannot serialise at a statement's first run in a transaction: the call fails, nothing sent, the tx goes on", async () => {
    const circular: Record<string, unknown> = {};
    circular.self = circular;
    // a text the server would refuse too: had its Parse gone out, the server would ignore everything up
    // to the next Sync, the next statement would get this one's error and the transaction would be lost
    const fresh: PreparedStatement = { key: 'bad_param_tx', text: 'SELECT no_such_column, $1::text AS v' };
    const after: PreparedStatement = { key: 'after_bad_param_tx', text: 'SELECT $1::text AS w' };
    const answer = await ds.transaction(async (em) => {
      await expect(runPrepared(ds, em, fresh, [circular])).rejects.toThrow(ParameterRefused);
      return runPrepared(ds, em, after, ['still here']);
    });
    expect(answer).toEqual([{ w: 'still here' }]);
  });

  it('a parameter pg cannot serialise fails that call alone', async () => {
    const statement: PreparedStatement = { key: 'bad_param', text: 'SELECT $1::text AS v' };
    const circular: Record<string, unknown> = {};
    circular.self = circular;
    const backend: PreparedStatement = { key: 'backend_pid', text: 'SELECT pg_backend_pid() AS pid, $1::int AS n' };
    const [before] = await runPrepared<{ pid: number }>(ds, null, backend, [1]);
    await expect(runPrepared(ds, null, statement, [circular])).rejects.toThrow(ParameterRefused);
    expect(await runPrepared(ds, null, statement, ['ok'])).toEqual([{ v: 'ok' }]);
    // nothing was sent: the pool kept its connection (the same server process)
    expect((await runPrepared<{ pid: number }>(ds, null, backend, [2]))[0].pid).toBe(before.pid);
  });
});
