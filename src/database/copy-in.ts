/**
 * Rows sent with `COPY … FROM STDIN` (text format) on a connection of a PostgreSQL server: for a
 * server, the cheapest way in for many new rows (no parameters to encode, no statement per row; see
 * SkuWriteRepository.insertNewSkus). The embedded database cannot take it over its socket (its
 * backend loses the protocol's synchronisation and drops the connection), so callers ask
 * `takesCopyFromStdin` first: the server itself, as a PGlite may also be reached by a postgres:// URL.
 */
import type { PoolClient } from 'pg';
import { from } from 'pg-copy-streams';

const SPECIAL = /[\\\t\n\r]/g;
/** The same characters without the global flag (whose `test` would keep a position between calls). */
const NEEDS_ESCAPE = /[\\\t\n\r]/;
const ESCAPES: Record<string, string> = { '\\': '\\\\', '\t': '\\t', '\n': '\\n', '\r': '\\r' };

/**
 * One field in COPY's text format: `\N` for null, objects as JSON (json/jsonb columns), dates in ISO
 * 8601, the rest as their string; backslash, tab, line feed and carriage return escaped.
 */
export function copyField(v: unknown): string {
  if (v === null || v === undefined) return '\\N';
  let s: string;
  if (typeof v === 'string') s = v;
  else if (v instanceof Date) return v.toISOString();
  else if (typeof v === 'object') s = JSON.stringify(v);
  else return String(v);
  return NEEDS_ESCAPE.test(s) ? s.replace(SPECIAL, (c) => ESCAPES[c]) : s;
}

/** Whether the server behind `db` takes `COPY … FROM STDIN`: a PostgreSQL server, not PGlite. */
export async function takesCopyFromStdin(db: { query(sql: string): Promise<unknown> }): Promise<boolean> {
  const [row] = (await db.query('SELECT version() AS version')) as Array<{ version: string }>;
  return !/PGlite|emscripten/i.test(row?.version ?? 'PGlite');
}

/** Sends `data` (lines from copyLine) to `COPY table (columns) FROM STDIN`; returns the rows copied. */
export function copyIn(client: PoolClient, sql: string, data: string): Promise<number> {
  const stream = client.query(from(sql));
  return new Promise((resolve, reject) => {
    stream.on('error', reject);
    stream.on('finish', () => resolve(stream.rowCount ?? 0));
    stream.end(data);
  });
}
