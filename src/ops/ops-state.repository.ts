/**
 * The rows of `relay_state` that operations own: the last upstream ping any replica stored, and the
 * alerts' keys (`alert:<kind>:<subject>`, each claimed by the one replica that raises it). Alerts write
 * in the caller's transaction (the outbox row goes with the claim), so their statements take its
 * EntityManager.
 */
import { Injectable } from '@nestjs/common';
import { DataSource, type EntityManager } from 'typeorm';
import { sqlRows } from './sql.js';

/** `relay_state`'s key of the last upstream ping (see UpstreamMonitor). */
export const UPSTREAM_PING_STATE_KEY = 'upstream_ping';

@Injectable()
export class OpsStateRepository {
  constructor(private readonly dataSource: DataSource) {}

  /** The last upstream ping any replica stored (its JSON), or null. */
  async readPing<T>(): Promise<T | null> {
    const rows = await sqlRows<{ value: T | string }>(this.dataSource, 'SELECT value FROM relay_state WHERE key = $1', [
      UPSTREAM_PING_STATE_KEY,
    ]);
    if (!rows[0]) return null;
    const v = rows[0].value;
    return typeof v === 'string' ? (JSON.parse(v) as T) : v;
  }

  async storePing(snapshot: unknown, at: Date): Promise<void> {
    await this.dataSource.query(
      `INSERT INTO relay_state (key, value, updated_at) VALUES ($1, $2::jsonb, $3)
       ON CONFLICT (key) DO UPDATE SET value = EXCLUDED.value, updated_at = EXCLUDED.updated_at`,
      [UPSTREAM_PING_STATE_KEY, JSON.stringify(snapshot), at],
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
