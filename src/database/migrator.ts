/**
 * SQL migrations: `migrations/<version>_<name>.up.sql` and `.down.sql`, applied in version order,
 * each in its own transaction, under an advisory lock so that replicas starting together apply each
 * migration once. The same files run on PostgreSQL and on the embedded PGlite.
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import pg from 'pg';

/** The migrations folder of the package (works from src/ under Jest and from dist/ alike). */
export const MIGRATIONS_DIR = fileURLToPath(new URL('../../migrations/', import.meta.url));

const LOCK_KEY = 7_244_101; // arbitrary, constant: "relay migrations"

export interface Migration {
  version: string;
  name: string;
  up: string;
  down: string | null;
}

export function readMigrations(dir = MIGRATIONS_DIR): Migration[] {
  const files = existsSync(dir) ? readdirSync(dir) : [];
  const ups = files.filter((f) => /^\d+_[\w-]+\.up\.sql$/.test(f)).sort();
  return ups.map((file) => {
    const [, version, name] = /^(\d+)_([\w-]+)\.up\.sql$/.exec(file)!;
    const downFile = file.replace(/\.up\.sql$/, '.down.sql');
    return {
      version,
      name,
      up: readFileSync(join(dir, file), 'utf8'),
      down: files.includes(downFile) ? readFileSync(join(dir, downFile), 'utf8') : null,
    };
  });
}

export interface MigrationReport {
  applied: string[];
  alreadyApplied: number;
}

async function withClient<T>(url: string, fn: (c: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString: url });
  client.on('error', () => undefined); // a terminated connection surfaces on the pending query
  await client.connect();
  try {
    return await fn(client);
  } finally {
    await client.end().catch(() => undefined);
  }
}

async function ensureTable(c: pg.Client): Promise<void> {
  await c.query(`CREATE TABLE IF NOT EXISTS schema_migrations (
    version text PRIMARY KEY,
    name text NOT NULL,
    applied_at timestamptz NOT NULL DEFAULT now()
  )`);
}

/** Applies every pending migration; returns what it applied. */
export async function migrateUp(url: string, migrations = readMigrations()): Promise<MigrationReport> {
  return withClient(url, async (c) => {
    const applied: string[] = [];
    let already = 0;
    for (const m of migrations) {
      await c.query('BEGIN');
      try {
        await c.query('SELECT pg_advisory_xact_lock($1)', [LOCK_KEY]);
        await ensureTable(c);
        const { rowCount } = await c.query('SELECT 1 FROM schema_migrations WHERE version = $1', [m.version]);
        if (rowCount) {
          already++;
          await c.query('COMMIT');
          continue;
        }
        await c.query(m.up); // simple query protocol: several statements allowed
        await c.query('INSERT INTO schema_migrations (version, name) VALUES ($1, $2)', [m.version, m.name]);
        await c.query('COMMIT');
        applied.push(`${m.version}_${m.name}`);
      } catch (e) {
        await c.query('ROLLBACK').catch(() => undefined);
        throw new Error(`migration ${m.version}_${m.name} failed: ${(e as Error).message}`, { cause: e });
      }
    }
    return { applied, alreadyApplied: already };
  });
}

/** Reverts the latest `steps` applied migrations with their down files. */
export async function migrateDown(url: string, steps = 1, migrations = readMigrations()): Promise<string[]> {
  return withClient(url, async (c) => {
    await ensureTable(c);
    const { rows } = await c.query<{ version: string }>('SELECT version FROM schema_migrations ORDER BY version DESC LIMIT $1', [steps]);
    const reverted: string[] = [];
    for (const { version } of rows) {
      const m = migrations.find((x) => x.version === version);
      if (!m?.down) throw new Error(`migration ${version} has no down file`);
      await c.query('BEGIN');
      try {
        await c.query('SELECT pg_advisory_xact_lock($1)', [LOCK_KEY]);
        await c.query(m.down);
        await c.query('DELETE FROM schema_migrations WHERE version = $1', [version]);
        await c.query('COMMIT');
        reverted.push(`${m.version}_${m.name}`);
      } catch (e) {
        await c.query('ROLLBACK').catch(() => undefined);
        throw new Error(`reverting ${m.version}_${m.name} failed: ${(e as Error).message}`, { cause: e });
      }
    }
    return reverted;
  });
}

export async function pendingMigrations(url: string, migrations = readMigrations()): Promise<string[]> {
  return withClient(url, async (c) => {
    await ensureTable(c);
    const { rows } = await c.query<{ version: string }>('SELECT version FROM schema_migrations');
    const done = new Set(rows.map((r) => r.version));
    return migrations.filter((m) => !done.has(m.version)).map((m) => `${m.version}_${m.name}`);
  });
}
