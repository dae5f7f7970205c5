/**
 * The embedded PostgreSQL on disk: created on first start (initdb runs in a short-lived child process,
 * so that its working memory never stays in the service's), reopened as it is afterwards.
 */
import { existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { EmbeddedPostgres } from '../src/database/embedded-postgres.js';

async function query<T>(db: EmbeddedPostgres, sql: string): Promise<T[]> {
  const client = new pg.Client(db.url);
  await client.connect();
  try {
    return (await client.query(sql)).rows as T[];
  } finally {
    await client.end();
  }
}

// The embedded database itself, whatever database the suite runs on: the PostgreSQL pass
// (TEST_DATABASE_URL) would run the very same again.
const onTheEmbeddedPass = process.env.TEST_DATABASE_URL ? describe.skip : describe;

onTheEmbeddedPass('the embedded database on disk', () => {
  let dir: string;
  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'relay-embedded-'));
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  it('is created on first start, and reopened with its data afterwards', async () => {
    const path = join(dir, 'nested', 'pglite');
    const first = await EmbeddedPostgres.start({ path });
    try {
      expect(existsSync(join(path, 'PG_VERSION'))).toBe(true);
      await query(first, 'CREATE TABLE kept (v text)');
      await query(first, "INSERT INTO kept VALUES ('still here')");
      const [{ shared_buffers }] = await query<{ shared_buffers: string }>(first, 'SHOW shared_buffers');
      expect(shared_buffers).toBe('16MB');
    } finally {
      await first.stop();
    }
    const again = await EmbeddedPostgres.start({ path });
    try {
      expect(await query(again, 'SELECT v FROM kept')).toEqual([{ v: 'still here' }]);
    } finally {
      await again.stop();
    }
  }, 60_000);

  it('a first start killed half-way leaves nothing the next start trips on', async () => {
    const path = join(dir, 'pglite');
    // what a first start killed during initdb leaves: its work directory, beside an empty target
    mkdirSync(path);
    mkdirSync(join(dir, 'pglite.initialising-99999', 'base'), { recursive: true });
    writeFileSync(join(dir, 'pglite.initialising-99999', 'PG_VERSION'), '17\n');
    const db = await EmbeddedPostgres.start({ path });
    try {
      expect(await query(db, 'SELECT 1 AS one')).toEqual([{ one: 1 }]);
    } finally {
      await db.stop();
    }
    expect(readdirSync(dir)).toEqual(['pglite']);
  }, 60_000);

  it('a directory already holding other files (pglite://./data beside the secrets) is initialised in place, its files kept', async () => {
    const path = join(dir, 'data');
    mkdirSync(path);
    writeFileSync(join(path, 'secrets.json'), '{}');
    const db = await EmbeddedPostgres.start({ path });
    try {
      expect(await query(db, 'SELECT 1 AS one')).toEqual([{ one: 1 }]);
    } finally {
      await db.stop();
    }
    expect(readdirSync(path)).toEqual(expect.arrayContaining(['PG_VERSION', 'secrets.json']));
  }, 60_000);

  it("runs the database beside the service: a long statement does not hold up the service's thread; stop twice is one stop", async () => {
    const db = await EmbeddedPostgres.start({ path: 'memory' });
    try {
      const client = new pg.Client(db.url);
      await client.connect();
      try {
        // how often a 5 ms timer fires on this thread while the database works for a while
        // (a statement of some hundreds of milliseconds: PGlite counts 4 million rows one by one)
        let ticks = 0;
        const timer = setInterval(() => ticks++, 5);
        await client.query('SELECT count(*) FROM generate_series(1, 4000000)');
        clearInterval(timer);
        // on this thread (before the worker) the timer could not fire while the statement ran: 0–1 ticks
        expect(ticks).toBeGreaterThanOrEqual(10);
      } finally {
        await client.end().catch(() => undefined);
      }
    } finally {
      await Promise.all([db.stop(), db.stop()]);
      await db.stop();
    }
    await expect(query(db, 'SELECT 1')).rejects.toThrow();
  }, 60_000);

  it('a directory that cannot be created is a clear error naming it', async () => {
    const blocker = join(dir, 'a-file');
    writeFileSync(blocker, 'not a directory');
    await expect(EmbeddedPostgres.start({ path: join(blocker, 'pglite') })).rejects.toThrow(
      /^could not create the embedded database in .*a-file\/pglite: /,
    );
  });
});
