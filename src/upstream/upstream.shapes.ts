/**
 * Shape checks of the upstream's successful answers (pure). They check what the service relies on —
 * identifiers, money as decimal strings, states, the SKU list — and let every other field pass through
 * untouched (unknown states such as `refunded` are strings like any other). An answer that fails its
 * check is not trustworthy: the adapter reports it as an unknown outcome.
 */
import type {
  UpstreamCanceledOrder,
  UpstreamCategory,
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

/** The price fields a product and its SKUs share: a decimal price, optional original and member prices. */
function hasPrices(v: Record<string, unknown>): boolean {
  return isMoney(v.price_amount) && isOptMoney(v.original_price) && isOptMoney(v.member_price);
}

export function isUpstreamSku(v: unknown): v is UpstreamSku {
  return (
    isRecord(v) &&
    isInt(v.id) &&
    isStr(v.sku_code) &&
    hasPrices(v) &&
    isStr(v.stock_status) &&
    isInt(v.stock_quantity) &&
    typeof v.is_active === 'boolean'
  );
}

export function isUpstreamProduct(v: unknown): v is UpstreamProduct {
  return (
    isRecord(v) &&
    isInt(v.id) &&
    isStr(v.slug) &&
    isRecord(v.title) &&
    hasPrices(v) &&
    isStr(v.fulfillment_type) &&
    typeof v.is_active === 'boolean' &&
    isInt(v.category_id) &&
    Array.isArray(v.skus) &&
    v.skus.every(isUpstreamSku)
  );
}

export function isUpstreamProductPage(v: unknown): v is UpstreamProductPage {
  return (
    isRecord(v) &&
    v.ok === true &&
    Array.isArray(v.items) &&
    v.items.every(isUpstreamProduct) &&
    isInt(v.total) &&
    v.total >= 0 &&
    isInt(v.page) &&
    isInt(v.page_size) &&
    v.page_size >= 1
  );
}

export function isUpstreamCreatedOrder(v: unknown): v is UpstreamCreatedOrder {
  return (
    isRecord(v) &&
    v.ok === true &&
    isId(v.order_id) &&
    isStr(v.order_no) &&
    isStr(v.status) &&
    isAmount(v.amount) &&
    isStr(v.currency)
  );
}

function isFulfillment(v: unknown): boolean {
  return (
    v === undefined ||
    v === null ||
    (isRecord(v) && isStr(v.type) && isStr(v.status) && isStr(v.payload) && isOptStr(v.delivered_at))
  );
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
