-- The rows' creations go back into the history before the columns are dropped. The history is read
-- by id (newest first) and a SKU's creation is its oldest entry: the restored rows take ids below
-- every stored one, in the order the SKUs were created.
INSERT INTO catalog_sku_changes (id, sku_code, field, kind, old_value, new_value, run_id, source, changed_at)
SELECT (SELECT coalesce(min(id), 1) FROM catalog_sku_changes) - row_number() OVER (ORDER BY created_at DESC, sku_code DESC),
       sku_code, 'created', 'created', NULL, NULL, created_run_id, created_source, created_at
  FROM catalog_skus WHERE created_source IS NOT NULL;
ALTER TABLE catalog_skus DROP COLUMN created_run_id, DROP COLUMN created_source;
