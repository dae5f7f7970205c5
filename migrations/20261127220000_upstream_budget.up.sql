-- The upstream request budget, shared by every replica on this database (src/budget). A key is the
-- upstream API key with its base URL, stored as a hash (never the key itself).
-- upstream_budget_keys: one row per key, locked (FOR UPDATE) by each take so that replicas decide one
-- at a time; `blocked_until` after a 429, `demand_until` while a class above the sync waits.
-- upstream_budget_grants: the sliding log of requests granted, stamped by the database's clock;
-- grants older than two windows are pruned by the takes.
CREATE TABLE upstream_budget_keys (
  key_id text PRIMARY KEY,
  blocked_until timestamptz,
  demand_until timestamptz
);

CREATE TABLE upstream_budget_grants (
  id bigserial PRIMARY KEY,
  key_id text NOT NULL REFERENCES upstream_budget_keys (key_id) ON DELETE CASCADE,
  granted_at timestamptz NOT NULL,
  class text NOT NULL
);

CREATE INDEX upstream_budget_grants_key_time ON upstream_budget_grants (key_id, granted_at);
