/**
 * The HTTP envelope of CONTRACT §5: every error is `{ok:false, error_code, error_message}`; a body
 * that is not JSON is 400 `bad_request`, one over 64 KiB is 413 `payload_too_large`, a missing
 * token is 401 `unauthorized`; and none of them records anything.
 */
import axios from 'axios';
import http from 'node:http';
import type { SandboxServer } from '../src/sandbox/sandbox.server.js';
import { openTestDatabase, startSandbox, startTestApp, type TestApp, type TestDatabase } from './support/test-app.js';

describe('HTTP envelope', () => {
  let db: TestDatabase;
  let sandbox: SandboxServer;
  let app: TestApp;
  const orders = async () => (await db.query<{ n: number }>('SELECT count(*)::int AS n FROM orders'))[0].n;

  beforeAll(async () => {
    db = await openTestDatabase();
    sandbox = await startSandbox({ catalog: { products: 10 } });
    app = await startTestApp(db, sandbox);
  });
  afterAll(async () => {
    await app.close();
    await sandbox.stop();
    await db.close();
  });

  it('answers a body that is not JSON with 400 bad_request and records nothing', async () => {
    // Sent as bytes: axios would otherwise turn a string that is not JSON into a JSON string.
    const raw = { headers: { 'content-type': 'application/json' }, transformRequest: [(d: unknown) => d] };
    const r = await app.http.post('/internal/orders', '{"shop_order_no": "x", ', raw);
    expect(r.status).toBe(400);
    expect(r.data).toEqual({ ok: false, error_code: 'bad_request', error_message: expect.stringMatching(/not valid JSON/) });
    // A JSON value that is not an object is refused too.
    const scalar = await app.http.post('/internal/orders', '"just a string"', raw);
    expect(scalar.status).toBe(400);
    expect(scalar.data).toMatchObject({ ok: false, error_code: 'bad_request' });
    expect(await orders()).toBe(0);
  });

  it('answers a body over 64 KiB with 413 payload_too_large and records nothing', async () => {
    const body = JSON.stringify({ shop_order_no: 'big-1', sku_code: 'x', quantity: 1, manual_form_data: { note: 'y'.repeat(66 * 1024) } });
    const r = await app.http.post('/internal/orders', body, { headers: { 'content-type': 'application/json' } });
    expect(r.status).toBe(413);
    expect(r.data).toMatchObject({ ok: false, error_code: 'payload_too_large' });
    expect(await orders()).toBe(0);
  });

  it('draws the 64 KiB line at 65,536 bytes: up to it the body is read, one byte over is 413', async () => {
    const raw = { headers: { 'content-type': 'application/json' }, transformRequest: [(d: unknown) => d] };
    /** A valid order body (an unknown SKU) padded to exactly `bytes` bytes. */
    const sized = (bytes: number, no: string): string => {
      const head = JSON.stringify({ shop_order_no: no, sku_code: 'NO-SUCH-SKU', quantity: 1, manual_form_data: { note: '' } });
      const body = head.replace('"note":""', `"note":"${'y'.repeat(bytes - Buffer.byteLength(head))}"`);
      expect(Buffer.byteLength(body)).toBe(bytes);
      return body;
    };
    for (const [bytes, no] of [
      [65_000, 'edge-under'],
      [65_536, 'edge-exact'],
    ] as const) {
      const r = await app.http.post('/internal/orders', sized(bytes, no), raw);
      expect([bytes, r.status]).not.toEqual([bytes, 413]);
      expect(r.data).toMatchObject({ ok: false });
      expect(r.data.error_code).not.toBe('payload_too_large');
      // Read and checked as any other body: here the SKU is unknown.
      expect([bytes, r.status, r.data.error_code]).toEqual([bytes, 404, 'sku_not_found']);
    }
    const over = await app.http.post('/internal/orders', sized(65_537, 'edge-over'), raw);
    expect(over.status).toBe(413);
    expect(over.data).toEqual({ ok: false, error_code: 'payload_too_large', error_message: expect.any(String) });
    expect(await orders()).toBe(0);
  });

  it('shop_order_no is [A-Za-z0-9._:-]{1,64}: 65 characters or an empty one is 400 naming it, 64 pass validation', async () => {
    const chars = 'ABCxyz019._:-';
    const ofLength = (n: number) => chars.repeat(Math.ceil(n / chars.length)).slice(0, n);
    for (const no of [ofLength(65), '']) {
      const r = await app.http.post('/internal/orders', { shop_order_no: no, sku_code: 'NO-SUCH-SKU', quantity: 1 });
      expect([no, r.status]).toEqual([no, 400]);
      expect(r.data).toMatchObject({ ok: false, error_code: 'bad_request', error_message: expect.any(String) });
      expect(Object.keys((r.data as { fields: object }).fields)).toEqual(['shop_order_no']);
    }
    const longest = ofLength(64);
    expect(longest).toHaveLength(64);
    const r = await app.http.post('/internal/orders', { shop_order_no: longest, sku_code: 'NO-SUCH-SKU', quantity: 1 });
    if (r.status === 400) expect(Object.keys((r.data as { fields?: object }).fields ?? {})).not.toContain('shop_order_no');
    // Past validation, the unknown SKU is what refuses it.
    expect([r.status, r.data]).toEqual([404, { ok: false, error_code: 'sku_not_found', error_message: expect.any(String) }]);
    expect(await orders()).toBe(0);
  });

  it('answers a missing or wrong token with 401 unauthorized, and an unknown route with 404 in the envelope', async () => {
    const anonymous = axios.create({ baseURL: app.url, validateStatus: () => true });
    for (const headers of [{}, { authorization: 'Bearer wrong' }, { authorization: 'Basic dGVzdA==' }]) {
      const r = await anonymous.post('/internal/orders', { shop_order_no: 'a-1', sku_code: 'x', quantity: 1 }, { headers });
      expect([r.status, r.data]).toEqual([401, { ok: false, error_code: 'unauthorized', error_message: expect.any(String) }]);
    }
    expect(await orders()).toBe(0);
    const missing = await app.http.get('/internal/no-such-thing');
    expect(missing.status).toBe(404);
    expect(missing.data).toMatchObject({ ok: false, error_code: 'not_found' });
  });

  it('needs the token for every spelling of an internal path that reaches an internal route (percent-encoded, doubled slashes, dot segments)', async () => {
    // sent as written: an HTTP client would normalise some of these
    const raw = (path: string, method = 'GET', body?: string) =>
      new Promise<{ status: number; body: string }>((resolve, reject) => {
        const u = new URL(app.url);
        const req = http.request({ host: u.hostname, port: u.port, path, method, headers: body ? { 'content-type': 'application/json' } : {} }, (res) => {
          let b = '';
          res.on('data', (c: Buffer) => (b += c.toString()));
          res.on('end', () => resolve({ status: res.statusCode ?? 0, body: b }));
        });
        req.on('error', reject);
        req.end(body);
      });
    for (const path of ['/%69nternal/orders', '/%69nternal/pricing/rules', '/internal%2Forders', '//internal/orders', '/./internal/orders', '/%2e/internal/orders', '/INTERNAL/orders', '/internal/orders/']) {
      const r = await raw(path);
      expect([path, r.status]).toEqual([path, expect.any(Number)]);
      if (r.status !== 404) expect([path, r.status, JSON.parse(r.body)]).toEqual([path, 401, expect.objectContaining({ ok: false, error_code: 'unauthorized' })]);
    }
    const placed = await raw('/%69nternal/orders', 'POST', JSON.stringify({ shop_order_no: 'enc-1', sku_code: 'x', quantity: 1 }));
    expect([placed.status === 401 || placed.status === 404, placed.status]).toEqual([true, placed.status]);
    expect(await orders()).toBe(0);
  });

  it('names every field at fault in bad_request', async () => {
    const r = await app.http.post('/internal/orders', { shop_order_no: 'bad no!', sku_code: '', quantity: 0, max_unit_cost: 1.5, extra: true });
    expect(r.status).toBe(400);
    expect(r.data.error_code).toBe('bad_request');
    expect(Object.keys(r.data.fields).sort()).toEqual(['extra', 'max_unit_cost', 'quantity', 'shop_order_no', 'sku_code']);
    expect(await orders()).toBe(0);
  });
});
