/**
 * Logs: one JSON line per request with a correlation id (the caller's sane `x-request-id`, else a new
 * one, echoed in the response), the order number and trace id where the request names them, and
 * never a secret: markers are planted (the internal token in Authorization, the upstream key and
 * secret, the shop webhook secret, the payload key, a signature header, an item code in a callback
 * body, the items of a delivered order) and the whole log output of the instance is searched.
 */
import { createServer, type Server } from 'node:http';
import { Logger } from '@nestjs/common';
import axios from 'axios';
import { DEFAULT_SIGNATURE_TEMPLATE, signedHeaders } from '../src/signing/signing.js';
import { useAppSuite } from './support/app-suite.js';
import { waitFor } from './support/wait.js';

const TOKEN = 'tok-MARKER-5e1f0c7a9b';
const WRONG_TOKEN = 'wrongtok-MARKER-83d2';
const UPSTREAM_KEY = 'upkey-MARKER-44aa';
const UPSTREAM_SECRET = 'upsecret-MARKER-91b2';
const SHOP_SECRET = 'shopsecret-MARKER-c3d4';
const PAYLOAD_KEY = Buffer.from('payload-key-MARKER-0123456789abc').toString('base64');
const ITEM_CODE = 'ITEMCODE-MARKER-7a7a-XK42';
const FORM_SECRET = 'formsecret-MARKER-6c6c';

type Line = Record<string, unknown>;

describe('logs', () => {
  let shop: Server;
  // A shop that always fails, so that the webhook sender logs its retries (it opens before the suite
  // and closes after it).
  beforeAll(async () => {
    shop = createServer((req, res) => {
      req.resume();
      req.on('end', () => res.writeHead(500).end());
    });
    await new Promise<void>((r) => shop.listen(0, '127.0.0.1', r));
  });
  const t = useAppSuite({
    sandbox: { apiKey: UPSTREAM_KEY, apiSecret: UPSTREAM_SECRET },
    env: () => ({
      LOG_LEVEL: 'debug',
      UPSTREAM_API_KEY: UPSTREAM_KEY,
      UPSTREAM_API_SECRET: UPSTREAM_SECRET,
      INTERNAL_API_TOKEN: TOKEN,
      PAYLOAD_ENCRYPTION_KEY: PAYLOAD_KEY,
      SHOP_WEBHOOK_URL: `http://127.0.0.1:${(shop.address() as { port: number }).port}/hook`,
      SHOP_WEBHOOK_SECRET: SHOP_SECRET,
      CALLBACK_SIGNATURE_PATH: '/callbacks/upstream',
      ORDER_POLL_BASE_MS: '100',
    }),
    logs: true,
  });
  afterAll(async () => {
    shop.closeAllConnections();
    await new Promise((r) => shop.close(r));
  });
  const lines = (): Line[] => t.app.logLines();

  it("writes one JSON line per request, with the caller's request id echoed, and the order number from the path", async () => {
    const res = await t.app.http.get('/internal/orders/SO-LOG-1', { headers: { 'x-request-id': 'req-LOG-0001' } });
    expect(res.headers['x-request-id']).toBe('req-LOG-0001');
    const mine = lines().filter((l) => l.request_id === 'req-LOG-0001' && l.path !== undefined);
    expect(mine).toHaveLength(1);
    expect(mine[0]).toMatchObject({
      level: 'info',
      service: 'upstream-relay',
      method: 'GET',
      path: '/internal/orders/SO-LOG-1',
      route: '/internal/orders/:shop_order_no',
      status: res.status,
      shop_order_no: 'SO-LOG-1',
      duration_ms: expect.any(Number),
    });
  });

  it('takes the order number and trace id from a JSON body, and replaces an insane request id', async () => {
    const res = await t.app.http.post(
      '/internal/orders',
      {
        shop_order_no: 'SO-LOG-2',
        sku_code: 'NO-SUCH-SKU',
        quantity: 1,
        trace_id: 'trace-LOG-2',
        manual_form_data: { password: FORM_SECRET },
      },
      { headers: { 'x-request-id': 'has spaces; and <tags>' } },
    );
    const id = res.headers['x-request-id'] as string;
    expect(id).toMatch(/^[0-9a-f-]{36}$/);
    const mine = lines().filter((l) => l.request_id === id && l.path !== undefined);
    expect(mine).toHaveLength(1);
    expect(mine[0]).toMatchObject({
      method: 'POST',
      path: '/internal/orders',
      shop_order_no: 'SO-LOG-2',
      trace_id: 'trace-LOG-2',
      status: res.status,
    });
    expect(lines().some((l) => l.request_id === 'has spaces; and <tags>')).toBe(false);
  });

  it('carries the request id on the lines its handling writes with the request at hand (a refused callback)', async () => {
    const body = JSON.stringify({ event: 'order.status_changed', order_id: 1, status: 'paid' });
    const res = await axios.post(`${t.app.url}/callbacks/upstream`, body, {
      headers: {
        'content-type': 'application/json',
        'x-request-id': 'req-LOG-cb',
        'Service-Api-Key': UPSTREAM_KEY,
        'Service-Timestamp': '1',
        'Service-Signature': 'ab'.repeat(32),
      },
      validateStatus: () => true,
    });
    expect(res.status).toBe(401);
    const during = lines().filter((l) => l.request_id === 'req-LOG-cb' && l.path === undefined);
    expect(during.length).toBeGreaterThan(0);
  });

  it('never logs a token, an API key or secret, a signature, or a delivered item', async () => {
    // A wrong token, then the right one in Authorization.
    await axios.get(`${t.app.url}/internal/webhooks/deliveries`, {
      headers: { authorization: `Bearer ${WRONG_TOKEN}` },
      validateStatus: () => true,
    });
    await t.app.http.get('/internal/webhooks/deliveries');
    // A correctly signed callback whose body carries an item code (and a forged one).
    const cbBody = JSON.stringify({
      event: 'order.fulfilled',
      order_id: 987654,
      order_no: 'UP-LOG-1',
      downstream_order_no: 'SO-LOG-CB',
      status: 'delivered',
      fulfillment: { type: 'auto', status: 'delivered', payload: `${ITEM_CODE}\r\n${ITEM_CODE}-2`, delivered_at: new Date().toISOString() },
      timestamp: Math.floor(Date.now() / 1000),
    });
    const signed = signedHeaders('Service', UPSTREAM_SECRET, DEFAULT_SIGNATURE_TEMPLATE, {
      apiKey: UPSTREAM_KEY,
      timestamp: Math.floor(Date.now() / 1000),
      method: 'POST',
      path: '/callbacks/upstream',
      body: cbBody,
    });
    const cb = await axios.post(`${t.app.url}/callbacks/upstream`, cbBody, {
      headers: { 'content-type': 'application/json', ...signed },
      validateStatus: () => true,
    });
    expect(cb.status).toBe(200);
    const forged = await axios.post(`${t.app.url}/callbacks/upstream`, cbBody, {
      headers: { 'content-type': 'application/json', ...signed, 'Service-Signature': 'cd'.repeat(32) },
      validateStatus: () => true,
    });
    expect(forged.status).toBe(401);
    // What the code itself might log: objects with secrets, headers and items.
    new Logger('test').warn({
      msg: 'a careless log line',
      secret: SHOP_SECRET,
      token: TOKEN,
      payload: ITEM_CODE,
      items: [ITEM_CODE],
      headers: { authorization: `Bearer ${TOKEN}`, 'service-signature': signed['Service-Signature'], 'x-other': 'kept' },
      request: { api_key: UPSTREAM_KEY, apiSecret: UPSTREAM_SECRET },
    });
    // A real order, delivered by the upstream: its items are in the API answer, never in the log.
    const sync = await t.app.http.post('/internal/catalog/sync', { mode: 'full' });
    expect(sync.status).toBe(202);
    const deadline = Date.now() + 30_000;
    while (
      (await t.app.http.get(`/internal/catalog/sync-runs/${sync.data.run_id}`)).data.run?.status === 'running' &&
      Date.now() < deadline
    ) {
      await new Promise((r) => setTimeout(r, 50));
    }
    const skus = (await t.app.http.get('/internal/catalog/skus', { params: { available: true, page_size: 500 } })).data.items as Array<{
      sku_code: string;
      fulfillment_type: string;
    }>;
    const auto = skus.find((s) => s.fulfillment_type === 'auto')!;
    const placed = await t.app.http.post('/internal/orders', {
      shop_order_no: 'SO-LOG-ORDER',
      sku_code: auto.sku_code,
      quantity: 2,
      trace_id: 'trace-LOG-ORDER',
    });
    expect([201, 202]).toContain(placed.status);
    let items: string[] = [];
    while (Date.now() < deadline + 30_000) {
      const o = (await t.app.http.get('/internal/orders/SO-LOG-ORDER')).data.order as { items: string[] };
      if (o.items.length > 0) {
        items = o.items;
        break;
      }
      await new Promise((r) => setTimeout(r, 100));
    }
    expect(items.length).toBeGreaterThan(0);
    // The webhook sender's failed deliveries to the shop (their lines, with the request's headers
    // and body at hand, are searched too).
    await waitFor(
      () => lines().filter((l) => typeof l.msg === 'string' && /^webhook \S+ #\d+ failed \(HTTP 500\)/.test(l.msg)).length,
      (n) => n >= 2,
      'two failed webhook deliveries in the log',
    );

    const all = t.app.logOutput();
    expect(lines().length).toBeGreaterThan(20);
    expect(lines().some((l) => l.shop_order_no === 'SO-LOG-ORDER' && l.trace_id === 'trace-LOG-ORDER')).toBe(true);
    expect(all).toContain('a careless log line');
    expect(all).toContain('"x-other":"kept"');
    for (const marker of [
      TOKEN,
      WRONG_TOKEN,
      UPSTREAM_KEY,
      UPSTREAM_SECRET,
      SHOP_SECRET,
      PAYLOAD_KEY,
      FORM_SECRET,
      ITEM_CODE,
      signed['Service-Signature'],
      'cd'.repeat(32),
      'ab'.repeat(32),
      ...items,
    ]) {
      expect({ marker, found: all.includes(marker) }).toEqual({ marker, found: false });
    }
  });
});
