-- Shop webhook delivery (CONTRACT §7): the sender leases due rows by pushing `next_attempt_at`
-- forward and stamping `lease_token`, so that only the claimer's result is recorded; the time of the
-- last attempt (the backoff is measured from it); how often an operator replayed the row. Events of
-- one subject are delivered in order: the index finds an earlier pending event of the same subject.
ALTER TABLE outbox_events
  ADD COLUMN lease_token text,
  ADD COLUMN last_attempt_at timestamptz,
  ADD COLUMN replays integer NOT NULL DEFAULT 0;
CREATE INDEX outbox_events_pending_subject ON outbox_events (subject, id) WHERE status = 'pending';
