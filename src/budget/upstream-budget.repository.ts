/**
 * The ledger of the upstream request budget in PostgreSQL (or the embedded PGlite), so that every
 * replica on one database spends one key's budget together (migration 20261127220000).
 *
 * A take is one short transaction: lock the key's row (`FOR UPDATE`: replicas decide one at a time;
 * on the embedded database, whose transactions run one at a time, the transaction alone does that),
 * read the database's clock and the grants of the last window, let the caller decide with the pure
 * rule, insert the grant or raise the demand flag, and prune grants older than two windows. Every time
 * is the database's (`clock_timestamp()`, read after the lock), never a replica's, so that replicas
 * with clocks apart still agree on the window.
 */
import { Injectable } from '@nestjs/common';
import { DataSource, type EntityManager } from 'typeorm';
import { isBudgetClass, type BudgetClass, type Grant } from './request-budget.js';

type Db = Pick<EntityManager, 'query'>;

/** What a take reads under the key's lock. */
export interface LedgerState {
  /** The database's clock, in milliseconds since the epoch (fractional). */
  nowMs: number;
  /** The grants of the last `windowMs` (and any stamped after now), oldest first. */
  grants: Grant[];
  blockedUntilMs: number | null;
  demandUntilMs: number | null;
}

/** What the caller decided from the state: grant one request of `cls`, or wait (and maybe raise the demand flag). */
export type LedgerDecision<T> =
  | { grant: true; cls: BudgetClass; result: T }
  | { grant: false; /** Raise `demand_until` to at least this time (ms, the database's clock). */ demandUntilMs?: number; result: T };

const MS = `* interval '1 millisecond'`;

function epochMs(v: unknown): number | null {
  if (v === null || v === undefined) return null;
  const n = typeof v === 'number' ? v : Number(v);
  return Number.isFinite(n) ? n : null;
}

@Injectable()
export class UpstreamBudgetRepository {
  constructor(private readonly dataSource: DataSource) {}

  /**
   * One take of `keyId` in one transaction: `decide` runs on the state read under the key's lock
   * (it must not await anything else: the transaction holds the embedded database meanwhile); a
   * granted request is inserted with the state's `nowMs`. Grants older than `pruneOlderThanMs` are
   * deleted.
   */
  async take<T>(keyId: string, windowMs: number, pruneOlderThanMs: number, decide: (state: LedgerState) => LedgerDecision<T>): Promise<T> {
    return this.dataSource.transaction(async (em) => {
      const state = await this.lockAndRead(em, keyId, windowMs);
      const d = decide(state);
      if (d.grant) {
        await em.query(`INSERT INTO upstream_budget_grants (key_id, granted_at, class) VALUES ($1, to_timestamp($2::float8 / 1000), $3)`, [
          keyId,
          state.nowMs,
          d.cls,
        ]);
        // pruned by the takes that grant, so an idle key costs nothing
        await em.query(
          `DELETE FROM upstream_budget_grants WHERE key_id = $1 AND granted_at < to_timestamp($2::float8 / 1000) - $3::float8 ${MS}`,
          [keyId, state.nowMs, pruneOlderThanMs],
        );
      } else if (d.demandUntilMs !== undefined && (state.demandUntilMs === null || d.demandUntilMs > state.demandUntilMs)) {
        await em.query(`UPDATE upstream_budget_keys SET demand_until = to_timestamp($2::float8 / 1000) WHERE key_id = $1`, [
          keyId,
          d.demandUntilMs,
        ]);
      }
      return d.result;
    });
  }

  /**
   * Blocks the key for `blockMs` from now (the database's clock), unless it is already blocked for
   * longer. Returns the block's end and whether the key was free before (a new block, not an extension).
   */
  async block(keyId: string, blockMs: number): Promise<{ blockedUntilMs: number; started: boolean }> {
    return this.dataSource.transaction(async (em) => {
      await this.ensureKey(em, keyId);
      const rows = (await em.query(
        `SELECT (extract(epoch FROM clock_timestamp()) * 1000)::float8 AS now_ms, (extract(epoch FROM blocked_until) *
          1000)::float8 AS blocked_ms
           FROM upstream_budget_keys WHERE key_id = $1 FOR UPDATE`,
        [keyId],
      )) as Array<{ now_ms: number | string; blocked_ms: number | string | null }>;
      const nowMs = Number(rows[0].now_ms);
      const before = epochMs(rows[0].blocked_ms);
      const until = Math.max(before ?? 0, nowMs + blockMs);
      if (until !== before) {
        await em.query(`UPDATE upstream_budget_keys SET blocked_until = to_timestamp($2::float8 / 1000) WHERE key_id = $1`, [keyId, until]);
      }
      return { blockedUntilMs: until, started: before === null || before <= nowMs };
    });
  }

  /** The end of the key's block, if it is blocked now (the database's clock). */
  async blockedUntil(keyId: string, db: Db = this.dataSource.manager): Promise<Date | null> {
    const rows = (await db.query(`SELECT blocked_until FROM upstream_budget_keys WHERE key_id = $1 AND blocked_until > clock_timestamp()`, [
      keyId,
    ])) as Array<{
      blocked_until: Date | string;
    }>;
    return rows[0] ? new Date(rows[0].blocked_until) : null;
  }

  /** How many grants the key has in the `windowMs` ending now (the database's clock). */
  async grantsInWindow(keyId: string, windowMs: number): Promise<number> {
    const rows = (await this.dataSource.query(
      `SELECT count(*)::int AS n FROM upstream_budget_grants WHERE key_id = $1 AND granted_at > clock_timestamp() - ` +
        `$2::float8 * interval '1 millisecond'`,
      [keyId, windowMs],
    )) as Array<{ n: number | string }>;
    return Number(rows[0]?.n ?? 0);
  }

  /** The grants of the window ending now (the database's clock) by class. */
  async grantsInWindowByClass(keyId: string, windowMs: number): Promise<Partial<Record<BudgetClass, number>>> {
    const rows = (await this.dataSource.query(
      `SELECT class, count(*)::int AS n FROM upstream_budget_grants WHERE key_id = $1 AND granted_at > clock_timestamp() ` +
        `- $2::float8 * interval '1 millisecond' GROUP BY class`,
      [keyId, windowMs],
    )) as Array<{ class: string; n: number | string }>;
    const out: Partial<Record<BudgetClass, number>> = {};
    for (const r of rows) if (isBudgetClass(r.class)) out[r.class] = Number(r.n);
    return out;
  }

  /** The grants of the key from `sinceMs` on (the database's clock), oldest first: for tests and reports. */
  async grantsSince(keyId: string, sinceMs: number): Promise<Grant[]> {
    const rows = (await this.dataSource.query(
      `SELECT (extract(epoch FROM granted_at) * 1000)::float8 AS at_ms, class FROM upstream_budget_grants
        WHERE key_id = $1 AND granted_at >= to_timestamp($2::float8 / 1000) ORDER BY granted_at, id`,
      [keyId, sinceMs],
    )) as Array<{ at_ms: number | string; class: string }>;
    return rows.flatMap((r) => (isBudgetClass(r.class) ? [{ atMs: Number(r.at_ms), cls: r.class }] : []));
  }

  private async ensureKey(em: Db, keyId: string): Promise<void> {
    await em.query(`INSERT INTO upstream_budget_keys (key_id) VALUES ($1) ON CONFLICT (key_id) DO NOTHING`, [keyId]);
  }

  private async lockAndRead(em: Db, keyId: string, windowMs: number): Promise<LedgerState> {
    const lock = async (): Promise<boolean> =>
      ((await em.query(`SELECT 1 FROM upstream_budget_keys WHERE key_id = $1 FOR UPDATE`, [keyId])) as unknown[]).length > 0;
    if (!(await lock())) {
      await this.ensureKey(em, keyId);
      await lock();
    }
    // The clock is read once the lock is held: a take that waited for another's sees that one's grant
    // as earlier than its own now.
    const rows = (await em.query(
      `WITH now AS (SELECT clock_timestamp() AS t)
       SELECT (extract(epoch FROM now.t) * 1000)::float8 AS now_ms,
              (extract(epoch FROM k.blocked_until) * 1000)::float8 AS blocked_ms,
              (extract(epoch FROM k.demand_until) * 1000)::float8 AS demand_ms,
              coalesce((SELECT json_agg(json_build_array((extract(epoch FROM g.granted_at) * 1000)::float8, g.class) ORDER BY
                g.granted_at, g.id)
                          FROM upstream_budget_grants g
                         WHERE g.key_id = $1 AND g.granted_at >= now.t - $2::float8 ${MS}), '[]'::json) AS grants
         FROM now, upstream_budget_keys k WHERE k.key_id = $1`,
      [keyId, windowMs],
    )) as Array<{ now_ms: number | string; blocked_ms: number | string | null; demand_ms: number | string | null; grants: unknown }>;
    const row = rows[0];
    const raw = typeof row.grants === 'string' ? (JSON.parse(row.grants) as unknown) : row.grants;
    const grants: Grant[] = [];
    for (const g of Array.isArray(raw) ? raw : []) {
      const [at, cls] = g as [unknown, unknown];
      if (typeof at === 'number' && isBudgetClass(cls)) grants.push({ atMs: at, cls });
    }
    return { nowMs: Number(row.now_ms), grants, blockedUntilMs: epochMs(row.blocked_ms), demandUntilMs: epochMs(row.demand_ms) };
  }
}
