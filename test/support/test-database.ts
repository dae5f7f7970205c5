/**
 * A fresh, migrated database for one test file: a copy of the template database on PostgreSQL
 * (`TEST_DATABASE_URL`), or on PGlite the Jest worker's embedded database reset to the migrated
 * state (see shared-pglite.ts; a second one open at once in a worker is a PGlite of its own, loaded
 * from the migrated snapshot). Migrations run once per `npm test`: the first file to get here builds
 * the template under a lock, the others wait for it.
 */
import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import pg from 'pg';
import { DatabaseEndpoint } from '../../src/database/database-endpoint.js';
import { EmbeddedPostgres } from '../../src/database/embedded-postgres.js';
import { migrateUp } from '../../src/database/migrator.js';
import { leaseSharedPglite } from './shared-pglite.js';
import { CACHE_DIR, PGLITE_SNAPSHOT, TEMPLATE_DB, TEST_DB_PREFIX, withDatabaseName } from './test-env.js';

export interface TestDatabase {
  url: string;
  kind: 'postgres' | 'pglite';
  /** Hand this to `createRelayApp({ endpoint })`; several app instances may share it. */
  endpoint: DatabaseEndpoint;
  /** The embedded server, when the suite runs on PGlite. */
  embedded: EmbeddedPostgres | null;
  /**
   * Cuts every connection of the service from the server side: `pg_terminate_backend` on
   * PostgreSQL, dropped sockets on PGlite.
   */
  terminateConnections(): Promise<number>;
  /** Runs SQL on a connection of its own, for setting up and asserting. */
  query<T extends pg.QueryResultRow = Record<string, unknown>>(sql: string, params?: unknown[]): Promise<T[]>;
  close(): Promise<void>;
}

const READY = `${CACHE_DIR}template.ready`;
const LOCK = `${CACHE_DIR}template.lock`;

async function buildTemplate(serverUrl: string | undefined): Promise<void> {
  if (serverUrl) {
    const admin = new pg.Client({ connectionString: serverUrl });
    await admin.connect();
    await admin.query(`DROP DATABASE IF EXISTS "${TEMPLATE_DB}" WITH (FORCE)`);
    await admin.query(`CREATE DATABASE "${TEMPLATE_DB}"`);
    await admin.end();
    await migrateUp(withDatabaseName(serverUrl, TEMPLATE_DB));
    return;
  }
  const embedded = await EmbeddedPostgres.start({ path: 'memory', shortLived: true });
  try {
    await migrateUp(embedded.url);
    const dump = await embedded.dumpDataDir();
    writeFileSync(PGLITE_SNAPSHOT, Buffer.from(await dump.arrayBuffer()));
  } finally {
    await embedded.stop();
  }
}

async function ensureTemplate(serverUrl: string | undefined): Promise<void> {
  mkdirSync(CACHE_DIR, { recursive: true });
  const deadline = Date.now() + 120_000;
  while (!existsSync(READY)) {
    let mine = false;
    try {
      mkdirSync(LOCK);
      mine = true;
    } catch {
      /* another worker builds it */
    }
    if (mine) {
      try {
        if (!existsSync(READY)) {
          await buildTemplate(serverUrl);
          writeFileSync(READY, new Date().toISOString());
        }
      } finally {
        rmSync(LOCK, { recursive: true, force: true });
      }
      return;
    }
    if (Date.now() > deadline) throw new Error('timed out waiting for the migrated test template');
    await new Promise((r) => setTimeout(r, 100));
  }
}

/** A PGlite of its own, loaded from the migrated snapshot. */
function startFromSnapshot(): Promise<EmbeddedPostgres> {
  return EmbeddedPostgres.start({ path: 'memory', loadDataDir: new Blob([readFileSync(PGLITE_SNAPSHOT)]), shortLived: true });
}

export async function openTestDatabase(): Promise<TestDatabase> {
  const serverUrl = process.env.TEST_DATABASE_URL;
  await ensureTemplate(serverUrl);
  let url: string;
  let cleanup: () => Promise<void>;
  let kind: TestDatabase['kind'];
  let embedded: EmbeddedPostgres | null = null;
  if (serverUrl) {
    kind = 'postgres';
    const name = `${TEST_DB_PREFIX}${randomBytes(6).toString('hex')}`;
    const admin = new pg.Client({ connectionString: serverUrl });
    await admin.connect();
    await admin.query(`CREATE DATABASE "${name}" TEMPLATE "${TEMPLATE_DB}"`);
    await admin.end();
    url = withDatabaseName(serverUrl, name);
    cleanup = async () => {
      const a = new pg.Client({ connectionString: serverUrl });
      await a.connect();
      await a.query(`DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`);
      await a.end();
    };
  } else {
    kind = 'pglite';
    const shared = await leaseSharedPglite(() => startFromSnapshot());
    if (shared) {
      embedded = shared.embedded;
      url = shared.embedded.url;
      cleanup = () => shared.release();
    } else {
      const db = await startFromSnapshot();
      embedded = db;
      url = db.url;
      cleanup = () => db.stop();
    }
  }
  const pool = new pg.Pool({ connectionString: url, max: 1 });
  pool.on('error', () => undefined);
  return {
    url,
    kind,
    endpoint: new DatabaseEndpoint(url, 'postgres', null),
    embedded,
    async terminateConnections() {
      if (embedded) {
        await embedded.dropConnections();
        return 1;
      }
      const rows = await pool.query<{ n: number }>(
        `SELECT count(pg_terminate_backend(pid))::int AS n FROM pg_stat_activity
          WHERE datname = current_database() AND application_name = 'upstream-relay' AND pid <> pg_backend_pid()`,
      );
      return rows.rows[0].n;
    },
    async query<T extends pg.QueryResultRow>(sql: string, params?: unknown[]) {
      const r = await pool.query<T>(sql, params);
      return r.rows;
    },
    async close() {
      await pool.end().catch(() => undefined);
      await cleanup();
    },
  };
}
