CREATE INDEX outbox_events_due ON outbox_events (next_attempt_at) WHERE status = 'pending';
DROP INDEX IF EXISTS outbox_events_due_id;
DROP INDEX IF EXISTS callback_inbox_pending_order;
DROP INDEX IF EXISTS callback_inbox_pending_id;
