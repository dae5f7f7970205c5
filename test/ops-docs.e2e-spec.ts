/**
 * The API docs: `/docs` and `/docs-json` are served; every `/internal/*` route the HTTP server
 * actually registered (read from the router, so that a forgotten endpoint fails here) is in the
 * OpenAPI document with its method and the bearer scheme; the error envelope is a shared schema and
 * every error code of the contract is in the table.
 */
import axios from 'axios';
import { ERROR_CODES } from '../src/common/error-codes.js';
import { toOpenApiPath } from '../src/ops/route-registry.js';
import { useAppSuite } from './support/app-suite.js';
import type { TestApp } from './support/test-app.js';

/** The error codes CONTRACT.md names (§5, §6), and the generic ones of the exception filter. */
const CONTRACT_CODES = [
  'unauthorized',
  'bad_request',
  'payload_too_large',
  'sku_not_found',
  'sync_in_progress',
  'sync_run_not_found',
  'order_not_found',
  'resolve_mismatch',
  'not_unknown',
  'idempotency_conflict',
  'sku_unavailable',
  'manual_form_required',
  'price_changed',
  'upstream_unavailable',
  'payment_failed',
  'upstream_auth_failed',
  'cancel_not_allowed',
  'outcome_unknown',
  'invalid_signature',
  'internal_error',
];

type Operation = {
  security?: Array<Record<string, string[]>>;
  responses?: Record<string, { content?: Record<string, { schema?: { $ref?: string } }> }>;
  tags?: string[];
};
type Doc = {
  paths: Record<string, Record<string, Operation>>;
  components: { schemas: Record<string, { properties: Record<string, { enum?: string[] }> }> };
  info: { description: string };
};

describe('API docs', () => {
  const suite = useAppSuite();
  let app: TestApp;
  let doc: Doc;
  beforeAll(async () => {
    app = suite.app;
    const res = await axios.get(`${app.url}/docs-json`);
    expect(res.status).toBe(200);
    doc = res.data as Doc;
  });

  it('serves the UI at /docs without a token', async () => {
    const res = await axios.get(`${app.url}/docs`, { validateStatus: () => true, maxRedirects: 5 });
    expect(res.status).toBe(200);
    expect(String(res.data)).toContain('swagger');
  });

  it('lists every /internal route the server registered, with its method, the bearer scheme and the error envelope', () => {
    const internal = app.relay.routes.filter((r) => r.path.startsWith('/internal/') && r.method !== 'HEAD' && r.method !== 'OPTIONS');
    expect(internal.length).toBeGreaterThan(5);
    const missing = internal.filter((r) => !doc.paths[toOpenApiPath(r.path)]?.[r.method.toLowerCase()]).map((r) => `${r.method} ${r.path}`);
    expect(missing).toEqual([]);
    for (const r of internal) {
      const op = doc.paths[toOpenApiPath(r.path)][r.method.toLowerCase()];
      expect({ route: `${r.method} ${r.path}`, security: op.security }).toEqual({
        route: `${r.method} ${r.path}`,
        security: [{ bearer: [] }],
      });
      expect(op.responses?.['401']?.content?.['application/json']?.schema?.$ref).toBe('#/components/schemas/ErrorResponse');
      expect(op.tags?.length).toBeGreaterThan(0);
    }
    // The contract's internal calls and the operator endpoints are among them.
    for (const [method, path] of [
      ['get', '/internal/catalog/skus'],
      ['post', '/internal/orders'],
      ['get', '/internal/orders/{shop_order_no}'],
      ['get', '/internal/webhooks/deliveries'],
      ['post', '/internal/webhooks/deliveries/{id}/replay'],
    ]) {
      expect({ path, method, documented: Boolean(doc.paths[path]?.[method]) }).toEqual({ path, method, documented: true });
    }
  });

  it('documents the public endpoints without the bearer scheme', () => {
    for (const path of ['/health', '/health/live', '/health/ready', '/metrics']) {
      expect(doc.paths[path]?.get).toBeDefined();
      expect(doc.paths[path].get.security).toBeUndefined();
    }
  });

  it('has the error envelope as a shared schema, and every error code of the contract in its table', () => {
    const schema = doc.components.schemas.ErrorResponse;
    expect(Object.keys(schema.properties)).toEqual(expect.arrayContaining(['ok', 'error_code', 'error_message', 'fields', 'order']));
    const codes = schema.properties.error_code.enum ?? [];
    const description = doc.info.description;
    for (const code of [...CONTRACT_CODES, ...ERROR_CODES.map((e) => e.code)]) {
      expect({ code, inEnum: codes.includes(code), inTable: description.includes(`| \`${code}\` |`) }).toEqual({
        code,
        inEnum: true,
        inTable: true,
      });
    }
    expect(description).toContain('Relay-Signature');
  });
});
