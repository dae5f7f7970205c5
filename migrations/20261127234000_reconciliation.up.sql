-- Reconciliation (issue 25): finished orders are read again from the upstream, on a schedule that
-- thins out with age (RECONCILE_AFTER) and on demand for a range of created_at, to find what the
-- upstream changed without a callback (an admin refund).
--
-- The schedule lives on the order row: `reconcile_at` is the next scheduled read (NULL: none), found by
-- a partial index, and doubles as the claim's lease (a claim moves it past the read). An order joins
-- the schedule once it is finished and nothing follows it (`reconcile_planned_at`: then; the schedule
-- counts from it); the unplanned ones are found by a partial index that holds only finished orders
-- not yet planned. `reconciled_at`: the order's last reconciliation read.
ALTER TABLE orders ADD COLUMN reconcile_at timestamptz;
ALTER TABLE orders ADD COLUMN reconcile_planned_at timestamptz;
ALTER TABLE orders ADD COLUMN reconciled_at timestamptz;
CREATE INDEX orders_reconcile_due ON orders (reconcile_at) WHERE reconcile_at IS NOT NULL;
CREATE INDEX orders_reconcile_unplanned ON orders (id)
  WHERE reconcile_planned_at IS NULL AND upstream_order_id IS NOT NULL
    AND status IN ('partially_delivered', 'delivered', 'completed', 'partially_refunded');
-- Orders that finished more than 7 days ago (the default schedule's last step) join as planned without
-- a scheduled read (an on-demand run reads them); the newer ones are planned by the service, their
-- schedule counting from then.
UPDATE orders SET reconcile_planned_at = now()
 WHERE upstream_order_id IS NOT NULL
   AND status IN ('partially_delivered', 'delivered', 'completed', 'partially_refunded')
   AND coalesce(delivered_at, status_changed_at) < now() - interval '7 days';

-- On-demand runs: one running at a time across replicas; its heartbeat tells an abandoned one.
CREATE TABLE reconciliation_runs (
  run_id text PRIMARY KEY,
  status text NOT NULL CHECK (status IN ('running', 'succeeded', 'failed')),
  from_at timestamptz NOT NULL,
  to_at timestamptz NOT NULL,
  owner text NOT NULL,
  started_at timestamptz NOT NULL,
  heartbeat_at timestamptz NOT NULL,
  finished_at timestamptz,
  orders_total integer NOT NULL DEFAULT 0,
  orders_done integer NOT NULL DEFAULT 0,
  orders_failed integer NOT NULL DEFAULT 0,
  differences integer NOT NULL DEFAULT 0,
  error text
);
CREATE UNIQUE INDEX reconciliation_runs_one_running ON reconciliation_runs ((true)) WHERE status = 'running';
CREATE INDEX reconciliation_runs_started ON reconciliation_runs (started_at DESC);

-- Every difference found: the order, the field (status, amount, refunded_amount), both values, whether
-- the poll's rules applied the upstream's (a report that would move the order back is not), and the
-- run (NULL: the schedule).
CREATE TABLE reconciliation_items (
  id bigserial PRIMARY KEY,
  order_id bigint NOT NULL REFERENCES orders (id) ON DELETE CASCADE,
  shop_order_no text NOT NULL,
  field text NOT NULL,
  local_value text,
  upstream_value text,
  applied boolean NOT NULL,
  run_id text,
  detected_at timestamptz NOT NULL
);
CREATE INDEX reconciliation_items_shop_order ON reconciliation_items (shop_order_no, id);
CREATE INDEX reconciliation_items_order ON reconciliation_items (order_id);
