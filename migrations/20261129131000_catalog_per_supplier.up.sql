-- The catalog per supplier (CONTRACT §10): each supplier's SKUs, products, categories, fingerprints,
-- re-reads and media rows are keyed within that supplier (two suppliers may both have product 1, and
-- a sku_key is unique within its supplier only); one sync run at a time per supplier; pricing rules may
-- name a supplier. The rows already stored are the supplier `main`'s (migration 20261129130100).

-- Categories: ids are the supplier's.
ALTER TABLE catalog_categories DROP CONSTRAINT catalog_categories_pkey;
ALTER TABLE catalog_categories ADD PRIMARY KEY (supplier, id);
DROP INDEX catalog_categories_parent;
CREATE INDEX catalog_categories_parent ON catalog_categories (supplier, parent_id);

-- SKUs: (supplier, product_id, sku_code); sku_key unique within a supplier, still found alone by index.
ALTER TABLE catalog_skus DROP CONSTRAINT catalog_skus_pkey;
ALTER TABLE catalog_skus ADD PRIMARY KEY (supplier, product_id, sku_code);
DROP INDEX catalog_skus_key;
CREATE UNIQUE INDEX catalog_skus_key ON catalog_skus (supplier, sku_key);
CREATE INDEX catalog_skus_key_any ON catalog_skus (sku_key);
DROP INDEX catalog_skus_category;
CREATE INDEX catalog_skus_category ON catalog_skus (supplier, category_id);

-- History: by (supplier, sku_key).
DROP INDEX catalog_sku_changes_sku;
CREATE INDEX catalog_sku_changes_sku ON catalog_sku_changes (supplier, sku_key, id);

-- Runs: one running per supplier; each supplier's latest runs by index.
DROP INDEX catalog_sync_runs_one_running;
CREATE UNIQUE INDEX catalog_sync_runs_one_running ON catalog_sync_runs (supplier) WHERE status = 'running';
CREATE INDEX catalog_sync_runs_supplier_started ON catalog_sync_runs (supplier, started_at DESC);

-- Fingerprints and re-reads: per (supplier, product_id).
ALTER TABLE catalog_product_fingerprints ADD COLUMN supplier text NOT NULL DEFAULT 'main';
ALTER TABLE catalog_product_fingerprints DROP CONSTRAINT catalog_product_fingerprints_pkey;
ALTER TABLE catalog_product_fingerprints ADD PRIMARY KEY (supplier, product_id);
ALTER TABLE catalog_product_rereads ADD COLUMN supplier text NOT NULL DEFAULT 'main';
ALTER TABLE catalog_product_rereads DROP CONSTRAINT catalog_product_rereads_pkey;
ALTER TABLE catalog_product_rereads ADD PRIMARY KEY (supplier, product_id);

-- Products and their image URLs: per (supplier, product_id).
ALTER TABLE catalog_products DROP CONSTRAINT catalog_products_pkey;
ALTER TABLE catalog_products ADD PRIMARY KEY (supplier, product_id);
DROP INDEX catalog_products_media_pending;
CREATE INDEX catalog_products_media_pending ON catalog_products (supplier, product_id) WHERE media_pending;
ALTER TABLE catalog_product_media ADD COLUMN supplier text NOT NULL DEFAULT 'main';
ALTER TABLE catalog_product_media DROP CONSTRAINT catalog_product_media_pkey;
ALTER TABLE catalog_product_media ADD PRIMARY KEY (supplier, product_id, url);

-- Pricing rules: a category rule and a SKU rule by key name their supplier; a `supplier` rule covers
-- every SKU of one supplier; a rule by code alone (sku_key null, from before SKUs were keyed by
-- product) names none and applies to that code at every supplier.
ALTER TABLE catalog_pricing_rules ADD COLUMN supplier text;
UPDATE catalog_pricing_rules SET supplier = 'main' WHERE scope = 'category' OR sku_key IS NOT NULL;
ALTER TABLE catalog_pricing_rules DROP CONSTRAINT catalog_pricing_rules_scope_check;
ALTER TABLE catalog_pricing_rules DROP CONSTRAINT catalog_pricing_rules_check;
ALTER TABLE catalog_pricing_rules ADD CONSTRAINT catalog_pricing_rules_scope_check CHECK (scope IN ('supplier', 'category', 'sku'));
ALTER TABLE catalog_pricing_rules ADD CONSTRAINT catalog_pricing_rules_check CHECK (
     (scope = 'supplier' AND supplier IS NOT NULL AND category_id IS NULL AND sku_code IS NULL)
  OR (scope = 'category' AND supplier IS NOT NULL AND category_id IS NOT NULL AND sku_code IS NULL)
  OR (scope = 'sku' AND sku_code IS NOT NULL AND category_id IS NULL AND ((sku_key IS NULL) = (supplier IS NULL))));
DROP INDEX catalog_pricing_rules_category;
CREATE UNIQUE INDEX catalog_pricing_rules_category ON catalog_pricing_rules (supplier, category_id) WHERE scope = 'category';
DROP INDEX catalog_pricing_rules_sku;
CREATE UNIQUE INDEX catalog_pricing_rules_sku ON catalog_pricing_rules (supplier, sku_key) WHERE scope = 'sku' AND sku_key IS NOT NULL;
CREATE UNIQUE INDEX catalog_pricing_rules_supplier ON catalog_pricing_rules (supplier) WHERE scope = 'supplier';

-- The catalog currency (each supplier's ping): one relay_state key per supplier.
UPDATE relay_state SET key = 'catalog.currency:main' WHERE key = 'catalog.currency';

-- A sync run's categories left out for their shape (`skipped_categories`: a JSON array of
-- {category_id, reason}, at most 100 entries), as its products are.
ALTER TABLE catalog_sync_runs ADD COLUMN skipped_categories jsonb NOT NULL DEFAULT '[]'::jsonb;
