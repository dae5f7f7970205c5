/**
 * What the readiness check asks of `schema_migrations` (see migrator.ts): the migrations of this build
 * not applied yet. It only reads, through the service's pool (the migrator writes, on its own
 * connection), and creates nothing: before the first migration the table does not exist and every
 * migration is pending.
 */
import { Injectable } from '@nestjs/common';
import { DataSource } from 'typeorm';
import { readMigrations } from './migrator.js';

@Injectable()
export class SchemaMigrationsRepository {
  /** This build's migrations (`<version>_<name>`), read from its folder once. */
  private build: Array<{ version: string; label: string }> | null = null;

  constructor(private readonly dataSource: DataSource) {}

  /** The migrations of this build not applied to the database (all of them without the table). */
  async pending(): Promise<string[]> {
    this.build ??= readMigrations().map((m) => ({ version: m.version, label: `${m.version}_${m.name}` }));
    const [{ t }] = (await this.dataSource.query(`SELECT to_regclass('schema_migrations')::text AS t`)) as Array<{ t: string | null }>;
    if (t === null) return this.build.map((m) => m.label);
    const rows: Array<{ version: string }> = await this.dataSource.query('SELECT version FROM schema_migrations');
    const applied = new Set(rows.map((r) => r.version));
    return this.build.filter((m) => !applied.has(m.version)).map((m) => m.label);
  }
}
