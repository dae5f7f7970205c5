DROP TABLE IF EXISTS callback_inbox;
DROP TABLE IF EXISTS order_refunds;
DROP TABLE IF EXISTS order_events;
DROP TABLE IF EXISTS order_attempts;
DROP TABLE IF EXISTS orders;
