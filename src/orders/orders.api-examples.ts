/**
 * OpenAPI schemas and examples of the orders' internal API (CONTRACT §5), exactly as
 * `order.mapper.ts`, `orders.controller.ts` and `wallet.service.ts` answer: field names as they are,
 * money as decimal strings. test/ops-docs-examples.e2e-spec.ts checks them against real answers.
 */
import type { SchemaObject } from '@nestjs/swagger';
import { apiError, dateTimeSchema, decimalSchema, listExample, listSchema, objectSchema, okSchema } from '../ops/api-docs.js';
import { ORDER_STATUSES } from './order-state.js';

// ---------------------------------------------------------------------------------- schemas

const nullableString = (description?: string): SchemaObject => ({
  type: 'string',
  nullable: true,
  ...(description ? { description } : {}),
});

export const ORDER_SCHEMA: SchemaObject = objectSchema(
  {
    shop_order_no: { type: 'string', pattern: '^[A-Za-z0-9._:-]{1,64}$', description: "the shop's order number (the idempotency key)" },
    supplier: {
      type: 'string',
      description: 'the supplier the order is placed at (CONTRACT §10): every upstream call of the order goes to it',
    },
    sku_key: nullableString(
      'the SKU the order resolved to: `<upstream product id>:<sku_code>` ' +
        '(null for an order recorded before SKUs had keys whose SKU was unknown)',
    ),
    offer: nullableString('the offer (CONTRACT §11) the order was placed through; null when placed by SKU'),
    route: {
      type: 'array',
      description: "an offer order's attempts (absent for an order placed by SKU): where each went and how it ended",
      items: objectSchema({
        attempt: { type: 'integer', minimum: 1 },
        supplier: { type: 'string' },
        sku_key: nullableString(),
        outcome: { type: 'string', enum: ['queued', 'submitting', 'accepted', 'rejected', 'submit_unknown'] },
        error_code: nullableString(),
      }),
    },
    sku_code: { type: 'string', description: "the SKU's code (the upstream's, unique only within its product)" },
    quantity: { type: 'integer', minimum: 1 },
    status: {
      type: 'string',
      enum: [...ORDER_STATUSES],
      description:
        'an upstream state, or a local one: `submitting` (an attempt is in flight), ' +
        '`rejected` (refused or never sent; nothing charged), `submit_unknown` (sent, outcome unknown)',
    },
    attempt: { type: 'integer', minimum: 1, description: 'the current attempt; a `rejected` order may be submitted again' },
    downstream_order_no: {
      type: 'string',
      description: 'the number sent upstream: `shop_order_no` for attempt 1, `<shop_order_no>-<n>` after',
    },
    upstream_order_id: { type: 'integer', nullable: true },
    upstream_order_no: nullableString(),
    amount: decimalSchema('what the upstream charged', true),
    currency: nullableString(),
    error_code: nullableString("why the order was rejected (the upstream's code, `upstream_unavailable` or `not_placed`)"),
    error_message: nullableString(),
    items: { type: 'array', items: { type: 'string' }, description: 'the delivered payload split into lines (empty lines dropped)' },
    fulfillment: objectSchema({
      type: nullableString('`auto` or `manual`'),
      status: { type: 'string', enum: ['delivered', 'pending'] },
      delivered_at: dateTimeSchema(undefined, true),
      delivery_data: { type: 'object', nullable: true, additionalProperties: true },
    }),
    refund_state: { type: 'string', enum: ['not_refundable', 'refundable', 'refunded'] },
    refundable_amount: decimalSchema('the whole amount, or the `refunded_amount` of a `partially_refunded` order', true),
    refunded_amount: decimalSchema('what the upstream reports as refunded', true),
    refund_records: {
      type: 'array',
      description:
        "the refunds the upstream reports on the order (newer Dujiao-Next's `refund_records`, as its last read listed them), oldest first",
      items: objectSchema({
        upstream_order_id: {
          type: 'integer',
          nullable: true,
          description: 'the upstream order the refund was recorded on (the order or a child order)',
        },
        type: nullableString('`wallet` or `manual`'),
        amount: decimalSchema('the amount given back'),
        currency: nullableString(),
        remark: nullableString(),
        created_at: dateTimeSchema(undefined, true),
      }),
    },
    anomaly: nullableString("an upstream report that contradicted the order's history, if any"),
    stuck: { type: 'boolean', description: 'unfinished without progress for STUCK_ORDER_ALERT_S, or `submit_unknown` for 10 minutes' },
    trace_id: { type: 'string' },
    created_at: dateTimeSchema(),
    updated_at: dateTimeSchema(),
  },
  ['route'],
  'an order (CONTRACT §5)',
);

export const ORDER_ANSWER_SCHEMA: SchemaObject = okSchema({ order: ORDER_SCHEMA });
export const ORDER_LIST_SCHEMA: SchemaObject = listSchema(ORDER_SCHEMA);

export const ORDER_EVENT_SCHEMA: SchemaObject = objectSchema({
  id: { type: 'string' },
  source: { type: 'string', enum: ['api', 'callback', 'poll', 'operator'] },
  kind: { type: 'string', description: '`status`, `refund`, `refresh`…' },
  from: nullableString(),
  to: nullableString(),
  detail: { type: 'object', nullable: true, additionalProperties: true },
  at: dateTimeSchema(),
});

export const ORDER_EVENTS_SCHEMA: SchemaObject = okSchema({
  events: { type: 'array', items: ORDER_EVENT_SCHEMA, description: 'oldest first' },
});

export const WALLET_SCHEMA: SchemaObject = okSchema({
  balance: decimalSchema('the upstream wallet balance'),
  currency: { type: 'string' },
  member_level: { type: 'object', nullable: true, additionalProperties: true, description: 'as ping reports it: `{id, name, slug, icon}`' },
  checked_at: dateTimeSchema(),
});

// --------------------------------------------------------------------------------- requests

export const CREATE_ORDER_EXAMPLES = {
  full: {
    summary: 'an automatic SKU, with a price ceiling and a trace id',
    value: { shop_order_no: 'SO-20261122-0001', sku_code: 'SKU-00042-1', quantity: 2, max_unit_cost: '25.90', trace_id: 'shop-7f3a9c2e' },
  },
  minimal: {
    summary: "the required members only (ceiling: the SKU's current sale price)",
    value: { shop_order_no: 'SO-20261122-0002', sku_code: 'SKU-00042-1', quantity: 1 },
  },
  by_key: {
    summary:
      'a SKU named by its `sku_key` (`<product id>:<sku_code>`): ' +
      "the way to name one of several products' SKUs carrying one code, such as `DEFAULT`",
    value: { shop_order_no: 'SO-20261122-0005', sku_code: '42:SKU-00042-1', quantity: 1 },
  },
  at_supplier: {
    summary: 'at a named supplier (CONTRACT §10): the SKU is looked up within it; the way to order a code several suppliers carry',
    value: { shop_order_no: 'SO-20261122-0006', supplier: 'second', sku_code: 'SKU-00042-1', quantity: 1 },
  },
  manual: {
    summary: 'a manual SKU: `manual_form_data` answers its `manual_form_schema`',
    value: {
      shop_order_no: 'SO-20261122-0003',
      sku_code: 'SKU-00057-1',
      quantity: 1,
      manual_form_data: { account: 'player-88412', server: 'asia-1' },
    },
  },
};

export const RESOLVE_EXAMPLES = {
  upstream_order_id: {
    summary: 'the upstream has it: its id (checked with GET /orders/{id})',
    value: { upstream_order_id: 100232 },
  },
  not_placed: {
    summary: 'the upstream never got it: the order becomes `rejected`',
    value: { not_placed: true, reason: 'no such order in the upstream console (checked by ops)' },
  },
};

// -------------------------------------------------------------------------------- responses

export const ORDER_DELIVERED = {
  shop_order_no: 'SO-20261122-0001',
  supplier: 'main',
  sku_key: '42:SKU-00042-1',
  offer: null,
  sku_code: 'SKU-00042-1',
  quantity: 2,
  status: 'delivered',
  attempt: 1,
  downstream_order_no: 'SO-20261122-0001',
  upstream_order_id: 100231,
  upstream_order_no: 'DJ20261122101502000231',
  amount: '51.80',
  currency: 'CNY',
  error_code: null,
  error_message: null,
  items: ['STEAM-7K4QM-2XD9P-LA3ZR', 'STEAM-H3ZRQ-8WN5T-BE71K'],
  fulfillment: { type: 'auto', status: 'delivered', delivered_at: '2026-11-22T10:15:09.412Z', delivery_data: null },
  refund_state: 'not_refundable',
  refundable_amount: null,
  refunded_amount: null,
  refund_records: [],
  anomaly: null,
  stuck: false,
  trace_id: 'shop-7f3a9c2e',
  created_at: '2026-11-22T10:15:02.118Z',
  updated_at: '2026-11-22T10:15:09.530Z',
};

const PENDING = { items: [], fulfillment: { type: 'auto', status: 'pending', delivered_at: null, delivery_data: null } };

/** Just accepted upstream (201). */
export const ORDER_ACCEPTED = { ...ORDER_DELIVERED, ...PENDING, status: 'pending_payment', updated_at: '2026-11-22T10:15:02.406Z' };

/** Sent, outcome unknown (202). */
export const ORDER_SUBMIT_UNKNOWN = {
  ...ORDER_ACCEPTED,
  shop_order_no: 'SO-20261122-0004',
  downstream_order_no: 'SO-20261122-0004',
  quantity: 1,
  status: 'submit_unknown',
  upstream_order_id: null,
  upstream_order_no: null,
  amount: null,
  error_message: 'outcome unknown: response_timeout',
  trace_id: 'shop-0b41d7aa',
  created_at: '2026-11-22T10:20:00.051Z',
  updated_at: '2026-11-22T10:20:10.077Z',
};

/** Refused by the upstream (402 payment_failed): nothing was charged. */
export const ORDER_REJECTED = {
  ...ORDER_SUBMIT_UNKNOWN,
  shop_order_no: 'SO-20261122-0005',
  downstream_order_no: 'SO-20261122-0005',
  status: 'rejected',
  error_code: 'payment_failed',
  error_message: 'payment failed',
  refund_state: 'refundable',
  refundable_amount: '25.90',
  trace_id: 'shop-9d02c611',
  created_at: '2026-11-22T10:25:00.310Z',
  updated_at: '2026-11-22T10:25:00.512Z',
};

export const ORDER_CANCELED = {
  ...ORDER_ACCEPTED,
  status: 'canceled',
  refund_state: 'refundable',
  refundable_amount: '51.80',
  updated_at: '2026-11-22T10:16:30.002Z',
};

export const ORDER_REFUNDED = { ...ORDER_CANCELED, refund_state: 'refunded', updated_at: '2026-11-22T10:16:30.120Z' };

export const ORDER_RESOLVED = {
  ...ORDER_SUBMIT_UNKNOWN,
  status: 'paid',
  upstream_order_id: 100232,
  upstream_order_no: 'DJ20261122102000000232',
  amount: '25.90',
  error_message: null,
  updated_at: '2026-11-22T10:31:12.845Z',
};

export const ORDER_NOT_PLACED = {
  ...ORDER_SUBMIT_UNKNOWN,
  status: 'rejected',
  error_code: 'not_placed',
  error_message: 'no such order in the upstream console (checked by ops)',
  refund_state: 'refundable',
  refundable_amount: '25.90',
  updated_at: '2026-11-22T10:31:12.845Z',
};

export const ORDER_LIST_EXAMPLE = listExample([ORDER_DELIVERED], 1);

export const ORDER_EVENTS_EXAMPLE = {
  ok: true,
  events: [
    {
      id: '1',
      source: 'api',
      kind: 'status',
      from: null,
      to: 'submitting',
      detail: { attempt: 1, trigger: 'submit' },
      at: '2026-11-22T10:15:02.118Z',
    },
    {
      id: '2',
      source: 'api',
      kind: 'status',
      from: 'submitting',
      to: 'pending_payment',
      detail: { attempt: 1, downstream_order_no: 'SO-20261122-0001' },
      at: '2026-11-22T10:15:02.406Z',
    },
    { id: '3', source: 'callback', kind: 'status', from: 'pending_payment', to: 'delivered', detail: null, at: '2026-11-22T10:15:09.530Z' },
  ],
};

export const WALLET_EXAMPLE = {
  ok: true,
  balance: '1520.00',
  currency: 'CNY',
  member_level: { id: 2, name: { 'zh-CN': '黄金会员', en: 'Gold' }, slug: 'gold', icon: '' },
  checked_at: '2026-11-22T10:00:00.000Z',
};

// ----------------------------------------------------------------------------------- errors

const NO = 'SO-20261122-0001';
export const ORDER_NOT_FOUND = apiError(404, 'order_not_found', 'no order SO-20261122-0009');

export const CREATE_ORDER_ERRORS = [
  apiError(
    400,
    'bad_request',
    'invalid request: shop_order_no, quantity',
    {
      fields: { shop_order_no: ['shop_order_no must match [A-Za-z0-9._:-]{1,64}'], quantity: ['quantity must not be less than 1'] },
    },
    'invalid body; `fields` names each member at fault; nothing recorded',
  ),
  apiError(400, 'manual_form_required', 'SKU SKU-00057-1 is fulfilled manually: its form needs account', {
    fields: { 'manual_form_data.account': ['required'] },
  }),
  apiError(404, 'sku_not_found', 'no SKU SKU-99999-1'),
  apiError(404, 'supplier_not_found', 'no supplier named "third"', { supplier: 'third' }, 'the body names a supplier there is none of'),
  apiError(
    409,
    'sku_ambiguous',
    'sku_code DEFAULT is carried by 2 listed SKUs (products): name one by its sku_key',
    { candidates: ['113:DEFAULT', '57:DEFAULT'] },
    'a plain `sku_code` that several listed SKUs carry: `candidates` names their `sku_key`s; nothing recorded, never a guess. ' +
      'A code (or key) that SKUs of several suppliers carry, without `supplier`, names them as `{supplier, sku_key}`',
  ),
  apiError(
    409,
    'no_source_available',
    'offer GAME-KEY-50: every source refused the order',
    {
      order: { shop_order_no: 'SO-20261122-0009', offer: 'GAME-KEY-50', status: 'rejected', error_code: 'insufficient_stock' },
      route: [
        { attempt: 1, supplier: 'main', sku_key: '42:SKU-00042-1', outcome: 'rejected', error_code: 'insufficient_stock' },
        { attempt: 2, supplier: 'second', sku_key: '42:SKU-00042-1', outcome: 'rejected', error_code: 'insufficient_stock' },
      ],
    },
    'an order through an offer (CONTRACT §11) that every source refused before any charge; a source skipped (disabled, blocked, ' +
      'unavailable, above the ceiling) got no request. The same body again routes it again from the first source',
  ),
  apiError(
    409,
    'supplier_disabled',
    'supplier second is disabled: it takes no new orders',
    { supplier: 'second' },
    'the supplier is disabled (CONTRACT §10): nothing recorded, nothing sent; its unfinished orders are still followed',
  ),
  apiError(
    409,
    'sku_unavailable',
    'SKU SKU-00042-1 is not available (unlisted, inactive or out of stock)',
    {},
    'unlisted, inactive or out of stock, locally or on the fresh read; nothing recorded',
  ),
  apiError(
    409,
    'price_changed',
    'the unit price is now 27.50, above 25.90',
    { unit_cost: '27.50', max_unit_cost: '25.90' },
    'the fresh upstream price is above `max_unit_cost` (default: the sale price); nothing recorded',
  ),
  apiError(
    409,
    'idempotency_conflict',
    `order ${NO} was recorded with another request body`,
    {},
    'this `shop_order_no` was used with another body',
  ),
  apiError(
    402,
    'payment_failed',
    'the upstream refused the order: payment failed',
    { order: ORDER_REJECTED },
    'refused by the upstream: the order is `rejected`, nothing charged',
  ),
  apiError(
    402,
    'insufficient_balance',
    'the upstream refused the order: insufficient balance',
    {
      order: { ...ORDER_REJECTED, error_code: 'insufficient_balance', error_message: 'insufficient balance' },
    },
    'refused by the upstream with its own code and status (also e.g. `insufficient_stock` 409): the order is `rejected`',
  ),
  apiError(
    502,
    'upstream_auth_failed',
    'the upstream refused the order: invalid signature',
    {
      order: { ...ORDER_REJECTED, error_code: 'invalid_signature', error_message: 'invalid signature' },
    },
    'the upstream answered 401/403: the order is `rejected`',
  ),
  apiError(
    503,
    'upstream_unavailable',
    'the product could not be read from the upstream: upstream getProduct not delivered: ECONNREFUSED',
    {},
    'the fresh product read failed: nothing recorded',
    'product_read_failed',
  ),
  apiError(
    503,
    'upstream_unavailable',
    'the upstream could not be reached (ECONNREFUSED)',
    {
      order: { ...ORDER_REJECTED, error_code: 'upstream_unavailable', error_message: 'the upstream could not be reached (ECONNREFUSED)' },
    },
    'unreachable before sending, after a few quick retries: the order is `rejected`',
  ),
];

const cancelErrors = (action: 'cancel' | 'refund') => [
  ORDER_NOT_FOUND,
  apiError(
    409,
    'cancel_not_allowed',
    `the upstream does not allow canceling order ${NO} now`,
    { order: ORDER_DELIVERED },
    `the upstream refused to cancel; the order is unchanged${action === 'refund' ? ', nothing refunded' : ''}`,
  ),
  apiError(409, 'outcome_unknown', 'order SO-20261122-0004 is submit_unknown: whether the upstream has it is not known yet', {
    order: ORDER_SUBMIT_UNKNOWN,
  }),
  apiError(
    503,
    'upstream_unavailable',
    `the upstream could not be reached (ECONNREFUSED); the order is unchanged`,
    { order: ORDER_ACCEPTED },
    'the upstream could not be asked; the order is unchanged',
  ),
  apiError(502, 'upstream_error', 'the upstream refused the cancel: order_not_found', { order: ORDER_ACCEPTED }),
  apiError(502, 'upstream_auth_failed', 'the upstream refused the cancel: invalid_signature', { order: ORDER_ACCEPTED }),
];
export const CANCEL_ERRORS = cancelErrors('cancel');
export const REFUND_ERRORS = cancelErrors('refund');

export const REFRESH_ERRORS = [
  ORDER_NOT_FOUND,
  apiError(
    503,
    'upstream_unavailable',
    'the order could not be read from the upstream: upstream getOrder not delivered: ECONNREFUSED',
    {},
    'the upstream could not be read; the order is unchanged',
  ),
];

export const RESOLVE_ERRORS = [
  apiError(400, 'bad_request', 'invalid request: not_placed', {
    fields: { not_placed: ['not_placed must be true (or give upstream_order_id)'] },
  }),
  ORDER_NOT_FOUND,
  apiError(409, 'resolve_mismatch', 'upstream order 100231 carries downstream_order_no SO-20261122-0001, not SO-20261122-0004'),
  apiError(409, 'not_unknown', `order ${NO} is delivered, not submit_unknown`),
  apiError(
    503,
    'upstream_unavailable',
    'the upstream order could not be read: upstream getOrder not delivered: ECONNREFUSED',
    {},
    'the upstream order could not be read; nothing changed',
  ),
];

export const LIST_ORDERS_ERRORS = [
  apiError(400, 'bad_request', 'invalid request: status', {
    fields: { status: [`status must be one of the following values: ${ORDER_STATUSES.join(', ')}`] },
  }),
];

export const WALLET_ERRORS = [
  apiError(404, 'supplier_not_found', 'no supplier named "nobody"'),
  apiError(502, 'upstream_auth_failed', 'the upstream refused our credentials: definitive: invalid_signature (HTTP 401)'),
  apiError(503, 'upstream_unavailable', 'the upstream wallet could not be read: ECONNREFUSED'),
];
