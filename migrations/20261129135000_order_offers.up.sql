-- Orders placed through an offer (CONTRACT §11): the order records its offer, and each attempt the
-- supplier and SKU it went to (an offer order's attempts may go to different suppliers). An attempt
-- recorded before this takes its order's.
ALTER TABLE orders ADD COLUMN offer text;
ALTER TABLE order_attempts ADD COLUMN supplier text;
ALTER TABLE order_attempts ADD COLUMN sku_key text;
UPDATE order_attempts a SET supplier = o.supplier, sku_key = o.sku_key FROM orders o WHERE o.id = a.order_id;
