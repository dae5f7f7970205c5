/**
 * Every `error_code` the service answers with (CONTRACT §5, §6, and the operator endpoints), its
 * HTTP status and meaning: the table of the API docs, and where an `AppError` takes its status from
 * its code. An upstream refusal of an order is passed on with the upstream's own code and status
 * (e.g. `payment_failed` 402, `insufficient_balance` 402: `AppError.fromUpstream`).
 */
export interface ErrorCodeDoc {
  code: string;
  status: number;
  meaning: string;
}

const TABLE = [
  {
    code: 'bad_request',
    status: 400,
    meaning:
      'invalid request (query, path or body); `fields` names each field at fault (`body` for a body that is not JSON: ' +
      'another content type than `application/json`, none, or JSON that does not parse)',
  },
  { code: 'manual_form_required', status: 400, meaning: 'the SKU is fulfilled manually and `manual_form_data` is missing or incomplete' },
  {
    code: 'unauthorized',
    status: 401,
    meaning: 'missing or wrong `Authorization: Bearer <INTERNAL_API_TOKEN>` on `/internal/*` (a path there that is no route included)',
  },
  {
    code: 'invalid_signature',
    status: 401,
    meaning: 'callback: missing header, wrong API key, timestamp outside the tolerance, malformed or wrong signature',
  },
  {
    code: 'payment_failed',
    status: 402,
    meaning: 'the upstream refused the payment from the wallet; the order is `rejected` (in `order`)',
  },
  { code: 'insufficient_balance', status: 402, meaning: 'the upstream wallet cannot pay the order; the order is `rejected` (in `order`)' },
  {
    code: 'not_found',
    status: 404,
    meaning: 'no such route, or a method the path does not take (under `/internal/`: only with a valid token, else 401 `unauthorized`)',
  },
  { code: 'sku_not_found', status: 404, meaning: 'no SKU with this `sku_key` or `sku_code`' },
  { code: 'product_not_found', status: 404, meaning: 'no product with this id (of this `supplier`)' },
  { code: 'media_not_found', status: 404, meaning: '`GET /media/{file}`: no mirrored image with this name' },
  { code: 'sync_run_not_found', status: 404, meaning: 'no sync run with this `run_id`' },
  { code: 'reconciliation_run_not_found', status: 404, meaning: 'no reconciliation run with this `run_id`' },
  { code: 'supplier_not_found', status: 404, meaning: 'no supplier with this name' },
  { code: 'order_not_found', status: 404, meaning: 'no order with this `shop_order_no`' },
  { code: 'offer_not_found', status: 404, meaning: 'no offer with this `code`' },
  { code: 'delivery_not_found', status: 404, meaning: 'no shop webhook delivery with this id' },
  { code: 'sync_in_progress', status: 409, meaning: 'a catalog sync is already running; `run_id` names it' },
  { code: 'reconciliation_in_progress', status: 409, meaning: 'a reconciliation run is already running; `run_id` names it' },
  { code: 'supplier_exists', status: 409, meaning: 'a supplier with this name exists already' },
  {
    code: 'supplier_managed_by_env',
    status: 409,
    meaning: 'the supplier the `UPSTREAM_*` variables define: change it through the environment, not the API',
  },
  { code: 'supplier_disabled', status: 409, meaning: 'the supplier is disabled: it takes no new orders and no syncs' },
  {
    code: 'no_source_available',
    status: 409,
    meaning:
      "every source of the order's offer refused it before any charge (or none could be tried): the `rejected` order and its `route`",
  },
  { code: 'supplier_busy', status: 409, meaning: 'the supplier has unfinished orders: it cannot be deleted until they end' },
  { code: 'idempotency_conflict', status: 409, meaning: 'this `shop_order_no` was used with another request body' },
  {
    code: 'sku_ambiguous',
    status: 409,
    meaning: "a plain `sku_code` that several products carry: name the SKU by its `sku_key` (the envelope's `candidates`)",
  },
  { code: 'sku_unavailable', status: 409, meaning: 'the SKU is unlisted, inactive or out of stock (locally, or on the fresh read)' },
  {
    code: 'price_changed',
    status: 409,
    meaning: 'the fresh upstream price is above `max_unit_cost` (default: the sale price before the read)',
  },
  { code: 'cancel_not_allowed', status: 409, meaning: 'the upstream refused to cancel; the local order is unchanged' },
  { code: 'outcome_unknown', status: 409, meaning: 'cancel/refund of an order whose submission is `submitting` or `submit_unknown`' },
  { code: 'resolve_mismatch', status: 409, meaning: 'resolve: the upstream order belongs to another `downstream_order_no`' },
  { code: 'not_unknown', status: 409, meaning: 'resolve: the order is not `submit_unknown`' },
  { code: 'delivery_pending', status: 409, meaning: 'replay: the webhook delivery is still pending (it will be tried again by itself)' },
  { code: 'payload_too_large', status: 413, meaning: 'request body over 64 KiB' },
  { code: 'too_many_requests', status: 429, meaning: 'too many requests' },
  { code: 'internal_error', status: 500, meaning: 'unexpected error (logged); for a callback, the upstream retries it' },
  {
    code: 'upstream_auth_failed',
    status: 502,
    meaning: 'the upstream answered 401/403: check UPSTREAM_API_KEY / UPSTREAM_API_SECRET / the profile',
  },
  {
    code: 'upstream_error',
    status: 502,
    meaning:
      'the upstream refused an operation with a code the relay does not expect (kept in `error_message`); the local order is unchanged',
  },
  { code: 'service_unavailable', status: 503, meaning: 'the instance is shutting down; try another replica or again shortly' },
  {
    code: 'upstream_unavailable',
    status: 503,
    meaning: 'the upstream could not be reached (nothing was placed, or the local order is unchanged)',
  },
] as const;

/** A code of the table: the only codes `new AppError(code, …)` takes. */
export type ErrorCode = (typeof TABLE)[number]['code'];

export const ERROR_CODES: readonly ErrorCodeDoc[] = TABLE;

const STATUS_BY_CODE = Object.fromEntries(TABLE.map((e) => [e.code, e.status])) as Readonly<Record<ErrorCode, number>>;

/** The HTTP status of a code of the table. */
export function statusOf(code: ErrorCode): number {
  return STATUS_BY_CODE[code];
}
