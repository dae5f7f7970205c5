/**
 * One embedded database (PGlite) per Jest worker process, handed to one test file after another
 * instead of a new one per file: starting a PGlite from the migrated snapshot costs more CPU than
 * most test files spend on their tests. Each file gets a clean database all the same: when a file
 * closes it, the database is reset to the migrated state it started in (every table emptied, the
 * rows the migrations wrote put back, the sequences set back, the session's state discarded), and
 * checked: if its schema, roles or settings differ from the migrated state's (a test that changed
 * them), or it does not answer (a test stopped it), or the reset fails, or a service started on it
 * is still running (`serviceOn`), it is stopped and the next file starts a new one.
 *
 * A worker runs one test file at a time, but a file may open a second database while its first is
 * open: that one is not the shared one (`leaseSharedPglite` answers null), it is a PGlite of its own.
 *
 * Jest gives each test file its own module registry and globals, so the worker's database is kept on
 * an object every file of the process shares: the `node:worker_threads` module (Jest hands test files
 * Node's own core modules).
 */
import threads from 'node:worker_threads';
import pg from 'pg';
import type { EmbeddedPostgres } from '../../src/database/embedded-postgres.js';

/** What the migrated state holds, read once from the fresh database, to reset to and compare with. */
interface MigratedState {
  /** Every table of the public schema, to empty. */
  tables: string[];
  /** The rows the migrations wrote, table by table, with the columns to write them back. */
  rows: Array<{ table: string; columns: string[]; json: string }>;
  sequences: Array<{ name: string; lastValue: string; isCalled: boolean }>;
  fingerprint: string;
}

interface Shared {
  embedded: EmbeddedPostgres;
  state: MigratedState;
  leased: boolean;
  /** Instances of the service (in process or as a child) started on it and not yet closed or exited. */
  users: number;
}

export interface SharedLease {
  embedded: EmbeddedPostgres;
  /** Resets the database for the next file (or stops it, see above). */
  release(): Promise<void>;
}

const KEY = Symbol.for('upstream-relay.test.shared-pglite');
const holder = threads as unknown as Record<symbol, Shared | undefined>;
/** A reset takes a fraction of a second; one that hangs (a transaction a test left open) gives the database up. */
const RESET_TIMEOUT_MS = 15_000;

/** The schema, roles and settings of the database, as one digest. */
const FINGERPRINT = `
SELECT md5(string_agg(line, E'\\n' ORDER BY line)) AS digest FROM (
  SELECT 'rel ' || c.relname || ' ' || c.relkind::text || ' ' || coalesce(c.reloptions::text, '') AS line
    FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname NOT IN ('pg_catalog', 'information_schema', 'pg_toast')
  UNION ALL SELECT 'col ' || c.relname || '.' || a.attname || ' ' || format_type(a.atttypid, a.atttypmod)
      || ' ' || a.attnotnull::text || ' ' || a.attgenerated::text || ' ' || a.attidentity::text
      || ' ' || coalesce(pg_get_expr(d.adbin, d.adrelid), '')
    FROM pg_attribute a JOIN pg_class c ON c.oid = a.attrelid JOIN pg_namespace n ON n.oid = c.relnamespace
    LEFT JOIN pg_attrdef d ON d.adrelid = a.attrelid AND d.adnum = a.attnum
   WHERE n.nspname NOT IN ('pg_catalog', 'information_schema', 'pg_toast') AND a.attnum > 0 AND NOT a.attisdropped
  UNION ALL SELECT 'con ' || conrelid::regclass::text || ' ' || conname || ' ' || pg_get_constraintdef(oid)
    FROM pg_constraint WHERE connamespace = 'public'::regnamespace
  UNION ALL SELECT 'idx ' || indexrelid::regclass::text || ' ' || pg_get_indexdef(indexrelid)
    FROM pg_index i JOIN pg_class c ON c.oid = i.indrelid WHERE c.relnamespace = 'public'::regnamespace
  UNION ALL SELECT 'trg ' || tgrelid::regclass::text || ' ' || pg_get_triggerdef(oid) FROM pg_trigger WHERE NOT tgisinternal
  UNION ALL SELECT 'fn ' || p.oid::regprocedure::text || ' ' || md5(p.prosrc)
    FROM pg_proc p WHERE p.pronamespace NOT IN ('pg_catalog'::regnamespace, 'information_schema'::regnamespace)
  UNION ALL SELECT 'typ ' || t.typname FROM pg_type t WHERE t.typnamespace = 'public'::regnamespace
  UNION ALL SELECT 'ns ' || nspname FROM pg_namespace
  UNION ALL SELECT 'ext ' || extname || ' ' || extversion FROM pg_extension
  UNION ALL SELECT 'role ' || rolname || ' ' || rolsuper::text FROM pg_roles
  UNION ALL SELECT 'set ' || setdatabase::text || ' ' || setrole::text || ' ' || setconfig::text FROM pg_db_role_setting
  UNION ALL SELECT 'db ' || datname FROM pg_database
) lines`;

const ident = (name: string) => `"${name.replace(/"/g, '""')}"`;

async function withClient<T>(url: string, work: (c: pg.Client) => Promise<T>): Promise<T> {
  const c = new pg.Client({ connectionString: url, application_name: 'test-reset' });
  c.on('error', () => undefined);
  await c.connect();
  try {
    return await work(c);
  } finally {
    await c.end().catch(() => undefined);
  }
}

async function readState(c: pg.Client): Promise<MigratedState> {
  const tables = (
    await c.query<{ t: string }>(`SELECT tablename AS t FROM pg_tables WHERE schemaname = 'public' ORDER BY tablename`)
  ).rows.map((r) => r.t);
  const rows: MigratedState['rows'] = [];
  for (const table of tables) {
    const { rows: found } = await c.query<{ json: string | null }>(`SELECT json_agg(t)::text AS json FROM ${ident(table)} t`);
    if (found[0].json === null) continue;
    const columns = (
      await c.query<{ name: string }>(
        `SELECT attname AS name FROM pg_attribute
          WHERE attrelid = $1::regclass AND attnum > 0 AND NOT attisdropped AND attgenerated = '' ORDER BY attnum`,
        [ident(table)],
      )
    ).rows.map((r) => r.name);
    rows.push({ table, columns, json: found[0].json });
  }
  const sequences: MigratedState['sequences'] = [];
  for (const { name } of (await c.query<{ name: string }>(`SELECT sequencename AS name FROM pg_sequences WHERE schemaname = 'public'`))
    .rows) {
    const { rows: s } = await c.query<{ last_value: string; is_called: boolean }>(`SELECT last_value::text, is_called FROM ${ident(name)}`);
    sequences.push({ name, lastValue: s[0].last_value, isCalled: s[0].is_called });
  }
  return { tables, rows, sequences, fingerprint: await fingerprint(c) };
}

async function fingerprint(c: pg.Client): Promise<string> {
  return (await c.query<{ digest: string }>(FINGERPRINT)).rows[0].digest;
}

/** Puts the database back in the migrated state; false when it is not that state afterwards. */
async function reset(url: string, state: MigratedState): Promise<boolean> {
  return withClient(url, async (c) => {
    // a transaction left open is ended, and the session's state (prepared statements, settings,
    // advisory locks, listeners) dropped: PGlite is one session that every connection shares
    await c.query('ROLLBACK');
    await c.query('DISCARD ALL');
    await c.query('BEGIN');
    if (state.tables.length > 0) await c.query(`TRUNCATE ${state.tables.map(ident).join(', ')} RESTART IDENTITY CASCADE`);
    for (const { table, columns, json } of state.rows) {
      const list = columns.map(ident).join(', ');
      await c.query(
        `INSERT INTO ${ident(table)} (${list}) OVERRIDING SYSTEM VALUE
         SELECT ${list} FROM json_populate_recordset(NULL::${ident(table)}, $1)`,
        [json],
      );
    }
    for (const s of state.sequences) await c.query('SELECT setval($1::regclass, $2::bigint, $3)', [ident(s.name), s.lastValue, s.isCalled]);
    await c.query('COMMIT');
    return (await fingerprint(c)) === state.fingerprint;
  });
}

function within<T>(work: Promise<T>, ms: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  return Promise.race([
    work,
    new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error(`no answer after ${ms} ms`)), ms);
    }),
  ]).finally(() => clearTimeout(timer));
}

/**
 * Counts a service instance starting on `url` until the returned function is called (it closed, its
 * start failed, or its process exited). The worker's database is handed on only when none is left: a
 * service still running after its file (a set-up that timed out, a test that did not close it) would
 * go on writing into the next file's database, so it is stopped instead, as a database of its own
 * would be.
 */
export function serviceOn(url: string): () => void {
  const shared = holder[KEY];
  if (!shared || shared.embedded.url !== url) return () => undefined;
  shared.users++;
  let done = false;
  return () => {
    if (done) return;
    done = true;
    shared.users--;
  };
}

/**
 * The worker's database for this file (started with `start` if the worker has none yet), or null
 * when a file of this worker holds it already.
 */
export async function leaseSharedPglite(start: () => Promise<EmbeddedPostgres>): Promise<SharedLease | null> {
  let shared = holder[KEY];
  if (shared?.leased) return null;
  if (!shared) {
    const embedded = await start();
    try {
      const state = await withClient(embedded.url, readState);
      shared = { embedded, state, leased: false, users: 0 };
    } catch (e) {
      await embedded.stop();
      throw e;
    }
    // kept between files, but not waited for when the process ends (a file run alone runs in Jest's
    // own process, which would otherwise never exit)
    (embedded as unknown as { worker: { unref(): void } }).worker.unref();
    holder[KEY] = shared;
  }
  const mine = shared;
  mine.leased = true;
  let released = false;
  return {
    embedded: mine.embedded,
    async release() {
      if (released) return;
      released = true;
      const clean = mine.users === 0 && (await within(reset(mine.embedded.url, mine.state), RESET_TIMEOUT_MS).catch(() => false));
      if (clean) {
        mine.leased = false;
        return;
      }
      if (holder[KEY] === mine) holder[KEY] = undefined;
      await mine.embedded.stop().catch(() => undefined);
    },
  };
}
