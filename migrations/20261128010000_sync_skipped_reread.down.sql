DROP TABLE IF EXISTS catalog_product_rereads;
ALTER TABLE catalog_sync_runs DROP COLUMN reread_products;
ALTER TABLE catalog_sync_runs DROP COLUMN skipped_products;
