/**
 * Pricing rules of the internal API (`GET/PUT /internal/pricing/rules`): a rule change is stored and the
 * whole local catalog repriced in the same transaction, at once, without a sync. At start, a change
 * of the configured defaults (PRICE_MARKUP_*, PRICE_ROUNDING) reprices the catalog the same way.
 *
 * A SKU rule names its SKU by `sku_key` or by a plain `sku_code` (the `sku_code` member takes either),
 * resolved as every SKU reference is (sku-key.ts) and stored by key: a code several listed SKUs carry
 * is 409 `sku_ambiguous`, nothing changed. A key no SKU has yet is stored as given (the rule applies
 * once that SKU appears); a plain code no SKU carries yet is stored by code alone (it applies to the
 * SKUs that come to carry it).
 *
 * Rules are per supplier (category ids and sku_keys are a supplier's own): a supplier rule names it, a
 * category rule names it or is the `UPSTREAM_*` supplier's, a SKU rule is looked for at the supplier it
 * names or at every supplier (a reference several suppliers carry is 409 `sku_ambiguous`, with
 * `{supplier, sku_key}` candidates) and stored with the supplier of the SKU it found (a key no SKU has
 * yet: the named supplier, else the `UPSTREAM_*` one). Precedence: SKU > category > supplier > defaults.
 */
import { Injectable, Logger, type OnApplicationBootstrap } from '@nestjs/common';
import { DataSource, type EntityManager } from 'typeorm';
import { AppError } from '../common/app-error.js';
import { Clock } from '../common/clock.js';
import { CatalogReadRepository } from './catalog-read.repository.js';
import { skuRefError } from './catalog.service.js';
import { CatalogWriter } from './catalog-writer.service.js';
import { parseSkuKey, resolveSkuRef } from './sku-key.js';
import { PricingError, validateMarkupInput, type PricingDefaults, type PricingRule } from './pricing.js';
import { PricingContextService, type PricingContext } from './pricing-context.service.js';
import { PricingRepository, type StoredPricingRule } from './pricing.repository.js';
import { SupplierRegistry } from '../suppliers/supplier-registry.service.js';

export interface PricingRulesView {
  defaults: PricingDefaults;
  rules: StoredPricingRule[];
  version: number;
}

export interface RulesChange extends PricingRulesView {
  /** SKUs whose sale price the change moved. */
  repriced: number;
}

function sameDefaults(a: PricingDefaults | null, b: PricingDefaults): boolean {
  return a !== null && a.markupPercent === b.markupPercent && a.markupFixed === b.markupFixed && a.rounding === b.rounding;
}

@Injectable()
export class PricingService implements OnApplicationBootstrap {
  private readonly logger = new Logger('pricing');

  constructor(
    private readonly dataSource: DataSource,
    private readonly repo: PricingRepository,
    private readonly context: PricingContextService,
    private readonly writer: CatalogWriter,
    private readonly clock: Clock,
    private readonly reads: CatalogReadRepository,
    private readonly suppliers: SupplierRegistry,
  ) {}

  onApplicationBootstrap(): void {
    // Not awaited: startup does not wait for a reprice.
    this.applyConfiguredDefaults().catch((e: unknown) => this.logger.error(`repricing with the configured defaults failed: ${String(e)}`));
  }

  async getRules(): Promise<PricingRulesView> {
    const [state, rules] = [await this.repo.state(), await this.repo.rules()];
    return { defaults: this.context.defaults, rules, version: state.version };
  }

  /** Replaces every rule and reprices the catalog (one transaction). */
  async replaceRules(rules: PricingRule[]): Promise<RulesChange> {
    this.validate(rules);
    const resolved = await this.resolveSkus(rules);
    this.validate(resolved);
    const result = await this.reprice(async (em) => this.repo.replaceRules(em, resolved, this.clock.now()));
    const view = await this.getRules();
    return { ...view, repriced: result };
  }

  /** Reprices the whole catalog with the rules in force (e.g. after the category tree changed). */
  async repriceCatalog(): Promise<number> {
    return this.reprice(async () => undefined);
  }

  /** Reprices when the configured defaults differ from those the stored prices were made with. */
  async applyConfiguredDefaults(): Promise<number | null> {
    const state = await this.repo.state();
    if (sameDefaults(state.defaults, this.context.defaults)) return null;
    const n = await this.reprice(async () => undefined);
    if (state.defaults !== null) this.logger.log(`pricing defaults changed: ${n} sale prices updated`);
    return n;
  }

  private async reprice(change: (em: EntityManager) => Promise<void>): Promise<number> {
    const { written, ctx } = await this.dataSource.transaction(async (em) => {
      // First: take the version row, so that no price write interleaves with the change. Every catalog
      // write takes it (FOR SHARE) before its sku_codes and rows too: see LOCK_SKU_CODES_SQL.
      const version = await this.repo.bumpVersion(em, this.context.defaults);
      await change(em);
      const loaded: PricingContext = await this.context.load(em, version);
      const r = await this.writer.repriceAll(em, loaded);
      return { written: r.written, ctx: loaded };
    });
    this.context.use(ctx);
    return written;
  }

  /**
   * The SKU rules with their SKU resolved (see the header): `skuKey` and the SKU's `skuCode`. Throws
   * 409 `sku_ambiguous` (naming the rule) for a code several SKUs carry.
   */
  private async resolveSkus(rules: PricingRule[]): Promise<PricingRule[]> {
    const refs = rules.flatMap((r) => (r.scope === 'sku' && r.skuCode ? [r.skuCode] : []));
    const found = await this.reads.skusByRefs(undefined, refs);
    const env = this.suppliers.envName;
    return rules.map((r, i) => {
      if (r.scope === 'category') return { ...r, supplier: r.supplier ?? env };
      if (r.scope !== 'sku' || !r.skuCode) return r;
      const ref = r.skuCode;
      const candidates = (found.get(ref) ?? []).filter((c) => !r.supplier || c.supplier === r.supplier);
      const hit = resolveSkuRef(ref, candidates);
      if (hit.kind === 'found') return { ...r, supplier: hit.sku.supplier, skuKey: hit.sku.sku_key, skuCode: hit.sku.sku_code };
      if (hit.kind === 'ambiguous') {
        const e = skuRefError(ref, hit);
        throw e.withMessage(`rules.${i}: ${e.message}`);
      }
      const key = parseSkuKey(ref);
      return key ? { ...r, supplier: r.supplier ?? env, skuKey: ref, skuCode: key.skuCode } : { ...r, supplier: null, skuKey: null };
    });
  }

  private validate(rules: PricingRule[]): void {
    const fields: Record<string, string[]> = {};
    const seen = new Set<string>();
    rules.forEach((r, i) => {
      try {
        validateMarkupInput(r, `rules.${i}.`);
      } catch (e) {
        if (e instanceof PricingError) (fields[e.field] ??= []).push(e.message);
        else throw e;
      }
      // what the rule is for, as the message names it: `category 1`, `sku 42:A of second`, `supplier second`
      const at = r.scope !== 'supplier' && r.supplier ? ` of ${r.supplier}` : '';
      const key =
        r.scope === 'supplier'
          ? `supplier ${r.supplier}`
          : r.scope === 'category'
            ? `category ${r.categoryId}${at}`
            : `sku ${r.skuKey ?? r.skuCode}${at}`;
      if (seen.has(key)) (fields[`rules.${i}`] ??= []).push(`a second rule for ${key}`);
      seen.add(key);
    });
    if (Object.keys(fields).length > 0) {
      throw new AppError('bad_request', `invalid request: ${Object.keys(fields).join(', ')}`, { fields });
    }
  }
}
