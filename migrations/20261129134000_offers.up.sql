-- Offers (CONTRACT §11): one shop product bought from several sources, each a supplier's SKU.
-- `operator_sale_price` is what the operator set (null: the pricing rules decide); `sale_price`,
-- `currency` and `available` are the last values computed from the sources, and `updated_at` moves
-- only when the sale price or the availability changes (changed_since, the shop's notifications).
CREATE TABLE offers (
  code text PRIMARY KEY CHECK (code ~ '^[A-Za-z0-9._:-]{1,64}$'),
  title text,
  routing text NOT NULL CHECK (routing IN ('priority', 'cheapest')),
  operator_sale_price numeric,
  sale_price numeric,
  currency text,
  available boolean NOT NULL,
  created_at timestamptz NOT NULL,
  updated_at timestamptz NOT NULL
);
CREATE INDEX offers_updated ON offers (updated_at, code);

-- An offer's sources in their order (position from 0). A SKU is named once per offer; the index by
-- SKU finds the offers a catalog write touches.
CREATE TABLE offer_sources (
  offer_code text NOT NULL REFERENCES offers (code) ON DELETE CASCADE,
  position integer NOT NULL CHECK (position >= 0 AND position < 10),
  supplier text NOT NULL,
  sku_key text NOT NULL,
  PRIMARY KEY (offer_code, position),
  UNIQUE (offer_code, supplier, sku_key)
);
CREATE INDEX offer_sources_sku ON offer_sources (supplier, sku_key);
