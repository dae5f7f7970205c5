/**
 * Shape checks of the upstream's successful answers (pure). They check what the service relies on —
 * identifiers, money as decimal strings, states, the SKU list — and let every other field pass through
 * untouched (unknown states such as `refunded` are strings like any other). An answer that fails its
 * check is not trustworthy: the adapter reports it as an unknown outcome. A listing page is checked in
 * two steps: its envelope (a wrong one fails the page), then each product on its own (a wrong one is
 * left out and reported with its id and why, see splitProductPage).
 */
import type {
  UpstreamCanceledOrder,
  UpstreamCategory,
  UpstreamCategoryList,
  UpstreamCreatedOrder,
  UpstreamOrder,
  UpstreamPing,
  UpstreamProduct,
  UpstreamProductPage,
  UpstreamSku,
} from './upstream.types.js';

type Rec = Record<string, unknown>;

const isRecord = (v: unknown): v is Rec => typeof v === 'object' && v !== null && !Array.isArray(v);
const isInt = (v: unknown): v is number => typeof v === 'number' && Number.isSafeInteger(v);
const isStr = (v: unknown): v is string => typeof v === 'string';
const isOptStr = (v: unknown): boolean => v === undefined || v === null || typeof v === 'string';
/** Money is a decimal string on the wire; a JSON number (possibly already rounded) is refused. */
const isMoney = (v: unknown): v is string => typeof v === 'string' && /^-?\d+(\.\d+)?$/.test(v.trim());
const isOptMoney = (v: unknown): boolean => v === undefined || v === null || isMoney(v);
/** An order id (upstream-api.md §8: an integer of at least 1). */
const isId = (v: unknown): v is number => isInt(v) && v >= 1;
/** What an order cost or gave back: money, never negative. */
const isAmount = (v: unknown): v is string => isMoney(v) && !v.trim().startsWith('-');
const isOptAmount = (v: unknown): boolean => v === undefined || v === null || isAmount(v);

export function isUpstreamPing(v: unknown): v is UpstreamPing {
  return (
    isRecord(v) &&
    v.ok === true &&
    isStr(v.site_name) &&
    isStr(v.protocol_version) &&
    isInt(v.user_id) &&
    isMoney(v.balance) &&
    isStr(v.currency) &&
    (v.member_level === undefined || v.member_level === null || isRecord(v.member_level))
  );
}

export function isUpstreamCategory(v: unknown): v is UpstreamCategory {
  return isRecord(v) && isInt(v.id) && isInt(v.parent_id) && isStr(v.slug) && isRecord(v.name) && isInt(v.sort_order);
}

const CATEGORY_CHECKS: readonly FieldCheck[] = [
  ['id', isInt, 'an integer'],
  ['parent_id', isInt, 'an integer'],
  ['slug', isStr, 'a string'],
  ['name', isRecord, 'an object of texts by language'],
  ['sort_order', isInt, 'an integer'],
];

/**
 * The categories of a `GET /categories` answer, checked one by one: the usable ones, and each other
 * one in `skipped` with its id (when usable) and which field was wrong (as products are, see
 * splitProductPage).
 */
export function splitCategories(items: unknown[]): UpstreamCategoryList {
  const list: UpstreamCategoryList = [];
  for (const item of items) {
    const problem = isRecord(item) ? firstProblem(item, CATEGORY_CHECKS) : `expected a category object, got ${describe(item)}`;
    if (problem === null) {
      list.push(item as unknown as UpstreamCategory);
      continue;
    }
    const id = isRecord(item) ? item.id : undefined;
    (list.skipped ??= []).push({ category_id: isId(id) ? id : null, reason: problem });
  }
  return list;
}

/** What a value is, for a reason: `null`, `a number`, `an array`… */
function describe(v: unknown): string {
  if (v === null) return 'null';
  if (v === undefined) return 'missing';
  if (Array.isArray(v)) return 'an array';
  if (typeof v === 'string') return v.length > 40 ? 'a string' : `"${v}"`;
  return `${typeof v === 'object' ? 'an' : 'a'} ${typeof v}`;
}

type FieldCheck = readonly [field: string, ok: (v: unknown) => boolean, expected: string];

const PRICE_CHECKS: readonly FieldCheck[] = [
  ['price_amount', isMoney, 'a decimal string'],
  ['original_price', isOptMoney, 'a decimal string or nothing'],
  ['member_price', isOptMoney, 'a decimal string or nothing'],
];

const SKU_CHECKS: readonly FieldCheck[] = [
  ['id', isInt, 'an integer'],
  ['sku_code', isStr, 'a string'],
  ...PRICE_CHECKS,
  ['stock_status', isStr, 'a string'],
  ['stock_quantity', isInt, 'an integer'],
  ['is_active', (v) => typeof v === 'boolean', 'a boolean'],
];

const PRODUCT_CHECKS: readonly FieldCheck[] = [
  ['id', isInt, 'an integer'],
  ['slug', isStr, 'a string'],
  ['title', isRecord, 'an object of texts by language'],
  ...PRICE_CHECKS,
  ['fulfillment_type', isStr, 'a string'],
  ['is_active', (v) => typeof v === 'boolean', 'a boolean'],
  ['category_id', isInt, 'an integer'],
  ['skus', Array.isArray, 'an array'],
];

/** The first field of `v` that fails its check, as `field: expected …, got …`; null when none does. */
function firstProblem(v: Rec, checks: readonly FieldCheck[], prefix = ''): string | null {
  for (const [field, ok, expected] of checks) {
    if (!ok(v[field])) return `${prefix}${field}: expected ${expected}, got ${describe(v[field])}`;
  }
  return null;
}

/**
 * Why a product of the listing or of a detail read is not usable (which field, what was wrong), or
 * null when it is.
 */
export function productShapeProblem(v: unknown): string | null {
  if (!isRecord(v)) return `expected a product object, got ${describe(v)}`;
  const own = firstProblem(v, PRODUCT_CHECKS);
  if (own !== null) return own;
  const skus = v.skus as unknown[];
  for (let i = 0; i < skus.length; i++) {
    const sku = skus[i];
    if (!isRecord(sku)) return `skus[${i}]: expected a SKU object, got ${describe(sku)}`;
    const problem = firstProblem(sku, SKU_CHECKS, `skus[${i}].`);
    if (problem !== null) return problem;
  }
  return null;
}

export function isUpstreamSku(v: unknown): v is UpstreamSku {
  return isRecord(v) && firstProblem(v, SKU_CHECKS) === null;
}

export function isUpstreamProduct(v: unknown): v is UpstreamProduct {
  return productShapeProblem(v) === null;
}

/** A page whose every product is usable (the envelope and each item). */
export function isUpstreamProductPage(v: unknown): v is UpstreamProductPage {
  return isUpstreamProductPageEnvelope(v) && v.items.every(isUpstreamProduct);
}

/** A product page's envelope: `ok`, the paging fields and an array of items, whatever the items hold. */
export function isUpstreamProductPageEnvelope(v: unknown): v is Omit<UpstreamProductPage, 'items'> & { items: unknown[] } {
  return (
    isRecord(v) &&
    v.ok === true &&
    Array.isArray(v.items) &&
    isInt(v.total) &&
    v.total >= 0 &&
    isInt(v.page) &&
    isInt(v.page_size) &&
    v.page_size >= 1
  );
}

/**
 * An item of a listing page left out because its shape is wrong: its upstream id when it has a usable
 * one (an integer of at least 1), and which field was wrong and how (see productShapeProblem).
 */
export type SkippedProduct = NonNullable<UpstreamProductPage['skipped']>[number];

/**
 * A page whose envelope is right, its items checked one by one: the usable products stay in `items`,
 * each other one goes to `skipped` with its id (when usable) and why (set only when some item is
 * skipped). One badly shaped product does not make the rest of its page unusable.
 */
export function splitProductPage(page: Omit<UpstreamProductPage, 'items'> & { items: unknown[] }): UpstreamProductPage {
  let skipped: SkippedProduct[] | undefined;
  const items: UpstreamProduct[] = [];
  for (const item of page.items) {
    const problem = productShapeProblem(item);
    if (problem === null) {
      items.push(item as UpstreamProduct);
      continue;
    }
    const id = isRecord(item) ? item.id : undefined;
    (skipped ??= []).push({ product_id: isId(id) ? id : null, reason: problem });
  }
  if (skipped === undefined) return page as UpstreamProductPage;
  return { ...page, items, skipped };
}

export function isUpstreamCreatedOrder(v: unknown): v is UpstreamCreatedOrder {
  return (
    isRecord(v) && v.ok === true && isId(v.order_id) && isStr(v.order_no) && isStr(v.status) && isAmount(v.amount) && isStr(v.currency)
  );
}

function isFulfillment(v: unknown): boolean {
  return v === undefined || v === null || (isRecord(v) && isStr(v.type) && isStr(v.status) && isStr(v.payload) && isOptStr(v.delivered_at));
}

export function isUpstreamOrder(v: unknown): v is UpstreamOrder {
  return (
    isRecord(v) &&
    v.ok === true &&
    isId(v.order_id) &&
    isStr(v.order_no) &&
    isStr(v.status) &&
    isAmount(v.amount) &&
    isStr(v.currency) &&
    Array.isArray(v.items) &&
    v.items.every(isRecord) &&
    isFulfillment(v.fulfillment) &&
    isOptStr(v.downstream_order_no) &&
    isOptAmount(v.refunded_amount)
  );
}

export function isUpstreamCanceledOrder(v: unknown): v is UpstreamCanceledOrder {
  return isRecord(v) && v.ok === true && isId(v.order_id) && isStr(v.order_no) && isStr(v.status);
}
