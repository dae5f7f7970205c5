-- The failovers of offer orders (CONTRACT §11), counted by reason over a window for the console's
-- dashboard (GET /internal/offer-failovers): the status events that moved an order to its next
-- source carry `failover_from`; this index holds those events only, by time.
CREATE INDEX order_events_failovers ON order_events (created_at) WHERE detail ? 'failover_from';
