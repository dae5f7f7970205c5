/**
 * Hot statements as named prepared statements of their connection: parsed and planned once per
 * connection instead of once per call, and sent straight through the `pg` client (no TypeORM query
 * runner around them). Inside a transaction they run on its connection; outside one, on a connection
 * borrowed from TypeORM's own pool for the one statement.
 */
import { createHash, randomBytes } from 'node:crypto';
import type { Pool, PoolClient } from 'pg';
import pgUtils from 'pg/lib/utils.js';
import { DataSource, type EntityManager, type QueryRunner } from 'typeorm';

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

/** What pg's connection (`client.connection`) offers a query that drives the protocol itself. */
interface PgConnection {
  stream: { cork?(): void; uncork?(): void };
  parsedStatements: Record<string, string>;
  submittedNamedStatements: Record<string, string>;
  parse(q: { text: string; name: string; types: unknown[] }): void;
  bind(q: { portal: string; statement: string; values: unknown[]; valueMapper: (v: unknown) => unknown }): void;
  describe(q: { type: 'P'; name: string }): void;
  execute(q: { portal: string; rows: number }): void;
  sync(): void;
}

interface FieldDescription {
  name: string;
  dataTypeID: number;
  format: string;
}

/** A statement's result columns as its connection last described them: names and value parsers. */
interface ResultShape {
  names: string[];
  parsers: Array<(v: string) => unknown>;
}

/** A parameter pg could not convert (e.g. a circular object): nothing was sent, the connection is intact. */
export class ParameterRefused extends Error {
  constructor(statement: string, cause: unknown) {
    super(`statement ${statement}: a parameter could not be sent: ${(cause as Error)?.message ?? String(cause)}`, { cause });
    this.name = 'ParameterRefused';
  }
}

/**
 * Transaction control sent in a statement's own exchange (see `deferBegin`): `begin` binds and runs the
 * connection's prepared BEGIN before the statement, `commit` its prepared COMMIT after it, all before
 * the one Sync. A statement that fails skips the COMMIT (the server ignores the rest of the exchange)
 * and leaves the transaction aborted, for the caller's ROLLBACK.
 */
interface Wrap {
  begin: string | null;
  commit: string | null;
}

const NO_WRAP: Wrap = { begin: null, commit: null };

/** Bind's value mapper for values already converted by pg's `prepareValue`. */
const asPrepared = (v: unknown): unknown => v;

/** The result shape of each named statement, by connection (learned from its first execution). */
const shapes = new WeakMap<object, Map<string, ResultShape>>();

/**
 * One execution of a named prepared statement, driving pg's connection itself (pg takes any object
 * with `submit` as a query). What it does differently from pg's own `Query`: it asks the server to
 * describe the result (a `RowDescription` of every column) only the first time a connection runs the
 * statement, and keeps that shape; every later execution is Bind, Execute, Sync. pg parses the
 * description again and rebuilds its row template for every execution (~45 columns for an order
 * row); here a row is a plain object filled in the columns' order. Errors and timeouts go through
 * pg's client as for its own queries (`callback`).
 */
class PreparedExecution<T> {
  callback: (err: Error | null, rows?: T[]) => void;
  private shape: ResultShape | undefined;
  private described = false;
  private readonly rows: T[] = [];
  private failure: Error | null = null;
  /** CommandComplete messages still to come before the statement's own (a BEGIN's). */
  private completesBefore: number;

  private constructor(
    private readonly client: PoolClient,
    /** Read by pg's client: it records the statement as parsed when the server says so. */
    readonly name: string,
    readonly text: string,
    private readonly values: unknown[],
    done: (err: Error | null, rows?: T[]) => void,
    private readonly wrap: Wrap,
  ) {
    this.callback = done;
    this.completesBefore = wrap.begin !== null ? 1 : 0;
  }

  static run<T>(client: PoolClient, name: string, text: string, values: unknown[], wrap: Wrap = NO_WRAP): Promise<T[]> {
    return new Promise<T[]>((resolve, reject) => {
      void client.query(
        new PreparedExecution<T>(client, name, text, values, (err, rows) => (err ? reject(err) : resolve(rows ?? [])), wrap) as never,
      );
    });
  }

  /** Binds and runs a statement already parsed on this connection (BEGIN or COMMIT: no rows). */
  private static control(connection: PgConnection, name: string): void {
    connection.bind({ portal: '', statement: name, values: [], valueMapper: asPrepared });
    connection.execute({ portal: '', rows: 0 });
  }

  submit(connection: PgConnection): Error | null {
    const previous = connection.parsedStatements[this.name] ?? connection.submittedNamedStatements[this.name];
    if (previous !== undefined && previous !== this.text) return new Error(`prepared statement ${this.name} was used for another text`);
    // The parameters converted before anything is written: a value pg cannot convert fails this call
    // alone, with nothing sent (a Parse sent without its Sync would leave the exchange half open).
    let values: unknown[];
    try {
      values = this.values.map((v) => pgUtils.prepareValue(v));
    } catch (e) {
      return new ParameterRefused(this.name, e);
    }
    let byName = shapes.get(connection);
    if (!byName) shapes.set(connection, (byName = new Map()));
    this.shape = previous === undefined ? undefined : byName.get(this.name);
    this.described = this.shape === undefined;
    connection.stream.cork?.();
    try {
      if (this.wrap.begin !== null) PreparedExecution.control(connection, this.wrap.begin);
      if (previous === undefined) {
        connection.parse({ text: this.text, name: this.name, types: [] });
        connection.submittedNamedStatements[this.name] = this.text;
      }
      connection.bind({ portal: '', statement: this.name, values, valueMapper: asPrepared });
      if (this.described) connection.describe({ type: 'P', name: '' });
      connection.execute({ portal: '', rows: 0 });
      if (this.wrap.commit !== null) PreparedExecution.control(connection, this.wrap.commit);
      connection.sync();
    } catch (e) {
      return e as Error;
    } finally {
      connection.stream.uncork?.();
    }
    return null;
  }

  handleRowDescription(msg: { fields: FieldDescription[] }): void {
    this.shape = {
      names: msg.fields.map((f) => f.name),
      parsers: msg.fields.map(
        (f) => this.client.getTypeParser(f.dataTypeID, f.format === 'binary' ? 'binary' : 'text') as (v: string) => unknown,
      ),
    };
  }

  handleDataRow(msg: { fields: Array<string | null> }): void {
    if (this.failure) return;
    const shape = this.shape;
    if (!shape) {
      this.failure = new Error(`statement ${this.name}: a row came without a description`);
      return;
    }
    try {
      const row: Record<string, unknown> = {};
      const { names, parsers } = shape;
      const fields = msg.fields;
      for (let i = 0; i < fields.length; i++) {
        const v = fields[i];
        row[names[i]] = v === null ? null : parsers[i](v);
      }
      this.rows.push(row as T);
    } catch (e) {
      this.failure = e as Error;
    }
  }

  handleCommandComplete(_msg: unknown, connection: PgConnection): void {
    // a BEGIN's completion comes first; the COMMIT's after the statement's (its shape already kept)
    if (this.completesBefore > 0) {
      this.completesBefore--;
      return;
    }
    // described now (a statement that returns no rows has an empty shape)
    if (this.described) shapes.get(connection)?.set(this.name, this.shape ?? { names: [], parsers: [] });
  }

  handleEmptyQuery(): void {}

  handlePortalSuspended(): void {}

  handleCopyInResponse(connection: { sendCopyFail(msg: string): void }): void {
    connection.sendCopyFail('no COPY data from a prepared statement');
  }

  handleCopyData(): void {}

  handleError(err: Error): void {
    this.callback(err);
  }

  handleReadyForQuery(): void {
    if (this.failure) this.callback(this.failure);
    else this.callback(null, this.rows);
  }
}

/** Query runners whose transaction's BEGIN is held back for their first statement (`deferBegin`). */
const deferredBegins = new WeakSet<object>();

/**
 * Holds back the BEGIN of the transaction `runner` is about to open: it goes in the exchange of the
 * transaction's first prepared statement (one round trip for both), or before the first other query
 * (`takeDeferredBegin`). See `commitWith` for its end.
 */
export function deferBegin(runner: QueryRunner): void {
  deferredBegins.add(runner);
}

/** True (once) when `runner`'s BEGIN was held back and not sent yet: the caller sends it now. */
export function takeDeferredBegin(runner: QueryRunner): boolean {
  return deferredBegins.delete(runner);
}

/**
 * The name of the connection's prepared BEGIN or COMMIT when it is parsed there, else null: it is
 * parsed by running it once on its own (`runControl`), and bound in a statement's exchange after that.
 */
function parsedControl(client: PoolClient, text: 'BEGIN' | 'COMMIT'): string | null {
  const name = statementName(client, text.toLowerCase());
  const connection = (client as unknown as { connection: PgConnection }).connection;
  return connection.parsedStatements[name] === text ? name : null;
}

function runControl(client: PoolClient, text: 'BEGIN' | 'COMMIT'): Promise<unknown[]> {
  return PreparedExecution.run(client, statementName(client, text.toLowerCase()), text, []);
}

/**
 * Ends the transaction of `runner` (opened with `deferBegin`) with `statement` (its last write, or
 * null): when nothing was sent yet, the statement alone (it commits on its own) or nothing at all;
 * else the statement and the COMMIT in one exchange.
 */
export async function commitWith<T>(runner: QueryRunner, statement: PreparedStatement | null, params: unknown[]): Promise<T[]> {
  const client = (await runner.connect()) as PoolClient;
  if (takeDeferredBegin(runner)) {
    return statement ? PreparedExecution.run<T>(client, statementName(client, statement.key), statement.text, params) : [];
  }
  if (!statement) {
    await runControl(client, 'COMMIT');
    return [];
  }
  const commit = parsedControl(client, 'COMMIT');
  const result = await PreparedExecution.run<T>(client, statementName(client, statement.key), statement.text, params, {
    begin: null,
    commit,
  });
  if (commit === null) await runControl(client, 'COMMIT');
  return result;
}

/** Runs `statement` on the transaction of `em` when it has one, else on a pooled connection. */
export async function runPrepared<T>(
  dataSource: DataSource,
  em: Partial<Pick<EntityManager, 'queryRunner'>> | null,
  statement: PreparedStatement,
  params: unknown[],
): Promise<T[]> {
  const run = (client: PoolClient, wrap: Wrap = NO_WRAP): Promise<T[]> =>
    PreparedExecution.run<T>(client, statementName(client, statement.key), statement.text, params, wrap);
  const runner = em?.queryRunner;
  if (runner && !runner.isReleased) {
    const client = (await runner.connect()) as PoolClient;
    if (!takeDeferredBegin(runner)) return run(client);
    const begin = parsedControl(client, 'BEGIN');
    if (begin === null) await runControl(client, 'BEGIN');
    return run(client, { begin, commit: null });
  }
  const pool = (dataSource.driver as unknown as { master?: Pool }).master;
  if (pool) {
    const client = await pool.connect();
    let failure: Error | undefined;
    try {
      return await run(client);
    } catch (e) {
      // A statement the server refused (ERROR: a unique key, an optimistic write's RL001), or one never
      // sent (a parameter pg could not convert), leaves the connection ready for the next one, with
      // its prepared statements: it goes back to the pool.
      // Anything else (a broken socket, FATAL) may have broken it: the pool drops it.
      if (!isStatementError(e) && !(e instanceof ParameterRefused)) failure = e as Error;
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
