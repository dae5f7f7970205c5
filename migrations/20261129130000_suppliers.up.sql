-- Suppliers (CONTRACT §10): the upstream accounts the relay buys from. The UPSTREAM_* supplier is
-- written at every start (managed_by_env, its secret never stored: the environment holds it); the
-- others are added through /internal/suppliers, their API secret sealed with PAYLOAD_ENCRYPTION_KEY.
-- `settings` holds only what the operator set; the rest comes from the profile's preset.
CREATE TABLE suppliers (
  name text PRIMARY KEY CHECK (name ~ '^[a-z][a-z0-9-]{0,31}$'),
  base_url text NOT NULL,
  api_key text NOT NULL,
  api_secret_sealed bytea,
  profile text NOT NULL CHECK (profile IN ('spec', 'dujiao-next')),
  settings jsonb NOT NULL DEFAULT '{}'::jsonb,
  enabled boolean NOT NULL DEFAULT true,
  managed_by_env boolean NOT NULL DEFAULT false,
  created_at timestamptz NOT NULL DEFAULT now(),
  updated_at timestamptz NOT NULL DEFAULT now(),
  CHECK (managed_by_env OR api_secret_sealed IS NOT NULL)
);
