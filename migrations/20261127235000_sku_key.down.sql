-- Back to one SKU per sku_code: of the SKUs sharing a code, the listed one (then the most recently
-- updated, then the lowest product id) is kept; the others, their history and their rules are dropped.
CREATE TEMPORARY TABLE sku_key_dropped ON COMMIT DROP AS
SELECT s.sku_key FROM catalog_skus s
 WHERE EXISTS (SELECT 1 FROM catalog_skus o WHERE o.sku_code = s.sku_code AND o.sku_key <> s.sku_key
                  AND (o.listed, o.updated_at, -o.product_id) > (s.listed, s.updated_at, -s.product_id));
DELETE FROM catalog_skus WHERE sku_key IN (SELECT sku_key FROM sku_key_dropped);
DELETE FROM catalog_sku_changes WHERE sku_key IN (SELECT sku_key FROM sku_key_dropped);
DELETE FROM catalog_pricing_rules WHERE sku_key IN (SELECT sku_key FROM sku_key_dropped);
-- A rule by key and a rule by code for one code: the one by key stays.
DELETE FROM catalog_pricing_rules r WHERE r.scope = 'sku' AND r.sku_key IS NULL
   AND EXISTS (SELECT 1 FROM catalog_pricing_rules k WHERE k.scope = 'sku' AND k.sku_key IS NOT NULL AND k.sku_code = r.sku_code);
DELETE FROM catalog_product_fingerprints f
 WHERE EXISTS (SELECT 1 FROM sku_key_dropped d WHERE d.sku_key LIKE f.product_id::text || ':%');

ALTER TABLE orders DROP COLUMN sku_key;

DROP INDEX catalog_pricing_rules_sku_code;
DROP INDEX catalog_pricing_rules_sku;
ALTER TABLE catalog_pricing_rules DROP COLUMN sku_key;
CREATE UNIQUE INDEX catalog_pricing_rules_sku ON catalog_pricing_rules (sku_code) WHERE scope = 'sku';

DROP INDEX catalog_sku_changes_sku;
ALTER TABLE catalog_sku_changes DROP COLUMN sku_key;
CREATE INDEX catalog_sku_changes_sku ON catalog_sku_changes (sku_code, id);

DROP INDEX catalog_skus_updated;
CREATE INDEX catalog_skus_updated ON catalog_skus (updated_at, sku_code);
CREATE INDEX catalog_skus_product ON catalog_skus (product_id);
DROP INDEX catalog_skus_code;
DROP INDEX catalog_skus_key;
ALTER TABLE catalog_skus DROP COLUMN sku_key;
ALTER TABLE catalog_skus DROP CONSTRAINT catalog_skus_pkey;
ALTER TABLE catalog_skus ADD PRIMARY KEY (sku_code);
