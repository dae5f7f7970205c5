-- The refunds the upstream reports on an order's detail (Dujiao-Next's `refund_records`), as the last
-- read gave them: a JSON array of {upstream_order_id, type, amount, currency, remark, created_at}.
ALTER TABLE orders ADD COLUMN refund_records jsonb;
