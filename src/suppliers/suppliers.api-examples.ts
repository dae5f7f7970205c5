/**
 * OpenAPI schemas and examples of `/internal/suppliers` (CONTRACT §10), exactly as the controller
 * answers (supplier.responses.ts): never a secret, the key's last 4 characters only.
 */
import type { SchemaObject } from '@nestjs/swagger';
import { apiError, dateTimeSchema, decimalSchema, listExample, nullableSchema, objectSchema } from '../ops/api-docs.js';
import { SUPPLIER_PROFILES } from './supplier-input.js';

const nullableString = (description: string): SchemaObject => ({ type: 'string', nullable: true, description });
const nullableInt = (description: string): SchemaObject => ({ type: 'integer', nullable: true, description });

/** The settings as the variables of §3 write them (one supplier's `UPSTREAM_*`, `CALLBACK_*`, `SYNC_*`). */
const SETTINGS_PROPERTIES: Record<string, SchemaObject> = {
  header_prefix: { type: 'string', pattern: '^[A-Za-z0-9-]{1,64}$', description: 'UPSTREAM_HEADER_PREFIX' },
  signature_template: { type: 'string', description: 'UPSTREAM_SIGNATURE_TEMPLATE (a real newline, not `\\n`)' },
  callback_signature_path: nullableString('CALLBACK_SIGNATURE_PATH; null: the callback URL’s own path'),
  order_no_idempotent: { type: 'boolean', description: 'UPSTREAM_ORDER_NO_IDEMPOTENT' },
  timeout_ms: { type: 'integer', minimum: 50, maximum: 600_000, description: 'UPSTREAM_TIMEOUT_MS' },
  rate_limit: { type: 'string', description: 'UPSTREAM_RATE_LIMIT: `<requests>/<window>` (`60/60s`) or `off`' },
  rate_limit_block_s: { type: 'number', minimum: 0.001, maximum: 86_400, description: 'UPSTREAM_RATE_LIMIT_BLOCK_S' },
  page_size: { type: 'integer', minimum: 1, maximum: 1000, description: 'SYNC_PAGE_SIZE' },
  list_inactive: { type: 'boolean', description: 'UPSTREAM_LIST_INACTIVE' },
  sync_mode: { type: 'string', enum: ['auto', 'full', 'incremental'], description: 'SYNC_MODE' },
};

export const SUPPLIER_SCHEMA: SchemaObject = objectSchema(
  {
    name: { type: 'string', pattern: '^[a-z][a-z0-9-]{0,31}$', description: 'fixed once created' },
    base_url: { type: 'string', description: 'including `/api/v1/upstream`' },
    profile: { type: 'string', enum: [...SUPPLIER_PROFILES] },
    api_key_hint: { type: 'string', description: "the API key's last 4 characters (the secret is never answered)" },
    enabled: { type: 'boolean', description: 'false: no syncs and no new orders (its unfinished orders are still followed)' },
    managed_by_env: { type: 'boolean', description: 'the `UPSTREAM_*` supplier: changed through the environment only' },
    settings: objectSchema(SETTINGS_PROPERTIES, [], "every setting, the profile's preset under what the operator set"),
    callback_url: nullableString('where its callbacks go (`CALLBACK_PUBLIC_URL` + `/<name>`); null without CALLBACK_PUBLIC_URL'),
    health: objectSchema({
      upstream: nullableString('`up`, `down`, `auth_failed` or `rate_limited`; null when not known'),
      budget: nullableSchema(
        objectSchema({
          limit: nullableString('`<requests>/<window>`; null when the budget is off'),
          used: nullableInt('requests granted in the window ending now'),
          left: nullableInt('requests the window grants still'),
          blocked_until: dateTimeSchema('the end of its key’s block after a 429', true),
        }),
      ),
      checked_at: dateTimeSchema('when `upstream` was seen', true),
    }),
    wallet: objectSchema({
      balance: { ...decimalSchema('from its last ping', true) },
      currency: nullableString('from its last ping'),
      checked_at: dateTimeSchema(undefined, true),
    }),
    last_sync: nullableSchema(
      objectSchema({
        run_id: { type: 'string' },
        mode: { type: 'string' },
        status: { type: 'string' },
        started_at: dateTimeSchema(),
        finished_at: dateTimeSchema(undefined, true),
        error: nullableString('why it failed'),
      }),
    ),
  },
  [],
  'a supplier (CONTRACT §10)',
);

const SETTINGS_EXAMPLE = {
  header_prefix: 'Dujiao-Next',
  signature_template: '{method}\n{path}\n{timestamp}\n{body_md5}',
  callback_signature_path: '/api/v1/upstream/callback',
  order_no_idempotent: true,
  timeout_ms: 10000,
  rate_limit: '60/60s',
  rate_limit_block_s: 30,
  page_size: 50,
  list_inactive: true,
  sync_mode: 'auto',
};

export const SUPPLIER_EXAMPLE = {
  name: 'acme',
  base_url: 'https://acme.example/api/v1/upstream',
  profile: 'dujiao-next',
  api_key_hint: 'f3a9',
  enabled: true,
  managed_by_env: false,
  settings: SETTINGS_EXAMPLE,
  callback_url: 'https://relay.example/callbacks/upstream/acme',
  health: {
    upstream: 'up',
    budget: { limit: '60/60s', used: 3, left: 57, blocked_until: null },
    checked_at: '2026-11-29T10:15:00.000Z',
  },
  wallet: { balance: '1520.00', currency: 'CNY', checked_at: '2026-11-29T10:15:00.000Z' },
  last_sync: {
    run_id: 'run_20261129100000_5f1c2a9e',
    mode: 'incremental',
    status: 'succeeded',
    started_at: '2026-11-29T10:00:00.004Z',
    finished_at: '2026-11-29T10:00:03.120Z',
    error: null,
  },
};

export const SUPPLIER_LIST_EXAMPLE = listExample([
  {
    ...SUPPLIER_EXAMPLE,
    name: 'main',
    base_url: 'https://upstream.example/api/v1/upstream',
    api_key_hint: '7c21',
    managed_by_env: true,
    callback_url: 'https://relay.example/callbacks/upstream',
  },
  SUPPLIER_EXAMPLE,
]);

export const SUPPLIER_BODY_SCHEMA: SchemaObject = objectSchema(
  {
    name: { type: 'string', pattern: '^[a-z][a-z0-9-]{0,31}$', description: 'fixed once created' },
    base_url: { type: 'string', description: 'an http(s) URL including `/api/v1/upstream`' },
    api_key: { type: 'string', description: 'its API key header value' },
    api_secret: { type: 'string', description: 'its HMAC key: stored encrypted, never answered' },
    profile: { type: 'string', enum: [...SUPPLIER_PROFILES], default: 'spec' },
    enabled: { type: 'boolean', default: true },
    settings: objectSchema(SETTINGS_PROPERTIES, Object.keys(SETTINGS_PROPERTIES), "any of them; the rest from the profile's preset"),
  },
  ['profile', 'enabled', 'settings'],
);

export const SUPPLIER_PATCH_SCHEMA: SchemaObject = objectSchema(
  {
    base_url: { type: 'string' },
    api_key: { type: 'string' },
    api_secret: { type: 'string' },
    profile: { type: 'string', enum: [...SUPPLIER_PROFILES] },
    enabled: { type: 'boolean' },
    settings: objectSchema(
      Object.fromEntries(Object.entries(SETTINGS_PROPERTIES).map(([k, v]) => [k, { ...v, nullable: true }])),
      Object.keys(SETTINGS_PROPERTIES),
      'the settings to change; null: back to the default',
    ),
  },
  ['base_url', 'api_key', 'api_secret', 'profile', 'enabled', 'settings'],
);

export const ADD_SUPPLIER_EXAMPLES = {
  minimal: {
    summary: 'a supplier with its profile’s settings',
    value: {
      name: 'acme',
      base_url: 'https://acme.example/api/v1/upstream',
      api_key: 'acme-api-key-f3a9',
      api_secret: 'acme-api-secret',
      profile: 'dujiao-next',
    },
  },
  settings: {
    summary: 'with its own rate limit and page size',
    value: {
      name: 'beta',
      base_url: 'https://beta.example/api/v1/upstream',
      api_key: 'beta-key',
      api_secret: 'beta-secret',
      settings: { rate_limit: '30/60s', page_size: 20 },
    },
  },
};

export const PATCH_SUPPLIER_EXAMPLES = {
  disable: { summary: 'no syncs and no new orders', value: { enabled: false } },
  credentials: { summary: 'new credentials (pinged before they are saved)', value: { api_key: 'acme-key-2', api_secret: 'acme-secret-2' } },
  setting: { summary: 'a setting back to its default', value: { settings: { page_size: null } } },
};

const NOT_FOUND = apiError(404, 'supplier_not_found', 'no supplier named "acme"', { supplier: 'acme' });
const MANAGED = apiError(
  409,
  'supplier_managed_by_env',
  'supplier "main" is defined by the UPSTREAM_* variables: change it through the environment',
  { supplier: 'main' },
);
const PING_ERRORS = [
  apiError(502, 'upstream_auth_failed', 'the upstream refused the credentials: invalid_signature (HTTP 401); nothing was saved', {
    supplier: 'acme',
  }),
  apiError(503, 'upstream_unavailable', 'the upstream could not be pinged: ECONNREFUSED; nothing was saved', { supplier: 'acme' }),
];

export const ADD_SUPPLIER_ERRORS = [
  apiError(400, 'bad_request', 'invalid request: name, settings.page_size', {
    fields: {
      name: ['must match [a-z][a-z0-9-]{0,31} (a lower-case letter, then up to 31 letters, digits or dashes)'],
      'settings.page_size': ['must be between 1 and 1000, got 0'],
    },
  }),
  apiError(409, 'supplier_exists', 'a supplier named "acme" exists already', { supplier: 'acme' }),
  { ...MANAGED, name: 'supplier_managed_by_env' },
  ...PING_ERRORS,
];

export const GET_SUPPLIER_ERRORS = [NOT_FOUND];

export const PATCH_SUPPLIER_ERRORS = [
  apiError(400, 'bad_request', 'invalid request: enabled', { fields: { enabled: ['must be true or false'] } }),
  NOT_FOUND,
  MANAGED,
  ...PING_ERRORS,
];

export const DELETE_SUPPLIER_ERRORS = [
  NOT_FOUND,
  MANAGED,
  apiError(409, 'supplier_busy', 'supplier acme has 2 unfinished order(s): delete it once they end', {
    supplier: 'acme',
    unfinished_orders: 2,
  }),
];

export const DELETE_SUPPLIER_EXAMPLE = { ok: true, name: 'acme', skus_unlisted: 120 };
