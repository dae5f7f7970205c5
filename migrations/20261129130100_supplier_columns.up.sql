-- Every row that belongs to one supplier's account names it (CONTRACT §10). The data of the one
-- upstream the relay served so far is the supplier `main`'s (UPSTREAM_NAME's default).
ALTER TABLE orders ADD COLUMN supplier text NOT NULL DEFAULT 'main';
ALTER TABLE callback_inbox ADD COLUMN supplier text NOT NULL DEFAULT 'main';
ALTER TABLE catalog_categories ADD COLUMN supplier text NOT NULL DEFAULT 'main';
ALTER TABLE catalog_skus ADD COLUMN supplier text NOT NULL DEFAULT 'main';
ALTER TABLE catalog_sku_changes ADD COLUMN supplier text NOT NULL DEFAULT 'main';
ALTER TABLE catalog_products ADD COLUMN supplier text NOT NULL DEFAULT 'main';
ALTER TABLE catalog_sync_runs ADD COLUMN supplier text NOT NULL DEFAULT 'main';
