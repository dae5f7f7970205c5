/**
 * Reading the upstream budget's ledger in tests. The ledger prunes grants older than two windows, so
 * `installGrantLog` adds a trigger (in the test file's own database) that keeps a copy of every grant.
 */
import type { BudgetClass, Grant } from '../../src/budget/request-budget.js';
import type { TestDatabase } from './test-database.js';

export async function installGrantLog(db: TestDatabase): Promise<void> {
  await db.query(`CREATE TABLE test_grant_log (key_id text NOT NULL, granted_at timestamptz NOT NULL, class text NOT NULL)`);
  await db.query(`CREATE FUNCTION test_log_grant() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN INSERT INTO test_grant_log VALUES (NEW.key_id, NEW.granted_at, NEW.class); RETURN NEW; END $$`);
  await db.query(`CREATE TRIGGER test_log_grant AFTER INSERT ON upstream_budget_grants FOR EACH ROW EXECUTE FUNCTION test_log_grant()`);
}

/** Every grant made for the key since `installGrantLog`, oldest first, by the database's clock. */
export async function grantsOf(db: TestDatabase, keyId: string): Promise<Grant[]> {
  const rows = await db.query<{ at_ms: number; class: BudgetClass }>(
    `SELECT (extract(epoch FROM granted_at) * 1000)::float8 AS at_ms, class FROM test_grant_log WHERE key_id = $1 ORDER BY granted_at`,
    [keyId],
  );
  return rows.map((r) => ({ atMs: Number(r.at_ms), cls: r.class }));
}

/** The end of the key's block as stored (ms, the database's clock), or null. */
export async function storedBlockEnd(db: TestDatabase, keyId: string): Promise<number | null> {
  const rows = await db.query<{ ms: number | null }>(
    `SELECT (extract(epoch FROM blocked_until) * 1000)::float8 AS ms FROM upstream_budget_keys WHERE key_id = $1`,
    [keyId],
  );
  return rows[0]?.ms == null ? null : Number(rows[0].ms);
}

/** The largest number of grants in any closed interval of `windowMs`. */
export function maxInAnyWindow(grants: Grant[], windowMs: number): number {
  const t = grants.map((g) => g.atMs).sort((a, b) => a - b);
  let most = 0;
  let j = 0;
  for (let i = 0; i < t.length; i++) {
    while (t[i] - t[j] > windowMs) j++;
    most = Math.max(most, i - j + 1);
  }
  return most;
}
