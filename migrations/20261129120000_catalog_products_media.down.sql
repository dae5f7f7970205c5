ALTER TABLE catalog_sync_runs DROP COLUMN media_ms;
ALTER TABLE catalog_sync_runs DROP COLUMN image_bytes;
ALTER TABLE catalog_sync_runs DROP COLUMN images_fetched;
ALTER TABLE catalog_sync_runs DROP COLUMN skipped_images;
DROP TABLE IF EXISTS media_files;
DROP TABLE IF EXISTS media_sources;
DROP TABLE IF EXISTS catalog_product_media;
DROP TABLE IF EXISTS catalog_products;
