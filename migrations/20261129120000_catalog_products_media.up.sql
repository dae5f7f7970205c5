-- Products as the upstream lists them (CONTRACT §5 "A product"), one row per product: the upstream's
-- fields as received, and the product as the shop is shown it (`shown`: the same fields with every
-- image named by the relay's own URL, see src/media/). `media_version` moves whenever the upstream's
-- images or content change, so that a render of an older version is never stored over a newer one;
-- `media_pending`: images of the product are still to be fetched (or refusals to be reported) by the
-- media pass of the next sync; `media_key`: the media settings `shown` was made with.
CREATE TABLE catalog_products (
  product_id bigint PRIMARY KEY,
  slug text NOT NULL,
  title jsonb NOT NULL,
  description jsonb NOT NULL,
  content jsonb,
  images jsonb NOT NULL DEFAULT '[]'::jsonb,
  tags jsonb NOT NULL DEFAULT '[]'::jsonb,
  seo_meta jsonb,
  category_id bigint NOT NULL,
  is_active boolean NOT NULL,
  shown jsonb NOT NULL,
  media_version integer NOT NULL DEFAULT 1,
  media_pending boolean NOT NULL DEFAULT true,
  media_key text NOT NULL DEFAULT '',
  created_at timestamptz NOT NULL,
  updated_at timestamptz NOT NULL
);
CREATE INDEX catalog_products_updated_at ON catalog_products (updated_at, product_id);
CREATE INDEX catalog_products_media_pending ON catalog_products (product_id) WHERE media_pending;

-- The image URLs (absolute, resolved against the supplier's origin) each product uses: what keeps a
-- mirrored image from the retention job.
CREATE TABLE catalog_product_media (
  product_id bigint NOT NULL,
  url text NOT NULL,
  PRIMARY KEY (product_id, url)
);
CREATE INDEX catalog_product_media_url ON catalog_product_media (url);

-- Every image URL the relay tried: mirrored (`sha256`, `ext`) or refused (`reason`; a transient one,
-- a timeout or an unreachable host, is tried again after `retry_at`). An unchanged URL is never
-- fetched again.
CREATE TABLE media_sources (
  url text PRIMARY KEY,
  sha256 text,
  ext text,
  reason text,
  retry_at timestamptz,
  fetched_at timestamptz NOT NULL
);
CREATE INDEX media_sources_sha256 ON media_sources (sha256);

-- The mirrored images themselves, by the SHA-256 of their bytes (served at /media/<sha256>.<ext>):
-- in the database, so that every replica serves every image.
CREATE TABLE media_files (
  sha256 text PRIMARY KEY,
  ext text NOT NULL,
  content_type text NOT NULL,
  size integer NOT NULL,
  data bytea NOT NULL,
  created_at timestamptz NOT NULL
);

-- A sync run's images: those left out (`skipped_images`: a JSON array of {product_id, url, reason},
-- at most 100 entries), the images fetched, their bytes and the time the media pass took.
ALTER TABLE catalog_sync_runs ADD COLUMN skipped_images jsonb NOT NULL DEFAULT '[]'::jsonb;
ALTER TABLE catalog_sync_runs ADD COLUMN images_fetched integer NOT NULL DEFAULT 0;
ALTER TABLE catalog_sync_runs ADD COLUMN image_bytes bigint NOT NULL DEFAULT 0;
ALTER TABLE catalog_sync_runs ADD COLUMN media_ms integer NOT NULL DEFAULT 0;
