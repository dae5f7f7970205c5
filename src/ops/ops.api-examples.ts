/**
 * OpenAPI schemas and examples of the public endpoints: `/health*` (health.service.ts), `/metrics`
 * and `POST /callbacks/upstream` (CONTRACT §6). test/ops-docs-examples.e2e-spec.ts checks them
 * against real answers.
 */
import type { SchemaObject } from '@nestjs/swagger';
import { apiError, dateTimeSchema, decimalSchema, objectSchema } from './api-docs.js';

const nullableString = (description?: string): SchemaObject => ({
  type: 'string',
  nullable: true,
  ...(description ? { description } : {}),
});

// ------------------------------------------------------------------------------------ health

const BUDGET_SCHEMA: SchemaObject = objectSchema(
  {
    limit: nullableString('UPSTREAM_RATE_LIMIT as configured, `<requests>/<window>` (`60/60s`); null when the budget is off'),
    used: {
      type: 'integer',
      minimum: 0,
      nullable: true,
      description: 'requests granted in the window ending now (every replica together); null when not counted',
    },
    left: {
      type: 'integer',
      minimum: 0,
      nullable: true,
      description:
        'requests the budget still grants in that window (its own limit is the configured one less a safety margin); null when not counted',
    },
    blocked_until: dateTimeSchema("the end of the key's block after an HTTP 429 (every replica waits for it); null when not blocked", true),
    capacity: {
      ...objectSchema({
        requests_per_minute: { type: 'number', description: 'requests the budget grants a minute (the limit less its safety margin)' },
        requests_per_order: {
          type: 'number',
          nullable: true,
          description:
            'requests a placed order costs at the current mix (creates, delivering reads, price reads and polls of the ' +
            'window, over its creates); null without an order in the window',
        },
        orders_per_minute: {
          type: 'number',
          nullable: true,
          description: 'orders a minute the window leaves room for at that cost, besides the sync and reconciliation of now',
        },
        reconcile: objectSchema(
          {
            last_window: { type: 'integer', minimum: 0, description: "reconciliation's requests in the window ending now" },
            limit_per_window: { type: 'integer', minimum: 1, description: 'the most it takes of any window (RECONCILE_BUDGET_SHARE)' },
            limit_per_minute: { type: 'number', description: 'that, a minute' },
            orders_per_day_full_schedule: {
              type: 'integer',
              nullable: true,
              description:
                'finished orders a day whose every scheduled read (RECONCILE_AFTER) fits in that share; null when the schedule is off',
            },
            due: { type: 'integer', minimum: 0, nullable: true, description: 'scheduled reads due and not made yet' },
          },
          [],
          'what reconciliation (re-reads of finished orders and of ordered products, the periodic ping; the lowest class) takes',
        ),
      }),
      nullable: true,
      description: 'what the key carries at the current mix, from the grants of the window ending now; null when the budget is off',
    },
  },
  [],
  "the supplier's request budget of its API key, shared by every replica",
);

const LAST_SYNC_SCHEMA: SchemaObject = {
  ...objectSchema({
    run_id: nullableString(),
    mode: nullableString(),
    status: nullableString(),
    started_at: dateTimeSchema(undefined, true),
    finished_at: dateTimeSchema(undefined, true),
    error: nullableString(),
    last_success_at: dateTimeSchema('the end of the latest run that succeeded', true),
  }),
  nullable: true,
  description: 'the latest catalog sync run',
};

const WALLET_HEALTH_SCHEMA: SchemaObject = objectSchema(
  { balance: decimalSchema('the upstream wallet balance'), currency: { type: 'string' }, checked_at: dateTimeSchema() },
  [],
  'from the last successful ping',
);

const UPSTREAM_STATE_SCHEMA: SchemaObject = {
  type: 'string',
  enum: ['up', 'down', 'unknown', 'rate_limited', 'auth_failed'],
  description:
    'as the last ping saw it: `auth_failed` when the upstream refused our credentials (HTTP 401/403); `rate_limited` while the key is ' +
    'blocked after a 429 (`budget.blocked_until`), whatever else the ping saw',
};

const SUPPLIER_HEALTH_SCHEMA: SchemaObject = objectSchema(
  {
    enabled: { type: 'boolean', description: 'a disabled supplier does not count in the top-level `upstream`' },
    upstream: UPSTREAM_STATE_SCHEMA,
    checked_at: dateTimeSchema('its last ping', true),
    latency_ms: { type: 'integer', nullable: true },
    error: nullableString('why its last ping failed (never a secret)'),
    budget: BUDGET_SCHEMA,
    last_sync: LAST_SYNC_SCHEMA,
    wallet: WALLET_HEALTH_SCHEMA,
  },
  ['wallet'],
  'one supplier: its upstream, request budget, last sync and wallet',
);

export const HEALTH_SCHEMA: SchemaObject = objectSchema(
  {
    ok: { type: 'boolean', description: 'the database answers' },
    status: { type: 'string', enum: ['ok', 'unavailable'] },
    database: { type: 'string', enum: ['up', 'down'] },
    upstream: objectSchema(
      {
        status: {
          ...UPSTREAM_STATE_SCHEMA,
          description: "the worst of the enabled suppliers' (`auth_failed`, `down`, `rate_limited`, `unknown`, `up`)",
        },
        checked_at: dateTimeSchema(undefined, true),
        latency_ms: { type: 'integer', nullable: true },
        error: nullableString(),
        supplier: nullableString('the supplier whose state this is'),
      },
      [],
      "the worst of the enabled suppliers' upstreams as their last periodic pings saw them (never a call made for this request)",
    ),
    last_sync: { ...LAST_SYNC_SCHEMA, description: "the `UPSTREAM_*` supplier's latest catalog sync run" },
    wallet: { ...WALLET_HEALTH_SCHEMA, description: "the `UPSTREAM_*` supplier's wallet, from its last successful ping" },
    budget: { ...BUDGET_SCHEMA, description: "the `UPSTREAM_*` supplier's request budget (as `suppliers.<name>.budget`)" },
    queued: {
      type: 'integer',
      minimum: 0,
      nullable: true,
      description: 'orders accepted and waiting for the request budget (status `queued`); null when the database did not tell in time',
    },
    suppliers: {
      type: 'object',
      description: 'every supplier by name (CONTRACT §10)',
      additionalProperties: SUPPLIER_HEALTH_SCHEMA,
    },
    reconciliation: objectSchema(
      {
        backlog: { type: 'integer', minimum: 0, nullable: true, description: 'scheduled reads of finished orders due and not made yet' },
        oldest_due_s: {
          type: 'integer',
          minimum: 0,
          nullable: true,
          description: 'how long the oldest of them has been due, in seconds; null without one',
        },
      },
      [],
      "reconciliation's backlog: when it grows or ages, reconciliation falls behind (it takes the lowest budget class)",
    ),
  },
  ['wallet'],
);

const CAPACITY_EXAMPLE = {
  requests_per_minute: 55.9,
  requests_per_order: 2.1,
  orders_per_minute: 21.9,
  reconcile: { last_window: 4, limit_per_window: 11, limit_per_minute: 10.8, orders_per_day_full_schedule: 5176, due: 0 },
};

const LAST_SYNC_EXAMPLE = {
  run_id: 'run_20261122094500_1d51e096',
  mode: 'full',
  status: 'succeeded',
  started_at: '2026-11-22T09:45:00.012Z',
  finished_at: '2026-11-22T09:45:12.337Z',
  error: null,
  last_success_at: '2026-11-22T09:45:12.337Z',
};
const WALLET_HEALTH_EXAMPLE = { balance: '1520.00', currency: 'CNY', checked_at: '2026-11-22T10:00:00.000Z' };
const BUDGET_EXAMPLE = { limit: '60/60s', used: 31, left: 26, blocked_until: null, capacity: CAPACITY_EXAMPLE };
const MAIN_HEALTH_EXAMPLE = {
  enabled: true,
  upstream: 'up',
  checked_at: '2026-11-22T10:00:00.000Z',
  latency_ms: 42,
  error: null,
  budget: BUDGET_EXAMPLE,
  last_sync: LAST_SYNC_EXAMPLE,
  wallet: WALLET_HEALTH_EXAMPLE,
};

export const HEALTH_EXAMPLE = {
  ok: true,
  status: 'ok',
  database: 'up',
  upstream: { status: 'up', checked_at: '2026-11-22T10:00:00.000Z', latency_ms: 42, error: null, supplier: 'main' },
  last_sync: LAST_SYNC_EXAMPLE,
  wallet: WALLET_HEALTH_EXAMPLE,
  budget: BUDGET_EXAMPLE,
  queued: 0,
  suppliers: { main: MAIN_HEALTH_EXAMPLE },
  reconciliation: { backlog: 0, oldest_due_s: null },
};

/** One supplier refuses our credentials: the top-level `upstream` is its `auth_failed`, the service stays `ok`. */
export const HEALTH_AUTH_FAILED_EXAMPLE = {
  ...HEALTH_EXAMPLE,
  upstream: {
    status: 'auth_failed',
    checked_at: '2026-11-22T10:00:00.000Z',
    latency_ms: 12,
    error: 'definitive: invalid_signature (HTTP 401)',
    supplier: 'second',
  },
  suppliers: {
    main: MAIN_HEALTH_EXAMPLE,
    second: {
      ...MAIN_HEALTH_EXAMPLE,
      upstream: 'auth_failed',
      latency_ms: 12,
      error: 'definitive: invalid_signature (HTTP 401)',
      last_sync: null,
    },
  },
};

/** The key blocked after a 429: every upstream request waits, new orders are queued. */
export const HEALTH_RATE_LIMITED_EXAMPLE = {
  ...HEALTH_EXAMPLE,
  upstream: { status: 'rate_limited', checked_at: '2026-11-22T10:00:00.000Z', latency_ms: 42, error: null, supplier: 'main' },
  budget: { ...BUDGET_EXAMPLE, blocked_until: '2026-11-22T10:00:30.000Z' },
  queued: 3,
  suppliers: {
    main: { ...MAIN_HEALTH_EXAMPLE, upstream: 'rate_limited', budget: { ...BUDGET_EXAMPLE, blocked_until: '2026-11-22T10:00:30.000Z' } },
  },
};

export const HEALTH_DOWN_EXAMPLE = {
  ok: false,
  status: 'unavailable',
  database: 'down',
  upstream: { status: 'up', checked_at: '2026-11-22T10:00:00.000Z', latency_ms: 42, error: null, supplier: 'main' },
  last_sync: null,
  wallet: WALLET_HEALTH_EXAMPLE,
  budget: { limit: '60/60s', used: null, left: null, blocked_until: null, capacity: null },
  queued: null,
  suppliers: {
    main: {
      ...MAIN_HEALTH_EXAMPLE,
      last_sync: null,
      budget: { limit: '60/60s', used: null, left: null, blocked_until: null, capacity: null },
    },
  },
  reconciliation: { backlog: null, oldest_due_s: null },
};

export const LIVE_SCHEMA: SchemaObject = objectSchema({ ok: { type: 'boolean', enum: [true] } });

export const READY_SCHEMA: SchemaObject = objectSchema({
  ok: { type: 'boolean' },
  database: { type: 'string', enum: ['up', 'down'] },
  migrations: {
    ...objectSchema({ pending: { type: 'array', items: { type: 'string' } } }),
    nullable: true,
    description: 'null when the database cannot tell',
  },
  shutting_down: { type: 'boolean' },
});
export const READY_EXAMPLE = { ok: true, database: 'up', migrations: { pending: [] }, shutting_down: false };
export const NOT_READY_EXAMPLE = { ok: false, database: 'up', migrations: { pending: [] }, shutting_down: true };

export const METRICS_EXAMPLE = [
  '# HELP relay_order_placements_total Order placement attempts by outcome (accepted, rejected, unavailable, unknown, deduplicated).',
  '# TYPE relay_order_placements_total counter',
  'relay_order_placements_total{outcome="accepted",supplier="main"} 1287',
  "# HELP relay_upstream_up Whether a supplier's last ping reached it with our credentials accepted (1) or not (0: down or auth_failed).",
  '# TYPE relay_upstream_up gauge',
  'relay_upstream_up{supplier="main"} 1',
  'relay_upstream_up{supplier="second"} 0',
  '# HELP relay_reconcile_backlog Finished orders whose scheduled reconciliation read is due and not made yet, by the ' +
    "order's supplier (read on scrape).",
  '# TYPE relay_reconcile_backlog gauge',
  'relay_reconcile_backlog{supplier="main"} 0',
  '# HELP relay_outbox_backlog Shop notifications waiting for delivery.',
  '# TYPE relay_outbox_backlog gauge',
  'relay_outbox_backlog 0',
  '',
].join('\n');

// --------------------------------------------------------------------------------- callbacks

export const CALLBACK_BODY_SCHEMA: SchemaObject = {
  type: 'object',
  required: ['order_id', 'status'],
  description: "the upstream's order callback: a snapshot of the order (a hint; the order is read back with `GET /orders/{id}`)",
  properties: {
    event: { type: 'string', description: '`order.status_changed` or `order.fulfilled`' },
    order_id: { type: 'integer', minimum: 1 },
    order_no: { type: 'string' },
    downstream_order_no: { type: 'string', description: 'the number the relay sent (`shop_order_no`, or `<shop_order_no>-<n>`)' },
    status: { type: 'string', description: 'an upstream order state' },
    fulfillment: {
      type: 'object',
      additionalProperties: true,
      description: 'never stored from the callback: the items are taken from `GET /orders/{id}`',
    },
    timestamp: { type: 'integer', description: 'Unix time' },
  },
};

export const CALLBACK_EXAMPLES = {
  status_changed: {
    summary: 'a status change',
    value: {
      event: 'order.status_changed',
      order_id: 100231,
      order_no: 'DJ20261122101502000231',
      downstream_order_no: 'SO-20261122-0001',
      status: 'fulfilling',
      timestamp: 1795342505,
    },
  },
  fulfilled: {
    summary: 'delivered, with the fulfillment',
    value: {
      event: 'order.fulfilled',
      order_id: 100231,
      order_no: 'DJ20261122101502000231',
      downstream_order_no: 'SO-20261122-0001',
      status: 'delivered',
      fulfillment: {
        type: 'auto',
        status: 'delivered',
        payload: 'STEAM-7K4QM-2XD9P-LA3ZR\nSTEAM-H3ZRQ-8WN5T-BE71K',
        delivery_data: null,
        delivered_at: '2026-11-22T10:15:09Z',
      },
      timestamp: 1795342509,
    },
  },
};

export const CALLBACK_HEADERS = [
  {
    name: 'Service-Api-Key',
    description: 'our UPSTREAM_API_KEY (the prefix is UPSTREAM_HEADER_PREFIX: `Service`, or `Dujiao-Next` with that profile)',
    example: 'ak_live_3f9c',
  },
  { name: 'Service-Timestamp', description: 'Unix seconds, within ±CALLBACK_TOLERANCE_S (default 60) of now', example: '1795342509' },
  {
    name: 'Service-Signature',
    description:
      'lower-case hex HMAC-SHA256 with CALLBACK_SECRET of the canonical string (UPSTREAM_SIGNATURE_TEMPLATE over `POST`, ' +
      'CALLBACK_SIGNATURE_PATH, the timestamp and the raw body)',
    example: '5d41402abc4b2a76b9719d911017c5925d41402abc4b2a76b9719d911017c592',
  },
];

export const CALLBACK_ERRORS = [
  apiError(
    401,
    'invalid_signature',
    'callback signature verification failed',
    {},
    'missing header, wrong API key, timestamp outside the tolerance, malformed or wrong signature: nothing is touched',
  ),
  apiError(500, 'internal_error', 'internal error', {}, 'the callback could not be stored: the upstream tries again'),
];
