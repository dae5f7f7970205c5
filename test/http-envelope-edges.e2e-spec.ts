/**
 * The internal API's outside at its edges (CONTRACT §5: every answer in the envelope, bad input 400
 * `bad_request` with `fields` and never a 500, no `/internal` answer but 401 without the token): a NUL
 * character anywhere in a JSON body; a body that is not JSON on a known route without the token; a
 * path the router cannot read (a malformed percent-escape); a path parameter over Fastify's default
 * 100 characters (a sku_code may run to 255).
 */
import http from 'node:http';
import axios from 'axios';
import { useAppSuite } from './support/app-suite.js';

/** A sku_code longer than Fastify's default maxParamLength (100): the upstream sets no limit, the catalog stores `text`. */
const LONG_SKU = `LONG-${'x'.repeat(140)}`;

describe('internal API: envelope, auth and bad input at the edges', () => {
  const t = useAppSuite({
    prepare: (sandbox) => {
      sandbox.catalog.addProduct({ skus: [{ skuCode: LONG_SKU, price: '10.00' }] });
      sandbox.catalog.addProduct({ skus: [{ skuCode: 'RV-AUTO', price: '10.00' }] });
      sandbox.catalog.addProduct({
        fulfillmentType: 'manual',
        manualFormSchema: { fields: [{ key: 'account', type: 'text', required: true }] },
        skus: [{ skuCode: 'RV-MANUAL', price: '3.00' }],
      });
    },
    env: { UPSTREAM_TIMEOUT_MS: '500' },
    seed: true,
  });

  /** Sent as written (no client-side normalisation of the path or the body). */
  const raw = (path: string, method = 'GET', headers: Record<string, string> = {}, body?: string) =>
    new Promise<{ status: number; body: string }>((resolve, reject) => {
      const u = new URL(t.app.url);
      const req = http.request({ host: u.hostname, port: u.port, path, method, headers }, (res) => {
        let b = '';
        res.on('data', (c: Buffer) => (b += c.toString()));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body: b }));
      });
      req.on('error', reject);
      req.end(body);
    });
  const json = (s: string): unknown => {
    try {
      return JSON.parse(s);
    } catch {
      return s;
    }
  };
  const auth = () => ({ authorization: `Bearer ${t.app.config.internalApiToken}` });
  const orders = async () => (await t.db.query<{ n: number }>('SELECT count(*)::int AS n FROM orders'))[0].n;

  it('POST /internal/orders: a NUL character in a string field is bad input (400 bad_request with fields), never a 500', async () => {
    const before = await orders();
    const cases: Array<[string, Record<string, unknown>, string]> = [
      ['trace_id', { shop_order_no: 'rv-nul-1', sku_code: 'RV-AUTO', quantity: 1, trace_id: 'a\u0000b' }, 'trace_id'],
      [
        'manual_form_data value',
        { shop_order_no: 'rv-nul-2', sku_code: 'RV-MANUAL', quantity: 1, manual_form_data: { account: 'a\u0000b' } },
        'manual_form_data',
      ],
      [
        'manual_form_data key',
        { shop_order_no: 'rv-nul-3', sku_code: 'RV-MANUAL', quantity: 1, manual_form_data: { account: 'ok', 'k\u0000': 1 } },
        'manual_form_data',
      ],
    ];
    for (const [what, body, field] of cases) {
      const r = await t.app.http.post('/internal/orders', body);
      expect({
        what,
        status: r.status,
        code: r.data.error_code,
        fields: Object.keys(r.data.fields ?? {}).some((k: string) => k.startsWith(field)),
      }).toEqual({
        what,
        status: 400,
        code: 'bad_request',
        fields: true,
      });
    }
    // a sku_code no SKU can have: refused (400 or 404 sku_not_found), not a 500
    const sku = await t.app.http.post('/internal/orders', { shop_order_no: 'rv-nul-4', sku_code: 'x\u0000', quantity: 1 });
    expect([sku.status < 500, sku.data.error_code]).toEqual([true, expect.stringMatching(/^(bad_request|sku_not_found)$/)]);
    expect(await orders()).toBe(before);
  });

  it('POST /internal/orders/{no}/resolve: a NUL character in `reason` is 400 bad_request, never a 500', async () => {
    t.sandbox.faults.set({ rules: [{ operation: 'createOrder', kind: 'hang_after', times: 1 }] });
    const placed = await t.app.http.post('/internal/orders', { shop_order_no: 'rv-unknown-1', sku_code: 'RV-AUTO', quantity: 1 });
    expect([placed.status, placed.data.order?.status]).toEqual([202, 'submit_unknown']);
    const r = await t.app.http.post('/internal/orders/rv-unknown-1/resolve', { not_placed: true, reason: 'not there\u0000' });
    expect([r.status, r.data.error_code, Object.keys(r.data.fields ?? {})]).toEqual([400, 'bad_request', ['reason']]);
  });

  it('a known /internal route without the token is 401 unauthorized whatever its body (not 400 for a body that is not JSON)', async () => {
    const anonymous = axios.create({ baseURL: t.app.url, validateStatus: () => true });
    const cases: Array<[string, string, string, string]> = [
      ['post', '/internal/orders', 'application/json', '{"shop_order_no": '],
      ['post', '/internal/orders', 'text/plain', 'hello'],
      ['put', '/internal/pricing/rules', 'application/xml', '<rules/>'],
      ['post', '/internal/catalog/sync', 'application/json', 'not json'],
    ];
    for (const [method, url, type, data] of cases) {
      const r = await anonymous.request({ method, url, data, headers: { 'content-type': type }, transformRequest: [(d: unknown) => d] });
      // (an unknown path under /internal/ already answers 401 for the same bodies: test/http-envelope.e2e-spec.ts)
      expect({ method, url, type, status: r.status, code: r.data.error_code }).toEqual({
        method,
        url,
        type,
        status: 401,
        code: 'unauthorized',
      });
    }
  });

  it('a malformed percent-escape in a path: the envelope (bad_request with fields, or 404); 401 under /internal, no token', async () => {
    for (const path of ['/internal/orders/%zz', '/internal/catalog/skus/%E0%A4%A', '/internal/orders/%C0']) {
      const withToken = await raw(path, 'GET', auth());
      const body = json(withToken.body) as Record<string, unknown>;
      expect({ path, status: withToken.status, ok: body.ok, code: body.error_code }).toEqual({
        path,
        status: withToken.status === 404 ? 404 : 400,
        ok: false,
        code: withToken.status === 404 ? expect.stringMatching(/not_found$/) : 'bad_request',
      });
      if (withToken.status === 400) expect([path, body.fields]).toEqual([path, expect.any(Object)]);
      const anonymous = await raw(path);
      expect({ path, status: anonymous.status, body: json(anonymous.body) }).toEqual({
        path,
        status: 401,
        body: { ok: false, error_code: 'unauthorized', error_message: expect.any(String) },
      });
    }
  });

  it('GET /internal/catalog/skus/{sku_code} finds a listed SKU with a code over 100 chars; a long path key: 404, enveloped', async () => {
    const list = await t.app.http.get('/internal/catalog/skus', { params: { page_size: 500 } });
    expect((list.data.items as Array<{ sku_code: string }>).map((s) => s.sku_code)).toContain(LONG_SKU);
    const one = await t.app.http.get(`/internal/catalog/skus/${encodeURIComponent(LONG_SKU)}`);
    expect([one.status, one.data.ok, one.data.sku?.sku_code]).toEqual([200, true, LONG_SKU]);
    const changes = await t.app.http.get(`/internal/catalog/skus/${encodeURIComponent(LONG_SKU)}/changes`);
    expect([changes.status, changes.data.ok]).toEqual([200, true]);
    // a key too long for any record: the route's own 404 in the envelope, not Fastify's 414 body
    const order = await t.app.http.get(`/internal/orders/${'o'.repeat(120)}`);
    expect([order.status, order.data]).toEqual([404, { ok: false, error_code: 'order_not_found', error_message: expect.any(String) }]);
    const run = await t.app.http.get(`/internal/catalog/sync-runs/${'r'.repeat(120)}`);
    expect([run.status, run.data]).toEqual([404, { ok: false, error_code: 'sync_run_not_found', error_message: expect.any(String) }]);
    // and without the token: 401, as every /internal call
    const anonymous = await raw(`/internal/orders/${'o'.repeat(120)}`);
    expect([anonymous.status, (json(anonymous.body) as Record<string, unknown>).error_code]).toEqual([401, 'unauthorized']);
  });
});
