-- Back to one catalog: only the supplier `main`'s rows are kept.
ALTER TABLE catalog_sync_runs DROP COLUMN skipped_categories;
UPDATE relay_state SET key = 'catalog.currency' WHERE key = 'catalog.currency:main';
DELETE FROM relay_state WHERE key LIKE 'catalog.currency:%';

DELETE FROM catalog_pricing_rules WHERE coalesce(supplier, 'main') <> 'main' OR scope = 'supplier';
DROP INDEX catalog_pricing_rules_supplier;
DROP INDEX catalog_pricing_rules_sku;
CREATE UNIQUE INDEX catalog_pricing_rules_sku ON catalog_pricing_rules (sku_key) WHERE scope = 'sku' AND sku_key IS NOT NULL;
DROP INDEX catalog_pricing_rules_category;
CREATE UNIQUE INDEX catalog_pricing_rules_category ON catalog_pricing_rules (category_id) WHERE scope = 'category';
ALTER TABLE catalog_pricing_rules DROP CONSTRAINT catalog_pricing_rules_check;
ALTER TABLE catalog_pricing_rules DROP CONSTRAINT catalog_pricing_rules_scope_check;
ALTER TABLE catalog_pricing_rules ADD CONSTRAINT catalog_pricing_rules_scope_check CHECK (scope IN ('category', 'sku'));
ALTER TABLE catalog_pricing_rules ADD CONSTRAINT catalog_pricing_rules_check CHECK (
     (scope = 'category' AND category_id IS NOT NULL AND sku_code IS NULL)
  OR (scope = 'sku' AND sku_code IS NOT NULL AND category_id IS NULL));
ALTER TABLE catalog_pricing_rules DROP COLUMN supplier;

DELETE FROM catalog_product_media WHERE supplier <> 'main';
ALTER TABLE catalog_product_media DROP CONSTRAINT catalog_product_media_pkey;
ALTER TABLE catalog_product_media ADD PRIMARY KEY (product_id, url);
ALTER TABLE catalog_product_media DROP COLUMN supplier;
DELETE FROM catalog_products WHERE supplier <> 'main';
DROP INDEX catalog_products_media_pending;
CREATE INDEX catalog_products_media_pending ON catalog_products (product_id) WHERE media_pending;
ALTER TABLE catalog_products DROP CONSTRAINT catalog_products_pkey;
ALTER TABLE catalog_products ADD PRIMARY KEY (product_id);

DELETE FROM catalog_product_rereads WHERE supplier <> 'main';
ALTER TABLE catalog_product_rereads DROP CONSTRAINT catalog_product_rereads_pkey;
ALTER TABLE catalog_product_rereads ADD PRIMARY KEY (product_id);
ALTER TABLE catalog_product_rereads DROP COLUMN supplier;
DELETE FROM catalog_product_fingerprints WHERE supplier <> 'main';
ALTER TABLE catalog_product_fingerprints DROP CONSTRAINT catalog_product_fingerprints_pkey;
ALTER TABLE catalog_product_fingerprints ADD PRIMARY KEY (product_id);
ALTER TABLE catalog_product_fingerprints DROP COLUMN supplier;

UPDATE catalog_sync_runs SET status = 'failed', error = 'stopped by a migration' WHERE status = 'running' AND supplier <> 'main';
DELETE FROM catalog_sync_runs WHERE supplier <> 'main';
DROP INDEX catalog_sync_runs_supplier_started;
DROP INDEX catalog_sync_runs_one_running;
CREATE UNIQUE INDEX catalog_sync_runs_one_running ON catalog_sync_runs ((true)) WHERE status = 'running';

DELETE FROM catalog_sku_changes WHERE supplier <> 'main';
DROP INDEX catalog_sku_changes_sku;
CREATE INDEX catalog_sku_changes_sku ON catalog_sku_changes (sku_key, id);

DELETE FROM catalog_skus WHERE supplier <> 'main';
DROP INDEX catalog_skus_category;
CREATE INDEX catalog_skus_category ON catalog_skus (category_id);
DROP INDEX catalog_skus_key_any;
DROP INDEX catalog_skus_key;
CREATE UNIQUE INDEX catalog_skus_key ON catalog_skus (sku_key);
ALTER TABLE catalog_skus DROP CONSTRAINT catalog_skus_pkey;
ALTER TABLE catalog_skus ADD PRIMARY KEY (product_id, sku_code);

DELETE FROM catalog_categories WHERE supplier <> 'main';
DROP INDEX catalog_categories_parent;
CREATE INDEX catalog_categories_parent ON catalog_categories (parent_id);
ALTER TABLE catalog_categories DROP CONSTRAINT catalog_categories_pkey;
ALTER TABLE catalog_categories ADD PRIMARY KEY (id);
