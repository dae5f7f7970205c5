-- Orders waiting for the upstream request budget (CONTRACT §5, `queued`): an attempt reserved but not
-- sent. Its number is fixed (unique like any attempt's) and it is the order's one open attempt; the
-- queue is served in the order the attempts were reserved. `price_ceiling` is the most a queued order
-- may pay a unit when it is placed: max_unit_cost, or the sale price the SKU had when it was accepted.
ALTER TABLE order_attempts DROP CONSTRAINT order_attempts_status_check;
ALTER TABLE order_attempts ADD CONSTRAINT order_attempts_status_check CHECK (status IN ('queued', 'submitting', 'accepted', 'rejected', 'submit_unknown'));
DROP INDEX order_attempts_one_open;
CREATE UNIQUE INDEX order_attempts_one_open ON order_attempts (order_id) WHERE status IN ('queued', 'submitting', 'submit_unknown');
CREATE INDEX order_attempts_queued ON order_attempts (created_at, id) WHERE status = 'queued';
ALTER TABLE orders ADD COLUMN price_ceiling numeric;
-- the accepted attempt carried our callback_url: callbacks are expected, the poller is a safety net
ALTER TABLE orders ADD COLUMN callbacks_expected boolean NOT NULL DEFAULT false;
