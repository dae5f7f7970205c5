ALTER TABLE orders DROP COLUMN callbacks_expected;
ALTER TABLE orders DROP COLUMN price_ceiling;
DROP INDEX order_attempts_queued;
DROP INDEX order_attempts_one_open;
CREATE UNIQUE INDEX order_attempts_one_open ON order_attempts (order_id) WHERE status IN ('submitting', 'submit_unknown');
UPDATE orders SET status = 'rejected', error_code = 'upstream_unavailable', error_message = 'never sent: the queue was removed' WHERE status = 'queued';
UPDATE order_attempts SET status = 'rejected', error_code = 'upstream_unavailable', error_message = 'never sent: the queue was removed' WHERE status = 'queued';
ALTER TABLE order_attempts DROP CONSTRAINT order_attempts_status_check;
ALTER TABLE order_attempts ADD CONSTRAINT order_attempts_status_check CHECK (status IN ('submitting', 'accepted', 'rejected', 'submit_unknown'));
