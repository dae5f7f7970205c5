-- Claims of pending work that stay cheap when a backlog builds (measured with 500,000 callbacks and
-- 1,000,000 outbox events on PostgreSQL 15):
-- * the callback claim (`state = 'pending' … ORDER BY id LIMIT n`) walked the primary key through every
--   final row once 5,000 callbacks were pending (110–197 ms a claim; 2–5 ms with this index), and
--   releasing an order's deferred callbacks read every pending row (12–21 ms; 0.17 ms);
-- * the outbox claim takes the oldest due events in (next_attempt_at, id) order: with the id in the
--   index it reads them in that order and stops at the limit, with no sort (with the rewritten
--   subject check of OutboxRepository.claimDue, 262–336 ms a claim with a 20,000-event backlog and
--   stale statistics became 0.75 ms).
-- The new outbox index is built first and the old one dropped last: dropping an index locks its
-- table against reads too, so that lock is held only for the end of this transaction, not while an
-- index is built.
CREATE INDEX callback_inbox_pending_id ON callback_inbox (id) WHERE state = 'pending';
CREATE INDEX callback_inbox_pending_order ON callback_inbox (order_id) WHERE state = 'pending';
CREATE INDEX outbox_events_due_id ON outbox_events (next_attempt_at, id) WHERE status = 'pending';
DROP INDEX outbox_events_due;
