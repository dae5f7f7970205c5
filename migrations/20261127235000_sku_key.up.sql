-- A SKU is the upstream's pair (product_id, sku_code): Dujiao-Next's sku_code is unique only within a
-- product (a product without specifications has the one code DEFAULT). catalog_skus is keyed by that
-- pair, and every SKU has a `sku_key`, `<product_id>:<sku_code>`, unique and stable for as long as the
-- upstream product exists: the history, the SKU rules and the orders name a SKU by it. Two products
-- with the same code are two SKUs; nothing is a conflict any more (catalog_sku_conflicts keeps what
-- was recorded before and gets no new rows).
ALTER TABLE catalog_skus DROP CONSTRAINT catalog_skus_pkey;
ALTER TABLE catalog_skus ADD PRIMARY KEY (product_id, sku_code);
ALTER TABLE catalog_skus ADD COLUMN sku_key text GENERATED ALWAYS AS (product_id::text || ':' || sku_code) STORED;
CREATE UNIQUE INDEX catalog_skus_key ON catalog_skus (sku_key);
-- A plain sku_code is looked up here (and the list without changed_since is ordered by it); the
-- primary key serves the lookups by product that catalog_skus_product served.
CREATE INDEX catalog_skus_code ON catalog_skus (sku_code, product_id);
DROP INDEX catalog_skus_product;
-- changed_since's keyset: (updated_at, sku_code, product_id).
DROP INDEX catalog_skus_updated;
CREATE INDEX catalog_skus_updated ON catalog_skus (updated_at, sku_code, product_id);

-- History by key. A row recorded while its code belonged to another product (a code that moved from
-- one product to another records a `product_id` change) belongs to that product: the key of a row is
-- the product_id the code had then, i.e. the old value of the next product_id change recorded after
-- it, or else the product the SKU row has now.
ALTER TABLE catalog_sku_changes ADD COLUMN sku_key text;
UPDATE catalog_sku_changes h
   SET sku_key = coalesce(
         (SELECT m.old_value #>> '{}' FROM catalog_sku_changes m
           WHERE m.sku_code = h.sku_code AND m.field = 'product_id' AND m.id > h.id ORDER BY m.id LIMIT 1),
         (SELECT s.product_id::text FROM catalog_skus s WHERE s.sku_code = h.sku_code)) || ':' || h.sku_code;
-- A row whose SKU is unknown (none: SKU rows are never deleted) keeps its code as its key.
UPDATE catalog_sku_changes SET sku_key = sku_code WHERE sku_key IS NULL;
ALTER TABLE catalog_sku_changes ALTER COLUMN sku_key SET NOT NULL;
DROP INDEX catalog_sku_changes_sku;
CREATE INDEX catalog_sku_changes_sku ON catalog_sku_changes (sku_key, id);

-- A SKU rule names its SKU by key; a rule set by a plain sku_code that no SKU carried then keeps only
-- the code (sku_key NULL) and applies to the SKUs carrying that code.
ALTER TABLE catalog_pricing_rules ADD COLUMN sku_key text;
UPDATE catalog_pricing_rules r SET sku_key = s.sku_key FROM catalog_skus s WHERE r.scope = 'sku' AND s.sku_code = r.sku_code;
DROP INDEX catalog_pricing_rules_sku;
CREATE UNIQUE INDEX catalog_pricing_rules_sku ON catalog_pricing_rules (sku_key) WHERE scope = 'sku' AND sku_key IS NOT NULL;
CREATE UNIQUE INDEX catalog_pricing_rules_sku_code ON catalog_pricing_rules (sku_code) WHERE scope = 'sku' AND sku_key IS NULL;

-- An order keeps the sku_code the shop sent (the idempotency fingerprint is over it) and the key of
-- the SKU it resolved to.
ALTER TABLE orders ADD COLUMN sku_key text;
UPDATE orders o SET sku_key = o.product_id::text || ':' || o.sku_code WHERE o.product_id IS NOT NULL;
UPDATE orders o SET sku_key = s.sku_key FROM catalog_skus s WHERE o.sku_key IS NULL AND s.sku_code = o.sku_code;
