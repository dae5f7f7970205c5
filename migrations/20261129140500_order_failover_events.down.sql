DROP INDEX IF EXISTS order_events_failovers;
