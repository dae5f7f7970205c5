/**
 * The HTTP envelope of CONTRACT §5: every error is `{ok:false, error_code, error_message}`, with
 * `fields` for every `bad_request`; a body that is not JSON (any other content type, none, or JSON
 * that does not parse) is 400 `bad_request`, one over 64 KiB is 413 `payload_too_large` whatever its
 * type, a missing token is 401 `unauthorized` (on an unknown path under /internal/ too); and none of
 * them records anything.
 */
import axios from 'axios';
import http from 'node:http';
import { useAppSuite } from './support/app-suite.js';

describe('HTTP envelope', () => {
  const suite = useAppSuite({ sandbox: { catalog: { products: 10 } } });
  const orders = async () => (await suite.db.query<{ n: number }>('SELECT count(*)::int AS n FROM orders'))[0].n;

  it('answers a body that is not JSON with 400 bad_request and records nothing', async () => {
    // Sent as bytes: axios would otherwise turn a string that is not JSON into a JSON string.
    const raw = { headers: { 'content-type': 'application/json' }, transformRequest: [(d: unknown) => d] };
    const r = await suite.app.http.post('/internal/orders', '{"shop_order_no": "x", ', raw);
    expect(r.status).toBe(400);
    // (CONTRACT §5: `fields` for bad_request, here naming the body)
    expect(r.data).toEqual({
      ok: false,
      error_code: 'bad_request',
      error_message: expect.stringMatching(/not valid JSON/),
      fields: { body: [expect.stringMatching(/not valid JSON/)] },
    });
    // A JSON value that is not an object is refused too.
    const scalar = await suite.app.http.post('/internal/orders', '"just a string"', raw);
    expect(scalar.status).toBe(400);
    expect(scalar.data).toMatchObject({ ok: false, error_code: 'bad_request', fields: expect.any(Object) });
    expect(await orders()).toBe(0);
  });

  it('every body-parse bad_request has `fields` naming the body: invalid JSON, empty JSON body; a charset changes nothing', async () => {
    const cases: Array<[string, string, string, RegExp]> = [
      ['invalid JSON', 'application/json', '{"shop_order_no": ', /not valid JSON/],
      ['invalid JSON, charset', 'application/json; charset=utf-8', 'not json', /not valid JSON/],
      ['empty JSON body', 'application/json', '', /empty/],
    ];
    for (const [what, type, body, why] of cases) {
      const r = await suite.app.http.post('/internal/orders', body, {
        headers: { 'content-type': type },
        transformRequest: [(d: unknown) => d],
      });
      expect({ what, status: r.status, body: r.data }).toEqual({
        what,
        status: 400,
        body: {
          ok: false,
          error_code: 'bad_request',
          error_message: expect.stringMatching(why),
          fields: { body: [expect.stringMatching(why)] },
        },
      });
    }
    // JSON under a charset parameter is read as JSON: here the unknown SKU refuses it
    const ok = await suite.app.http.post(
      '/internal/orders',
      JSON.stringify({ shop_order_no: 'cs-1', sku_code: 'NO-SUCH-SKU', quantity: 1 }),
      {
        headers: { 'content-type': 'Application/JSON; charset=utf-8' },
        transformRequest: [(d: unknown) => d],
      },
    );
    expect([ok.status, ok.data.error_code]).toEqual([404, 'sku_not_found']);
    expect(await orders()).toBe(0);
  });

  it('answers a body of another content type on /internal/* with 400 bad_request naming the body (not 415), after the 413', async () => {
    const xml = '<order><shop_order_no>ct-1</shop_order_no></order>';
    const form = new FormData();
    form.append('shop_order_no', 'ct-2');
    const cases: Array<[string, Record<string, string>, unknown]> = [
      ['application/xml', { 'content-type': 'application/xml' }, xml],
      ['application/octet-stream', { 'content-type': 'application/octet-stream' }, Buffer.from([0, 1, 2, 255])],
      ['multipart/form-data', {}, form],
      // JSON bytes under another media type are not a JSON body either
      [
        'application/vnd.api+json',
        { 'content-type': 'application/vnd.api+json' },
        JSON.stringify({ shop_order_no: 'ct-3', sku_code: 'x', quantity: 1 }),
      ],
      ['text/plain', { 'content-type': 'text/plain' }, JSON.stringify({ shop_order_no: 'ct-4', sku_code: 'x', quantity: 1 })],
      [
        'application/x-www-form-urlencoded',
        { 'content-type': 'application/x-www-form-urlencoded' },
        'shop_order_no=ct-5&sku_code=x&quantity=1',
      ],
    ];
    for (const [what, headers, body] of cases) {
      const r = await suite.app.http.post('/internal/orders', body, {
        headers,
        transformRequest: what === 'multipart/form-data' ? undefined : [(d: unknown) => d],
      });
      expect({ what, status: r.status, body: r.data }).toEqual({
        what,
        status: 400,
        body: {
          ok: false,
          error_code: 'bad_request',
          error_message: expect.stringMatching(/not JSON/),
          fields: { body: [expect.stringMatching(/not JSON/)] },
        },
      });
    }
    // on every route that takes a body
    for (const [method, path] of [
      ['post', '/internal/catalog/sync'],
      ['put', '/internal/pricing/rules'],
      ['post', '/internal/orders/NO-SUCH/cancel'],
    ] as const) {
      const r = await suite.app.http.request({
        method,
        url: path,
        data: xml,
        headers: { 'content-type': 'application/xml' },
        transformRequest: [(d: unknown) => d],
      });
      expect({ path, status: r.status, code: r.data.error_code, fields: r.data.fields }).toEqual({
        path,
        status: 400,
        code: 'bad_request',
        fields: { body: [expect.any(String)] },
      });
    }
    // sent as written: a body without a content-type, and a content-type that cannot be read
    const u = new URL(suite.app.url);
    const raw = (headers: Record<string, string>, body: string) =>
      new Promise<{ status: number; body: Record<string, unknown> }>((resolve, reject) => {
        const req = http.request(
          {
            host: u.hostname,
            port: u.port,
            path: '/internal/orders',
            method: 'POST',
            headers: { authorization: `Bearer ${suite.app.config.internalApiToken}`, ...headers },
          },
          (res) => {
            let b = '';
            res.on('data', (c: Buffer) => (b += c.toString()));
            res.on('end', () => resolve({ status: res.statusCode ?? 0, body: JSON.parse(b) as Record<string, unknown> }));
          },
        );
        req.on('error', reject);
        req.end(body);
      });
    for (const [what, headers] of [
      ['no content-type', {}],
      ['an unreadable content-type', { 'content-type': 'not a media type' }],
    ] as const) {
      const r = await raw(headers, '{"shop_order_no":"ct-6","sku_code":"x","quantity":1}');
      expect({ what, ...r }).toEqual({
        what,
        status: 400,
        body: {
          ok: false,
          error_code: 'bad_request',
          error_message: expect.any(String),
          fields: { body: [expect.stringMatching(/not JSON/)] },
        },
      });
    }
    // the body-size rule comes first, whatever the type
    const big = await suite.app.http.post('/internal/orders', `<x>${'y'.repeat(66 * 1024)}</x>`, {
      headers: { 'content-type': 'application/xml' },
      transformRequest: [(d: unknown) => d],
    });
    expect([big.status, big.data.error_code]).toEqual([413, 'payload_too_large']);
    const bigChunked = await raw({ 'content-type': 'application/octet-stream', 'transfer-encoding': 'chunked' }, 'z'.repeat(66 * 1024));
    expect([bigChunked.status, bigChunked.body.error_code]).toEqual([413, 'payload_too_large']);
    expect(await orders()).toBe(0);
  });

  it('answers a body over 64 KiB with 413 payload_too_large and records nothing', async () => {
    const body = JSON.stringify({ shop_order_no: 'big-1', sku_code: 'x', quantity: 1, manual_form_data: { note: 'y'.repeat(66 * 1024) } });
    const r = await suite.app.http.post('/internal/orders', body, { headers: { 'content-type': 'application/json' } });
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
      const r = await suite.app.http.post('/internal/orders', sized(bytes, no), raw);
      expect([bytes, r.status]).not.toEqual([bytes, 413]);
      expect(r.data).toMatchObject({ ok: false });
      expect(r.data.error_code).not.toBe('payload_too_large');
      // Read and checked as any other body: here the SKU is unknown.
      expect([bytes, r.status, r.data.error_code]).toEqual([bytes, 404, 'sku_not_found']);
    }
    const over = await suite.app.http.post('/internal/orders', sized(65_537, 'edge-over'), raw);
    expect(over.status).toBe(413);
    expect(over.data).toEqual({ ok: false, error_code: 'payload_too_large', error_message: expect.any(String) });
    expect(await orders()).toBe(0);
  });

  it('shop_order_no is [A-Za-z0-9._:-]{1,64}: 65 characters or an empty one is 400 naming it, 64 pass validation', async () => {
    const chars = 'ABCxyz019._:-';
    const ofLength = (n: number) => chars.repeat(Math.ceil(n / chars.length)).slice(0, n);
    for (const no of [ofLength(65), '']) {
      const r = await suite.app.http.post('/internal/orders', { shop_order_no: no, sku_code: 'NO-SUCH-SKU', quantity: 1 });
      expect([no, r.status]).toEqual([no, 400]);
      expect(r.data).toMatchObject({ ok: false, error_code: 'bad_request', error_message: expect.any(String) });
      expect(Object.keys((r.data as { fields: object }).fields)).toEqual(['shop_order_no']);
    }
    const longest = ofLength(64);
    expect(longest).toHaveLength(64);
    const r = await suite.app.http.post('/internal/orders', { shop_order_no: longest, sku_code: 'NO-SUCH-SKU', quantity: 1 });
    // Past validation (a 400 would name the field), the unknown SKU is what refuses it.
    expect([r.status, r.data]).toEqual([404, { ok: false, error_code: 'sku_not_found', error_message: expect.any(String) }]);
    expect(await orders()).toBe(0);
  });

  it('answers a missing or wrong token with 401 unauthorized, and an unknown route with 404 in the envelope', async () => {
    const anonymous = axios.create({ baseURL: suite.app.url, validateStatus: () => true });
    for (const headers of [{}, { authorization: 'Bearer wrong' }, { authorization: 'Basic dGVzdA==' }]) {
      const r = await anonymous.post('/internal/orders', { shop_order_no: 'a-1', sku_code: 'x', quantity: 1 }, { headers });
      expect([r.status, r.data]).toEqual([401, { ok: false, error_code: 'unauthorized', error_message: expect.any(String) }]);
    }
    expect(await orders()).toBe(0);
    const missing = await suite.app.http.get('/internal/no-such-thing');
    expect(missing.status).toBe(404);
    expect(missing.data).toMatchObject({ ok: false, error_code: 'not_found' });
  });

  it('answers an unknown path under /internal/ with 401 unauthorized without a valid token, 404 not_found with it', async () => {
    const anonymous = axios.create({ baseURL: suite.app.url, validateStatus: () => true });
    const unknown: Array<[string, string, unknown?]> = [
      ['get', '/internal/nope'],
      ['delete', '/internal/orders/X'],
      ['get', '/internal'],
      ['get', '/internal/orders/X/nothing?page=1'],
      ['post', '/internal/nope', { a: 1 }],
      ['post', '/internal/nope', '<not json/>'],
      ['patch', '/internal/orders/X', { status: 'delivered' }],
    ];
    for (const [method, url, data] of unknown) {
      for (const headers of [
        {},
        { authorization: 'Bearer wrong' },
        { authorization: `Bearer ${suite.app.config.internalApiToken}x` },
        { authorization: 'Basic dGVzdA==' },
      ]) {
        const r = await anonymous.request({
          method,
          url,
          data,
          headers: typeof data === 'string' ? { ...headers, 'content-type': 'application/xml' } : headers,
        });
        expect({ method, url, headers, status: r.status, body: r.data }).toEqual({
          method,
          url,
          headers,
          status: 401,
          body: { ok: false, error_code: 'unauthorized', error_message: expect.any(String) },
        });
      }
      const known = await suite.app.http.request({
        method,
        url,
        data,
        headers: typeof data === 'string' ? { 'content-type': 'application/xml' } : {},
      });
      expect({ method, url, status: known.status, body: known.data }).toEqual({
        method,
        url,
        status: 404,
        body: { ok: false, error_code: 'not_found', error_message: expect.any(String) },
      });
    }
    // any spelling that names an internal path (sent as written)
    const u = new URL(suite.app.url);
    const raw = (path: string, method = 'GET', headers: Record<string, string> = {}, body?: string) =>
      new Promise<number>((resolve, reject) => {
        const req = http.request({ host: u.hostname, port: u.port, path, method, headers }, (res) => {
          res.resume();
          res.on('end', () => resolve(res.statusCode ?? 0));
        });
        req.on('error', reject);
        req.end(body);
      });
    // (written under /internal/ but resolving elsewhere counts too: either reading asks for the token)
    for (const path of [
      '/%69nternal/nope',
      '//internal/nope',
      '/./internal/nope',
      '/x/../internal/nope',
      '/INTERNAL/nope',
      '/internal/../nope',
      '/internal/%2e%2e/nope',
    ]) {
      expect([path, await raw(path)]).toEqual([path, 401]);
    }
    // whatever the body, even under a content-type that cannot be read, or none
    for (const headers of [{ 'content-type': 'not a media type' }, {}] as Array<Record<string, string>>) {
      expect([headers, await raw('/internal/nope', 'POST', headers, '<x/>')]).toEqual([headers, 401]);
      expect([
        headers,
        await raw('/internal/nope', 'POST', { ...headers, authorization: `Bearer ${suite.app.config.internalApiToken}` }, '<x/>'),
      ]).toEqual([headers, 404]);
    }
    // an unknown path elsewhere is a plain 404, token or not
    const elsewhere = await anonymous.get('/no-such-thing');
    expect([elsewhere.status, elsewhere.data.error_code]).toEqual([404, 'not_found']);
    // an oversized body is 413 first, as on any route
    const big = await anonymous.post('/internal/nope', 'y'.repeat(70 * 1024), { headers: { 'content-type': 'application/json' } });
    expect([big.status, big.data.error_code]).toEqual([413, 'payload_too_large']);
    expect(await orders()).toBe(0);
  });

  it('needs the token for every spelling of a path to an internal route (percent-encoded, doubled slashes, dot segments)', async () => {
    // sent as written: an HTTP client would normalise some of these
    const raw = (path: string, method = 'GET', body?: string) =>
      new Promise<{ status: number; body: string }>((resolve, reject) => {
        const u = new URL(suite.app.url);
        const req = http.request(
          { host: u.hostname, port: u.port, path, method, headers: body ? { 'content-type': 'application/json' } : {} },
          (res) => {
            let b = '';
            res.on('data', (c: Buffer) => (b += c.toString()));
            res.on('end', () => resolve({ status: res.statusCode ?? 0, body: b }));
          },
        );
        req.on('error', reject);
        req.end(body);
      });
    for (const path of [
      '/%69nternal/orders',
      '/%69nternal/pricing/rules',
      '/internal%2Forders',
      '//internal/orders',
      '/./internal/orders',
      '/%2e/internal/orders',
      '/INTERNAL/orders',
      '/internal/orders/',
    ]) {
      // whether the router matches the spelling to a route (401 from the guard) or not (401 from the
      // not-found answer, which asks for the token on an internal path first), the answer is the same
      const r = await raw(path);
      expect([path, r.status, JSON.parse(r.body)]).toEqual([
        path,
        401,
        { ok: false, error_code: 'unauthorized', error_message: expect.any(String) },
      ]);
    }
    const placed = await raw('/%69nternal/orders', 'POST', JSON.stringify({ shop_order_no: 'enc-1', sku_code: 'x', quantity: 1 }));
    expect([placed.status, JSON.parse(placed.body)]).toEqual([
      401,
      { ok: false, error_code: 'unauthorized', error_message: expect.any(String) },
    ]);
    expect(await orders()).toBe(0);
  });

  it('names every field at fault in bad_request', async () => {
    const r = await suite.app.http.post('/internal/orders', {
      shop_order_no: 'bad no!',
      sku_code: '',
      quantity: 0,
      max_unit_cost: 1.5,
      extra: true,
    });
    expect(r.status).toBe(400);
    expect(r.data.error_code).toBe('bad_request');
    expect(Object.keys(r.data.fields).sort()).toEqual(['extra', 'max_unit_cost', 'quantity', 'shop_order_no', 'sku_code']);
    expect(await orders()).toBe(0);
  });
});
