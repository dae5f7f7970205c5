/**
 * The sandbox upstream over real HTTP: authentication, catalog reads, orders and their lifecycle.
 */
import { signedRequest, type RawResponse, type SignedRequestOptions } from './sandbox-request.js';
import { SandboxServer } from './sandbox.server.js';
import type {
  SandboxCategory,
  SandboxCreatedOrder,
  SandboxErrorBody,
  SandboxOrderDetail,
  SandboxPing,
  SandboxProduct,
  SandboxProductPage,
  SandboxRequestEvent,
} from './sandbox.types.js';

function lines(payload: string): string[] {
  return payload.split(/\r?\n/).filter((l) => l.trim() !== '');
}

describe('sandbox upstream API', () => {
  let sandbox: SandboxServer;
  const api = (method: string, path: string, opts?: SignedRequestOptions): Promise<RawResponse> =>
    signedRequest(sandbox.credentials, method, path, opts);
  const body = <T>(r: RawResponse): T => r.json as T;
  const error = (r: RawResponse): SandboxErrorBody => r.json as SandboxErrorBody;

  async function create(order: Record<string, unknown>): Promise<RawResponse> {
    return api('POST', '/orders', { body: order });
  }

  /** An active auto SKU with unlimited stock. */
  function autoSku(skip = 0): { id: number; code: string; price: string } {
    const f = sandbox.catalog.findSku({ fulfillmentType: 'auto', stockStatus: 'unlimited', skip });
    if (!f) throw new Error('no auto SKU');
    return { id: f.sku.id, code: f.sku.sku_code, price: f.sku.price_amount };
  }

  beforeAll(async () => {
    sandbox = new SandboxServer({
      catalog: { products: 137, seed: 3 },
      timetable: { paidMs: 20, fulfillingMs: 40, deliveredMs: 60 },
      allowPrivateCallbackUrls: true,
    });
    await sandbox.start();
  });
  afterAll(() => sandbox.stop());
  beforeEach(() => sandbox.reset());

  describe('authentication', () => {
    it('answers a signed ping with the account', async () => {
      const r = await api('POST', '/ping');
      expect(r.status).toBe(200);
      expect(body<SandboxPing>(r)).toMatchObject({ ok: true, protocol_version: '1.0', balance: '1000000.00', currency: 'CNY', user_id: 1 });
    });

    // Dujiao-Next's codes and statuses (internal/router/upstream_auth.go): checked in the order headers,
    // timestamp, API key, signature
    it.each([
      ['no headers', { unsigned: true }, 401, 'missing_auth_headers'],
      ['no signature header', { headers: { 'Service-Signature': null } }, 401, 'missing_auth_headers'],
      ['an empty API key header', { headers: { 'Service-Api-Key': '' } }, 401, 'missing_auth_headers'],
      ['a timestamp that is not a number', { headers: { 'Service-Timestamp': 'yesterday' } }, 401, 'invalid_timestamp'],
      ['a timestamp 2 minutes ahead', { timestampOffsetS: 120 }, 401, 'timestamp_expired'],
      ['a timestamp 2 minutes behind', { timestampOffsetS: -120 }, 401, 'timestamp_expired'],
      ['a wrong API key', { apiKey: 'someone-else' }, 403, 'invalid_api_key'],
      ['a wrong secret', { secret: 'not-the-secret' }, 401, 'invalid_signature'],
      ['a malformed signature', { signature: 'xyz' }, 401, 'invalid_signature'],
      [
        'the right signature in upper case (upstream-api.md §5: lower-case hex)',
        { signature: (s: string) => s.toUpperCase() },
        401,
        'invalid_signature',
      ],
    ] as Array<[string, SignedRequestOptions, number, string]>)('refuses %s: %i %s', async (_name, opts, status, code) => {
      const r = await api('POST', '/ping', opts);
      expect(r.status).toBe(status);
      expect(error(r)).toEqual({ ok: false, error_code: code, error_message: expect.any(String) });
    });

    it('judges the timestamp before the API key, and the API key before the signature', async () => {
      const wrongKeyLate = await api('POST', '/ping', { apiKey: 'someone-else', timestampOffsetS: -120 });
      expect([wrongKeyLate.status, error(wrongKeyLate).error_code]).toEqual([401, 'timestamp_expired']);
      const wrongKeyGarbled = await api('POST', '/ping', { apiKey: 'someone-else', headers: { 'Service-Timestamp': '12ab' } });
      expect([wrongKeyGarbled.status, error(wrongKeyGarbled).error_code]).toEqual([401, 'invalid_timestamp']);
      const wrongKeyBadSignature = await api('POST', '/ping', { apiKey: 'someone-else', signature: 'xyz' });
      expect([wrongKeyBadSignature.status, error(wrongKeyBadSignature).error_code]).toEqual([403, 'invalid_api_key']);
      expect(sandbox.stats.requests.ping).toBe(3);
    });

    it('tolerates a skew within 60 seconds', async () => {
      expect((await api('POST', '/ping', { timestampOffsetS: 45 })).status).toBe(200);
      expect((await api('POST', '/ping', { timestampOffsetS: -45 })).status).toBe(200);
    });

    it('signs the raw body: the signature of another body is refused', async () => {
      const sku = autoSku();
      const good = await api('POST', '/orders', { body: { sku_id: sku.id, quantity: 1 } });
      expect(good.status).toBe(200);
      const { signedHeaders } = await import('../signing/signing.js');
      const c = sandbox.credentials;
      const ts = Math.floor(Date.now() / 1000);
      const sig = signedHeaders(c.headerPrefix, c.apiSecret, c.signatureTemplate, {
        apiKey: c.apiKey,
        timestamp: ts,
        method: 'POST',
        path: '/api/v1/upstream/orders',
        body: JSON.stringify({ sku_id: sku.id, quantity: 1 }),
      })[`${c.headerPrefix}-Signature`];
      const r = await api('POST', '/orders', { body: { sku_id: sku.id, quantity: 2 }, signature: sig });
      expect(r.status).toBe(401);
      expect(error(r).error_code).toBe('invalid_signature');
      expect(sandbox.orders()).toHaveLength(1);
    });

    it('uses the Dujiao-Next header prefix under that profile', async () => {
      const dj = new SandboxServer({ profile: 'dujiao-next' });
      await dj.start();
      try {
        const own = await signedRequest(dj.credentials, 'POST', '/ping');
        expect(own.status).toBe(200);
        expect(dj.credentials.headerPrefix).toBe('Dujiao-Next');
        const wrongPrefix = await signedRequest({ ...dj.credentials, headerPrefix: 'Service' }, 'POST', '/ping');
        expect(wrongPrefix.status).toBe(401);
        expect(error(wrongPrefix).error_code).toBe('missing_auth_headers');
      } finally {
        await dj.stop();
      }
    });
  });

  describe('catalog', () => {
    it('lists two levels of enabled categories', async () => {
      const r = await api('GET', '/categories');
      expect(r.status).toBe(200);
      const cats = body<{ ok: true; categories: SandboxCategory[] }>(r).categories;
      const top = cats.filter((c) => c.parent_id === 0);
      expect(top.length).toBeGreaterThan(0);
      expect(cats.filter((c) => c.parent_id !== 0).every((c) => top.some((t) => t.id === c.parent_id))).toBe(true);
      expect(
        cats.every((c) => typeof c.sort_order === 'number' && typeof c.name['zh-CN'] === 'string' && typeof c.name.en === 'string'),
      ).toBe(true);
    });

    it('caps page_size at 50, echoes it, and the pages cover the catalog without duplicates', async () => {
      const ids: number[] = [];
      let total = -1;
      for (let page = 1; page < 10; page++) {
        const r = await api('GET', '/products', { query: { page, page_size: 100 } });
        expect(r.status).toBe(200);
        const p = body<SandboxProductPage>(r);
        expect(p.page_size).toBe(50);
        expect(p.page).toBe(page);
        total = p.total;
        ids.push(...p.items.map((i) => i.id));
        if (p.items.length === 0) break;
        expect(p.items.length).toBeLessThanOrEqual(50);
      }
      expect(total).toBe(137);
      expect(ids).toHaveLength(137);
      expect(new Set(ids).size).toBe(137);
    });

    it('defaults to page 1 of 20 and answers an empty page past the end', async () => {
      const first = body<SandboxProductPage>(await api('GET', '/products'));
      expect(first).toMatchObject({ ok: true, page: 1, page_size: 20, total: 137 });
      expect(first.items).toHaveLength(20);
      const past = body<SandboxProductPage>(await api('GET', '/products', { query: { page: 99, page_size: 50 } }));
      expect(past.items).toEqual([]);
      expect(past.total).toBe(137);
    });

    it('refuses a page or page_size below 1', async () => {
      for (const query of [{ page: 0 }, { page_size: 0 }, { page: 'x' }] as Array<Record<string, string | number>>) {
        const r = await api('GET', '/products', { query });
        expect(r.status).toBe(400);
        expect(error(r).error_code).toBe('bad_request');
      }
    });

    it('filters by the undocumented updated_after, counting only the filtered products in total', async () => {
      const all: SandboxProduct[] = sandbox.catalog.listedProducts();
      const cutoff = new Date(Math.max(...all.map((p) => Date.parse(p.updated_at)))).toISOString();
      const none = body<SandboxProductPage>(await api('GET', '/products', { query: { updated_after: cutoff } }));
      expect(none.total).toBe(0);

      const touched = sandbox.catalog.touchProducts(3);
      const code = sandbox.catalog.getProduct(all[10].id)!.skus[0].sku_code;
      sandbox.catalog.setPrice(code, '1.23');
      const r = body<SandboxProductPage>(await api('GET', '/products', { query: { updated_after: cutoff, page_size: 50 } }));
      expect(r.total).toBe(new Set([...touched, all[10].id]).size);
      expect(r.items.map((p) => p.id).sort((a, b) => a - b)).toEqual([...new Set([...touched, all[10].id])].sort((a, b) => a - b));

      // An offset form and an unencoded '+' are understood; nonsense is refused.
      const offset = new Date(Date.parse(cutoff)).toISOString().replace('Z', '+00:00');
      expect(body<SandboxProductPage>(await api('GET', '/products', { query: { updated_after: offset } })).total).toBe(r.total);
      const bad = await api('GET', '/products', { query: { updated_after: 'yesterday' } });
      expect(bad.status).toBe(400);
    });

    it('reads one product; 404 product_not_found, 404 product_unavailable once delisted', async () => {
      const listed = sandbox.catalog.listedProducts()[3];
      const r = await api('GET', `/products/${listed.id}`);
      expect(r.status).toBe(200);
      const product = body<{ ok: true; product: SandboxProduct }>(r).product;
      expect(product).toEqual(listed);
      expect(product.skus[0].price_amount).toMatch(/^\d+\.\d{2}$/);

      const missing = await api('GET', '/products/999999');
      expect(missing.status).toBe(404);
      expect(error(missing).error_code).toBe('product_not_found');

      sandbox.catalog.delistProduct(listed.id);
      const gone = await api('GET', `/products/${listed.id}`);
      expect(gone.status).toBe(404);
      expect(error(gone).error_code).toBe('product_unavailable');
      expect(body<SandboxProductPage>(await api('GET', '/products')).total).toBe(136);
    });
  });

  describe('orders', () => {
    it('creates an order: amount = unit price × quantity exactly, wallet debited, finite stock taken', async () => {
      const f = sandbox.catalog.findSku({ fulfillmentType: 'auto', stockStatus: 'in_stock' })!;
      sandbox.catalog.setPrice(f.sku.sku_code, '0.10');
      sandbox.catalog.setStock(f.sku.sku_code, 'in_stock', 50);
      const r = await create({ sku_id: f.sku.id, quantity: 3, downstream_order_no: 'shop-1', trace_id: 't-1' });
      expect(r.status).toBe(200);
      const created = body<SandboxCreatedOrder>(r);
      expect(created).toEqual({
        ok: true,
        order_id: expect.any(Number),
        order_no: expect.stringMatching(/^DJ\d+$/),
        status: 'pending_payment',
        amount: '0.30',
        currency: 'CNY',
      });
      expect(sandbox.walletBalance()).toBe('999999.70');
      expect(sandbox.catalog.getSku(f.sku.sku_code)!.sku.stock_quantity).toBe(47);

      const detail = body<SandboxOrderDetail>(await api('GET', `/orders/${created.order_id}`));
      expect(detail).toMatchObject({
        ok: true,
        order_id: created.order_id,
        order_no: created.order_no,
        amount: '0.30',
        currency: 'CNY',
        items: [
          { product_id: f.product.id, sku_id: f.sku.id, quantity: 3, unit_price: '0.10', total_price: '0.30', fulfillment_type: 'auto' },
        ],
      });
      // upstream-api.md §2.7 and Dujiao-Next's GetOrder: no downstream_order_no (option orderDetailShowsDownstreamNo)
      expect(detail).not.toHaveProperty('downstream_order_no');
      expect(sandbox.stats.createsReceived).toBe(1);
      expect(sandbox.stats.createsExecuted).toBe(1);
    });

    it('refuses invalid orders with the codes of the spec, recording nothing', async () => {
      const sku = autoSku();
      const inactive = sandbox.catalog.findSku({ active: false })!;
      const outOfStock = sandbox.catalog.findSku({ stockStatus: 'out_of_stock' })!;
      const low = sandbox.catalog.findSku({ fulfillmentType: 'auto', stockStatus: 'low_stock' })!;
      const manual = sandbox.catalog.findSku({ fulfillmentType: 'manual' })!;
      const used = new Set(
        [sku, inactive, outOfStock, low, manual].map((x) => ('product' in x ? x.product.id : sandbox.catalog.getSkuById(x.id)!.product.id)),
      );
      let skip = 1;
      while (used.has(sandbox.catalog.getSkuById(autoSku(skip).id)!.product.id)) skip++;
      const delisted = autoSku(skip);
      sandbox.catalog.delistProduct(sandbox.catalog.getSkuById(delisted.id)!.product.id);

      const cases: Array<[unknown, number, string]> = [
        ['not json', 400, 'bad_request'],
        [{ quantity: 1 }, 400, 'bad_request'],
        [{ sku_id: sku.id, quantity: 0 }, 400, 'bad_request'],
        [{ sku_id: sku.id, quantity: 1.5 }, 400, 'bad_request'],
        [{ sku_id: '12', quantity: 1 }, 400, 'bad_request'],
        [{ sku_id: 99_999_999, quantity: 1 }, 400, 'sku_unavailable'],
        [{ sku_id: inactive.sku.id, quantity: 1 }, 400, 'sku_unavailable'],
        [{ sku_id: delisted.id, quantity: 1 }, 400, 'product_unavailable'],
        [{ sku_id: outOfStock.sku.id, quantity: 1, manual_form_data: {} }, 409, 'insufficient_stock'],
        [{ sku_id: low.sku.id, quantity: low.sku.stock_quantity + 1 }, 409, 'insufficient_stock'],
        [{ sku_id: manual.sku.id, quantity: 1 }, 400, 'bad_request'],
        [{ sku_id: sku.id, quantity: 1, callback_url: 'ftp://example.com/x' }, 400, 'invalid_callback_url'],
        [{ sku_id: sku.id, quantity: 1, callback_url: `https://shop.example.com/${'x'.repeat(2048)}` }, 400, 'invalid_callback_url'],
        [{ sku_id: sku.id, quantity: 1, callback_url: '' }, 400, 'invalid_callback_url'],
        [{ sku_id: sku.id, quantity: 1, callback_url: 42 }, 400, 'bad_request'],
      ];
      for (const [b, status, code] of cases) {
        const r = await create(b as Record<string, unknown>);
        expect({ body: b, status: r.status, code: error(r).error_code, ok: error(r).ok }).toEqual({ body: b, status, code, ok: false });
      }
      sandbox.setWalletBalance('1.00');
      const poor = await create({ sku_id: sku.id, quantity: 1000 });
      expect(poor.status).toBe(402);
      expect(error(poor).error_code).toBe('insufficient_balance');
      expect(sandbox.orders()).toEqual([]);
      expect(sandbox.walletBalance()).toBe('1.00');
    });

    it("validates manual_form_data against the product's manual_form_schema (required fields present and not empty)", async () => {
      // the seeded schema: `account` required, `region` optional
      const manual = sandbox.catalog.findSku({ fulfillmentType: 'manual', stockStatus: 'unlimited' })!;
      expect(manual.product.manual_form_schema).toMatchObject({
        fields: [
          { key: 'account', required: true },
          { key: 'region', required: false },
        ],
      });
      for (const data of [{}, { region: 'CN' }, { account: '' }, { account: null }, { Account: 'x' }]) {
        const r = await create({ sku_id: manual.sku.id, quantity: 1, manual_form_data: data });
        expect({ data, status: r.status, body: r.json }).toEqual({
          data,
          status: 400,
          body: { ok: false, error_code: 'bad_request', error_message: expect.stringMatching(/^manual form data is invalid: .*account/) },
        });
      }
      expect(sandbox.orders()).toEqual([]);
      expect(sandbox.stats.createsExecuted).toBe(0);
      for (const data of [{ account: 'player-1' }, { account: 'player-2', region: '' }, { account: 0 }]) {
        const r = await create({ sku_id: manual.sku.id, quantity: 1, manual_form_data: data });
        expect({ data, status: r.status }).toEqual({ data, status: 200 });
      }
      // a schema that requires nothing (or no schema at all) takes any object
      for (const schema of [{ fields: [{ key: 'note', type: 'text', required: false }] }, null]) {
        const sku = sandbox.catalog.addProduct({ fulfillmentType: 'manual', manualFormSchema: schema }).skus[0];
        expect((await create({ sku_id: sku.id, quantity: 1, manual_form_data: {} })).status).toBe(200);
        expect((await create({ sku_id: sku.id, quantity: 1 })).status).toBe(400); // the data itself stays required
      }
      // a two-field schema: every missing field is named
      const two = sandbox.catalog.addProduct({
        fulfillmentType: 'manual',
        manualFormSchema: {
          fields: [
            { key: 'account', required: true },
            { key: 'server', required: true },
          ],
        },
      }).skus[0];
      const both = await create({ sku_id: two.id, quantity: 1, manual_form_data: { server: '' } });
      expect(both.status).toBe(400);
      expect(error(both).error_message).toMatch(/account, server/);
      // an auto product does not look at manual_form_data
      expect((await create({ sku_id: autoSku().id, quantity: 1, manual_form_data: {} })).status).toBe(200);
    });

    it('validates manual_form_data under the dujiao-next profile too', async () => {
      const dj = new SandboxServer({ profile: 'dujiao-next', catalog: { products: 20 } });
      await dj.start();
      try {
        const manual = dj.catalog.findSku({ fulfillmentType: 'manual', stockStatus: 'unlimited' })!;
        const refused = await signedRequest(dj.credentials, 'POST', '/orders', {
          body: { sku_id: manual.sku.id, quantity: 1, manual_form_data: { account: '' } },
        });
        expect([refused.status, error(refused).error_code]).toEqual([400, 'bad_request']);
        expect(error(refused).error_message).toMatch(/^manual form data is invalid/);
        expect(dj.orders()).toEqual([]);
        const ok = await signedRequest(dj.credentials, 'POST', '/orders', {
          body: { sku_id: manual.sku.id, quantity: 1, manual_form_data: { account: 'a' } },
        });
        expect(ok.status).toBe(200);
      } finally {
        await dj.stop();
      }
    });

    it('refuses a callback_url on a loopback or private address unless allowed', async () => {
      const strict = new SandboxServer({ catalog: { products: 10 } });
      await strict.start();
      try {
        const sku = strict.catalog.findSku({ fulfillmentType: 'auto' })!.sku.id;
        for (const url of [
          'http://127.0.0.1:9/cb',
          'http://localhost/cb',
          'http://10.1.2.3/cb',
          'http://192.168.0.5/cb',
          'http://[::1]/cb',
        ]) {
          const r = await signedRequest(strict.credentials, 'POST', '/orders', { body: { sku_id: sku, quantity: 1, callback_url: url } });
          expect({ url, status: r.status, code: error(r).error_code }).toEqual({ url, status: 400, code: 'invalid_callback_url' });
        }
        const ok = await signedRequest(strict.credentials, 'POST', '/orders', {
          body: { sku_id: sku, quantity: 1, callback_url: 'https://shop.example.com/cb' },
        });
        expect(ok.status).toBe(200);
      } finally {
        await strict.stop();
      }
    });

    it('answers 404 order_not_found for an unknown order', async () => {
      const r = await api('GET', '/orders/424242');
      expect(r.status).toBe(404);
      expect(error(r).error_code).toBe('order_not_found');
      const c = await api('POST', '/orders/424242/cancel');
      expect(c.status).toBe(404);
      expect(error(c).error_code).toBe('order_not_found');
    });

    it('deduplicates downstream_order_no: the same number returns the earlier order, charged once', async () => {
      const sku = autoSku();
      const first = body<SandboxCreatedOrder>(await create({ sku_id: sku.id, quantity: 2, downstream_order_no: 'A-1' }));
      const balance = sandbox.walletBalance();
      const again = await create({ sku_id: sku.id, quantity: 2, downstream_order_no: 'A-1' });
      expect(again.status).toBe(200);
      expect(body<SandboxCreatedOrder>(again)).toMatchObject({
        ok: true,
        order_id: first.order_id,
        order_no: first.order_no,
        amount: first.amount,
      });
      expect(sandbox.walletBalance()).toBe(balance);
      expect(sandbox.orders()).toHaveLength(1);
      expect(sandbox.stats).toMatchObject({ createsReceived: 2, createsExecuted: 1 });
    });

    it('after payment_failed the earlier order exists and is canceled, and the same number returns it', async () => {
      const sku = autoSku();
      sandbox.faults.set({ rules: [{ operation: 'createOrder', kind: 'payment_failed', times: 1 }] });
      const failed = await create({ sku_id: sku.id, quantity: 1, downstream_order_no: 'PF-1' });
      expect(failed.status).toBe(200);
      expect(error(failed)).toMatchObject({ ok: false, error_code: 'payment_failed' });
      expect(sandbox.walletBalance()).toBe('1000000.00');
      const [order] = sandbox.orders();
      expect(order).toMatchObject({ downstream_order_no: 'PF-1', status: 'canceled' });

      const again = await create({ sku_id: sku.id, quantity: 1, downstream_order_no: 'PF-1' });
      expect(again.status).toBe(200);
      expect(body<SandboxCreatedOrder>(again)).toMatchObject({ ok: true, order_id: order.id, status: 'canceled' });
      expect(sandbox.orders()).toHaveLength(1);
      expect(sandbox.walletBalance()).toBe('1000000.00');
      const detail = body<SandboxOrderDetail>(await api('GET', `/orders/${order.id}`));
      expect(detail.status).toBe('canceled');
    });

    it('lets two concurrent creates with one number both create (check-then-insert under latency)', async () => {
      const sku = autoSku();
      sandbox.faults.set({ latencyMs: 300 });
      const [a, b] = await Promise.all([
        create({ sku_id: sku.id, quantity: 1, downstream_order_no: 'RACE-1' }),
        create({ sku_id: sku.id, quantity: 1, downstream_order_no: 'RACE-1' }),
      ]);
      expect([a.status, b.status]).toEqual([200, 200]);
      expect(body<SandboxCreatedOrder>(a).order_id).not.toBe(body<SandboxCreatedOrder>(b).order_id);
      expect(sandbox.orders().filter((o) => o.downstream_order_no === 'RACE-1')).toHaveLength(2);
      // A later one finds the first.
      sandbox.faults.reset();
      const later = body<SandboxCreatedOrder>(await create({ sku_id: sku.id, quantity: 1, downstream_order_no: 'RACE-1' }));
      expect(later.order_id).toBe(Math.min(body<SandboxCreatedOrder>(a).order_id, body<SandboxCreatedOrder>(b).order_id));
    });

    it('creates a new order for a repeated number when deduplication is off', async () => {
      const loose = new SandboxServer({ dedupeDownstreamOrderNo: false, catalog: { products: 10 } });
      await loose.start();
      try {
        const sku = loose.catalog.findSku({ fulfillmentType: 'auto' })!.sku.id;
        const a = await signedRequest(loose.credentials, 'POST', '/orders', {
          body: { sku_id: sku, quantity: 1, downstream_order_no: 'X' },
        });
        const b = await signedRequest(loose.credentials, 'POST', '/orders', {
          body: { sku_id: sku, quantity: 1, downstream_order_no: 'X' },
        });
        expect((a.json as SandboxCreatedOrder).order_id).not.toBe((b.json as SandboxCreatedOrder).order_id);
      } finally {
        await loose.stop();
      }
    });

    it('cancels in pending_payment and paid (wallet refunded, stock back), refuses later with 409 cancel_not_allowed', async () => {
      sandbox.setTimetable({ paidMs: null });
      const f = sandbox.catalog.findSku({ fulfillmentType: 'auto', stockStatus: 'in_stock' })!;
      sandbox.catalog.setStock(f.sku.sku_code, 'in_stock', 20);
      const o = body<SandboxCreatedOrder>(await create({ sku_id: f.sku.id, quantity: 2 }));
      expect(sandbox.catalog.getSku(f.sku.sku_code)!.sku.stock_quantity).toBe(18);
      const c = await api('POST', `/orders/${o.order_id}/cancel`);
      expect(c.status).toBe(200);
      expect(c.json).toEqual({ ok: true, order_id: o.order_id, order_no: o.order_no, status: 'canceled' });
      expect(sandbox.walletBalance()).toBe('1000000.00');
      expect(sandbox.catalog.getSku(f.sku.sku_code)!.sku.stock_quantity).toBe(20);
      expect(sandbox.stats.cancelsExecuted).toBe(1);
      const twice = await api('POST', `/orders/${o.order_id}/cancel`);
      expect(twice.status).toBe(409);
      expect(error(twice).error_code).toBe('cancel_not_allowed');

      const paid = body<SandboxCreatedOrder>(await create({ sku_id: f.sku.id, quantity: 1 }));
      sandbox.setOrderStatus(paid.order_id, 'paid');
      expect((await api('POST', `/orders/${paid.order_id}/cancel`)).status).toBe(200);

      for (const status of ['fulfilling', 'delivered', 'completed'] as const) {
        const o2 = body<SandboxCreatedOrder>(await create({ sku_id: f.sku.id, quantity: 1 }));
        sandbox.setOrderStatus(o2.order_id, status);
        const r = await api('POST', `/orders/${o2.order_id}/cancel`);
        expect({ status, http: r.status, code: error(r).error_code }).toEqual({ status, http: 409, code: 'cancel_not_allowed' });
        expect(sandbox.order(o2.order_id)!.status).toBe(status);
      }
    });

    it('moves an auto order along the timetable to delivered with one payload line per unit', async () => {
      const sku = autoSku();
      const o = body<SandboxCreatedOrder>(await create({ sku_id: sku.id, quantity: 3 }));
      await sandbox.waitForOrderStatus(o.order_id, 'delivered');
      const d = body<SandboxOrderDetail>(await api('GET', `/orders/${o.order_id}`));
      expect(d.status).toBe('delivered');
      expect(d.fulfillment).toMatchObject({ type: 'auto', status: 'delivered', delivery_data: null });
      expect(Date.parse(d.fulfillment!.delivered_at)).not.toBeNaN();
      const items = lines(d.fulfillment!.payload);
      expect(items).toHaveLength(3);
      expect(new Set(items).size).toBe(3);
      expect(sandbox.order(o.order_id)!.history).toEqual(['pending_payment', 'paid', 'fulfilling', 'delivered']);
    });

    it('goes on to completed when the timetable has it', async () => {
      sandbox.setTimetable({ completedMs: 80 });
      const o = body<SandboxCreatedOrder>(await create({ sku_id: autoSku().id, quantity: 1 }));
      const v = await sandbox.waitForOrderStatus(o.order_id, 'completed');
      expect(v.history).toEqual(['pending_payment', 'paid', 'fulfilling', 'delivered', 'completed']);
      expect(lines(v.payload!)).toHaveLength(1);
    });

    it('gives every third order CR LF line endings with blank lines between items', async () => {
      sandbox.setTimetable({ paidMs: null });
      const sku = autoSku();
      const ids: number[] = [];
      for (let i = 0; i < 3; i++) ids.push(body<SandboxCreatedOrder>(await create({ sku_id: sku.id, quantity: 2 })).order_id);
      sandbox.setTimetable({ paidMs: 0 });
      for (const id of ids) sandbox.setOrderStatus(id, 'delivered');
      const payloads = await Promise.all(
        ids.map(async (id) => body<SandboxOrderDetail>(await api('GET', `/orders/${id}`)).fulfillment!.payload),
      );
      expect(payloads[0]).not.toContain('\r');
      expect(payloads[2]).toContain('\r\n\r\n');
      for (const p of payloads) expect(lines(p)).toHaveLength(2);
    });

    it('stops a manual order at fulfilling until deliverManual', async () => {
      const manual = sandbox.catalog.findSku({ fulfillmentType: 'manual', stockStatus: 'unlimited' })!;
      const r = await create({ sku_id: manual.sku.id, quantity: 1, manual_form_data: { account: 'player-1' } });
      expect(r.status).toBe(200);
      const id = body<SandboxCreatedOrder>(r).order_id;
      await sandbox.waitForOrderStatus(id, 'fulfilling');
      sandbox.advanceAll();
      expect(sandbox.order(id)!.status).toBe('fulfilling');
      expect(sandbox.order(id)!.manual_form_data).toEqual({ account: 'player-1' });
      sandbox.deliverManual(id, 'account: player-1 topped up', { receipt: 'R-1' });
      const d = body<SandboxOrderDetail>(await api('GET', `/orders/${id}`));
      expect(d.status).toBe('delivered');
      expect(d.fulfillment).toMatchObject({ type: 'manual', payload: 'account: player-1 topped up', delivery_data: { receipt: 'R-1' } });
    });

    it('advanceAll runs every pending step now', async () => {
      sandbox.setTimetable({ paidMs: 60_000, fulfillingMs: 60_000, deliveredMs: 60_000 });
      const o = body<SandboxCreatedOrder>(await create({ sku_id: autoSku().id, quantity: 1 }));
      expect(sandbox.order(o.order_id)!.status).toBe('pending_payment');
      sandbox.advanceAll();
      expect(sandbox.order(o.order_id)!.status).toBe('delivered');
    });

    it('refunds: partially_refunded then refunded, with refunded_amount, wallet credited', async () => {
      const sku = autoSku();
      sandbox.catalog.setPrice(sku.code, '10.00');
      const o = body<SandboxCreatedOrder>(await create({ sku_id: sku.id, quantity: 3 }));
      sandbox.advanceAll();
      expect(sandbox.walletBalance()).toBe('999970.00');
      sandbox.refundOrder(o.order_id, '12.50');
      let d = body<SandboxOrderDetail>(await api('GET', `/orders/${o.order_id}`));
      expect(d).toMatchObject({ status: 'partially_refunded', refunded_amount: '12.50', amount: '30.00' });
      expect(sandbox.walletBalance()).toBe('999982.50');
      sandbox.refundOrder(o.order_id);
      d = body<SandboxOrderDetail>(await api('GET', `/orders/${o.order_id}`));
      expect(d).toMatchObject({ status: 'refunded', refunded_amount: '30.00' });
      expect(d.fulfillment).toBeDefined();
      expect(sandbox.walletBalance()).toBe('1000000.00');
      expect(() => sandbox.refundOrder(o.order_id, '1.00')).toThrow(RangeError);
      const cancel = await api('POST', `/orders/${o.order_id}/cancel`);
      expect(cancel.status).toBe(409);
    });

    it('emits request events: received, then done', async () => {
      const seen: SandboxRequestEvent[] = [];
      const on = (e: SandboxRequestEvent): void => void seen.push(e);
      sandbox.events.on('request', on);
      try {
        await create({ sku_id: autoSku().id, quantity: 1 });
      } finally {
        sandbox.events.off('request', on);
      }
      expect(seen.map((e) => [e.operation, e.phase])).toEqual([
        ['createOrder', 'received'],
        ['createOrder', 'done'],
      ]);
      expect(seen[1]).toMatchObject({ outcome: 'answered', status: 200, method: 'POST', path: '/api/v1/upstream/orders' });
    });

    it('answers unknown API paths 404 and counts them', async () => {
      const r = await api('GET', '/nothing-here');
      expect(r.status).toBe(404);
      expect(sandbox.stats.requests.unknown).toBe(1);
    });
  });
});
