ALTER TABLE orders DROP COLUMN refund_records;
