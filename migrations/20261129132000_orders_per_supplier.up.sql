-- Orders and callbacks per supplier (CONTRACT §5, §6, §10): an upstream order id is the supplier's own
-- numbering, so it is unique within a supplier (two suppliers may both have an order 42); a callback's
-- body is recognised as a duplicate within the supplier whose URL it reached; the unfinished orders of
-- a supplier (DELETE's supplier_busy check) are found by their supplier.
ALTER TABLE orders DROP CONSTRAINT orders_upstream_order_id_key;
CREATE UNIQUE INDEX orders_supplier_upstream_order_id ON orders (supplier, upstream_order_id);
CREATE INDEX orders_supplier_status ON orders (supplier, status);
ALTER TABLE callback_inbox DROP CONSTRAINT callback_inbox_body_sha256_key;
ALTER TABLE callback_inbox ADD CONSTRAINT callback_inbox_supplier_body_sha256_key UNIQUE (supplier, body_sha256);
DROP INDEX callback_inbox_order;
CREATE INDEX callback_inbox_order ON callback_inbox (supplier, upstream_order_id);
