DROP INDEX IF EXISTS outbox_events_pending_subject;
ALTER TABLE outbox_events
  DROP COLUMN IF EXISTS lease_token,
  DROP COLUMN IF EXISTS last_attempt_at,
  DROP COLUMN IF EXISTS replays;
