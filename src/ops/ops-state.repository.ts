/**
 * The rows of `relay_state` that operations own: each supplier's last upstream ping any replica stored, and the
 * alerts' keys (`alert:<kind>:<subject>`, each claimed by the one replica that raises it). Alerts write
 * in the caller's transaction (the outbox row goes with the claim), so their statements take its
 * EntityManager.
 */
import { Injectable } from '@nestjs/common';
import { DataSource, type EntityManager } from 'typeorm';
import { sqlRows } from './sql.js';

/** `relay_state`'s key of a supplier's last upstream ping (see UpstreamMonitor). */
export const pingStateKey = (supplier: string): string => `upstream_ping:${supplier}`;

const parsed = <T>(v: T | string): T => (typeof v === 'string' ? (JSON.parse(v) as T) : v);

@Injectable()
export class OpsStateRepository {
  constructor(private readonly dataSource: DataSource) {}

  /** A supplier's last upstream ping any replica stored (its JSON), or null. */
  async readPing<T>(supplier: string): Promise<T | null> {
    return (await this.readPings<T>([supplier])).get(supplier) ?? null;
  }

  /** The last upstream pings any replica stored of these suppliers, by supplier (those without one left out). */
  async readPings<T>(suppliers: readonly string[]): Promise<Map<string, T>> {
    const rows = await sqlRows<{ key: string; value: T | string }>(
      this.dataSource,
      'SELECT key, value FROM relay_state WHERE key = ANY($1::text[])',
      [suppliers.map(pingStateKey)],
    );
    const byKey = new Map(rows.map((r) => [r.key, parsed(r.value)]));
    const found = new Map<string, T>();
    for (const s of suppliers) {
      const v = byKey.get(pingStateKey(s));
      if (v !== undefined) found.set(s, v);
    }
    return found;
  }

  async storePing(supplier: string, snapshot: unknown, at: Date): Promise<void> {
    await this.dataSource.query(
      `INSERT INTO relay_state (key, value, updated_at) VALUES ($1, $2::jsonb, $3)
       ON CONFLICT (key) DO UPDATE SET value = EXCLUDED.value, updated_at = EXCLUDED.updated_at`,
      [pingStateKey(supplier), JSON.stringify(snapshot), at],
    );
  }

  /**
   * Claims an alert's key: written when absent or last written at or before `repeatAfter` (an alert
   * repeats at most once per interval, whichever replica raises it). True when this call wrote it.
   */
  async claimAlert(em: EntityManager, key: string, value: Record<string, unknown>, now: Date, repeatAfter: Date): Promise<boolean> {
    const rows = await sqlRows<{ key: string }>(
      em,
      `INSERT INTO relay_state (key, value, updated_at) VALUES ($1, $2::jsonb, $3)
       ON CONFLICT (key) DO UPDATE SET value = EXCLUDED.value, updated_at = EXCLUDED.updated_at
        WHERE relay_state.updated_at <= $4
       RETURNING key`,
      [key, JSON.stringify(value), now, repeatAfter],
    );
    return rows.length > 0;
  }

  /**
   * Marks an active alert cleared (`active` false, `cleared_at`), keeping its key and time. True only
   * for the one call that found it active.
   */
  async clearAlert(em: EntityManager, key: string, clearedAt: Date): Promise<boolean> {
    const rows = await sqlRows<{ key: string }>(
      em,
      `UPDATE relay_state SET value = jsonb_set(value, '{active}', 'false') || jsonb_build_object('cleared_at', $2::text)
        WHERE key = $1 AND value->>'active' = 'true'
       RETURNING key`,
      [key, clearedAt.toISOString()],
    );
    return rows.length > 0;
  }
}
