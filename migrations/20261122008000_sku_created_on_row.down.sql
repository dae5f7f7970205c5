-- The rows' creations go back into the history before the columns are dropped.
INSERT INTO catalog_sku_changes (sku_code, field, kind, old_value, new_value, run_id, source, changed_at)
SELECT sku_code, 'created', 'created', NULL, NULL, created_run_id, created_source, created_at
  FROM catalog_skus WHERE created_source IS NOT NULL;
ALTER TABLE catalog_skus DROP COLUMN created_run_id, DROP COLUMN created_source;
