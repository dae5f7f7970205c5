/**
 * Sale prices (pure, decimal.js only — never a JavaScript number for money).
 *
 *   sale = roundUp(max(cost × (1 + percent/100) + fixed, cost), step)
 *
 * "Rounded up to the PRICE_ROUNDING step, never below cost": a negative markup is floored at the cost,
 * and the result is always a multiple of the step, so it may sit a little above a cost that is not on
 * the step's grid. The printed scale is the larger of the step's and the cost's (`10.00` at step `1`
 * gives `12.00`, not `12`).
 *
 * Rules: a SKU rule beats a rule on the SKU's own (leaf) category, which beats a rule on its parent
 * category, which beats a rule on its supplier, which beats the defaults (PRICE_MARKUP_PERCENT /
 * PRICE_MARKUP_FIXED / PRICE_ROUNDING). Category ids and sku_keys are a supplier's own: a category
 * rule and a SKU rule by key name their supplier. A SKU rule set by a plain `sku_code` that no SKU
 * carried then has no key (nor supplier) and applies to the SKUs carrying that code at any supplier (a
 * SKU's own rule by key beats it).
 * A rule without its own rounding uses the default step.
 */
import { Decimal } from 'decimal.js';

/** Money arithmetic: far more digits than any price needs, no exponent notation. */
export const Money = Decimal.clone({ precision: 60, rounding: Decimal.ROUND_HALF_UP, toExpNeg: -30, toExpPos: 40 });
export type Money = Decimal;

const DECIMAL_RE = /^-?\d+(\.\d+)?$/;

export interface MarkupInput {
  /** Decimal string, e.g. `12.5` for +12.5 %; may be negative (floored at cost). */
  markupPercent: string;
  /** Decimal string added after the percentage; may be negative. */
  markupFixed: string;
  /** Decimal string > 0; null/undefined: the default step. */
  rounding?: string | null;
}

export interface PricingDefaults {
  markupPercent: string;
  markupFixed: string;
  rounding: string;
}

export type PricingRuleScope = 'supplier' | 'category' | 'sku';

export interface PricingRule extends MarkupInput {
  scope: PricingRuleScope;
  /** The supplier the rule is about (scope `supplier`, `category`, and `sku` by key; null for a rule by code alone). */
  supplier?: string | null;
  /** Upstream category id (scope `category`). */
  categoryId?: number | null;
  /** scope `sku`: the SKU's code. */
  skuCode?: string | null;
  /** scope `sku`: the SKU's key (null: a rule by code, see the header). */
  skuKey?: string | null;
}

/** Where a SKU sits, for choosing its rule. */
export interface PricingSubject {
  /** The supplier whose SKU it is. */
  supplier?: string;
  /** The SKU's key (absent: only rules by code can apply). */
  skuKey?: string;
  skuCode: string;
  categoryId: number;
  /** The parent of `categoryId` (0 or null for a top-level category or when unknown). */
  parentCategoryId?: number | null;
}

/** A rule ready for arithmetic. */
export interface CompiledRule {
  /** Stable text of the rule, e.g. for caches: `p=12.5;f=0.3;r=0.01`. */
  readonly key: string;
  readonly source: 'default' | 'supplier' | 'category' | 'parent_category' | 'sku';
  readonly factor: Money;
  readonly fixed: Money;
  readonly step: Money;
  readonly stepScale: number;
  /** No markup and a step of 1, 0.1, 0.01…: every cost on the step's grid is its own price. */
  readonly identity: boolean;
}

export class PricingError extends Error {
  constructor(
    readonly field: string,
    message: string,
  ) {
    super(message);
    this.name = 'PricingError';
  }
}

function scaleOf(s: string): number {
  const dot = s.indexOf('.');
  return dot < 0 ? 0 : s.length - dot - 1;
}

function parseDecimal(field: string, value: string): Money {
  if (typeof value !== 'string' || !DECIMAL_RE.test(value.trim())) {
    throw new PricingError(field, `${field} must be a decimal string such as 1.50, got ${JSON.stringify(value)}`);
  }
  return new Money(value.trim());
}

/** Checks one markup (throws PricingError naming the field at fault). */
export function validateMarkup(input: MarkupInput, prefix = ''): void {
  const percent = parseDecimal(`${prefix}markup_percent`, input.markupPercent);
  if (percent.lt(-100)) throw new PricingError(`${prefix}markup_percent`, `${prefix}markup_percent must not be below -100`);
  parseDecimal(`${prefix}markup_fixed`, input.markupFixed);
  if (input.rounding !== undefined && input.rounding !== null) {
    const step = parseDecimal(`${prefix}rounding`, input.rounding);
    if (!step.gt(0)) throw new PricingError(`${prefix}rounding`, `${prefix}rounding must be greater than 0`);
  }
}

/** Digits a markup or step given to the service may have (before and after the point). */
export const MARKUP_INT_DIGITS = 15;
export const MARKUP_SCALE = 8;

/**
 * Checks a markup given to the service (a rule of `PUT /internal/pricing/rules`, the defaults of the
 * configuration): `validateMarkup`, and at most MARKUP_INT_DIGITS digits before the point and
 * MARKUP_SCALE after it in each field, so that the arithmetic (60 significant digits) is exact and
 * "rounded up" holds, and a mistyped markup (10^1000 %) is refused rather than priced. Rules stored
 * before these limits still compile (`compileRule` checks only what it must).
 */
export function validateMarkupInput(input: MarkupInput, prefix = ''): void {
  validateMarkup(input, prefix);
  const fields: Array<[string, string | null | undefined]> = [
    ['markup_percent', input.markupPercent],
    ['markup_fixed', input.markupFixed],
    ['rounding', input.rounding],
  ];
  for (const [name, value] of fields) {
    if (value === undefined || value === null) continue;
    const [int, frac = ''] = value.trim().replace(/^-/, '').split('.');
    if (int.replace(/^0+(?=\d)/, '').length > MARKUP_INT_DIGITS || frac.length > MARKUP_SCALE) {
      throw new PricingError(
        `${prefix}${name}`,
        `${prefix}${name} must have at most ${MARKUP_INT_DIGITS} digits before the point and ${MARKUP_SCALE} after it`,
      );
    }
  }
}

export function compileRule(input: MarkupInput, defaultRounding: string, source: CompiledRule['source']): CompiledRule {
  validateMarkup(input);
  const roundingText = (input.rounding ?? defaultRounding).trim();
  const step = parseDecimal('rounding', roundingText);
  if (!step.gt(0)) throw new PricingError('rounding', 'rounding must be greater than 0');
  const percent = new Money(input.markupPercent.trim());
  const fixed = new Money(input.markupFixed.trim());
  return {
    key: `p=${percent.toString()};f=${fixed.toString()};r=${step.toString()}`,
    source,
    factor: percent.div(100).plus(1),
    fixed,
    step,
    stepScale: scaleOf(step.toFixed()),
    identity: percent.isZero() && fixed.isZero() && /^(1|0\.0*1)$/.test(step.toFixed()),
  };
}

/** The sale price of `cost` under `rule`: a decimal string. */
export function salePrice(cost: string, rule: CompiledRule): string {
  const text = cost.trim();
  if (rule.identity && /^\d+(\.\d+)?$/.test(text) && scaleOf(text) <= rule.stepScale) {
    // No markup, a step of 1, 0.1, 0.01… and a cost with no more decimals than the step: the cost is
    // on the grid and is its own price (only zeros are appended, no arithmetic).
    const scale = scaleOf(text);
    return scale === rule.stepScale ? text : `${text}${scale === 0 ? '.' : ''}${'0'.repeat(rule.stepScale - scale)}`;
  }
  const c = parseDecimal('cost', cost);
  let x = c.mul(rule.factor).plus(rule.fixed);
  if (x.lt(c)) x = c;
  const rounded = x.toNearest(rule.step, Decimal.ROUND_CEIL);
  return rounded.toFixed(Math.max(rule.stepScale, scaleOf(cost.trim())));
}

/**
 * The rules of the catalog, compiled once: the defaults and the overrides by category, by `sku_key`
 * and by `sku_code` (rules without a key). `priceOf` memoizes by rule and cost (a re-sync prices the same SKUs again), within a cap.
 */
export class PricingRuleSet {
  readonly defaultRule: CompiledRule;
  /** By `<supplier>/<category id>`. */
  private readonly byCategory = new Map<string, CompiledRule>();
  /** By `<supplier>/<sku_key>`. */
  private readonly bySku = new Map<string, CompiledRule>();
  private readonly bySupplier = new Map<string, CompiledRule>();
  private readonly byCode = new Map<string, CompiledRule>();
  constructor(
    readonly defaults: PricingDefaults,
    readonly rules: readonly PricingRule[] = [],
    /** Prices by rule (its key) and cost; may be shared by successive rule sets. */
    private readonly memo = new Map<string, Map<string, string>>(),
    private readonly memoCap = 200_000,
  ) {
    this.defaultRule = compileRule(defaults, defaults.rounding, 'default');
    for (const r of rules) {
      if (r.scope === 'supplier' && r.supplier) {
        this.bySupplier.set(r.supplier, compileRule(r, defaults.rounding, 'supplier'));
      } else if (r.scope === 'category' && r.categoryId != null) {
        this.byCategory.set(`${r.supplier ?? ''}/${r.categoryId}`, compileRule(r, defaults.rounding, 'category'));
      } else if (r.scope === 'sku' && r.skuKey) {
        this.bySku.set(`${r.supplier ?? ''}/${r.skuKey}`, compileRule(r, defaults.rounding, 'sku'));
      } else if (r.scope === 'sku' && r.skuCode) {
        this.byCode.set(r.skuCode, compileRule(r, defaults.rounding, 'sku'));
      }
    }
  }

  /** The rule that applies: sku_key, then sku_code, then category, then parent category, then supplier, then the defaults. */
  ruleFor(subject: PricingSubject): CompiledRule {
    const supplier = subject.supplier ?? '';
    const sku =
      (subject.skuKey !== undefined ? this.bySku.get(`${supplier}/${subject.skuKey}`) : undefined) ?? this.byCode.get(subject.skuCode);
    if (sku) return sku;
    const category = this.byCategory.get(`${supplier}/${subject.categoryId}`);
    if (category) return category;
    if (subject.parentCategoryId) {
      const parent = this.byCategory.get(`${supplier}/${subject.parentCategoryId}`);
      if (parent) return { ...parent, source: 'parent_category' };
    }
    return this.bySupplier.get(supplier) ?? this.defaultRule;
  }

  priceOf(cost: string, subject: PricingSubject): string {
    const rule = this.ruleFor(subject);
    let byCost = this.memo.get(rule.key);
    if (byCost === undefined) {
      if (this.memo.size >= 1000) this.memo.clear();
      byCost = new Map();
      this.memo.set(rule.key, byCost);
    }
    const hit = byCost.get(cost);
    if (hit !== undefined) return hit;
    const price = salePrice(cost, rule);
    if (byCost.size >= this.memoCap) byCost.clear();
    byCost.set(cost, price);
    return price;
  }
}
