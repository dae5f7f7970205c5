-- A sync run's total wait for the upstream request budget (CONTRACT §5, `budget_wait_ms`): the
-- milliseconds its requests waited for their tokens, summed over the requests.
ALTER TABLE catalog_sync_runs ADD COLUMN budget_wait_ms bigint NOT NULL DEFAULT 0;
