-- Orders relayed to the upstream (CONTRACT §5): one row per shop order (shop_order_no is the
-- idempotency key), one row per attempt (its downstream_order_no is unique), every applied change as
-- an event, the local refund, and the inbox of verified upstream callbacks (CONTRACT §6).
CREATE TABLE orders (
  id bigserial PRIMARY KEY,
  shop_order_no text NOT NULL UNIQUE,
  sku_code text NOT NULL,
  quantity integer NOT NULL CHECK (quantity > 0),
  -- sha-256 of the normalized request (sku_code, quantity, manual_form_data, max_unit_cost)
  request_fingerprint text NOT NULL,
  max_unit_cost numeric,
  trace_id text NOT NULL,
  status text NOT NULL,
  -- the current attempt and its number upstream
  attempt integer NOT NULL DEFAULT 1,
  downstream_order_no text NOT NULL,
  upstream_order_id bigint UNIQUE,
  upstream_order_no text,
  product_id bigint,
  sku_id bigint,
  -- the unit price checked before sending, and quantity × it
  unit_cost numeric,
  expected_amount numeric,
  amount numeric,
  currency text,
  refunded_amount numeric,
  error_code text,
  error_message text,
  fulfillment_type text,
  delivered_at timestamptz,
  -- AES-256-GCM of {items, delivery_data}, the order id as associated data (never plain text)
  delivery_sealed bytea,
  anomaly text,
  status_changed_at timestamptz NOT NULL,
  -- last time the order moved (stuck detection)
  progress_at timestamptz NOT NULL,
  stuck_since timestamptz,
  -- polling: due time, current backoff, lease of the replica polling it
  next_poll_at timestamptz,
  poll_interval_ms integer,
  poll_lease_until timestamptz,
  -- a cancel in progress: set in one short transaction before the upstream call, checked and cleared
  -- by the transaction that applies the answer; callbacks and polls wait while it is set
  op_kind text,
  op_token text,
  op_until timestamptz,
  created_at timestamptz NOT NULL,
  updated_at timestamptz NOT NULL
);
CREATE INDEX orders_poll_due ON orders (next_poll_at) WHERE next_poll_at IS NOT NULL;
CREATE INDEX orders_status_id ON orders (status, id);
CREATE INDEX orders_created ON orders (created_at, id);

CREATE TABLE order_attempts (
  id bigserial PRIMARY KEY,
  order_id bigint NOT NULL REFERENCES orders (id) ON DELETE CASCADE,
  attempt_no integer NOT NULL,
  downstream_order_no text NOT NULL UNIQUE,
  status text NOT NULL CHECK (status IN ('submitting', 'accepted', 'rejected', 'submit_unknown')),
  -- the create request (sku_id, quantity, manual_form_data, trace_id, with_callback): a re-send is the same
  request jsonb NOT NULL,
  sends integer NOT NULL DEFAULT 0,
  -- lease of the one send in flight (NULL: none)
  sending_until timestamptz,
  unknown_since timestamptz,
  next_resend_at timestamptz,
  upstream_order_id bigint,
  http_status integer,
  error_code text,
  error_message text,
  created_at timestamptz NOT NULL,
  finished_at timestamptz,
  UNIQUE (order_id, attempt_no)
);
-- one open attempt per order
CREATE UNIQUE INDEX order_attempts_one_open ON order_attempts (order_id) WHERE status IN ('submitting', 'submit_unknown');
CREATE INDEX order_attempts_submitting ON order_attempts (sending_until) WHERE status = 'submitting';
CREATE INDEX order_attempts_unknown ON order_attempts (next_resend_at) WHERE status = 'submit_unknown';

CREATE TABLE order_events (
  id bigserial PRIMARY KEY,
  order_id bigint NOT NULL REFERENCES orders (id) ON DELETE CASCADE,
  source text NOT NULL CHECK (source IN ('api', 'callback', 'poll', 'operator')),
  kind text NOT NULL,
  old_status text,
  new_status text,
  detail jsonb,
  created_at timestamptz NOT NULL
);
CREATE INDEX order_events_order ON order_events (order_id, id);

CREATE TABLE order_refunds (
  order_id bigint PRIMARY KEY REFERENCES orders (id) ON DELETE CASCADE,
  amount numeric,
  currency text,
  created_at timestamptz NOT NULL
);

CREATE TABLE callback_inbox (
  id bigserial PRIMARY KEY,
  -- sha-256 of the raw body: the same snapshot delivered again is a duplicate
  body_sha256 text NOT NULL UNIQUE,
  event text,
  upstream_order_id bigint,
  upstream_order_no text,
  downstream_order_no text,
  reported_status text,
  callback_ts bigint,
  duplicates integer NOT NULL DEFAULT 0,
  state text NOT NULL DEFAULT 'pending' CHECK (state IN ('pending', 'applied', 'unknown_order', 'read_failed', 'ignored')),
  order_id bigint,
  tries integer NOT NULL DEFAULT 0,
  next_try_at timestamptz NOT NULL,
  outcome text,
  received_at timestamptz NOT NULL,
  processed_at timestamptz
);
CREATE INDEX callback_inbox_pending ON callback_inbox (next_try_at) WHERE state = 'pending';
CREATE INDEX callback_inbox_order ON callback_inbox (upstream_order_id);
