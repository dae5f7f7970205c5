-- A sync run's products left out of their page for their shape (`skipped_products`: a JSON array of
-- {product_id, reason}, at most 100 entries) and the ordered products an incremental run re-read on
-- their own (`reread_products`; see SYNC_REREAD_ORDERED).
ALTER TABLE catalog_sync_runs ADD COLUMN skipped_products jsonb NOT NULL DEFAULT '[]'::jsonb;
ALTER TABLE catalog_sync_runs ADD COLUMN reread_products integer NOT NULL DEFAULT 0;

-- When the sync last re-read an ordered product on its own (GET /products/{id}): the products ordered
-- lately whose last fresh read is the oldest are re-read first.
CREATE TABLE catalog_product_rereads (
  product_id bigint PRIMARY KEY,
  read_at timestamptz NOT NULL
);
