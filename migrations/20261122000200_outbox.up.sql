-- Transactional outbox of shop notifications (CONTRACT §7): rows are written in the same
-- transaction as the change they announce, then delivered by the webhook sender.
CREATE TABLE outbox_events (
  id bigserial PRIMARY KEY,
  event_type text NOT NULL,
  -- What the event is about (a shop_order_no, a sku_code), for listing and ordering per subject.
  subject text NOT NULL,
  payload jsonb NOT NULL,
  status text NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'delivered', 'dead')),
  attempts integer NOT NULL DEFAULT 0,
  next_attempt_at timestamptz NOT NULL DEFAULT now(),
  last_error text,
  last_status integer,
  created_at timestamptz NOT NULL DEFAULT now(),
  delivered_at timestamptz
);
CREATE INDEX outbox_events_due ON outbox_events (next_attempt_at) WHERE status = 'pending';
CREATE INDEX outbox_events_status ON outbox_events (status, id);
