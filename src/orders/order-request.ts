/**
 * The shop's order request as the idempotency key sees it (pure): two requests with one
 * `shop_order_no` are "the same" when their fingerprints match. `trace_id` is not part of it (a retry
 * may carry a new one); `supplier` is, when the request names one.
 */
import { createHash } from 'node:crypto';
import { Decimal } from 'decimal.js';

export interface PlaceOrderInput {
  shop_order_no: string;
  /** The supplier to buy from (CONTRACT §10); absent: the one supplier whose SKU the reference names. */
  supplier?: string;
  sku_code: string;
  /**
   * The offer (CONTRACT §11) the order is placed through: the request names it instead of a SKU, and
   * `supplier`/`sku_code` are the source being tried (not part of the fingerprint).
   */
  offer?: string;
  /** An offer order's price ceiling when the shop gives no max_unit_cost: the offer's sale price (not part of the fingerprint). */
  ceiling?: string;
  quantity: number;
  manual_form_data?: Record<string, unknown>;
  max_unit_cost?: string;
  trace_id?: string;
}

function canonical(v: unknown): unknown {
  if (Array.isArray(v)) return v.map(canonical);
  if (v !== null && typeof v === 'object') {
    return Object.fromEntries(
      Object.keys(v as Record<string, unknown>)
        .sort()
        .map((k) => [k, canonical((v as Record<string, unknown>)[k])]),
    );
  }
  return v;
}

export function requestFingerprint(input: PlaceOrderInput): string {
  // an offer order: the offer, not the source being tried, is what the shop sent
  const what = input.offer !== undefined ? { offer: input.offer } : { sku_code: input.sku_code };
  const normalized = {
    ...what,
    quantity: input.quantity,
    manual_form_data: canonical(input.manual_form_data ?? null),
    max_unit_cost: input.max_unit_cost === undefined ? null : new Decimal(input.max_unit_cost).toFixed(),
    // only when named: a body without it keeps the fingerprint it always had
    ...(input.supplier !== undefined && input.offer === undefined ? { supplier: input.supplier } : {}),
  };
  return createHash('sha256').update(JSON.stringify(normalized)).digest('hex');
}

/** Attempt 1 goes upstream as the shop's number, attempt n > 1 as `<shop_order_no>-<n>`. */
export function downstreamOrderNo(shopOrderNo: string, attempt: number): string {
  return attempt === 1 ? shopOrderNo : `${shopOrderNo}-${attempt}`;
}

/**
 * A manual order's form data against the product's form schema `{fields: [{key, required}]}`, as the
 * upstream checks it: `missing`, the required fields absent or empty; `unknown`, keys the schema does
 * not list (with a schema, a key it lacks is refused upstream, every key when it has no fields). No
 * data at all is fine where no field is required. A null schema is not known here: only the upstream
 * can judge the data then (nothing is missing or unknown).
 */
export function manualFormProblems(
  schema: Record<string, unknown> | null | undefined,
  data: Record<string, unknown> | undefined,
): { missing: string[]; unknown: string[] } {
  if (!schema) return { missing: [], unknown: [] };
  const fields = Array.isArray(schema.fields) ? (schema.fields as unknown[]) : [];
  const keys = new Set(
    fields
      .map((f) => (typeof f === 'object' && f !== null ? (f as { key?: unknown }).key : undefined))
      .filter((k): k is string => typeof k === 'string'),
  );
  return { missing: missingManualFields(schema, data), unknown: Object.keys(data ?? {}).filter((k) => !keys.has(k)) };
}

/** Required keys of a manual form schema `{fields: [{key, required}]}` missing from the data. */
export function missingManualFields(
  schema: Record<string, unknown> | null | undefined,
  data: Record<string, unknown> | undefined,
): string[] {
  const fields = (schema as { fields?: unknown } | null | undefined)?.fields;
  if (!Array.isArray(fields)) return [];
  return fields
    .filter(
      (f): f is { key: string; required: true } =>
        typeof f === 'object' &&
        f !== null &&
        (f as { required?: unknown }).required === true &&
        typeof (f as { key?: unknown }).key === 'string',
    )
    .map((f) => f.key)
    .filter((key) => {
      const v = data?.[key];
      return v === undefined || v === null || v === '';
    });
}
