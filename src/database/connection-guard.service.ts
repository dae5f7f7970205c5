/**
 * Keeps a lost connection from crashing the process. pg-pool listens for errors only on idle
 * clients; a client that is checked out but between queries (inside a transaction, or just
 * acquired) emits 'error' with no listener when the server terminates it (`pg_terminate_backend`,
 * a restart), and an unhandled 'error' event kills Node. Every client gets a listener that logs;
 * the broken client is then discarded by the pool on release, and the next query reconnects.
 */
import { Injectable, Logger, type OnApplicationBootstrap } from '@nestjs/common';
import type { Pool, PoolClient } from 'pg';
import { DataSource } from 'typeorm';

const GUARDED = Symbol('relay.connectionGuard');

@Injectable()
export class ConnectionGuard implements OnApplicationBootstrap {
  private readonly logger = new Logger('database');

  constructor(private readonly dataSource: DataSource) {}

  onApplicationBootstrap(): void {
    const pool = (this.dataSource.driver as unknown as { master?: Pool }).master;
    if (!pool) return;
    const guard = (client: PoolClient) => {
      const c = client as PoolClient & { [GUARDED]?: true };
      if (c[GUARDED]) return;
      c[GUARDED] = true;
      client.on('error', (err: Error) => this.logger.warn({ msg: `database connection lost: ${err.message}` }));
    };
    pool.on('connect', guard);
    // Clients the pool made before this hook (TypeORM's first connection).
    for (const client of (pool as unknown as { _clients?: PoolClient[] })._clients ?? []) guard(client);
  }
}
