ALTER TABLE order_attempts DROP COLUMN sku_key;
ALTER TABLE order_attempts DROP COLUMN supplier;
ALTER TABLE orders DROP COLUMN offer;
