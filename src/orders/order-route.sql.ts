/**
 * The SQL of an order's route (CONTRACT §11) inside a statement of `OrderTx.writeWithRoute`: the
 * placeholder a write puts where the route goes, and the expression OrderTx puts in its place.
 */

/**
 * In the SQL of `OrderTx.writeWithRoute`: the order's route (CONTRACT §11) as a jsonb array, one
 * `{attempt, supplier, sku_key, outcome, error_code}` per attempt, oldest first, as `OrderReads.route`
 * reads it.
 */
export const ORDER_ROUTE = '{{order_route}}';

export const ROUTE_COLUMNS = 'id, order_id, attempt_no, supplier, sku_key, status, error_code';

/**
 * The route of the order whose id is parameter `orderParam`, as one jsonb expression. The attempt
 * updates sent in the same statement (`updated`: their CTEs, which return ROUTE_COLUMNS) are not
 * visible to the statement's reads of `order_attempts`, so their rows stand in for the stored ones.
 */
export function routeExpression(orderParam: string, updated: string[]): string {
  const attempts =
    updated.length === 0
      ? 'order_attempts'
      : `(${updated.map((u) => `SELECT ${ROUTE_COLUMNS} FROM ${u}`).join(' UNION ALL ')}
          UNION ALL SELECT ${ROUTE_COLUMNS} FROM order_attempts
           WHERE id NOT IN (${updated.map((u) => `SELECT id FROM ${u}`).join(' UNION ALL ')}))`;
  return `(SELECT coalesce(jsonb_agg(jsonb_build_object('attempt', a.attempt_no, 'supplier', coalesce(a.supplier, o.supplier),
                 'sku_key', coalesce(a.sku_key, o.sku_key), 'outcome', a.status, 'error_code', a.error_code)
                 ORDER BY a.attempt_no), '[]'::jsonb)
             FROM ${attempts} a JOIN orders o ON o.id = a.order_id WHERE a.order_id = ${orderParam})`;
}
