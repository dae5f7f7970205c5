DROP INDEX IF EXISTS orders_stuck;
