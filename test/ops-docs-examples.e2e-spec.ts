/**
 * The API docs' operations, examples and error codes (CONTRACT §5–§7, issue 5):
 * - every operation the HTTP server registered (read from the router) has a summary, a description,
 *   its path parameters and a 2xx response with an example; every body a schema and an example;
 * - every error code of the table (common/error-codes.ts) is an example in the responses of some operation,
 *   under its own HTTP status;
 * - every example agrees with the schema it is documented with;
 * - and, so that the examples cannot drift from the code, the documented requests are sent to a
 *   relay in front of the sandbox and its answers checked against the documented schemas and the
 *   documented examples' members (the same keys, nested, and the same JSON types).
 */
import axios from 'axios';
import { ERROR_CODES } from '../src/common/error-codes.js';
import { toOpenApiPath } from '../src/ops/route-registry.js';
import type { SandboxServer } from '../src/sandbox/sandbox.server.js';
import { callbackHeaders, waitFor, waitForOrder } from './support/child-app.js';
import { useAppSuite } from './support/app-suite.js';
import type { TestApp } from './support/test-app.js';

interface Schema {
  $ref?: string;
  allOf?: Schema[];
  type?: string;
  nullable?: boolean;
  enum?: unknown[];
  pattern?: string;
  format?: string;
  minimum?: number;
  maximum?: number;
  minLength?: number;
  maxLength?: number;
  required?: string[];
  properties?: Record<string, Schema>;
  additionalProperties?: boolean | Schema;
  items?: Schema;
  example?: unknown;
}
interface Media {
  schema?: Schema;
  example?: unknown;
  examples?: Record<string, { summary?: string; value: unknown }>;
}
interface Parameter {
  name: string;
  in: string;
  schema?: Schema;
}
interface Operation {
  summary?: string;
  description?: string;
  parameters?: Parameter[];
  requestBody?: { content?: Record<string, Media> };
  responses: Record<string, { description?: string; content?: Record<string, Media> }>;
}
interface Doc {
  paths: Record<string, Record<string, Operation>>;
  components: { schemas: Record<string, Schema> };
}

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

/** The examples of a media object: `example`, every `examples` value, and an `example` on its schema. */
function examplesOf(m: Media | undefined): unknown[] {
  if (!m) return [];
  return [
    ...(m.example !== undefined ? [m.example] : []),
    ...Object.values(m.examples ?? {}).map((e) => e.value),
    ...(m.schema?.example !== undefined ? [m.schema.example] : []),
  ];
}

// ------------------------------------------------------------------ a small schema checker

/**
 * Checks `value` against an OpenAPI 3.0 schema of the docs: types, nullable, enum, pattern, date-time,
 * bounds, required members, items, and no undocumented member (an object with `properties` is closed
 * unless it says `additionalProperties`). Returns the differences.
 */
function check(doc: Doc, value: unknown, schema: Schema, path = '$', errors: string[] = [], closed = true): string[] {
  if (schema.$ref) return check(doc, value, deref(doc, schema), path, errors, closed);
  if (schema.allOf) {
    const parts = schema.allOf.map((p) => deref(doc, p));
    for (const p of parts) check(doc, value, p, path, errors, false);
    if (closed && isObject(value) && parts.every((p) => p.additionalProperties === undefined || p.additionalProperties === false)) {
      const known = new Set(parts.flatMap((p) => Object.keys(p.properties ?? {})));
      for (const k of Object.keys(value)) if (!known.has(k)) errors.push(`${path}.${k}: not documented`);
    }
    return errors;
  }
  if (value === null) {
    if (!schema.nullable && schema.type !== undefined) errors.push(`${path}: null, not nullable`);
    return errors;
  }
  const t = schema.type;
  const typeOk =
    t === undefined ||
    (t === 'string' && typeof value === 'string') ||
    (t === 'integer' && Number.isInteger(value)) ||
    (t === 'number' && typeof value === 'number') ||
    (t === 'boolean' && typeof value === 'boolean') ||
    (t === 'array' && Array.isArray(value)) ||
    (t === 'object' && isObject(value));
  if (!typeOk) {
    errors.push(`${path}: ${JSON.stringify(value)} is not ${t}`);
    return errors;
  }
  if (schema.enum && !schema.enum.includes(value)) errors.push(`${path}: ${JSON.stringify(value)} not in ${JSON.stringify(schema.enum)}`);
  if (typeof value === 'string') {
    if (schema.pattern && !new RegExp(schema.pattern).test(value)) errors.push(`${path}: "${value}" does not match ${schema.pattern}`);
    if (schema.format === 'date-time' && !(/^\d{4}-\d\d-\d\dT\d\d:\d\d/.test(value) && !Number.isNaN(Date.parse(value))))
      errors.push(`${path}: "${value}" is not a date-time`);
    if (schema.minLength !== undefined && value.length < schema.minLength) errors.push(`${path}: shorter than ${schema.minLength}`);
    if (schema.maxLength !== undefined && value.length > schema.maxLength) errors.push(`${path}: longer than ${schema.maxLength}`);
  }
  if (typeof value === 'number') {
    if (schema.minimum !== undefined && value < schema.minimum) errors.push(`${path}: ${value} < ${schema.minimum}`);
    if (schema.maximum !== undefined && value > schema.maximum) errors.push(`${path}: ${value} > ${schema.maximum}`);
  }
  if (Array.isArray(value) && schema.items) value.forEach((v, i) => check(doc, v, schema.items!, `${path}[${i}]`, errors));
  if (isObject(value)) {
    for (const k of schema.required ?? []) if (!(k in value)) errors.push(`${path}.${k}: missing`);
    for (const [k, v] of Object.entries(value)) {
      const s = schema.properties?.[k];
      if (s) check(doc, v, s, `${path}.${k}`, errors);
      else if (isObject(schema.additionalProperties)) check(doc, v, schema.additionalProperties, `${path}.${k}`, errors);
      else if (closed && schema.properties && schema.additionalProperties !== true) errors.push(`${path}.${k}: not documented`);
    }
  }
  return errors;
}

function deref(doc: Doc, s: Schema): Schema {
  if (!s.$ref) return s;
  const name = s.$ref.replace('#/components/schemas/', '');
  const target = doc.components.schemas[name];
  if (!target) throw new Error(`unresolved ${s.$ref}`);
  return deref(doc, target);
}

/** Members whose keys are data (texts by language, free-form objects), not part of the shape. */
const DICTIONARIES = new Set([
  'product_title',
  'product_description',
  'name',
  'spec_values',
  'manual_form_schema',
  'delivery_data',
  'detail',
  'member_level',
  'fields',
  'old',
  'new',
]);

/**
 * The shape differences of a real answer and a documented example: the same keys in every object
 * both have (arrays: their first items), and the same JSON type wherever both are non-null.
 */
function shapeDiff(actual: unknown, documented: unknown, path = '$', out: string[] = []): string[] {
  if (actual === null || documented === null || actual === undefined || documented === undefined) return out;
  const kind = (v: unknown) => (Array.isArray(v) ? 'array' : typeof v);
  if (kind(actual) !== kind(documented)) {
    out.push(`${path}: ${kind(actual)} in the answer, ${kind(documented)} in the example`);
    return out;
  }
  if (Array.isArray(actual) && Array.isArray(documented)) {
    if (actual.length && documented.length) shapeDiff(actual[0], documented[0], `${path}[0]`, out);
    return out;
  }
  if (isObject(actual) && isObject(documented)) {
    const a = Object.keys(actual).sort();
    const d = Object.keys(documented).sort();
    for (const k of a) if (!d.includes(k)) out.push(`${path}.${k}: in the answer, not in the example`);
    for (const k of d) if (!a.includes(k)) out.push(`${path}.${k}: in the example, not in the answer`);
    for (const k of a) if (d.includes(k) && !DICTIONARIES.has(k)) shapeDiff(actual[k], documented[k], `${path}.${k}`, out);
  }
  return out;
}

const PUBLIC_PREFIXES = ['/internal/', '/callbacks/', '/health', '/metrics', '/media/'];

describe('API docs: operations, examples and error codes', () => {
  const suite = useAppSuite({
    sandbox: {
      catalog: { products: 3 },
      timetable: { paidMs: 30, fulfillingMs: 60, deliveredMs: 100, completedMs: null },
      // the documented resolve_mismatch example is the one of an upstream whose GET /orders/{id} shows
      // the order's downstream_order_no (the real one does not: test/sandbox-fidelity.e2e-spec.ts)
      orderDetailShowsDownstreamNo: true,
    },
    // the SKUs the documented examples name
    prepare: (sandbox) => {
      sandbox.catalog.addProduct({ skus: [{ skuCode: 'SKU-00042-1', price: '25.90' }] });
      sandbox.catalog.addProduct({ skus: [{ skuCode: 'SKU-00043-1', price: '9.90', isActive: false }] });
      sandbox.catalog.addProduct({
        fulfillmentType: 'manual',
        manualFormSchema: {
          fields: [
            { key: 'account', type: 'text', required: true },
            { key: 'server', type: 'text', required: false },
          ],
        },
        skus: [{ skuCode: 'SKU-00057-1', price: '5.60' }],
      });
    },
    env: { ORDER_POLL_BASE_MS: '50', ORDER_POLL_MAX_MS: '200', UPSTREAM_TIMEOUT_MS: '800' },
    seed: true,
  });
  let sandbox: SandboxServer;
  let app: TestApp;
  let doc: Doc;

  const op = (method: string, path: string): Operation => {
    const o = doc.paths[path]?.[method];
    if (!o) throw new Error(`${method} ${path} is not documented`);
    return o;
  };
  const media = (method: string, path: string, status: number | string): Media => {
    const r = op(method, path).responses[String(status)];
    if (!r?.content) throw new Error(`${method} ${path}: no documented ${status} answer`);
    return r.content['application/json'] ?? Object.values(r.content)[0];
  };
  /** The documented example of an answer: by name when there are several. */
  const documented = (method: string, path: string, status: number | string, name?: string): unknown => {
    const m = media(method, path, status);
    if (name !== undefined) {
      const e = m.examples?.[name];
      if (!e) throw new Error(`${method} ${path} ${status}: no example "${name}"`);
      return e.value;
    }
    const all = examplesOf(m);
    if (!all.length) throw new Error(`${method} ${path} ${status}: no example`);
    return all[0];
  };
  const requestExample = (method: string, path: string, name: string): Record<string, unknown> => {
    const e = op(method, path).requestBody?.content?.['application/json']?.examples?.[name];
    if (!e) throw new Error(`${method} ${path}: no request example "${name}"`);
    return structuredClone(e.value) as Record<string, unknown>;
  };
  /**
   * A real answer against the docs: its status, the documented schema of that status, and the shape
   * of the documented example (by name). Returns the documented example.
   */
  const expectDocumented = (
    res: { status: number; data: unknown },
    method: string,
    path: string,
    status: number,
    name?: string,
  ): unknown => {
    const what = `${method.toUpperCase()} ${path} → ${status}${name ? ` (${name})` : ''}`;
    expect({ what, status: res.status, data: res.status === status ? 'as expected' : res.data }).toEqual({
      what,
      status,
      data: 'as expected',
    });
    const m = media(method, path, status);
    const example = documented(method, path, status, name);
    expect({ what, schema: check(doc, res.data, m.schema ?? {}) }).toEqual({ what, schema: [] });
    expect({ what, shape: shapeDiff(res.data, example) }).toEqual({ what, shape: [] });
    return example;
  };

  beforeAll(async () => {
    ({ sandbox, app } = suite);
    const res = await axios.get(`${app.url}/docs-json`);
    expect(res.status).toBe(200);
    doc = res.data as Doc;
  });

  const registered = () =>
    [
      ...new Set(
        app.relay.routes
          .filter((r) => r.method !== 'HEAD' && r.method !== 'OPTIONS' && PUBLIC_PREFIXES.some((p) => r.path.startsWith(p)))
          .map((r) => `${r.method} ${r.path}`),
      ),
    ].map((k) => {
      const [method, path] = k.split(' ');
      return { method: method.toLowerCase(), path, openApiPath: toOpenApiPath(path) };
    });

  describe('the document', () => {
    it('has every registered operation (and no other) with a summary, a description, its path parameters and a 2xx example', () => {
      const routes = registered();
      expect(routes.length).toBeGreaterThanOrEqual(25);
      const problems: string[] = [];
      for (const r of routes) {
        const o = doc.paths[r.openApiPath]?.[r.method];
        const name = `${r.method.toUpperCase()} ${r.openApiPath}`;
        if (!o) {
          problems.push(`${name}: not documented`);
          continue;
        }
        if (!o.summary?.trim()) problems.push(`${name}: no summary`);
        if (!o.description?.trim()) problems.push(`${name}: no description`);
        for (const p of r.path.match(/:([A-Za-z0-9_]+)/g) ?? []) {
          if (!o.parameters?.some((x) => x.in === 'path' && x.name === p.slice(1)))
            problems.push(`${name}: path parameter ${p.slice(1)} not documented`);
        }
        for (const q of (o.parameters ?? []).filter((x) => x.in === 'query')) {
          if (!q.schema?.type && !q.schema?.enum) problems.push(`${name}: query parameter ${q.name} has no type`);
        }
        const ok = Object.entries(o.responses).filter(
          ([s, resp]) => /^2\d\d$/.test(s) && Object.values(resp.content ?? {}).some((m) => examplesOf(m).length > 0),
        );
        if (!ok.length) problems.push(`${name}: no 2xx answer with an example`);
      }
      const known = new Set(routes.map((r) => `${r.method} ${r.openApiPath}`));
      for (const [path, item] of Object.entries(doc.paths)) {
        for (const method of Object.keys(item))
          if (!known.has(`${method} ${path}`)) problems.push(`${method.toUpperCase()} ${path}: documented, not registered`);
      }
      expect(problems).toEqual([]);
    });

    it('documents the bounds and enums of the query parameters', () => {
      const param = (path: string, name: string) => op('get', path).parameters?.find((p) => p.in === 'query' && p.name === name)?.schema;
      for (const path of ['/internal/catalog/skus', '/internal/orders', '/internal/catalog/sync-runs', '/internal/webhooks/deliveries']) {
        expect({ path, page: param(path, 'page') }).toMatchObject({ path, page: { type: 'integer', minimum: 1 } });
        expect({ path, page_size: param(path, 'page_size') }).toMatchObject({
          path,
          page_size: { type: 'integer', minimum: 1, maximum: 500 },
        });
      }
      expect(param('/internal/orders', 'status')?.enum).toEqual(
        expect.arrayContaining(['submit_unknown', 'delivered', 'rejected', 'refunded']),
      );
      expect(param('/internal/orders', 'stuck')?.type).toBe('boolean');
      for (const name of ['listed', 'available']) expect(param('/internal/catalog/skus', name)?.type).toBe('boolean');
      expect(param('/internal/catalog/skus', 'category_id')).toMatchObject({ type: 'integer', minimum: 1 });
      expect(param('/internal/catalog/skus', 'changed_since')).toMatchObject({ type: 'string', format: 'date-time' });
    });

    it('documents every request body with a schema and an example', () => {
      const withBody = [
        ['post', '/internal/orders'],
        ['post', '/internal/orders/{shop_order_no}/resolve'],
        ['put', '/internal/pricing/rules'],
        ['post', '/internal/catalog/sync'],
        ['post', '/callbacks/upstream'],
      ];
      for (const [method, path] of withBody)
        expect({ method, path, body: Boolean(op(method, path).requestBody) }).toEqual({ method, path, body: true });
      const problems: string[] = [];
      for (const [path, item] of Object.entries(doc.paths)) {
        for (const [method, o] of Object.entries(item)) {
          if (!o.requestBody) continue;
          const m = o.requestBody.content?.['application/json'];
          const schema = m?.schema ? deref(doc, m.schema) : undefined;
          if (!schema?.properties || !Object.keys(schema.properties).length) problems.push(`${method} ${path}: no body schema`);
          if (!examplesOf(m).length) problems.push(`${method} ${path}: no request example`);
          for (const e of examplesOf(m)) problems.push(...check(doc, e, m!.schema!).map((x) => `${method} ${path} request: ${x}`));
        }
      }
      expect(problems).toEqual([]);
      expect(
        Object.keys(op('post', '/internal/orders/{shop_order_no}/resolve').requestBody!.content!['application/json'].examples!),
      ).toEqual(['upstream_order_id', 'not_placed']);
    });

    it('shows every error code of the table as an example under its own HTTP status, in an enum of that answer', () => {
      const seen = new Map<string, string[]>();
      const problems: string[] = [];
      const table = new Map(ERROR_CODES.map((e) => [e.code, e.status]));
      for (const [path, item] of Object.entries(doc.paths)) {
        for (const [method, o] of Object.entries(item)) {
          for (const [status, resp] of Object.entries(o.responses)) {
            for (const m of Object.values(resp.content ?? {})) {
              for (const e of examplesOf(m)) {
                if (!isObject(e) || e.ok !== false || !('error_code' in e)) continue;
                const code = String(e.error_code);
                seen.set(code, [...(seen.get(code) ?? []), `${method} ${path} ${status}`]);
                if (typeof e.error_message !== 'string' || !e.error_message)
                  problems.push(`${method} ${path} ${status} ${code}: no error_message`);
                if (status !== 'default' && table.has(code) && table.get(code) !== Number(status))
                  problems.push(`${method} ${path}: ${code} under ${status}, the table says ${table.get(code)}`);
                const enumed = (m.schema?.allOf ?? [m.schema ?? {}])
                  .map((x) => deref(doc, x))
                  .flatMap((x) => x.properties?.error_code?.enum ?? []);
                if (status !== 'default' && !enumed.includes(code))
                  problems.push(`${method} ${path} ${status}: ${code} not in the answer's enum`);
              }
            }
          }
        }
      }
      const missing = ERROR_CODES.map((e) => e.code).filter((c) => !seen.has(c));
      expect({ missing, problems }).toEqual({ missing: [], problems: [] });
      // the ones the issue names, where they belong
      const where = (code: string) => seen.get(code) ?? [];
      expect(where('idempotency_conflict')).toContain('post /internal/orders 409');
      expect(where('payment_failed')).toContain('post /internal/orders 402');
      expect(where('upstream_auth_failed')).toContain('post /internal/orders 502');
      expect(where('manual_form_required')).toContain('post /internal/orders 400');
      expect(where('outcome_unknown')).toEqual(
        expect.arrayContaining(['post /internal/orders/{shop_order_no}/cancel 409', 'post /internal/orders/{shop_order_no}/refund 409']),
      );
      expect(where('resolve_mismatch')).toContain('post /internal/orders/{shop_order_no}/resolve 409');
      expect(where('sync_in_progress')).toContain('post /internal/catalog/sync 409');
      expect(where('invalid_signature')).toContain('post /callbacks/upstream 401');
      expect(where('payload_too_large')).toContain('post /callbacks/upstream 413');
      expect(where('unauthorized').length).toBe(registered().filter((r) => r.path.startsWith('/internal/')).length);
    });

    it('has every example agree with the schema it is documented with', () => {
      const problems: string[] = [];
      for (const [path, item] of Object.entries(doc.paths)) {
        for (const [method, o] of Object.entries(item)) {
          for (const [status, resp] of Object.entries(o.responses)) {
            for (const m of Object.values(resp.content ?? {})) {
              if (!m.schema) continue;
              for (const e of examplesOf(m)) problems.push(...check(doc, e, m.schema).map((x) => `${method} ${path} ${status}: ${x}`));
            }
          }
        }
      }
      expect(problems).toEqual([]);
    });

    it('money is a decimal string in every example', () => {
      const money = new Set([
        'amount',
        'refundable_amount',
        'refunded_amount',
        'cost_price',
        'sale_price',
        'original_price',
        'member_price',
        'balance',
        'unit_cost',
        'max_unit_cost',
        'markup_percent',
        'markup_fixed',
        'rounding',
      ]);
      const found: string[] = [];
      const walk = (v: unknown, path: string) => {
        if (Array.isArray(v)) v.forEach((x, i) => walk(x, `${path}[${i}]`));
        else if (isObject(v))
          for (const [k, x] of Object.entries(v)) {
            if (money.has(k) && x !== null && !(typeof x === 'string' && /^-?\d+(\.\d+)?$/.test(x)))
              found.push(`${path}.${k}: ${JSON.stringify(x)}`);
            walk(x, `${path}.${k}`);
          }
      };
      for (const [path, item] of Object.entries(doc.paths)) {
        for (const [method, o] of Object.entries(item)) {
          const medias = [
            ...Object.values(o.requestBody?.content ?? {}),
            ...Object.values(o.responses).flatMap((r) => Object.values(r.content ?? {})),
          ];
          for (const m of medias) for (const e of examplesOf(m)) walk(e, `${method} ${path}`);
        }
      }
      expect(found).toEqual([]);
    });
  });

  describe('the examples are what the relay answers', () => {
    const ORDERS = '/internal/orders';

    it('POST /internal/orders: the documented requests, and the answers', async () => {
      // the documented request as it is
      const full = requestExample('post', ORDERS, 'full');
      const created = await app.http.post(ORDERS, full);
      const example = expectDocumented(created, 'post', ORDERS, 201) as { order: Record<string, unknown> };
      expect(Object.keys(created.data as object)).toEqual(Object.keys(example));
      expect(Object.keys((created.data as { order: object }).order).sort()).toEqual(Object.keys(example.order).sort());
      expect((created.data as { order: { sku_code: string; quantity: number } }).order).toMatchObject({
        sku_code: full.sku_code,
        quantity: full.quantity,
        trace_id: full.trace_id,
      });

      const delivered = await waitForOrder(app.http, String(full.shop_order_no), (o) => o.status === 'delivered');
      expect(delivered.items).toHaveLength(Number(full.quantity));
      expectDocumented(await app.http.get(`${ORDERS}/${String(full.shop_order_no)}`), 'get', '/internal/orders/{shop_order_no}', 200);
      expectDocumented(await app.http.get(ORDERS, { params: { status: 'delivered' } }), 'get', ORDERS, 200);
      expectDocumented(
        await app.http.get(`${ORDERS}/${String(full.shop_order_no)}/events`),
        'get',
        '/internal/orders/{shop_order_no}/events',
        200,
      );
      expectDocumented(
        await app.http.post(`${ORDERS}/${String(full.shop_order_no)}/refresh`),
        'post',
        '/internal/orders/{shop_order_no}/refresh',
        200,
      );
      // the same key and body: the recorded order (200)
      expectDocumented(await app.http.post(ORDERS, full), 'post', ORDERS, 200);
      // another body: exactly the documented answer
      const conflict = await app.http.post(ORDERS, { ...full, quantity: 3 });
      expect(conflict.data).toEqual(expectDocumented(conflict, 'post', ORDERS, 409, 'idempotency_conflict'));

      expectDocumented(await app.http.post(ORDERS, requestExample('post', ORDERS, 'minimal')), 'post', ORDERS, 201);
      expectDocumented(await app.http.post(ORDERS, requestExample('post', ORDERS, 'manual')), 'post', ORDERS, 201);
    });

    it('POST /internal/orders: the documented refusals', async () => {
      const exactly = async (body: unknown, status: number, name: string) => {
        const r = await app.http.post(ORDERS, body);
        expect(r.data).toEqual(expectDocumented(r, 'post', ORDERS, status, name));
      };
      await exactly({ shop_order_no: 'bad no', sku_code: 'SKU-00042-1', quantity: 0 }, 400, 'bad_request');
      await exactly({ shop_order_no: 'SO-20261122-0010', sku_code: 'SKU-99999-1', quantity: 1 }, 404, 'sku_not_found');
      await exactly(
        { shop_order_no: 'SO-20261122-0006', sku_code: 'SKU-00057-1', quantity: 1, manual_form_data: { server: 'asia-1' } },
        400,
        'manual_form_required',
      );
      expectDocumented(
        await app.http.post(ORDERS, { shop_order_no: 'SO-20261122-0011', sku_code: 'SKU-00043-1', quantity: 1 }),
        'post',
        ORDERS,
        409,
        'sku_unavailable',
      );
      expectDocumented(
        await app.http.post(ORDERS, { shop_order_no: 'SO-20261122-0012', sku_code: 'SKU-00042-1', quantity: 1, max_unit_cost: '1.00' }),
        'post',
        ORDERS,
        409,
        'price_changed',
      );

      sandbox.faults.set({ rules: [{ operation: 'createOrder', kind: 'payment_failed', times: 1 }] });
      const refused = await app.http.post(ORDERS, { shop_order_no: 'SO-20261122-0005', sku_code: 'SKU-00042-1', quantity: 1 });
      const doc402 = expectDocumented(refused, 'post', ORDERS, 402, 'payment_failed') as Record<string, unknown>;
      expect((refused.data as { error_message: string }).error_message).toBe(doc402.error_message);
      // a rejected order: canceled locally, then refunded
      expectDocumented(await app.http.post(`${ORDERS}/SO-20261122-0005/cancel`), 'post', '/internal/orders/{shop_order_no}/cancel', 200);
      expectDocumented(await app.http.post(`${ORDERS}/SO-20261122-0005/refund`), 'post', '/internal/orders/{shop_order_no}/refund', 200);

      const xml = await app.http.post(ORDERS, '<order/>', { headers: { 'content-type': 'application/xml' } });
      expect(xml.data).toEqual(expectDocumented(xml, 'post', ORDERS, 400, 'not_json'));
      const big = await app.http.post(ORDERS, {
        shop_order_no: 'SO-big',
        sku_code: 'SKU-00042-1',
        quantity: 1,
        trace_id: 'x'.repeat(70_000),
      });
      expect(big.data).toEqual(expectDocumented(big, 'post', ORDERS, 413));
    });

    it('submit_unknown, cancel and resolve: the documented answers', async () => {
      await waitForOrder(app.http, 'SO-20261122-0001', (o) => o.status === 'delivered');
      sandbox.faults.set({ rules: [{ operation: 'createOrder', kind: 'error_after', status: 503, times: 1 }] });
      const unknown = await app.http.post(ORDERS, { shop_order_no: 'SO-20261122-0004', sku_code: 'SKU-00042-1', quantity: 1 });
      expectDocumented(unknown, 'post', ORDERS, 202);
      expect((unknown.data as { order: { status: string } }).order.status).toBe('submit_unknown');

      const cancelPath = '/internal/orders/{shop_order_no}/cancel';
      const outcomeUnknown = await app.http.post(`${ORDERS}/SO-20261122-0004/cancel`);
      const docUnknown = expectDocumented(outcomeUnknown, 'post', cancelPath, 409, 'outcome_unknown') as Record<string, unknown>;
      expect((outcomeUnknown.data as { error_message: string }).error_message).toBe(docUnknown.error_message);
      const notAllowed = await app.http.post(`${ORDERS}/SO-20261122-0001/cancel`);
      const docNotAllowed = expectDocumented(notAllowed, 'post', cancelPath, 409, 'cancel_not_allowed') as Record<string, unknown>;
      expect((notAllowed.data as { error_message: string }).error_message).toBe(docNotAllowed.error_message);
      expectDocumented(
        await app.http.post(`${ORDERS}/SO-20261122-0001/refund`),
        'post',
        '/internal/orders/{shop_order_no}/refund',
        409,
        'cancel_not_allowed',
      );

      const resolvePath = '/internal/orders/{shop_order_no}/resolve';
      const notUnknown = await app.http.post(
        `${ORDERS}/SO-20261122-0001/resolve`,
        requestExample('post', resolvePath, 'upstream_order_id'),
      );
      expect(notUnknown.data).toEqual(expectDocumented(notUnknown, 'post', resolvePath, 409, 'not_unknown'));
      const other = (await app.http.get(`${ORDERS}/SO-20261122-0001`)).data as { order: { upstream_order_id: number } };
      const mismatch = await app.http.post(`${ORDERS}/SO-20261122-0004/resolve`, { upstream_order_id: other.order.upstream_order_id });
      const docMismatch = expectDocumented(mismatch, 'post', resolvePath, 409, 'resolve_mismatch') as Record<string, unknown>;
      expect((mismatch.data as { error_message: string }).error_message.replace(/\d{6,}/, 'N')).toBe(
        String(docMismatch.error_message).replace(/\d{6,}/, 'N'),
      );
      const badResolve = await app.http.post(`${ORDERS}/SO-20261122-0004/resolve`, { not_placed: false });
      expect(badResolve.data).toEqual(expectDocumented(badResolve, 'post', resolvePath, 400, 'bad_request'));
      const resolved = await app.http.post(`${ORDERS}/SO-20261122-0004/resolve`, requestExample('post', resolvePath, 'not_placed'));
      expectDocumented(resolved, 'post', resolvePath, 200, 'not_placed');
      expect((resolved.data as { order: unknown }).order).toMatchObject({ status: 'rejected', error_code: 'not_placed' });

      const missing = await app.http.get(`${ORDERS}/SO-20261122-0009`);
      expect(missing.data).toEqual(expectDocumented(missing, 'get', '/internal/orders/{shop_order_no}', 404, 'order_not_found'));
      const badStatus = await app.http.get(ORDERS, { params: { status: 'bogus' } });
      expect(badStatus.data).toEqual(expectDocumented(badStatus, 'get', ORDERS, 400, 'bad_request'));
      expectDocumented(await app.http.get('/internal/wallet'), 'get', '/internal/wallet', 200);
    });

    it('the catalog and the pricing rules: the documented requests, and the answers', async () => {
      expectDocumented(await app.http.get('/internal/catalog/categories'), 'get', '/internal/catalog/categories', 200);
      expectDocumented(await app.http.get('/internal/catalog/skus', { params: { page_size: 2 } }), 'get', '/internal/catalog/skus', 200);
      expectDocumented(await app.http.get('/internal/catalog/skus/SKU-00042-1'), 'get', '/internal/catalog/skus/{sku_code}', 200);
      expectDocumented(
        await app.http.get('/internal/catalog/skus/SKU-00042-1/changes'),
        'get',
        '/internal/catalog/skus/{sku_code}/changes',
        200,
      );
      expectDocumented(await app.http.get('/internal/catalog/conflicts'), 'get', '/internal/catalog/conflicts', 200);
      expectDocumented(await app.http.get('/internal/catalog/sync-runs'), 'get', '/internal/catalog/sync-runs', 200);
      const runs = (await app.http.get('/internal/catalog/sync-runs')).data as { items: Array<{ run_id: string }> };
      expectDocumented(
        await app.http.get(`/internal/catalog/sync-runs/${runs.items[0].run_id}`),
        'get',
        '/internal/catalog/sync-runs/{run_id}',
        200,
      );

      const exactly = async (
        res: Promise<{ status: number; data: unknown }>,
        method: string,
        path: string,
        status: number,
        name?: string,
      ) => {
        const r = await res;
        expect(r.data).toEqual(expectDocumented(r, method, path, status, name));
      };
      await exactly(app.http.get('/internal/catalog/skus/SKU-99999-1'), 'get', '/internal/catalog/skus/{sku_code}', 404, 'sku_not_found');
      await exactly(
        app.http.get('/internal/catalog/sync-runs/run_20261122000000_00000000'),
        'get',
        '/internal/catalog/sync-runs/{run_id}',
        404,
        'sync_run_not_found',
      );
      await exactly(
        app.http.get('/internal/catalog/sync-runs', { params: { page_size: 501 } }),
        'get',
        '/internal/catalog/sync-runs',
        400,
        'bad_request',
      );
      await exactly(
        app.http.get('/internal/catalog/skus', { params: { listed: 'maybe', changed_since: 'yesterday' } }),
        'get',
        '/internal/catalog/skus',
        400,
        'bad_request',
      );
      await exactly(app.http.post('/internal/catalog/sync', { mode: 'weekly' }), 'post', '/internal/catalog/sync', 400, 'bad_request');

      // a sync: started (202), and a second one while it runs (409 with its run_id)
      sandbox.faults.set({ latencyMs: 300 });
      const started = await app.http.post('/internal/catalog/sync', requestExample('post', '/internal/catalog/sync', 'incremental'));
      expectDocumented(started, 'post', '/internal/catalog/sync', 202);
      const busy = await app.http.post('/internal/catalog/sync', requestExample('post', '/internal/catalog/sync', 'full'));
      expectDocumented(busy, 'post', '/internal/catalog/sync', 409, 'sync_in_progress');
      expect((busy.data as { run_id: string }).run_id).toBe((started.data as { run_id: string }).run_id);
      const runId = (started.data as { run_id: string }).run_id;
      expectDocumented(await app.http.get(`/internal/catalog/sync-runs/${runId}`), 'get', '/internal/catalog/sync-runs/{run_id}', 200);
      sandbox.faults.reset();
      await waitFor(
        async () => ((await app.http.get(`/internal/catalog/sync-runs/${runId}`)).data as { run: { status: string } }).run.status,
        (s) => s !== 'running',
        'the sync',
        30_000,
      );

      const rulesPath = '/internal/pricing/rules';
      expectDocumented(await app.http.get(rulesPath), 'get', rulesPath, 200);
      expectDocumented(await app.http.put(rulesPath, requestExample('put', rulesPath, 'rules')), 'put', rulesPath, 200);
      await exactly(
        app.http.put(rulesPath, { rules: [{ scope: 'category', category_id: 1, markup_percent: 'ten', markup_fixed: '0' }] }),
        'put',
        rulesPath,
        400,
        'invalid_member',
      );
      await exactly(
        app.http.put(rulesPath, {
          rules: [
            { scope: 'category', category_id: 1, markup_percent: '10', markup_fixed: '0' },
            { scope: 'category', category_id: 1, markup_percent: '5', markup_fixed: '0' },
            { scope: 'sku', sku_code: 'SKU-00042-1', markup_percent: '0', markup_fixed: '0', rounding: '0' },
          ],
        }),
        'put',
        rulesPath,
        400,
        'invalid_rules',
      );
      expect((await app.http.put(rulesPath, { rules: [] })).status).toBe(200);
    });

    it('callbacks, health, metrics, and the errors of every call', async () => {
      const callback = requestExample('post', '/callbacks/upstream', 'fulfilled');
      const body = JSON.stringify(callback);
      const post = (headers: Record<string, string>) =>
        axios.post(`${app.url}/callbacks/upstream`, body, { headers, validateStatus: () => true, transformRequest: [(d: unknown) => d] });
      const unsigned = await post({ 'content-type': 'application/json' });
      expect(unsigned.data).toEqual(expectDocumented(unsigned, 'post', '/callbacks/upstream', 401, 'invalid_signature'));
      const signed = await post(callbackHeaders(body));
      expect(signed.data).toEqual(expectDocumented(signed, 'post', '/callbacks/upstream', 200));
      const headers =
        op('post', '/callbacks/upstream')
          .parameters?.filter((p) => p.in === 'header')
          .map((p) => p.name.toLowerCase()) ?? [];
      expect(
        Object.keys(callbackHeaders(body))
          .filter((h) => h !== 'content-type')
          .map((h) => h.toLowerCase())
          .sort(),
      ).toEqual(headers.sort());

      await app.http.get('/internal/wallet'); // a ping, so that health shows the wallet
      expectDocumented(await app.http.get('/health'), 'get', '/health', 200);
      expectDocumented(await app.http.get('/health/live'), 'get', '/health/live', 200);
      expectDocumented(await app.http.get('/health/ready'), 'get', '/health/ready', 200);
      const metrics = await app.http.get('/metrics');
      expect(metrics.status).toBe(200);
      for (const name of String(documented('get', '/metrics', 200)).match(/^relay_[a-z_]+/gm) ?? [])
        expect(String(metrics.data)).toContain(`\n${name}`);

      const unauthorized = await axios.get(`${app.url}/internal/orders`, { validateStatus: () => true });
      expect(unauthorized.data).toEqual(expectDocumented(unauthorized, 'get', '/internal/orders', 401, 'unauthorized'));
      const noRoute = await app.http.get('/internal/order');
      expect(noRoute.status).toBe(404);
      expect(noRoute.data).toEqual(documented('get', '/internal/orders', 'default', 'not_found'));
    });
  });
});
