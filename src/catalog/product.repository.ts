/**
 * The catalog's products (catalog_products: the upstream's fields as received and their images as
 * shown, see src/media/product-media.ts) and the image URLs each uses (catalog_product_media). Written
 * by CatalogWriter with the product's SKUs, re-rendered by the media pass of a sync (ProductMediaService),
 * read by the internal API. A product is (supplier, product_id): two suppliers may both have product 1.
 */
import { Injectable } from '@nestjs/common';
import { DataSource } from 'typeorm';
import type { CatalogProductsRow } from '../database/rows.generated.js';
import { writesFence, type Db } from './catalog.records.js';

/** The images of a product as the shop is shown them. */
export interface ShownMedia {
  images: string[];
  content: Record<string, string> | null;
}

/** A product as written from an upstream product: the columns of `catalog_products` it sets, ids as numbers. */
export interface ProductRow extends Pick<
  CatalogProductsRow,
  'slug' | 'content' | 'images' | 'tags' | 'seo_meta' | 'is_active' | 'media_pending' | 'media_key'
> {
  product_id: number;
  title: Record<string, string>;
  description: Record<string, string>;
  category_id: number;
  shown: ShownMedia;
  /** The absolute image URLs it uses. */
  urls: string[];
}

/** A product as the internal API reads it (PRODUCT_COLUMNS): its row's columns, its SKUs' keys, whether one is listed. */
export interface StoredProduct extends Pick<CatalogProductsRow, 'slug' | 'tags' | 'seo_meta' | 'updated_at'> {
  supplier: string;
  product_id: number;
  title: Record<string, string>;
  description: Record<string, string>;
  category_id: number;
  shown: ShownMedia;
  sku_keys: string[];
  listed: boolean;
}

/** What the media pass renders: the upstream's images and content of a product, at a version. */
export interface MediaWork extends Pick<CatalogProductsRow, 'content' | 'images' | 'media_version'> {
  supplier: string;
  product_id: number;
}

export interface ProductFilter {
  supplier?: string;
  listed?: boolean;
  changedSince?: Date;
  offset: number;
  limit: number;
}

const PRODUCT_COLUMNS = `p.supplier, p.product_id, p.slug, p.title, p.description, p.tags, p.seo_meta, p.category_id, p.shown, p.updated_at,
  coalesce((SELECT array_agg(s.sku_key ORDER BY s.sku_code) FROM catalog_skus s
    WHERE s.supplier = p.supplier AND s.product_id = p.product_id), '{}'::text[]) AS sku_keys,
  EXISTS (SELECT 1 FROM catalog_skus s WHERE s.supplier = p.supplier AND s.product_id = p.product_id AND s.listed) AS listed`;

function toStoredProduct(raw: Record<string, unknown>): StoredProduct {
  return {
    ...(raw as unknown as StoredProduct),
    product_id: Number(raw.product_id),
    category_id: Number(raw.category_id),
    listed: Boolean(raw.listed),
  };
}

@Injectable()
export class ProductRepository {
  constructor(private readonly dataSource: DataSource) {}

  /**
   * Writes products in the caller's transaction: a row only when a field differs; `updated_at` moves
   * when what the shop sees of the product changed (its media version when the upstream's images or
   * content did). Returns the products whose `updated_at` moved, and whether each is new.
   */
  async upsert(em: Db, supplier: string, rows: ProductRow[], now: Date): Promise<Array<{ product_id: number; created: boolean }>> {
    if (rows.length === 0) return [];
    // one row per product (a product on two pages of one batch: the last wins)
    const byId = new Map<number, ProductRow>();
    for (const r of rows) byId.set(r.product_id, r);
    const list = [...byId.values()];
    const json = JSON.stringify(list.map(({ urls: _urls, ...r }) => r));
    const out = (await em.query(
      `WITH x AS (
         SELECT * FROM jsonb_to_recordset($1::jsonb) AS x(product_id bigint, slug text, title jsonb, description jsonb,
           content jsonb, images jsonb, tags jsonb, seo_meta jsonb, category_id bigint, is_active boolean, shown jsonb,
           media_pending boolean, media_key text)
       ), u AS (
         INSERT INTO catalog_products AS p (supplier, product_id, slug, title, description, content, images, tags, seo_meta,
           category_id, is_active, shown, media_pending, media_key, created_at, updated_at)
         SELECT $3::text, product_id, slug, title, description, content, coalesce(images, '[]'::jsonb),
           coalesce(tags, '[]'::jsonb), seo_meta, category_id, is_active, shown, media_pending, media_key, $2, $2 FROM x
         ON CONFLICT (supplier, product_id) DO UPDATE SET
           slug = EXCLUDED.slug, title = EXCLUDED.title, description = EXCLUDED.description, content = EXCLUDED.content,
           images = EXCLUDED.images, tags = EXCLUDED.tags, seo_meta = EXCLUDED.seo_meta, category_id = EXCLUDED.category_id,
           is_active = EXCLUDED.is_active, shown = EXCLUDED.shown,
           media_pending = EXCLUDED.media_pending, media_key = EXCLUDED.media_key,
           media_version = p.media_version
             + CASE WHEN (p.content, p.images) IS DISTINCT FROM (EXCLUDED.content, EXCLUDED.images) THEN 1 ELSE 0 END,
           updated_at = CASE WHEN (p.slug, p.title, p.description, p.tags, p.seo_meta, p.category_id, p.is_active, p.shown)
             IS DISTINCT FROM (EXCLUDED.slug, EXCLUDED.title, EXCLUDED.description, EXCLUDED.tags, EXCLUDED.seo_meta,
               EXCLUDED.category_id, EXCLUDED.is_active, EXCLUDED.shown)
             THEN $2 ELSE p.updated_at END
         WHERE (p.slug, p.title, p.description, p.content, p.images, p.tags, p.seo_meta, p.category_id, p.is_active, p.shown,
             p.media_pending, p.media_key)
           IS DISTINCT FROM (EXCLUDED.slug, EXCLUDED.title, EXCLUDED.description, EXCLUDED.content, EXCLUDED.images,
             EXCLUDED.tags, EXCLUDED.seo_meta, EXCLUDED.category_id, EXCLUDED.is_active, EXCLUDED.shown,
             EXCLUDED.media_pending, EXCLUDED.media_key)
         RETURNING p.product_id, p.created_at = $2 AS created, p.updated_at = $2 AS moved
       )
       SELECT product_id, created FROM u WHERE moved`,
      [json, now, supplier],
    )) as Array<{ product_id: string | number; created: boolean }>;
    await this.replaceMedia(
      em,
      supplier,
      list.map((r) => ({ productId: r.product_id, urls: r.urls })),
    );
    return out.map((r) => ({ product_id: Number(r.product_id), created: Boolean(r.created) }));
  }

  /** The image URLs of these products, in place of those they had. */
  private async replaceMedia(em: Db, supplier: string, entries: Array<{ productId: number; urls: string[] }>): Promise<void> {
    if (entries.length === 0) return;
    const pairs = entries.flatMap((e) => [...new Set(e.urls)].map((url) => ({ product_id: e.productId, url })));
    await em.query(
      `WITH d AS (
         DELETE FROM catalog_product_media pm WHERE pm.supplier = $3 AND pm.product_id = ANY($1::bigint[])
           AND NOT EXISTS (SELECT 1 FROM jsonb_to_recordset($2::jsonb) AS x(product_id bigint, url text) WHERE x.product_id =
             pm.product_id AND x.url = pm.url)
       )
       INSERT INTO catalog_product_media (supplier, product_id, url)
       SELECT $3, product_id, url FROM jsonb_to_recordset($2::jsonb) AS x(product_id bigint, url text)
       ON CONFLICT DO NOTHING`,
      [entries.map((e) => e.productId), JSON.stringify(pairs), supplier],
    );
  }

  /** A product's SKUs were unlisted: its `listed` moved, so does its `updated_at`. */
  async touch(em: Db, supplier: string, productId: number, now: Date): Promise<void> {
    await em.query(`UPDATE catalog_products SET updated_at = $2 WHERE supplier = $3 AND product_id = $1`, [productId, now, supplier]);
  }

  /** A supplier's SKUs were all unlisted (it was deleted): its products' `listed` moved, and its categories are unlisted. */
  async unlistSupplier(em: Db, supplier: string, now: Date): Promise<void> {
    await em.query(`UPDATE catalog_products SET updated_at = $2 WHERE supplier = $1`, [supplier, now]);
    await em.query(`UPDATE catalog_categories SET listed = false, updated_at = $2 WHERE supplier = $1 AND listed`, [supplier, now]);
  }

  /**
   * Products whose images are to be rendered (again) by the media pass, after `afterId`: pending ones,
   * those rendered with other media settings, and those using a refused URL due to be tried again.
   */
  async mediaWork(supplier: string, afterId: number, key: string, now: Date, limit: number): Promise<MediaWork[]> {
    const rows = (await this.dataSource.query(
      `SELECT p.product_id, p.content, p.images, p.media_version FROM catalog_products p
        WHERE p.supplier = $5 AND p.product_id > $1 AND (p.media_pending OR p.media_key <> $2 OR EXISTS (
          SELECT 1 FROM catalog_product_media pm JOIN media_sources s ON s.url = pm.url
           WHERE pm.supplier = p.supplier AND pm.product_id = p.product_id AND s.sha256 IS NULL AND s.retry_at <= $3))
        ORDER BY p.product_id LIMIT $4`,
      [afterId, key, now, limit, supplier],
    )) as Array<Record<string, unknown>>;
    return rows.map((r) => ({
      supplier,
      product_id: Number(r.product_id),
      content: r.content,
      images: r.images,
      media_version: Number(r.media_version),
    }));
  }

  /**
   * Stores the media pass's renders, each only over the version it was made from (a product written
   * since keeps its newer render), in the caller's transaction. Returns the products whose shown images
   * changed, and whether each was pending (its images not all known) before.
   */
  async storeRenders(
    em: Db,
    supplier: string,
    renders: Array<{
      product_id: number;
      media_version: number;
      shown: ShownMedia;
      media_pending: boolean;
      media_key: string;
      urls: string[];
    }>,
    now: Date,
  ): Promise<Array<{ product_id: number; updated_at: Date; was_pending: boolean }>> {
    if (renders.length === 0) return [];
    const rows = (await em.query(
      `WITH x AS (
         SELECT * FROM jsonb_to_recordset($1::jsonb) AS x(product_id bigint, media_version integer, shown jsonb, media_pending
           boolean, media_key text)
       ), o AS (
         SELECT c.product_id, c.media_pending AS was_pending FROM catalog_products c JOIN x ON c.supplier = $3 AND x.product_id =
           c.product_id
       )
       UPDATE catalog_products p SET shown = x.shown, media_pending = x.media_pending, media_key = x.media_key,
         updated_at = CASE WHEN p.shown IS DISTINCT FROM x.shown THEN $2 ELSE p.updated_at END
         FROM x JOIN o ON o.product_id = x.product_id
        WHERE p.supplier = $3 AND p.product_id = x.product_id AND p.media_version = x.media_version
       RETURNING p.product_id, p.updated_at, o.was_pending`,
      [JSON.stringify(renders.map(({ urls: _urls, ...r }) => r)), now, supplier],
    )) as Array<{ product_id: string | number; updated_at: Date; was_pending: boolean }>;
    const stored = new Set(rows.map((r) => Number(r.product_id)));
    await this.replaceMedia(
      em,
      supplier,
      renders.filter((r) => stored.has(r.product_id)).map((r) => ({ productId: r.product_id, urls: r.urls })),
    );
    return rows
      .filter((r) => new Date(r.updated_at).getTime() === now.getTime())
      .map((r) => ({ product_id: Number(r.product_id), updated_at: r.updated_at, was_pending: Boolean(r.was_pending) }));
  }

  async list(f: ProductFilter): Promise<{ items: StoredProduct[]; total: number }> {
    const where: string[] = [];
    const params: unknown[] = [];
    if (f.supplier !== undefined) {
      params.push(f.supplier);
      where.push(`p.supplier = $${params.length}`);
    }
    if (f.listed !== undefined) {
      params.push(f.listed);
      where.push(
        `EXISTS (SELECT 1 FROM catalog_skus s WHERE s.supplier = p.supplier AND s.product_id = p.product_id AND ` +
          `s.listed) = $${params.length}`,
      );
    }
    if (f.changedSince !== undefined) {
      // The fence of the SKU list (CatalogReadRepository.listSkus): only rows every write that began
      // before it has settled, read first by a statement of its own. Every write of a product stamps
      // it with its transaction's start (CatalogWriter, and the media pass: transactionNow), so a
      // follower that moves its cursor to the newest updated_at it saw misses no write committed later.
      const fence = await writesFence(this.dataSource);
      params.push(f.changedSince);
      where.push(`p.updated_at > $${params.length}`);
      params.push(fence);
      where.push(`p.updated_at < $${params.length}::timestamptz`);
    }
    const cond = where.length > 0 ? `WHERE ${where.join(' AND ')}` : '';
    const order = f.changedSince !== undefined ? 'p.updated_at, p.product_id, p.supplier' : 'p.product_id, p.supplier';
    const [{ n }] = (await this.dataSource.query(`SELECT count(*)::int AS n FROM catalog_products p ${cond}`, params)) as Array<{
      n: number;
    }>;
    const rows = (await this.dataSource.query(
      `SELECT ${PRODUCT_COLUMNS} FROM catalog_products p ${cond} ORDER BY ${order} LIMIT $${params.length + 1} OFFSET ` +
        `$${params.length + 2}`,
      [...params, f.limit, f.offset],
    )) as Array<Record<string, unknown>>;
    return { items: rows.map(toStoredProduct), total: n };
  }

  /** The time a write stamps products with: its transaction's start on the database's clock, to the millisecond. */
  async transactionNow(em: Db): Promise<Date> {
    const [row] = (await em.query(`SELECT date_trunc('milliseconds', transaction_timestamp()) AS now`)) as Array<{ now: Date }>;
    return row.now;
  }

  /** The products of that id (of that supplier only, when given; else every supplier's, by supplier). */
  async get(productId: number, supplier?: string): Promise<StoredProduct[]> {
    const rows = (await this.dataSource.query(
      `SELECT ${PRODUCT_COLUMNS} FROM catalog_products p WHERE p.product_id = $1 AND ($2::text IS NULL OR p.supplier = $2::text)
        ORDER BY p.supplier LIMIT 10`,
      [productId, supplier ?? null],
    )) as Array<Record<string, unknown>>;
    return rows.map(toStoredProduct);
  }
}
