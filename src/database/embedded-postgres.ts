/**
 * The embedded PostgreSQL (PGlite) served over the PostgreSQL wire protocol in-process, so the
 * service talks to it through the same `pg` driver as to a real server. PGlite is one backend: the
 * socket server runs one query at a time and keeps a transaction's queries together, so transactions
 * run one at a time. Never await a query on another connection while holding a transaction.
 */
import { mkdirSync } from 'node:fs';
import { PGlite } from '@electric-sql/pglite';
import { PGLiteSocketServer } from '@electric-sql/pglite-socket';

export interface EmbeddedPostgresOptions {
  /** A directory, or 'memory'. */
  path: string | 'memory';
  /** A data directory dump (from `dumpDataDir`) to start from, e.g. a migrated snapshot in tests. */
  loadDataDir?: Blob;
  /** Connections the socket server accepts; at least the pool sizes of every client. */
  maxConnections?: number;
}

export class EmbeddedPostgres {
  private constructor(
    readonly db: PGlite,
    private readonly server: PGLiteSocketServer,
    /** `postgres://…` for the `pg` driver. */
    readonly url: string,
  ) {}

  static async start(options: EmbeddedPostgresOptions): Promise<EmbeddedPostgres> {
    if (options.path !== 'memory') mkdirSync(options.path, { recursive: true });
    const db = await PGlite.create({
      dataDir: options.path === 'memory' ? undefined : options.path,
      loadDataDir: options.loadDataDir,
    });
    const server = new PGLiteSocketServer({
      db,
      host: '127.0.0.1',
      port: 0,
      maxConnections: options.maxConnections ?? 100,
    });
    await server.start();
    const [, port] = server.getServerConn().split(':');
    return new EmbeddedPostgres(db, server, `postgres://postgres@127.0.0.1:${port}/postgres?sslmode=disable`);
  }

  /**
   * Drops every client connection from the server side, as a restarted server would (the embedded
   * counterpart of `pg_terminate_backend`), to test that the pool reconnects.
   */
  dropConnections(): void {
    const handlers = (this.server as unknown as { handlers: Set<{ detach(close: boolean): Promise<unknown> }> }).handlers;
    for (const h of handlers) void h.detach(true);
    handlers.clear();
  }

  async stop(): Promise<void> {
    await this.server.stop();
    await this.db.close();
  }
}
