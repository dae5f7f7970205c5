DROP INDEX catalog_sku_changes_keyless;
UPDATE catalog_sku_changes h
   SET sku_key = coalesce((SELECT s.sku_key FROM catalog_skus s WHERE s.sku_code = h.sku_code ORDER BY s.listed DESC, s.updated_at DESC LIMIT 1), h.sku_code)
 WHERE h.sku_key IS NULL;
ALTER TABLE catalog_sku_changes ALTER COLUMN sku_key SET NOT NULL;
