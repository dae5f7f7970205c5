/**
 * The SQL of `OrderTx`'s held writes: a write held back until the next statement of its transaction,
 * and the held writes as the data-modifying CTEs that statement carries.
 */
import { numbered } from '../database/prepared-statements.js';
import { ORDER_ROUTE, ROUTE_COLUMNS, routeExpression } from './order-route.sql.js';

/** A write held back until the next statement of its transaction: SQL with `$?` for each parameter. */
export interface HeldWrite {
  sql: string;
  params: unknown[];
  /** The attempt it updates (a row is never updated twice in one statement). */
  attemptId?: string;
  /** The order whose route ORDER_ROUTE stands for in `sql` (`writeWithRoute`). */
  routeOf?: string;
}

/**
 * The held writes as CTEs whose parameters start at `$first`. When one of them shows a route, the
 * attempt updates among them return their rows, for its route to show them as they are left.
 */
export function heldCtes(writes: HeldWrite[], first: number): { ctes: string; params: unknown[] } {
  const params: unknown[] = [];
  const showsRoute = writes.some((h) => h.routeOf !== undefined);
  // the attempt updates first: a CTE names only those before it (the statement's one snapshot makes the order moot otherwise)
  const held = showsRoute
    ? [...writes.filter((h) => h.attemptId !== undefined), ...writes.filter((h) => h.attemptId === undefined)]
    : writes;
  const updated = showsRoute ? held.flatMap((h, i) => (h.attemptId !== undefined ? [`held_${i}`] : [])) : [];
  const ctes = held.map((h, i) => {
    const sql = renderHeld(h, first, params, updated);
    return `held_${i} AS (${h.attemptId !== undefined && showsRoute ? `${sql} RETURNING ${ROUTE_COLUMNS}` : sql})`;
  });
  return { ctes: ctes.join(', '), params };
}

/** `w`'s SQL numbered from `$first` after `params` (its parameters appended to them), its route in place. */
export function renderHeld(w: HeldWrite, first: number, params: unknown[], updated: string[]): string {
  let sql = numbered(w.sql, first + params.length);
  params.push(...w.params);
  if (w.routeOf !== undefined) {
    params.push(w.routeOf);
    sql = sql.replaceAll(ORDER_ROUTE, routeExpression(`$${first + params.length - 1}`, updated));
  }
  return sql;
}
