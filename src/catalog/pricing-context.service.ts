/**
 * The pricing rules in force, compiled, with the version they belong to and the category tree (a
 * rule on a top-level category applies to its children). Cached per process; every price write
 * checks the version in the database and reloads through its own transaction when it moved.
 */
import { Injectable } from '@nestjs/common';
import type { EntityManager } from 'typeorm';
import { AppConfig } from '../config/app-config.js';
import { CategoryRepository } from './category.repository.js';
import { PricingRuleSet, type PricingDefaults } from './pricing.js';
import { PricingRepository } from './pricing.repository.js';
import type { SalePriceFn } from './sku-diff.js';

type Db = Pick<EntityManager, 'query'>;

export class PricingContext {
  readonly price: SalePriceFn;

  constructor(
    readonly version: number,
    readonly rules: PricingRuleSet,
    /** `<supplier>/<category id>` → parent id (0: top level). */
    readonly parents: ReadonlyMap<string, number>,
  ) {
    this.price = (cost, subject) =>
      rules.priceOf(cost, {
        supplier: subject.supplier,
        skuKey: subject.skuKey,
        skuCode: subject.skuCode,
        categoryId: subject.categoryId,
        parentCategoryId: parents.get(`${subject.supplier ?? ''}/${subject.categoryId}`) ?? null,
      });
  }
}

@Injectable()
export class PricingContextService {
  private cached: PricingContext | null = null;
  /** Sale prices by rule and cost, kept across reloads (a re-sync prices the same SKUs again). */
  private readonly memo = new Map<string, Map<string, string>>();

  constructor(
    private readonly config: AppConfig,
    private readonly pricingRepo: PricingRepository,
    private readonly catalogRepo: CategoryRepository,
  ) {}

  /** The defaults of §3 (PRICE_MARKUP_PERCENT, PRICE_MARKUP_FIXED, PRICE_ROUNDING). */
  get defaults(): PricingDefaults {
    return { ...this.config.pricing };
  }

  /** The cached context, loaded through `em` (inside a transaction) or the pool when there is none. */
  async current(em?: Db): Promise<PricingContext> {
    return this.cached ?? this.reload(em);
  }

  async reload(em?: Db): Promise<PricingContext> {
    this.cached = await this.load(em);
    return this.cached;
  }

  /** Builds a context from the database without caching it (a rule change builds its own first). */
  async load(em?: Db, version?: number): Promise<PricingContext> {
    const state = version === undefined ? await this.pricingRepo.state(em) : { version };
    const rules = await this.pricingRepo.rules(em);
    const categories = await this.catalogRepo.categories(undefined, em);
    const parents = new Map<string, number>(categories.map((c) => [`${c.supplier}/${c.id}`, c.parent_id]));
    return new PricingContext(state.version, new PricingRuleSet(this.defaults, rules, this.memo), parents);
  }

  /** Replaces the cache (after a committed rule change). */
  use(context: PricingContext): void {
    this.cached = context;
  }
}
