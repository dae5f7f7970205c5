ALTER TABLE catalog_sync_runs DROP COLUMN IF EXISTS supplier;
ALTER TABLE catalog_products DROP COLUMN IF EXISTS supplier;
ALTER TABLE catalog_sku_changes DROP COLUMN IF EXISTS supplier;
ALTER TABLE catalog_skus DROP COLUMN IF EXISTS supplier;
ALTER TABLE catalog_categories DROP COLUMN IF EXISTS supplier;
ALTER TABLE callback_inbox DROP COLUMN IF EXISTS supplier;
ALTER TABLE orders DROP COLUMN IF EXISTS supplier;
