-- Catalog (issue 3): the local copy of the upstream catalog, mapped by sku_code, its sync runs,
-- change history, sku_code conflicts and pricing rules.

-- Upstream categories (two levels). A category gone upstream is unlisted, never deleted.
CREATE TABLE catalog_categories (
  id bigint PRIMARY KEY,
  parent_id bigint NOT NULL DEFAULT 0,
  slug text NOT NULL,
  name jsonb NOT NULL,
  icon text NOT NULL DEFAULT '',
  sort_order integer NOT NULL DEFAULT 0,
  listed boolean NOT NULL DEFAULT true,
  created_at timestamptz NOT NULL DEFAULT now(),
  updated_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX catalog_categories_parent ON catalog_categories (parent_id);

-- One row per sku_code: the SKU's upstream fields, its product's fields, the derived sale price and
-- whether it is listed. A sync writes a row only when one of these changes (updated_at moves with it).
CREATE TABLE catalog_skus (
  sku_code text PRIMARY KEY,
  upstream_sku_id bigint NOT NULL,
  product_id bigint NOT NULL,
  product_slug text NOT NULL,
  product_title jsonb NOT NULL,
  product_description jsonb NOT NULL,
  category_id bigint NOT NULL,
  spec_values jsonb NOT NULL,
  cost_price numeric NOT NULL,
  sale_price numeric NOT NULL,
  original_price numeric,
  member_price numeric,
  stock_status text NOT NULL,
  stock_quantity integer NOT NULL,
  sku_active boolean NOT NULL,
  product_active boolean NOT NULL,
  fulfillment_type text NOT NULL,
  manual_form_schema jsonb,
  listed boolean NOT NULL DEFAULT true,
  available boolean GENERATED ALWAYS AS (listed AND sku_active AND product_active AND stock_status <> 'out_of_stock') STORED,
  created_at timestamptz NOT NULL,
  updated_at timestamptz NOT NULL
);
CREATE INDEX catalog_skus_product ON catalog_skus (product_id);
CREATE INDEX catalog_skus_category ON catalog_skus (category_id);
CREATE INDEX catalog_skus_updated ON catalog_skus (updated_at, sku_code);

-- Change history: one row per changed field (and one `created` row per new SKU).
CREATE TABLE catalog_sku_changes (
  id bigserial PRIMARY KEY,
  sku_code text NOT NULL,
  field text NOT NULL,
  kind text NOT NULL CHECK (kind IN ('created', 'price', 'stock', 'sku_id', 'listing', 'other')),
  old_value jsonb,
  new_value jsonb,
  run_id text,
  -- sync (a run's pages), confirm (a run's delisting checks), refresh (an order's fresh read), pricing (a rule change)
  source text NOT NULL,
  changed_at timestamptz NOT NULL
);
CREATE INDEX catalog_sku_changes_sku ON catalog_sku_changes (sku_code, id);

-- Sync runs. At most one is `running` across every replica (the partial unique index); a running row
-- whose heartbeat stopped is recovered as failed by the next run.
CREATE TABLE catalog_sync_runs (
  run_id text PRIMARY KEY,
  -- the pass actually made; planned_mode: what the run set out to do; fallback: why an incremental
  -- plan became a full pass (filter_refused, filter_ignored)
  mode text NOT NULL CHECK (mode IN ('full', 'incremental')),
  planned_mode text NOT NULL,
  requested_mode text,
  fallback text,
  trigger text NOT NULL,
  status text NOT NULL CHECK (status IN ('running', 'succeeded', 'failed')),
  owner text NOT NULL,
  started_at timestamptz NOT NULL,
  heartbeat_at timestamptz NOT NULL,
  finished_at timestamptz,
  updated_after timestamptz,
  pages_total integer NOT NULL DEFAULT 0,
  pages_done integer NOT NULL DEFAULT 0,
  products_seen integer NOT NULL DEFAULT 0,
  skus_seen integer NOT NULL DEFAULT 0,
  skus_created integer NOT NULL DEFAULT 0,
  skus_changed integer NOT NULL DEFAULT 0,
  skus_delisted integer NOT NULL DEFAULT 0,
  skus_relisted integer NOT NULL DEFAULT 0,
  changes jsonb NOT NULL DEFAULT '{}'::jsonb,
  conflicts integer NOT NULL DEFAULT 0,
  confirmed_live integer NOT NULL DEFAULT 0,
  unconfirmed integer NOT NULL DEFAULT 0,
  note text,
  error text
);
CREATE UNIQUE INDEX catalog_sync_runs_one_running ON catalog_sync_runs ((true)) WHERE status = 'running';
CREATE INDEX catalog_sync_runs_started ON catalog_sync_runs (started_at DESC);

-- The fingerprint of each product as the upstream last sent it (a hash of its JSON) and the sku_codes
-- it then listed, all written. A sync compares fingerprints first and maps, prices and writes only the
-- products whose fingerprint moved. A product's fingerprint is dropped when one of its SKUs is
-- unlisted, and not kept while it claims a sku_code another product owns (so that it is looked at
-- again in full).
CREATE TABLE catalog_product_fingerprints (
  product_id bigint PRIMARY KEY,
  fingerprint text NOT NULL,
  sku_codes text[] NOT NULL,
  updated_at timestamptz NOT NULL
);

-- The products a running pass has seen (kept out of catalog_skus so that an unchanged SKU is never
-- written); emptied when the run ends. Unlogged: it only matters to a live run.
CREATE UNLOGGED TABLE catalog_sync_seen (
  run_id text NOT NULL,
  product_id bigint NOT NULL,
  PRIMARY KEY (run_id, product_id)
);

-- Two products claiming one sku_code: the current owner keeps it, the claim is recorded here.
CREATE TABLE catalog_sku_conflicts (
  id bigserial PRIMARY KEY,
  sku_code text NOT NULL,
  owner_product_id bigint NOT NULL,
  claimant_product_id bigint NOT NULL,
  claimant_sku_id bigint,
  run_id text,
  occurrences integer NOT NULL DEFAULT 1,
  first_seen_at timestamptz NOT NULL,
  last_seen_at timestamptz NOT NULL,
  UNIQUE (sku_code, owner_product_id, claimant_product_id)
);

-- Markup rules over the defaults of PRICE_MARKUP_PERCENT / PRICE_MARKUP_FIXED / PRICE_ROUNDING.
CREATE TABLE catalog_pricing_rules (
  id bigserial PRIMARY KEY,
  scope text NOT NULL CHECK (scope IN ('category', 'sku')),
  category_id bigint,
  sku_code text,
  markup_percent numeric NOT NULL,
  markup_fixed numeric NOT NULL,
  rounding numeric CHECK (rounding IS NULL OR rounding > 0),
  updated_at timestamptz NOT NULL DEFAULT now(),
  CHECK ((scope = 'category' AND category_id IS NOT NULL AND sku_code IS NULL)
      OR (scope = 'sku' AND sku_code IS NOT NULL AND category_id IS NULL))
);
CREATE UNIQUE INDEX catalog_pricing_rules_category ON catalog_pricing_rules (category_id) WHERE scope = 'category';
CREATE UNIQUE INDEX catalog_pricing_rules_sku ON catalog_pricing_rules (sku_code) WHERE scope = 'sku';

-- The version of the rules (and of the defaults they were applied with). Every price write holds it
-- FOR SHARE and checks it, so a rule change and the sale prices it implies are never interleaved.
CREATE TABLE catalog_pricing_state (
  id integer PRIMARY KEY CHECK (id = 1),
  version bigint NOT NULL,
  defaults jsonb,
  updated_at timestamptz NOT NULL DEFAULT now()
);
INSERT INTO catalog_pricing_state (id, version, defaults) VALUES (1, 1, NULL);
