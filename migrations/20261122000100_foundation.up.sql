-- Foundation: small key/value state shared by the replicas (wallet snapshot, last ping).
CREATE TABLE relay_state (
  key text PRIMARY KEY,
  value jsonb NOT NULL,
  updated_at timestamptz NOT NULL DEFAULT now()
);
