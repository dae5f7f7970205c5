/**
 * An offer as the operator gives it (`PUT /internal/offers/{code}`, CONTRACT §11), checked without
 * I/O in two steps: `parseOfferInput` checks the body's shape (the code's pattern, the routing, 1 to
 * MAX_SOURCES sources, no SKU twice, the operator's sale price); `checkOfferSources` then checks the
 * sources against what the service found (the suppliers the registry knows, the SKUs the catalog has
 * for each, their currencies). Each refusal names its fields, as every 400 `bad_request` does.
 */
import { SUPPLIER_NAME_PATTERN } from '../suppliers/supplier.types.js';

/** An offer's code: the pattern of `shop_order_no` (CONTRACT §5). */
export const OFFER_CODE_RE = /^[A-Za-z0-9._:-]{1,64}$/;
export const MAX_SOURCES = 10;
export const MAX_TITLE_LENGTH = 200;
export const ROUTINGS = ['priority', 'cheapest'] as const;
export type Routing = (typeof ROUTINGS)[number];

/** A sale price: a positive decimal string with at most 15 digits before the point and 8 after it. */
const PRICE_RE = /^\d{1,15}(\.\d{1,8})?$/;
/** A SKU key: `<product id>:<sku_code>`. */
const SKU_KEY_RE = /^\d{1,19}:.+$/s;
const MAX_SKU_KEY_LENGTH = 300;
const BODY_KEYS: ReadonlySet<string> = new Set(['title', 'routing', 'sources', 'sale_price']);
const SOURCE_KEYS: ReadonlySet<string> = new Set(['supplier', 'sku_key']);

export interface OfferSourceRef {
  supplier: string;
  sku_key: string;
}

export interface OfferInput {
  code: string;
  title: string | null;
  routing: Routing;
  /** In the operator's order (the `priority` route's). */
  sources: OfferSourceRef[];
  /** The operator's sale price; null: the pricing rules decide (offer-value.ts). */
  salePrice: string | null;
}

/** Messages by field (`routing`, `sources.1.sku_key`, …), as the envelope's `fields`. */
export type Fields = Record<string, string[]>;

export type ParsedOffer = { ok: true; input: OfferInput } | { ok: false; fields: Fields };

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

/** The key a SKU of a supplier goes by in the facts' map. */
export const sourceKey = (s: OfferSourceRef): string => `${s.supplier}\u0000${s.sku_key}`;

/** Checks the code and the body's shape; the sources' existence is `checkOfferSources`'s. */
export function parseOfferInput(code: string, body: unknown): ParsedOffer {
  const fields: Fields = {};
  const add = (field: string, message: string) => (fields[field] ??= []).push(message);
  if (!OFFER_CODE_RE.test(code)) add('code', 'code must match [A-Za-z0-9._:-]{1,64}');
  if (!isObject(body)) {
    add('body', 'the body must be a JSON object');
    return { ok: false, fields };
  }
  for (const key of Object.keys(body)) if (!BODY_KEYS.has(key)) add(key, `property ${key} should not exist`);

  let title: string | null = null;
  if (body.title !== undefined && body.title !== null) {
    if (typeof body.title !== 'string') add('title', 'title must be a string');
    else if (body.title.length > MAX_TITLE_LENGTH) add('title', `title must be at most ${MAX_TITLE_LENGTH} characters`);
    else if (body.title.includes('\u0000')) add('title', 'title must not hold a NUL character');
    else title = body.title;
  }

  const routing = body.routing;
  if (typeof routing !== 'string' || !(ROUTINGS as readonly string[]).includes(routing))
    add('routing', `routing must be one of ${ROUTINGS.join(', ')}`);

  let salePrice: string | null = null;
  if (body.sale_price !== undefined && body.sale_price !== null) {
    if (typeof body.sale_price !== 'string' || !PRICE_RE.test(body.sale_price))
      add('sale_price', 'sale_price must be a decimal string such as 12.50 (at most 15 digits before the point and 8 after it)');
    else if (/^[0.]+$/.test(body.sale_price)) add('sale_price', 'sale_price must be greater than 0');
    else salePrice = body.sale_price;
  }

  const sources: OfferSourceRef[] = [];
  if (!Array.isArray(body.sources)) add('sources', `sources must be a list of 1 to ${MAX_SOURCES} {supplier, sku_key}`);
  else if (body.sources.length < 1 || body.sources.length > MAX_SOURCES)
    add('sources', `sources must hold 1 to ${MAX_SOURCES} sources, got ${body.sources.length}`);
  else {
    const seen = new Map<string, number>();
    body.sources.forEach((s: unknown, i: number) => {
      const at = `sources.${i}`;
      if (!isObject(s)) return add(at, 'a source must be an object {supplier, sku_key}');
      for (const key of Object.keys(s)) if (!SOURCE_KEYS.has(key)) add(`${at}.${key}`, `property ${key} should not exist`);
      const supplierOk = typeof s.supplier === 'string' && SUPPLIER_NAME_PATTERN.test(s.supplier);
      if (!supplierOk) add(`${at}.supplier`, 'supplier must be a supplier name ([a-z][a-z0-9-]{0,31})');
      const keyOk =
        typeof s.sku_key === 'string' &&
        SKU_KEY_RE.test(s.sku_key) &&
        s.sku_key.length <= MAX_SKU_KEY_LENGTH &&
        !s.sku_key.includes('\u0000');
      if (!keyOk) add(`${at}.sku_key`, 'sku_key must be a sku_key: <product id>:<sku_code>');
      if (!supplierOk || !keyOk) return;
      const ref = { supplier: s.supplier as string, sku_key: s.sku_key as string };
      const first = seen.get(sourceKey(ref));
      if (first !== undefined) return add(at, `the SKU ${ref.sku_key} of ${ref.supplier} is sources.${first} already`);
      seen.set(sourceKey(ref), i);
      sources.push(ref);
    });
  }
  if (Object.keys(fields).length > 0) return { ok: false, fields };
  return { ok: true, input: { code, title, routing: routing as Routing, sources, salePrice } };
}

/** What the service found for the sources: the suppliers it knows and the SKUs the catalog has (by `sourceKey`). */
export interface SourceFactsForCheck {
  supplierKnown: (name: string) => boolean;
  /** The SKUs that exist, with their supplier's currency (null while unknown). */
  skus: ReadonlyMap<string, { currency: string | null }>;
}

/** Refuses an unknown supplier, a SKU its supplier's catalog lacks, and sources of different currencies; null when they pass. */
export function checkOfferSources(sources: readonly OfferSourceRef[], facts: SourceFactsForCheck): Fields | null {
  const fields: Fields = {};
  const add = (field: string, message: string) => (fields[field] ??= []).push(message);
  const currencies = new Map<string, number[]>();
  sources.forEach((s, i) => {
    if (!facts.supplierKnown(s.supplier)) return add(`sources.${i}.supplier`, `no supplier named ${s.supplier}`);
    const sku = facts.skus.get(sourceKey(s));
    if (sku === undefined) return add(`sources.${i}.sku_key`, `the supplier ${s.supplier} has no SKU ${s.sku_key}`);
    if (sku.currency !== null) currencies.set(sku.currency, [...(currencies.get(sku.currency) ?? []), i]);
  });
  if (currencies.size > 1) {
    const seen = [...currencies].map(([c, at]) => `${c} (sources ${at.join(', ')})`).join(', ');
    add('sources', `the sources must share one currency: ${seen}`);
  }
  return Object.keys(fields).length > 0 ? fields : null;
}
