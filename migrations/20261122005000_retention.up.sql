-- Retention (src/retention): the job deletes, in batches, the final rows of these tables that are
-- older than RETENTION_DAYS. These indexes let a batch find them by age without reading the rest of
-- the table. The partial ones hold only final rows (retention-policy.ts FINAL_STATES: the same lists),
-- so that an insert, always pending, costs them nothing.
CREATE INDEX catalog_sku_changes_changed_at ON catalog_sku_changes (changed_at);
CREATE INDEX callback_inbox_final_age ON callback_inbox ((coalesce(processed_at, received_at)))
  WHERE state IN ('applied', 'unknown_order', 'read_failed', 'ignored');
CREATE INDEX outbox_events_final_age ON outbox_events ((coalesce(last_attempt_at, delivered_at, created_at)))
  WHERE status IN ('delivered', 'dead');
