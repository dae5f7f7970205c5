/** Pricing rules and the pricing version (see the catalog migration). */
import { Injectable } from '@nestjs/common';
import { DataSource, type EntityManager } from 'typeorm';
import type { PricingDefaults, PricingRule } from './pricing.js';

type Db = Pick<EntityManager, 'query'>;

export interface StoredPricingRule extends PricingRule {
  updatedAt: Date;
}

@Injectable()
export class PricingRepository {
  constructor(private readonly dataSource: DataSource) {}

  private db(em?: Db): Db {
    return em ?? this.dataSource.manager;
  }

  async state(em?: Db): Promise<{ version: number; defaults: PricingDefaults | null }> {
    const [row] = (await this.db(em).query('SELECT version::text AS version, defaults FROM catalog_pricing_state WHERE id = 1')) as Array<{
      version: string;
      defaults: PricingDefaults | null;
    }>;
    return { version: Number(row.version), defaults: row.defaults };
  }

  /**
   * Moves the version on (holding the row until the transaction ends, so that no price write
   * interleaves) and records the defaults the catalog is about to be priced with.
   */
  async bumpVersion(em: Db, defaults: PricingDefaults): Promise<number> {
    const [row] = (await em.query(
      `WITH u AS (UPDATE catalog_pricing_state SET version = version + 1, defaults = $1::jsonb, updated_at = now() WHERE id = 1
        RETURNING version)
       SELECT version::text AS version FROM u`,
      [JSON.stringify(defaults)],
    )) as Array<{ version: string }>;
    return Number(row.version);
  }

  async rules(em?: Db): Promise<StoredPricingRule[]> {
    const rows = (await this.db(em).query(
      `SELECT scope, supplier, category_id::text AS category_id, sku_code, sku_key, markup_percent::text AS markup_percent,
              markup_fixed::text AS markup_fixed, rounding::text AS rounding, updated_at
         FROM catalog_pricing_rules ORDER BY scope, supplier NULLS FIRST, category_id NULLS LAST, sku_code NULLS LAST, sku_key NULLS FIRST`,
    )) as Array<{
      scope: 'supplier' | 'category' | 'sku';
      supplier: string | null;
      category_id: string | null;
      sku_code: string | null;
      sku_key: string | null;
      markup_percent: string;
      markup_fixed: string;
      rounding: string | null;
      updated_at: Date;
    }>;
    return rows.map((r) => ({
      scope: r.scope,
      supplier: r.supplier,
      categoryId: r.category_id === null ? null : Number(r.category_id),
      skuCode: r.sku_code,
      skuKey: r.sku_key,
      markupPercent: r.markup_percent,
      markupFixed: r.markup_fixed,
      rounding: r.rounding,
      updatedAt: r.updated_at,
    }));
  }

  /** Replaces every rule. A rule that did not change keeps its updated_at. */
  async replaceRules(em: Db, rules: PricingRule[], now: Date): Promise<void> {
    const payload = rules.map((r) => ({
      scope: r.scope,
      supplier: r.supplier ?? null,
      category_id: r.scope === 'category' ? r.categoryId : null,
      sku_code: r.scope === 'sku' ? r.skuCode : null,
      sku_key: r.scope === 'sku' ? (r.skuKey ?? null) : null,
      markup_percent: r.markupPercent,
      markup_fixed: r.markupFixed,
      rounding: r.rounding ?? null,
    }));
    await em.query(
      `WITH input AS (
         SELECT * FROM json_to_recordset($1::json)
           AS t(scope text, supplier text, category_id bigint, sku_code text, sku_key text, markup_percent numeric, markup_fixed
             numeric, rounding numeric)),
       del AS (
         DELETE FROM catalog_pricing_rules r WHERE NOT EXISTS (
           SELECT 1 FROM input i WHERE i.scope = r.scope AND i.supplier IS NOT DISTINCT FROM r.supplier AND i.category_id IS NOT
             DISTINCT FROM r.category_id
             AND i.sku_code IS NOT DISTINCT FROM r.sku_code AND i.sku_key IS NOT DISTINCT FROM r.sku_key AND i.markup_percent =
               r.markup_percent
             AND i.markup_fixed = r.markup_fixed AND i.rounding IS NOT DISTINCT FROM r.rounding)
         RETURNING 1)
       SELECT count(*) FROM del`,
      [JSON.stringify(payload)],
    );
    await em.query(
      `INSERT INTO catalog_pricing_rules (scope, supplier, category_id, sku_code, sku_key, markup_percent, markup_fixed, rounding,
        updated_at)
       SELECT i.scope, i.supplier, i.category_id, i.sku_code, i.sku_key, i.markup_percent, i.markup_fixed, i.rounding, $2
         FROM json_to_recordset($1::json)
           AS i(scope text, supplier text, category_id bigint, sku_code text, sku_key text, markup_percent numeric, markup_fixed
             numeric, rounding numeric)
        WHERE NOT EXISTS (
           SELECT 1 FROM catalog_pricing_rules r WHERE i.scope = r.scope AND i.supplier IS NOT DISTINCT FROM r.supplier
             AND i.category_id IS NOT DISTINCT FROM r.category_id AND i.sku_code IS NOT DISTINCT FROM r.sku_code AND i.sku_key IS
               NOT DISTINCT FROM r.sku_key)`,
      [JSON.stringify(payload), now],
    );
  }
}
