/**
 * OpenAPI schemas and examples of the catalog's internal API (CONTRACT §5; the pricing rules' are in
 * pricing.api-examples.ts), exactly as `catalog.responses.ts` and the controllers answer: field names
 * as they are, money as decimal strings, upstream ids. test/ops-docs-examples.e2e-spec.ts checks them against real answers.
 */
import type { SchemaObject } from '@nestjs/swagger';
import { apiError, dateTimeSchema, decimalSchema, listExample, objectSchema } from '../ops/api-docs.js';
import { CHANGE_KINDS } from './sku-diff.js';

// ---------------------------------------------------------------------------------- schemas

const text = (description: string): SchemaObject => ({ type: 'object', additionalProperties: { type: 'string' }, description });
const nullableString = (description?: string): SchemaObject => ({
  type: 'string',
  nullable: true,
  ...(description ? { description } : {}),
});
const count = (description?: string): SchemaObject => ({ type: 'integer', minimum: 0, ...(description ? { description } : {}) });

const SKU_PROPERTIES: Record<string, SchemaObject> = {
  supplier: { type: 'string', description: "the supplier's name (CONTRACT §10)" },
  sku_key: {
    type: 'string',
    description:
      "`<upstream product id>:<sku_code>`: the SKU, unique and stable (the upstream's `sku_code` is unique only within " +
      'its product; a product without specifications has the code `DEFAULT`)',
  },
  sku_code: { type: 'string', description: "the upstream's code, unique only within the product" },
  upstream_sku_id: { type: 'integer' },
  product_id: { type: 'integer', description: 'upstream product id' },
  product_title: text('the product title by language'),
  category_id: { type: 'integer', description: 'upstream category id' },
  spec_values: { type: 'object', additionalProperties: true },
  cost_price: decimalSchema('the upstream `price_amount`: what this API user pays'),
  sale_price: decimalSchema('the pricing rules applied to the current cost'),
  original_price: decimalSchema('the upstream list price', true),
  member_price: decimalSchema('the upstream member price', true),
  currency: nullableString('from ping'),
  stock_status: { type: 'string', description: '`in_stock`, `low_stock`, `out_of_stock` or `unlimited`' },
  stock_quantity: { type: 'integer', description: '-1: unlimited' },
  fulfillment_type: { type: 'string', description: '`auto` or `manual`' },
  manual_form_schema: {
    type: 'object',
    nullable: true,
    additionalProperties: true,
    description: 'for a `manual` SKU: what `manual_form_data` must answer',
  },
  listed: { type: 'boolean', description: "in the upstream's current listing" },
  available: { type: 'boolean', description: 'listed, active and not `out_of_stock`' },
  active: { type: 'boolean', description: 'the SKU and its product are enabled upstream' },
  updated_at: dateTimeSchema('moves only when a field of the SKU changes'),
};

export const SKU_SCHEMA: SchemaObject = objectSchema(SKU_PROPERTIES, [], 'a SKU (CONTRACT §5)');
export const SKU_DETAIL_SCHEMA: SchemaObject = objectSchema(
  { ...SKU_PROPERTIES, product_slug: { type: 'string' }, product_description: text('the product description by language') },
  [],
  "a SKU with its product's slug and description",
);

const CATEGORY_PROPERTIES: Record<string, SchemaObject> = {
  supplier: { type: 'string', description: "the supplier's name (CONTRACT §10)" },
  id: { type: 'integer', description: 'upstream id' },
  parent_id: { type: 'integer', description: '0 for a top-level category' },
  slug: { type: 'string' },
  name: text('the name by language'),
  icon: {
    type: 'string',
    nullable: true,
    description:
      "the relay's copy of the upstream's icon (`/media/<sha256>.<ext>`, MEDIA_PUBLIC_URL) once mirrored; null while it " +
      "is still to be fetched or when it was refused (the run's `skipped_images`); '' when there is none; the upstream's " +
      'value with MEDIA_MIRROR=false',
  },
  sort_order: { type: 'integer', description: 'each level is ordered by it, descending' },
  listed: { type: 'boolean' },
};
export const CATEGORY_SCHEMA: SchemaObject = objectSchema({
  ...CATEGORY_PROPERTIES,
  children: {
    type: 'array',
    items: objectSchema({ ...CATEGORY_PROPERTIES, children: { type: 'array', items: { type: 'object' }, description: 'the same shape' } }),
  },
});

const MODES = ['full', 'incremental'];
export const RUN_SCHEMA: SchemaObject = objectSchema(
  {
    run_id: { type: 'string', description: 'opaque' },
    supplier: { type: 'string', description: "the supplier's name (CONTRACT §10)" },
    mode: { type: 'string', enum: MODES, description: 'the mode the run ran in' },
    status: { type: 'string', enum: ['running', 'succeeded', 'failed'] },
    started_at: dateTimeSchema(),
    finished_at: dateTimeSchema(undefined, true),
    pages_total: count(),
    pages_done: count(),
    products_seen: count(),
    skus_created: count(),
    skus_changed: count(),
    skus_delisted: count(),
    skus_relisted: count(),
    error: nullableString(),
    trigger: { type: 'string', enum: ['api', 'schedule', 'start', 'cli'] },
    planned_mode: { type: 'string', enum: MODES },
    requested_mode: { type: 'string', enum: MODES, nullable: true },
    fallback: nullableString('why an incremental run fell back to a full pass'),
    updated_after: dateTimeSchema('the `updated_after` filter of an incremental run', true),
    skus_seen: count(),
    changes: objectSchema(Object.fromEntries(CHANGE_KINDS.map((k) => [k, count()])), [], 'SKUs changed, by kind of change'),
    conflicts: count('always 0: two products carrying one sku_code are two SKUs (see `sku_key`)'),
    confirmed_live: count(),
    unconfirmed: count(),
    budget_wait_ms: count(
      "milliseconds the run's upstream requests waited for the request budget (UPSTREAM_RATE_LIMIT), summed over the " +
        'requests; 0 with the budget off',
    ),
    skipped_products: {
      type: 'array',
      description:
        'products of the listing left out because their shape is wrong (at most 100): the rest of their page is stored, ' +
        'the pass stays complete and they are never unlisted for it',
      items: objectSchema({
        product_id: { type: 'integer', nullable: true, description: 'the upstream product id; null when the item has no usable id' },
        reason: {
          type: 'string',
          description: 'which field was wrong and how, e.g. `title: expected an object of texts by language, got null`',
        },
      }),
    },
    skipped_categories: {
      type: 'array',
      description:
        'categories of `GET /categories` left out because their shape is wrong (at most 100, e.g. a `null` name): the ' +
        'others are stored, and a stored one is kept as it was, not unlisted',
      items: objectSchema({
        category_id: { type: 'integer', nullable: true, description: 'the upstream category id; null when the item has no usable id' },
        reason: {
          type: 'string',
          description: 'which field was wrong and how, e.g. `name: expected an object of texts by language, got null`',
        },
      }),
    },
    reread_products: count(
      'ordered products an incremental run re-read on their own after its pages (`GET /products/{id}`, SYNC_REREAD_ORDERED)',
    ),
    skipped_images: {
      type: 'array',
      description:
        'product images and category icons left out (at most 100): not http(s), a private address, not an image, over ' +
        'MEDIA_MAX_BYTES, 404, a timeout…; the rest of the product and the run go on. A category icon has `product_id` ' +
        'null and its `category_id` (the category answers `icon: null`)',
      items: objectSchema(
        {
          product_id: { type: 'integer', nullable: true, description: 'the product; null for a category icon' },
          category_id: { type: 'integer', description: 'the category whose icon was left out (only for an icon)' },
          url: { type: 'string', description: 'the image URL as the upstream gave it (resolved against its origin when relative)' },
          reason: {
            type: 'string',
            enum: [
              'not_http',
              'bad_url',
              'private_address',
              'not_an_image',
              'too_large',
              'not_found',
              'http_error',
              'timeout',
              'unreachable',
              'too_many_redirects',
            ],
          },
        },
        ['category_id'],
      ),
    },
    images_fetched: count('images the run downloaded for mirroring (MEDIA_MIRROR); an unchanged image is never fetched again'),
    image_bytes: count('bytes of the images the run downloaded'),
    media_ms: count('milliseconds the run spent on images, after its pages'),
    note: nullableString(),
    heartbeat_at: dateTimeSchema(undefined, true),
  },
  [],
  'a catalog sync run (CONTRACT §5)',
);

export const CHANGE_SCHEMA: SchemaObject = objectSchema({
  id: nullableString('null for the `created` entry, which is kept on the SKU row'),
  supplier: { type: 'string', description: "the supplier's name (CONTRACT §10)" },
  sku_key: { type: 'string' },
  sku_code: { type: 'string' },
  field: { type: 'string', description: 'the SKU field, or `created`' },
  kind: { type: 'string', enum: [...CHANGE_KINDS] },
  old: { nullable: true, description: 'the previous value (any JSON)' },
  new: { nullable: true, description: 'the new value (any JSON)' },
  run_id: nullableString('the sync run, if a sync made the change'),
  source: { type: 'string', description: '`sync`, `refresh`, `pricing`, `confirm`…' },
  changed_at: dateTimeSchema(),
});

export const CONFLICT_SCHEMA: SchemaObject = objectSchema({
  sku_code: { type: 'string' },
  owner_product_id: { type: 'integer', description: 'keeps the sku_code' },
  claimant_product_id: { type: 'integer' },
  claimant_sku_id: { type: 'integer', nullable: true },
  run_id: nullableString(),
  occurrences: count(),
  first_seen_at: dateTimeSchema(),
  last_seen_at: dateTimeSchema(),
});

// --------------------------------------------------------------------------------- examples

export const SKU_EXAMPLE = {
  supplier: 'main',
  sku_key: '42:SKU-00042-1',
  sku_code: 'SKU-00042-1',
  upstream_sku_id: 1042,
  product_id: 42,
  product_title: { en: 'Steam Wallet Code 50 CNY', 'zh-CN': 'Steam 钱包充值码 50 元' },
  category_id: 101,
  spec_values: { 面值: '50元', denomination: '50 CNY' },
  cost_price: '23.10',
  sale_price: '25.90',
  original_price: '50.00',
  member_price: null,
  currency: 'CNY',
  stock_status: 'in_stock',
  stock_quantity: 318,
  fulfillment_type: 'auto',
  manual_form_schema: null,
  listed: true,
  available: true,
  active: true,
  updated_at: '2026-11-22T09:45:11.204Z',
};

export const MANUAL_SKU_EXAMPLE = {
  ...SKU_EXAMPLE,
  sku_key: '57:SKU-00057-1',
  sku_code: 'SKU-00057-1',
  upstream_sku_id: 1057,
  product_id: 57,
  product_title: { en: 'Mobile game top-up 60 gems', 'zh-CN': '手游充值 60 钻石' },
  category_id: 102,
  spec_values: { 面值: '60钻石', denomination: '60 gems' },
  cost_price: '5.60',
  sale_price: '6.30',
  original_price: null,
  stock_status: 'unlimited',
  stock_quantity: -1,
  fulfillment_type: 'manual',
  manual_form_schema: {
    fields: [
      { key: 'account', type: 'text', required: true },
      { key: 'server', type: 'text', required: false },
    ],
  },
};

export const SKU_DETAIL_EXAMPLE = {
  ...SKU_EXAMPLE,
  product_slug: 'steam-wallet-50-cny',
  product_description: {
    en: 'Redeem in the Steam client: Games → Redeem a Steam Wallet Code.',
    'zh-CN': '在 Steam 客户端中兑换：游戏 → 兑换 Steam 钱包充值码。',
  },
};

export const CATEGORIES_EXAMPLE = {
  ok: true,
  categories: [
    {
      supplier: 'main',
      id: 1,
      parent_id: 0,
      slug: 'games',
      name: { en: 'Games', 'zh-CN': '游戏' },
      icon: '/media/5f0c7e3d9a1b2c4d6e8f00112233445566778899aabbccddeeff001122334455.png',
      sort_order: 400,
      listed: true,
      children: [
        {
          supplier: 'main',
          id: 101,
          parent_id: 1,
          slug: 'games-steam-keys',
          name: { en: 'Steam keys', 'zh-CN': 'Steam 激活码' },
          icon: '',
          sort_order: 30,
          listed: true,
          children: [],
        },
        {
          supplier: 'main',
          id: 102,
          parent_id: 1,
          slug: 'games-mobile-topup',
          name: { en: 'Mobile top-up', 'zh-CN': '手游充值' },
          icon: '',
          sort_order: 20,
          listed: true,
          children: [],
        },
      ],
    },
    {
      supplier: 'main',
      id: 2,
      parent_id: 0,
      slug: 'streaming',
      name: { en: 'Streaming', 'zh-CN': '影音会员' },
      icon: '',
      sort_order: 300,
      listed: true,
      children: [
        {
          supplier: 'main',
          id: 201,
          parent_id: 2,
          slug: 'streaming-video',
          name: { en: 'Video memberships', 'zh-CN': '视频会员' },
          icon: '',
          sort_order: 30,
          listed: false,
          children: [],
        },
      ],
    },
  ],
};

export const RUN_EXAMPLE = {
  supplier: 'main',
  run_id: 'run_20261122094500_1d51e096',
  mode: 'full',
  status: 'succeeded',
  started_at: '2026-11-22T09:45:00.012Z',
  finished_at: '2026-11-22T09:45:12.337Z',
  pages_total: 25,
  pages_done: 25,
  products_seen: 1240,
  skus_created: 3,
  skus_changed: 41,
  skus_delisted: 2,
  skus_relisted: 0,
  error: null,
  trigger: 'schedule',
  planned_mode: 'full',
  requested_mode: null,
  fallback: null,
  updated_after: null,
  skus_seen: 3712,
  changes: { created: 3, price: 37, stock: 6, sku_id: 0, listing: 2, other: 1 },
  conflicts: 0,
  confirmed_live: 0,
  unconfirmed: 0,
  budget_wait_ms: 31250,
  skipped_products: [{ product_id: 317, reason: 'title: expected an object of texts by language, got null' }],
  skipped_categories: [],
  reread_products: 0,
  skipped_images: [],
  images_fetched: 0,
  image_bytes: 0,
  media_ms: 0,
  note: 'periodic full pass',
  heartbeat_at: '2026-11-22T09:45:12.337Z',
};

export const RUNNING_RUN_EXAMPLE = {
  ...RUN_EXAMPLE,
  run_id: 'run_20261122101500_7506e4e6',
  mode: 'incremental',
  status: 'running',
  started_at: '2026-11-22T10:15:00.004Z',
  finished_at: null,
  pages_total: 1,
  pages_done: 0,
  products_seen: 0,
  skus_created: 0,
  skus_changed: 0,
  skus_delisted: 0,
  skus_relisted: 0,
  trigger: 'api',
  planned_mode: 'incremental',
  requested_mode: 'incremental',
  updated_after: '2026-11-22T09:40:00.012Z',
  skus_seen: 0,
  changes: { created: 0, price: 0, stock: 0, sku_id: 0, listing: 0, other: 0 },
  skipped_products: [],
  skipped_categories: [],
  note: 'incremental pass requested',
  heartbeat_at: '2026-11-22T10:15:00.004Z',
};

export const SKU_LIST_EXAMPLE = listExample([SKU_EXAMPLE, MANUAL_SKU_EXAMPLE], 3712);
export const RUN_LIST_EXAMPLE = listExample([RUNNING_RUN_EXAMPLE, RUN_EXAMPLE], 148);
export const CHANGE_LIST_EXAMPLE = listExample(
  [
    {
      id: '9127',
      supplier: 'main',
      sku_key: '42:SKU-00042-1',
      sku_code: 'SKU-00042-1',
      field: 'sale_price',
      kind: 'price',
      old: '25.20',
      new: '25.90',
      run_id: 'run_20261122094500_1d51e096',
      source: 'sync',
      changed_at: '2026-11-22T09:45:11.204Z',
    },
    {
      id: '9126',
      supplier: 'main',
      sku_key: '42:SKU-00042-1',
      sku_code: 'SKU-00042-1',
      field: 'cost_price',
      kind: 'price',
      old: '22.50',
      new: '23.10',
      run_id: 'run_20261122094500_1d51e096',
      source: 'sync',
      changed_at: '2026-11-22T09:45:11.204Z',
    },
    {
      id: null,
      supplier: 'main',
      sku_key: '42:SKU-00042-1',
      sku_code: 'SKU-00042-1',
      field: 'created',
      kind: 'created',
      old: null,
      new: null,
      run_id: 'run_20261101000000_0a9be221',
      source: 'sync',
      changed_at: '2026-11-01T00:00:04.551Z',
    },
  ],
  3,
);
export const CONFLICT_LIST_EXAMPLE = listExample(
  [
    {
      sku_code: 'SKU-00042-1',
      owner_product_id: 42,
      claimant_product_id: 977,
      claimant_sku_id: 9771,
      run_id: 'run_20261122094500_1d51e096',
      occurrences: 4,
      first_seen_at: '2026-11-21T09:45:03.100Z',
      last_seen_at: '2026-11-22T09:45:08.920Z',
    },
  ],
  1,
);

export const START_SYNC_EXAMPLES = {
  incremental: {
    summary: 'the SKUs updated since the last successful run (with a fallback to a full pass)',
    value: { mode: 'incremental' },
  },
  full: { summary: 'every product', value: { mode: 'full' } },
  default: { summary: 'the mode of SYNC_MODE and the schedule of full passes', value: {} },
};

// ----------------------------------------------------------------------------------- errors

export const SKU_NOT_FOUND = apiError(404, 'sku_not_found', 'no SKU SKU-99999-1');
export const SKU_AMBIGUOUS = apiError(
  409,
  'sku_ambiguous',
  'sku_code DEFAULT is carried by 2 listed SKUs (products): name one by its sku_key',
  { candidates: ['113:DEFAULT', '57:DEFAULT'] },
  'a plain `sku_code` that several listed SKUs carry (or only several unlisted ones): `candidates` names their `sku_key`s; never a guess',
);
export const SYNC_RUN_NOT_FOUND = apiError(404, 'sync_run_not_found', 'no sync run run_20261122000000_00000000');
export const PAGE_ERRORS = [
  apiError(400, 'bad_request', 'invalid request: page_size', { fields: { page_size: ['page_size must not be greater than 500'] } }),
];
export const SKU_LIST_ERRORS = [
  apiError(
    400,
    'bad_request',
    'invalid request: listed, changed_since',
    {
      fields: {
        listed: ['listed must be true or false'],
        changed_since: ['changed_since must be an RFC 3339 date-time, e.g. 2026-01-01T00:00:00Z'],
      },
    },
    'a parameter malformed or out of range (`fields` names each), e.g. a `changed_since` naming no instant (30 February, a leap second)',
  ),
  apiError(
    400,
    'bad_request',
    'invalid request: after_sku_code',
    { fields: { after_sku_code: ['after_sku_code goes with changed_since (the updated_at of the row it names)'] } },
    '`after_sku_code` without `changed_since`',
    'after_sku_code_alone',
  ),
];
export const START_SYNC_ERRORS = [
  apiError(404, 'supplier_not_found', 'no supplier named "second"', {}, 'the `supplier` named is not one of the suppliers'),
  apiError(409, 'supplier_disabled', 'supplier second is disabled: its catalog is not synced', {}, 'the supplier is disabled'),
  apiError(400, 'bad_request', 'invalid request: mode', {
    fields: { mode: ['mode must be one of the following values: full, incremental'] },
  }),
  apiError(
    409,
    'sync_in_progress',
    'a catalog sync is already running (run_20261122101500_7506e4e6)',
    { run_id: 'run_20261122101500_7506e4e6' },
    'a run is running on some replica: `run_id` names it',
  ),
  apiError(503, 'service_unavailable', 'the service is shutting down', {}, 'this instance is shutting down: try another replica'),
];
