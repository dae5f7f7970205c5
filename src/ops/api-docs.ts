/**
 * OpenAPI documentation of the service: the UI at `/docs`, the JSON at `/docs-json` (CONTRACT §5).
 * Besides what the controllers declare, every operation gets the error envelope (a shared
 * `ErrorResponse` schema) as its `default` response with the generic codes as examples, operations
 * with a body a 413 and a 415, `/internal/*` operations the bearer scheme and a 401, and operations
 * without a tag one from their path; the description holds the table of every error code
 * (common/error-codes.ts).
 *
 * The controllers declare the rest with the helpers below (`ApiErrors`, `ApiPageQuery`, the schema
 * builders); their examples live in one `*.api-examples.ts` file per area.
 */
import { applyDecorators, type INestApplication } from '@nestjs/common';
import { ApiQuery, ApiResponse, DocumentBuilder, SwaggerModule, type OpenAPIObject, type SchemaObject } from '@nestjs/swagger';
import { DEFAULT_PAGE_SIZE, MAX_PAGE, MAX_PAGE_SIZE } from '../common/pagination.js';
import { ERROR_CODES } from '../common/error-codes.js';

export const ERROR_SCHEMA_NAME = 'ErrorResponse';
export const BEARER_SCHEME = 'bearer';

const HTTP_METHODS = ['get', 'put', 'post', 'delete', 'patch', 'options', 'head'] as const;

export function errorCodeTable(): string {
  const rows = ERROR_CODES.map((e) => `| \`${e.code}\` | ${e.status} | ${e.meaning} |`);
  return ['| error_code | HTTP | meaning |', '|---|---|---|', ...rows].join('\n');
}

function description(): string {
  return [
    'Internal API for the shop backend (bearer token `INTERNAL_API_TOKEN` on every `/internal/*` call), the public callback',
    'endpoint of the upstream, health and metrics. Every response is JSON with a boolean `ok`; an error is the envelope',
    '`{ ok: false, error_code, error_message }` (schema `ErrorResponse`), plus `order` where an order was recorded, `fields`',
    'for `bad_request` and `run_id` for `sync_in_progress`. Money is a decimal string, never a number. Lists are',
    '`{ok, items, total, page, page_size}` with `page` ≥ 1 and `page_size` 1–500 (default 100). Every response carries an',
    "`x-request-id` header (the caller's own when it sent a sane one), which the logs carry too.",
    '',
    '### Error codes',
    '',
    errorCodeTable(),
    '',
    "An order refused by the upstream is answered with the upstream's own `error_code` and HTTP status (402 for",
    '`payment_failed`), with the `rejected` order in `order`.',
    '',
    '### Shop webhooks',
    '',
    'With `SHOP_WEBHOOK_URL`, order status changes, catalog changes and alerts are POSTed to the shop as',
    '`{id, event, subject, created_at, data}`, signed like the upstream API (§4) with `SHOP_WEBHOOK_SECRET`: headers',
    '`Relay-Api-Key: upstream-relay`, `Relay-Timestamp`, `Relay-Signature` = hex HMAC-SHA256 of',
    '`POST\\n<path of SHOP_WEBHOOK_URL>\\n<timestamp>\\n<md5 hex of the body>`, plus `Relay-Event-Id` (deduplicate on it),',
    '`Relay-Event` and `Relay-Attempt`. Retried with exponential backoff until a 2xx, then `dead` after',
    '`SHOP_WEBHOOK_MAX_ATTEMPTS`: see `/internal/webhooks/deliveries`.',
  ].join('\n');
}

const ERROR_SCHEMA = {
  type: 'object',
  required: ['ok', 'error_code', 'error_message'],
  properties: {
    ok: { type: 'boolean', enum: [false] },
    error_code: {
      type: 'string',
      enum: ERROR_CODES.map((e) => e.code),
      description: "see the table in the description; an upstream refusal may carry the upstream's own code",
    },
    error_message: { type: 'string' },
    fields: {
      type: 'object',
      additionalProperties: { type: 'array', items: { type: 'string' } },
      description: 'with `bad_request`: the fields at fault',
    },
    order: { type: 'object', description: 'where an order was recorded (e.g. `rejected`)' },
    route: {
      type: 'array',
      items: { type: 'object' },
      description:
        "with `no_source_available`: the order's attempts at the offer's sources, `{attempt, supplier, sku_key, outcome, error_code}`",
    },
    run_id: { type: 'string', nullable: true, description: 'with `sync_in_progress`: the running sync' },
    supplier: {
      type: 'string',
      description: 'with `supplier_not_found`, `supplier_disabled` and the other `supplier_*` codes: the supplier named',
    },
    candidates: {
      type: 'array',
      items: { type: 'string' },
      description: 'with `sku_ambiguous`: the `sku_key`s of the SKUs carrying the code (at most 100)',
    },
    unit_cost: { type: 'string', description: 'with `price_changed`: the fresh upstream unit price (decimal string)' },
    max_unit_cost: { type: 'string', description: 'with `price_changed`: the ceiling it was checked against (decimal string)' },
    delivery: { type: 'object', description: 'with `delivery_pending`: the webhook delivery' },
    unfinished_orders: { type: 'integer', description: 'with `supplier_busy`: how many of its orders are unfinished' },
  },
  example: { ok: false, error_code: 'order_not_found', error_message: 'no order SO-1001' },
} as const;

function tagFor(path: string): string {
  const parts = path.split('/').filter(Boolean);
  if (parts[0] === 'internal') return parts[1] ?? 'internal';
  if (parts[0] === 'callbacks') return 'callbacks';
  return 'ops';
}

const ERROR_REF = { $ref: `#/components/schemas/${ERROR_SCHEMA_NAME}` };

// ------------------------------------------------------------------ helpers for the controllers

/** One documented error answer: the envelope `{ok: false, error_code, error_message, …extra}` with its HTTP status. */
export interface ErrorExample {
  status: number;
  code: string;
  message: string;
  /** Extra members of the envelope: `fields`, `order`, `run_id`… */
  extra?: Record<string, unknown>;
  /** What this case means for the operation; default: the meaning of the code in the table. */
  summary?: string;
  /** The example's name, when one operation shows a code twice; default: the code. */
  name?: string;
}

export function apiError(
  status: number,
  code: string,
  message: string,
  extra: Record<string, unknown> = {},
  summary?: string,
  name?: string,
): ErrorExample {
  return { status, code, message, extra, summary, name };
}

export function errorBody(e: ErrorExample): Record<string, unknown> {
  return { ok: false, error_code: e.code, error_message: e.message, ...e.extra };
}

const meaningOf = (code: string): string => ERROR_CODES.find((e) => e.code === code)?.meaning ?? 'refused by the upstream with this code';

function errorResponseObject(errors: readonly ErrorExample[], lead?: string) {
  const codes = [...new Set(errors.map((e) => e.code))];
  const lines = codes.map((c) => {
    const own = [...new Set(errors.filter((e) => e.code === c && e.summary).map((e) => e.summary))];
    return `- \`${c}\`: ${own.length ? own.join('; or: ') : meaningOf(c)}`;
  });
  return {
    description: [...(lead ? [lead] : []), ...lines].join('\n'),
    schema: { allOf: [ERROR_REF, { type: 'object', properties: { error_code: { type: 'string', enum: codes } } }] } as SchemaObject,
    examples: Object.fromEntries(errors.map((e) => [e.name ?? e.code, { summary: e.summary ?? meaningOf(e.code), value: errorBody(e) }])),
  };
}

/**
 * Documents the errors an operation answers: one response per HTTP status, its `error_code`s as an
 * enum over the shared envelope and one named example each.
 */
export function ApiErrors(...errors: ErrorExample[]): MethodDecorator & ClassDecorator {
  const byStatus = new Map<number, ErrorExample[]>();
  for (const e of errors) byStatus.set(e.status, [...(byStatus.get(e.status) ?? []), e]);
  return applyDecorators(...[...byStatus].map(([status, list]) => ApiResponse({ status, ...errorResponseObject(list) })));
}

/** `page` ≥ 1 and `page_size` 1–500 (default 100) of every list (common/pagination.ts). */
export function ApiPageQuery(): MethodDecorator & ClassDecorator {
  return applyDecorators(
    ApiQuery({
      name: 'page',
      required: false,
      type: 'integer',
      minimum: 1,
      maximum: MAX_PAGE,
      default: 1,
      description: 'page number, from 1',
    }),
    ApiQuery({
      name: 'page_size',
      required: false,
      type: 'integer',
      minimum: 1,
      maximum: MAX_PAGE_SIZE,
      default: DEFAULT_PAGE_SIZE,
      description: `items per page, 1–${MAX_PAGE_SIZE}`,
    }),
  );
}

/** A decimal string (money, markups): never a JSON number. */
export const decimalSchema = (description: string, nullable = false): SchemaObject => ({
  type: 'string',
  pattern: '^-?\\d+(\\.\\d+)?$',
  description,
  ...(nullable ? { nullable } : {}),
});
export const dateTimeSchema = (description?: string, nullable = false): SchemaObject => ({
  type: 'string',
  format: 'date-time',
  ...(description ? { description } : {}),
  ...(nullable ? { nullable } : {}),
});
export const nullableSchema = (s: SchemaObject): SchemaObject => ({ ...s, nullable: true });

/** An object with exactly these members (all required unless named in `optional`). */
export function objectSchema(
  properties: Record<string, SchemaObject>,
  optional: readonly string[] = [],
  description?: string,
): SchemaObject {
  return {
    type: 'object',
    ...(description ? { description } : {}),
    required: Object.keys(properties).filter((k) => !optional.includes(k)),
    properties,
  };
}

/** `{ok: true, …members}`. */
export function okSchema(members: Record<string, SchemaObject>, optional: readonly string[] = []): SchemaObject {
  return objectSchema({ ok: { type: 'boolean', enum: [true] }, ...members }, optional);
}

/** The list envelope `{ok, items, total, page, page_size}`. */
export function listSchema(item: SchemaObject): SchemaObject {
  return okSchema({
    items: { type: 'array', items: item },
    total: { type: 'integer', minimum: 0, description: 'all matching items' },
    page: { type: 'integer', minimum: 1 },
    page_size: { type: 'integer', minimum: 1, maximum: 500 },
  });
}

export function listExample<T>(items: T[], total = items.length): { ok: true; items: T[]; total: number; page: number; page_size: number } {
  return { ok: true, items, total, page: 1, page_size: 100 };
}

// ---------------------------------------------------------------- what every operation gets

/** The codes any call may get (the `default` response of every operation). */
const GENERIC_ERRORS: readonly ErrorExample[] = [
  apiError(500, 'internal_error', 'internal error', {}, 'unexpected error (logged)'),
  apiError(429, 'too_many_requests', 'Too Many Requests'),
  apiError(404, 'not_found', 'Cannot GET /internal/order', {}, 'no such route (a mistyped path, or a method the path does not take)'),
];
const BODY_TOO_LARGE = apiError(413, 'payload_too_large', 'request body exceeds 64 KiB');
const NOT_JSON = apiError(
  400,
  'bad_request',
  'request body is not JSON (content-type is not application/json)',
  { fields: { body: ['not JSON (content-type is not application/json)'] } },
  'a body that is not JSON: another content type than `application/json`, none, or JSON that does not parse (`fields.body` says which)',
  'not_json',
);
const UNAUTHORIZED = apiError(
  401,
  'unauthorized',
  'missing or invalid bearer token',
  {},
  'missing or wrong `Authorization: Bearer <INTERNAL_API_TOKEN>`',
);

/** Adds the error envelope, the bearer scheme on `/internal/*`, and tags, to every operation. */
export function decorateDocument(doc: OpenAPIObject): OpenAPIObject {
  doc.components ??= {};
  doc.components.schemas ??= {};
  doc.components.schemas[ERROR_SCHEMA_NAME] = ERROR_SCHEMA as never;
  const withExamples = (errors: readonly ErrorExample[], lead: string) => {
    const r = errorResponseObject(errors, lead);
    return { description: r.description, content: { 'application/json': { schema: ERROR_REF, examples: r.examples } } };
  };
  for (const [path, item] of Object.entries(doc.paths ?? {})) {
    for (const method of HTTP_METHODS) {
      const op = item[method];
      if (!op) continue;
      op.responses ??= {};
      if (!op.responses.default)
        op.responses.default = withExamples(
          GENERIC_ERRORS,
          'error envelope (see the error codes); besides the codes listed for this operation, any call may get:',
        );
      if (!op.tags?.length) op.tags = [tagFor(path)];
      if (op.requestBody) {
        if (!op.responses['413']) op.responses['413'] = withExamples([BODY_TOO_LARGE], 'the body is over 64 KiB:');
        // (a callback is verified on its raw bytes whatever they are: never refused for its body)
        if (path !== '/callbacks/upstream') {
          const r400 = op.responses['400'] as { content?: Record<string, { examples?: Record<string, unknown> }> } | undefined;
          const m = r400?.content?.['application/json'];
          if (!r400) op.responses['400'] = withExamples([NOT_JSON], 'the body is not JSON:');
          else if (m) m.examples = { ...m.examples, not_json: { summary: NOT_JSON.summary, value: errorBody(NOT_JSON) } };
        }
      }
      if (path === '/internal' || path.startsWith('/internal/')) {
        if (!op.security?.length) op.security = [{ [BEARER_SCHEME]: [] }];
        if (!op.responses['401']) op.responses['401'] = withExamples([UNAUTHORIZED], 'the bearer token is missing or wrong:');
      }
    }
  }
  return doc;
}

export function buildApiDocument(app: INestApplication): OpenAPIObject {
  const config = new DocumentBuilder()
    .setTitle('upstream-relay')
    .setDescription(description())
    .setVersion('1.0.0')
    .addBearerAuth({ type: 'http', scheme: 'bearer', description: 'INTERNAL_API_TOKEN' }, BEARER_SCHEME)
    .build();
  return decorateDocument(SwaggerModule.createDocument(app, config));
}

export function setupApiDocs(app: INestApplication): void {
  SwaggerModule.setup('docs', app, () => buildApiDocument(app), {
    jsonDocumentUrl: 'docs-json',
    customSiteTitle: 'upstream-relay API',
  });
}
