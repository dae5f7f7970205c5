/**
 * What `/health`, `/health/live` and `/health/ready` answer (CONTRACT §5):
 * - health: the database (a `SELECT 1`, bounded), the last known upstream ping (never a call to the
 *   upstream), the last catalog sync run, the wallet from the ping; 503 only when the database is down;
 * - live: the process answers;
 * - ready: the database answers and every migration of this build is applied, and the process is
 *   not shutting down; 503 otherwise.
 */
import { Injectable, type BeforeApplicationShutdown, type OnModuleDestroy } from '@nestjs/common';
import { DataSource } from 'typeorm';
import { readMigrations } from '../database/migrator.js';
import { UpstreamMonitor, type UpstreamSnapshot } from './upstream-monitor.service.js';

/** The longest a health check waits for the database. */
export const HEALTH_DB_TIMEOUT_MS = 3_000;

/** Where the catalog keeps its sync runs (the first that exists). */
const SYNC_RUN_TABLES = ['catalog_sync_runs', 'sync_runs'];

export interface LastSync {
  run_id: string | null;
  mode: string | null;
  status: string | null;
  started_at: string | null;
  finished_at: string | null;
  error: string | null;
  /** The end of the latest run that succeeded. */
  last_success_at: string | null;
}

export interface HealthBody {
  ok: boolean;
  status: 'ok' | 'unavailable';
  database: 'up' | 'down';
  upstream: { status: 'up' | 'down' | 'unknown'; checked_at: string | null; latency_ms: number | null; error: string | null };
  last_sync: LastSync | null;
  wallet?: { balance: string; currency: string; checked_at: string };
}

export interface ReadyBody {
  ok: boolean;
  database: 'up' | 'down';
  migrations: { pending: string[] } | null;
  shutting_down: boolean;
}

class Timeout extends Error {}

function within<T>(p: Promise<T>, ms: number): Promise<T> {
  let timer: NodeJS.Timeout;
  return Promise.race([
    p.finally(() => clearTimeout(timer)),
    new Promise<T>((_, reject) => {
      timer = setTimeout(() => reject(new Timeout(`no answer within ${ms} ms`)), ms);
      timer.unref();
    }),
  ]);
}

const isoOrNull = (v: unknown): string | null => (v == null ? null : new Date(v as string).toISOString());
const strOrNull = (v: unknown): string | null => (v == null ? null : String(v));

@Injectable()
export class HealthService implements OnModuleDestroy, BeforeApplicationShutdown {
  private shuttingDown = false;
  private syncTable: string | null = null;
  private migrationVersions: Array<{ version: string; label: string }> | null = null;

  constructor(
    private readonly dataSource: DataSource,
    private readonly monitor: UpstreamMonitor,
  ) {}

  onModuleDestroy(): void {
    this.shuttingDown = true;
  }

  beforeApplicationShutdown(): void {
    this.shuttingDown = true;
  }

  async databaseUp(): Promise<boolean> {
    try {
      await within(this.dataSource.query('SELECT 1'), HEALTH_DB_TIMEOUT_MS);
      return true;
    } catch {
      return false;
    }
  }

  async health(): Promise<HealthBody> {
    const dbUp = await this.databaseUp();
    let ping: UpstreamSnapshot | null = this.monitor.current();
    let lastSync: LastSync | null = null;
    if (dbUp) {
      if (!ping) ping = await within(this.monitor.latest(), HEALTH_DB_TIMEOUT_MS).catch(() => null);
      lastSync = await within(this.lastSync(), HEALTH_DB_TIMEOUT_MS).catch(() => null);
    }
    const body: HealthBody = {
      ok: dbUp,
      status: dbUp ? 'ok' : 'unavailable',
      database: dbUp ? 'up' : 'down',
      upstream: ping
        ? { status: ping.status, checked_at: ping.checked_at, latency_ms: ping.latency_ms, error: ping.error }
        : { status: 'unknown', checked_at: null, latency_ms: null, error: null },
      last_sync: lastSync,
    };
    if (ping?.wallet) body.wallet = { balance: ping.wallet.balance, currency: ping.wallet.currency, checked_at: ping.wallet.checked_at };
    return body;
  }

  async ready(): Promise<ReadyBody> {
    const dbUp = await this.databaseUp();
    let pending: string[] | null = null;
    if (dbUp) pending = await within(this.pendingMigrations(), HEALTH_DB_TIMEOUT_MS).catch(() => null);
    return {
      ok: dbUp && pending !== null && pending.length === 0 && !this.shuttingDown,
      database: dbUp ? 'up' : 'down',
      migrations: pending === null ? null : { pending },
      shutting_down: this.shuttingDown,
    };
  }

  /** The migrations of this build not applied to the database (all of them without the table). */
  async pendingMigrations(): Promise<string[]> {
    this.migrationVersions ??= readMigrations().map((m) => ({ version: m.version, label: `${m.version}_${m.name}` }));
    const [{ t }] = (await this.dataSource.query(`SELECT to_regclass('schema_migrations')::text AS t`)) as Array<{ t: string | null }>;
    if (t === null) return this.migrationVersions.map((m) => m.label);
    const rows: Array<{ version: string }> = await this.dataSource.query('SELECT version FROM schema_migrations');
    const applied = new Set(rows.map((r) => r.version));
    return this.migrationVersions.filter((m) => !applied.has(m.version)).map((m) => m.label);
  }

  /** The latest catalog sync run; null before the catalog's table exists or before any run. */
  async lastSync(): Promise<LastSync | null> {
    if (this.syncTable === null) {
      const rows: Array<{ t: string | null }> = await this.dataSource.query(
        `SELECT coalesce(${SYNC_RUN_TABLES.map((_, i) => `to_regclass($${i + 1})::text`).join(', ')}) AS t`,
        SYNC_RUN_TABLES,
      );
      if (!rows[0]?.t) return null;
      this.syncTable = rows[0].t;
    }
    const table = this.syncTable;
    let rows: Array<Record<string, unknown>>;
    try {
      rows = await this.dataSource.query(
        // The latest success by its start, not max(finished_at): runs never overlap, so it is the same
        // run, found by the started_at index instead of scanning every run (a year of runs every 15
        // minutes: 5–8 ms a /health → 0.2–0.4 ms, measured on PostgreSQL).
        `SELECT r.*, (SELECT s.finished_at FROM ${table} s WHERE s.status = 'succeeded' ORDER BY s.started_at DESC LIMIT 1) AS relay_last_success_at
           FROM ${table} r ORDER BY r.started_at DESC LIMIT 1`,
      );
    } catch {
      this.syncTable = null; // renamed or reshaped: look again next time
      return null;
    }
    const r = rows[0];
    if (!r) return null;
    return {
      run_id: strOrNull(r.run_id ?? r.id),
      mode: strOrNull(r.mode),
      status: strOrNull(r.status),
      started_at: isoOrNull(r.started_at),
      finished_at: isoOrNull(r.finished_at),
      error: strOrNull(r.error),
      last_success_at: isoOrNull(r.relay_last_success_at),
    };
  }
}
