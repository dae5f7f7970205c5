/**
 * The body of `POST /orders` as the upstream reads it: its fields and limits (400 bad_request), and
 * the check of `manual_form_data` against a product's manual form schema.
 */
import { bad, isPlainObject, isPositiveInt } from './sandbox-http.js';

export interface CreateOrderInput {
  sku_id: number;
  quantity: number;
  manual_form_data?: Record<string, unknown>;
  downstream_order_no?: string;
  trace_id?: string;
  callback_url?: string;
}

export function validateCreate(body: unknown, maxQuantity: number): CreateOrderInput {
  if (!isPlainObject(body)) throw bad('the body must be a JSON object');
  if (!isPositiveInt(body.sku_id)) throw bad('sku_id must be an integer >= 1');
  if (!isPositiveInt(body.quantity)) throw bad('quantity must be an integer >= 1');
  if (body.quantity > maxQuantity) throw bad(`quantity must be at most ${maxQuantity}`);
  const input: CreateOrderInput = { sku_id: body.sku_id, quantity: body.quantity };
  if (body.manual_form_data !== undefined && body.manual_form_data !== null) {
    if (!isPlainObject(body.manual_form_data)) throw bad('manual_form_data must be an object');
    input.manual_form_data = body.manual_form_data;
  }
  for (const [key, max] of [
    ['downstream_order_no', 128],
    ['trace_id', 256],
  ] as const) {
    const v = body[key];
    if (v === undefined || v === null || v === '') continue;
    if (typeof v !== 'string' || v.length > max) throw bad(`${key} must be a string of at most ${max} characters`);
    input[key] = v;
  }
  // a URI, judged by callbackUrlProblem (too long, empty, not a URL: invalid_callback_url)
  const callbackUrl = body.callback_url;
  if (callbackUrl !== undefined && callbackUrl !== null) {
    if (typeof callbackUrl !== 'string') throw bad('callback_url must be a string');
    input.callback_url = callbackUrl;
  }
  return input;
}

/**
 * Dujiao-Next's check of the data against the schema: null when accepted, else its message. No data
 * (absent or `{}`) is accepted unless a field is required; a key the schema does not list is refused,
 * and so is every key when the schema has no fields.
 */
export function dujiaoManualFormProblem(schema: Record<string, unknown> | null, data: Record<string, unknown> | undefined): string | null {
  const fields = (Array.isArray(schema?.fields) ? (schema.fields as unknown[]) : []).filter(isPlainObject);
  const keys = new Set(fields.map((f) => f.key).filter((k): k is string => typeof k === 'string'));
  const given = data ?? {};
  if (Object.keys(given).some((k) => !keys.has(k))) return 'manual form field invalid';
  if (missingRequiredFields(schema, given).length > 0) return 'manual form required missing';
  return null;
}

/**
 * Keys of the required fields of a manual form schema `{fields: [{key, required}]}` that the data
 * lacks or leaves empty (absent, null or ''). A schema without a `fields` list requires nothing.
 * The same reading as the relay's own check (src/orders/order-request.ts `missingManualFields`),
 * written apart on purpose: the sandbox is the upstream the relay is tested against, and shares only
 * the wire protocol's code with it (signing), so that a mistake in the relay's reading is not also the
 * upstream's.
 */
export function missingRequiredFields(schema: Record<string, unknown> | null, data: Record<string, unknown>): string[] {
  const fields = schema?.fields;
  if (!Array.isArray(fields)) return [];
  const missing: string[] = [];
  for (const f of fields as unknown[]) {
    if (!isPlainObject(f) || f.required !== true || typeof f.key !== 'string') continue;
    const v = data[f.key];
    if (v === undefined || v === null || v === '') missing.push(f.key);
  }
  return missing;
}
