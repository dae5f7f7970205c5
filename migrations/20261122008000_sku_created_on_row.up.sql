-- A SKU's creation is recorded on its own row (created_at, and from now on the run and the source
-- that created it) instead of as a `created` row in catalog_sku_changes: a first sync of 50,000 SKUs
-- wrote 50,000 history rows (and their two index entries each) that said nothing the SKU row did not.
-- Measured on PostgreSQL 15 (bench:sync, 49,857 SKUs): the server's CPU for a first sync 1.88–1.96 s
-- with those rows, 1.59–1.62 s without. The history API still lists the `created` entry, read from
-- the row (CatalogRepository.skuChanges). SKUs created before this migration keep their history row
-- and have no created_source.
ALTER TABLE catalog_skus ADD COLUMN created_run_id text, ADD COLUMN created_source text;
