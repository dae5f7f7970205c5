/**
 * Where the database is: a PostgreSQL server (`DATABASE_URL=postgres://…`) or the embedded PGlite
 * (`pglite://PATH`, `pglite://memory`, the default under ./data), served over the wire protocol from
 * a worker thread of the service's process (see embedded-postgres.ts). Opening it runs pending
 * migrations when `DB_MIGRATE_ON_START` is on.
 */
import { Logger } from '@nestjs/common';
import type { DatabaseTarget } from '../config/app-config.js';
import { redactUrl } from '../config/redact-url.js';
import { EmbeddedPostgres } from './embedded-postgres.js';
import { migrateUp } from './migrator.js';

export class DatabaseEndpoint {
  constructor(
    /** `postgres://…` for the `pg` driver. */
    readonly url: string,
    readonly kind: DatabaseTarget['kind'],
    private readonly embedded: EmbeddedPostgres | null,
  ) {}

  /** `shortLived`: an embedded database opened for a moment (see EmbeddedPostgresOptions). */
  static async open(target: DatabaseTarget, migrate: boolean, options: { shortLived?: boolean } = {}): Promise<DatabaseEndpoint> {
    const logger = new Logger('database');
    // A service's start says what it waits for (creating, opening); a short-lived open (a CLI command) stays quiet.
    const onProgress = options.shortLived ? undefined : (message: string) => logger.log(message);
    const embedded =
      target.kind === 'pglite' ? await EmbeddedPostgres.start({ path: target.path, shortLived: options.shortLived, onProgress }) : null;
    const url = embedded ? embedded.url : (target as { url: string }).url;
    const endpoint = new DatabaseEndpoint(url, target.kind, embedded);
    if (migrate) {
      const report = await migrateUp(url);
      // (one line: the names are in its `migrations` field, and in schema_migrations)
      if (report.applied.length) {
        const n = report.applied.length;
        logger.log({ msg: `applied ${n} migration${n === 1 ? '' : 's'}, up to ${report.applied[n - 1]}`, migrations: report.applied });
      }
    }
    return endpoint;
  }

  /** A description safe for logs (no user, no password, no query). */
  describe(): string {
    if (this.kind === 'pglite') return 'embedded PostgreSQL (PGlite)';
    let u: URL | null = null;
    try {
      u = new URL(this.url);
    } catch {
      // described by its redacted text below
    }
    // Without a host (`postgres:u:pw@h/db`, a socket directory in the query) the path would be the text.
    if (u === null || u.hostname === '') return `PostgreSQL at ${redactUrl(this.url)}`;
    return `PostgreSQL at ${u.hostname}:${u.port || 5432}${u.pathname}`;
  }

  /** `listener` is called if the embedded database ends without being closed (a PostgreSQL server: never). */
  onEmbeddedEnded(listener: (code: number) => void): void {
    this.embedded?.onEnded(listener);
  }

  async close(): Promise<void> {
    await this.embedded?.stop();
  }
}
