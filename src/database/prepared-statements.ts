/**
 * Hot statements as named prepared statements of their connection: parsed and planned once per
 * connection instead of once per call, and sent straight through the `pg` client (no TypeORM query
 * runner around them). Inside a transaction they run on its connection; outside one, on a connection
 * borrowed from TypeORM's own pool for the one statement.
 */
import { createHash, randomBytes } from 'node:crypto';
import type { Pool, PoolClient, QueryResult } from 'pg';
import { DataSource, type EntityManager } from 'typeorm';

/**
 * Names are per connection (several connections may share one session on the embedded database, and
 * several processes one embedded server), so unique per process and client.
 */
const STATEMENT_PREFIX = `relay_${process.pid}_${randomBytes(3).toString('hex')}`;
const statementIds = new WeakMap<object, number>();
let lastStatementId = 0;

export interface PreparedStatement {
  /** Short name, unique in the process. */
  key: string;
  text: string;
}

function statementName(client: PoolClient, key: string): string {
  let id = statementIds.get(client);
  if (id === undefined) {
    id = ++lastStatementId;
    statementIds.set(client, id);
  }
  return `${STATEMENT_PREFIX}_${id}_${key}`;
}

/** `$?` placeholders of `sql` numbered from `first` (`$first`, `$first+1`, …). */
export function numbered(sql: string, first: number): string {
  let n = first;
  return sql.replace(/\$\?/g, () => `$${n++}`);
}

/** Statement keys by text, for the statements named after their text. */
const textKeys = new Map<string, string>();
const MAX_TEXT_KEYS = 2000;

/**
 * A statement named after its text (a hash of it): the statements a repository builds from a few
 * shapes (e.g. the columns an update sets) are each parsed and planned once per connection.
 */
export function statementFor(text: string): PreparedStatement {
  let key = textKeys.get(text);
  if (key === undefined) {
    key = createHash('sha1').update(text).digest('base64url').slice(0, 16);
    if (textKeys.size < MAX_TEXT_KEYS) textKeys.set(text, key);
  }
  return { key, text };
}

/** An error the server raised for one statement, after which the connection is ready for the next. */
export function isStatementError(e: unknown): boolean {
  const severity = (e as { severity?: unknown } | null)?.severity;
  return severity === 'ERROR' && typeof (e as { code?: unknown }).code === 'string';
}

/** Runs `statement` on the transaction of `em` when it has one, else on a pooled connection. */
export async function runPrepared<T>(dataSource: DataSource, em: Partial<Pick<EntityManager, 'queryRunner'>> | null, statement: PreparedStatement, params: unknown[]): Promise<T[]> {
  const run = async (client: PoolClient): Promise<T[]> => {
    const r: QueryResult = await client.query({ name: statementName(client, statement.key), text: statement.text, values: params });
    return r.rows as T[];
  };
  const runner = em?.queryRunner;
  if (runner && !runner.isReleased) return run((await runner.connect()) as PoolClient);
  const pool = (dataSource.driver as unknown as { master?: Pool }).master;
  if (pool) {
    const client = await pool.connect();
    let failure: Error | undefined;
    try {
      return await run(client);
    } catch (e) {
      // A statement the server refused (ERROR: a unique key, an optimistic write's RL001) leaves the
      // connection ready for the next one, with its prepared statements: it goes back to the pool.
      // Anything else (a broken socket, FATAL) may have broken it: the pool drops it.
      if (!isStatementError(e)) failure = e as Error;
      throw e;
    } finally {
      client.release(failure);
    }
  }
  const own = dataSource.createQueryRunner();
  try {
    return await run((await own.connect()) as PoolClient);
  } finally {
    await own.release();
  }
}

/**
 * Rows of a statement, run as a prepared statement named after its text (parsed and planned once per
 * connection): in the transaction of `runner` when it is a transaction's manager.
 */
export function rows<T>(runner: DataSource | EntityManager, text: string, params: unknown[] = []): Promise<T[]> {
  const em = runner instanceof DataSource ? runner.manager : runner;
  return runPrepared<T>(em.connection, em, statementFor(text), params);
}
