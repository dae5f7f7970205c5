ALTER TABLE catalog_sync_runs DROP COLUMN budget_wait_ms;
