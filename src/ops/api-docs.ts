/**
 * OpenAPI documentation of the service: the UI at `/docs`, the JSON at `/docs-json` (CONTRACT §5).
 * Besides what the controllers declare, every operation gets the error envelope (a shared
 * `ErrorResponse` schema) as its `default` response, `/internal/*` operations the bearer scheme and a
 * 401, and operations without a tag one from their path; the description holds the table of every
 * error code (error-codes.ts).
 */
import type { INestApplication } from '@nestjs/common';
import { DocumentBuilder, SwaggerModule, type OpenAPIObject } from '@nestjs/swagger';
import { ERROR_CODES } from './error-codes.js';

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
    '`x-request-id` header (the caller\'s own when it sent a sane one), which the logs carry too.',
    '',
    '### Error codes',
    '',
    errorCodeTable(),
    '',
    'An order refused by the upstream is answered with the upstream\'s own `error_code` and HTTP status (402 for',
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
    error_code: { type: 'string', enum: ERROR_CODES.map((e) => e.code), description: 'see the table in the description; an upstream refusal may carry the upstream\'s own code' },
    error_message: { type: 'string' },
    fields: { type: 'object', additionalProperties: { type: 'array', items: { type: 'string' } }, description: 'with `bad_request`: the fields at fault' },
    order: { type: 'object', description: 'where an order was recorded (e.g. `rejected`)' },
    run_id: { type: 'string', description: 'with `sync_in_progress`: the running sync' },
  },
  example: { ok: false, error_code: 'order_not_found', error_message: 'no order SO-1001' },
} as const;

function tagFor(path: string): string {
  const parts = path.split('/').filter(Boolean);
  if (parts[0] === 'internal') return parts[1] ?? 'internal';
  if (parts[0] === 'callbacks') return 'callbacks';
  return 'ops';
}

/** Adds the error envelope, the bearer scheme on `/internal/*`, and tags, to every operation. */
export function decorateDocument(doc: OpenAPIObject): OpenAPIObject {
  doc.components ??= {};
  doc.components.schemas ??= {};
  doc.components.schemas[ERROR_SCHEMA_NAME] = ERROR_SCHEMA as never;
  const errorRef = { $ref: `#/components/schemas/${ERROR_SCHEMA_NAME}` };
  const errorResponse = (d: string) => ({ description: d, content: { 'application/json': { schema: errorRef } } });
  for (const [path, item] of Object.entries(doc.paths ?? {})) {
    for (const method of HTTP_METHODS) {
      const op = item[method];
      if (!op) continue;
      op.responses ??= {};
      if (!op.responses.default) op.responses.default = errorResponse('error envelope (see the error codes)');
      if (!op.tags?.length) op.tags = [tagFor(path)];
      if (path === '/internal' || path.startsWith('/internal/')) {
        if (!op.security?.length) op.security = [{ [BEARER_SCHEME]: [] }];
        if (!op.responses['401']) op.responses['401'] = errorResponse('`unauthorized`: missing or wrong bearer token');
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
