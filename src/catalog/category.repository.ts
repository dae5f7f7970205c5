/**
 * The catalog's categories: the upstream's tree as a sync stores it, and the stored tree (the API's
 * category tree, and the tree the pricing rules are applied with). Category ids are a supplier's own:
 * a category is (supplier, id).
 */
import { Injectable } from '@nestjs/common';
import { DataSource } from 'typeorm';
import type { UpstreamCategory } from '../upstream/upstream.types.js';
import { select, type Db, type StoredCategory } from './catalog.records.js';

@Injectable()
export class CategoryRepository {
  constructor(private readonly dataSource: DataSource) {}

  private db(em?: Db): Db {
    return em ?? this.dataSource.manager;
  }

  /**
   * Upserts the upstream's categories (diff-guarded) and unlists the local ones it no longer has.
   * `reparented`: categories whose parent the stored SKUs were not priced with: existing ones that moved
   * under another parent, and new children that SKUs already point at (stored by an order's fresh read,
   * or a category the upstream did not list before), priced without their parent until now. A parent's
   * pricing rule applies to its children, so their SKUs may need new sale prices.
   *
   * The tree is part of what prices are made with: every process caches it beside the rules, under the
   * pricing version (PricingContextService). So a change of the tree (a category new here, or one
   * under another parent) moves the version on in the same transaction, which first takes the version
   * row (as a rule change does): no price write made with the old tree commits after the change, and
   * every other process reloads the tree at its next price write instead of pricing a new child
   * category's SKUs without its parent's rule.
   */
  async syncCategories(
    em: Db,
    supplier: string,
    categories: UpstreamCategory[],
    now: Date,
    /** Categories the upstream listed but that were left out (their shape): kept as they are, not unlisted. */
    keep: number[] = [],
  ): Promise<{ changed: number; unlisted: number; reparented: number }> {
    await em.query('SELECT version FROM catalog_pricing_state WHERE id = 1 FOR UPDATE');
    const payload = categories.map((c) => ({
      id: c.id,
      parent_id: c.parent_id,
      slug: c.slug,
      name: c.name,
      icon: c.icon ?? '',
      sort_order: c.sort_order,
    }));
    const [r] = await select<{ changed: number; unlisted: number; reparented: number }>(
      em,
      `WITH input AS (SELECT * FROM json_to_recordset($1::json) AS t(id bigint, parent_id bigint, slug text, name jsonb, icon
        text, sort_order integer)),
       moved AS (
         SELECT count(*)::int AS n FROM input i
          WHERE EXISTS (SELECT 1 FROM catalog_categories c WHERE c.supplier = $3 AND c.id = i.id AND c.parent_id <> i.parent_id)
             OR (i.parent_id <> 0 AND NOT EXISTS (SELECT 1 FROM catalog_categories c WHERE c.supplier = $3 AND c.id = i.id)
                 AND EXISTS (SELECT 1 FROM catalog_skus s WHERE s.supplier = $3 AND s.category_id = i.id))),
       tree AS (
         SELECT count(*)::int AS n FROM input i
          WHERE NOT EXISTS (SELECT 1 FROM catalog_categories c WHERE c.supplier = $3 AND c.id = i.id AND c.parent_id = i.parent_id)),
       bump AS (
         UPDATE catalog_pricing_state SET version = version + 1, updated_at = now()
          WHERE id = 1 AND (SELECT n FROM tree) > 0
          RETURNING 1),
       up AS (
         INSERT INTO catalog_categories AS c (supplier, id, parent_id, slug, name, icon, sort_order, listed, created_at, updated_at)
         SELECT $3, id, parent_id, slug, name, coalesce(icon, ''), sort_order, true, $2, $2 FROM input
         ON CONFLICT (supplier, id) DO UPDATE SET parent_id = EXCLUDED.parent_id, slug = EXCLUDED.slug, name = EXCLUDED.name,
           icon = EXCLUDED.icon, sort_order = EXCLUDED.sort_order, listed = true, updated_at = EXCLUDED.updated_at
         WHERE (c.parent_id, c.slug, c.name, c.icon, c.sort_order, c.listed)
               IS DISTINCT FROM (EXCLUDED.parent_id, EXCLUDED.slug, EXCLUDED.name, EXCLUDED.icon, EXCLUDED.sort_order, true)
         RETURNING 1),
       gone AS (
         UPDATE catalog_categories c SET listed = false, updated_at = $2
          WHERE c.supplier = $3 AND c.listed AND NOT EXISTS (SELECT 1 FROM input i WHERE i.id = c.id) AND NOT (c.id = ANY($4::bigint[]))
          RETURNING 1)
       SELECT (SELECT count(*) FROM up)::int AS changed, (SELECT count(*) FROM gone)::int AS unlisted, (SELECT n FROM moved) AS reparented`,
      [JSON.stringify(payload), now, supplier, keep],
    );
    return r;
  }

  /** The stored categories of a supplier (every supplier's when none is named). */
  async categories(supplier?: string, em?: Db): Promise<StoredCategory[]> {
    const rows = await select<Record<string, unknown>>(
      this.db(em),
      `SELECT supplier, id::text AS id, parent_id::text AS parent_id, slug, name, icon, sort_order, listed, updated_at
         FROM catalog_categories WHERE $1::text IS NULL OR supplier = $1::text ORDER BY sort_order DESC, supplier, id`,
      [supplier ?? null],
    );
    return rows.map((r) => ({ ...(r as unknown as StoredCategory), id: Number(r.id), parent_id: Number(r.parent_id) }));
  }
}
