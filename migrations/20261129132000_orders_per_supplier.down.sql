DROP INDEX IF EXISTS callback_inbox_order;
CREATE INDEX callback_inbox_order ON callback_inbox (upstream_order_id);
ALTER TABLE callback_inbox DROP CONSTRAINT IF EXISTS callback_inbox_supplier_body_sha256_key;
ALTER TABLE callback_inbox ADD CONSTRAINT callback_inbox_body_sha256_key UNIQUE (body_sha256);
DROP INDEX IF EXISTS orders_supplier_status;
DROP INDEX IF EXISTS orders_supplier_upstream_order_id;
ALTER TABLE orders ADD CONSTRAINT orders_upstream_order_id_key UNIQUE (upstream_order_id);
