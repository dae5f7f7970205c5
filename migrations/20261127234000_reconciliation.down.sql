DROP TABLE reconciliation_items;
DROP TABLE reconciliation_runs;
DROP INDEX orders_reconcile_unplanned;
DROP INDEX orders_reconcile_due;
ALTER TABLE orders DROP COLUMN reconciled_at;
ALTER TABLE orders DROP COLUMN reconcile_planned_at;
ALTER TABLE orders DROP COLUMN reconcile_at;
