-- A history row may come without a sku_key (written by a writer of the shape before 20261127235000,
-- e.g. a script or a restored dump): it belongs to every SKU of its code (CatalogReadRepository
-- .skuChanges reads it with them). The service's own writes always carry the key. Rows of no known
-- SKU keep no key rather than a made-up one.
ALTER TABLE catalog_sku_changes ALTER COLUMN sku_key DROP NOT NULL;
UPDATE catalog_sku_changes SET sku_key = NULL WHERE sku_key = sku_code AND sku_key !~ '^[0-9]+:';
CREATE INDEX catalog_sku_changes_keyless ON catalog_sku_changes (sku_code, id) WHERE sku_key IS NULL;
