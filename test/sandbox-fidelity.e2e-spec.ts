/**
 * The sandbox upstream behaves as the real one (Dujiao-Next's Site Integration Open API) where the
 * real one departs from upstream-api.md or leaves it open, and the relay meets that behaviour:
 * 1. `GET /orders/{id}` carries no `downstream_order_no` (upstream-api.md §2.7) unless the option
 *    `orderDetailShowsDownstreamNo` asks for it; the operator's `resolve` by upstream order id then
 *    answers 409 `resolve_mismatch` saying why, and changes nothing;
 * 2. profile `dujiao-next`: the create pays from the wallet in the call and answers `paid`; only
 *    `pending_payment` can be canceled (409 `cancel_not_allowed` otherwise, nothing given back);
 *    profile `spec` keeps `pending_payment` and cancels `paid` too;
 * 3. stock sold or given back by orders does not move the product's `updated_at` (an `updated_after`
 *    listing does not show it); an explicit stock edit does;
 * 4. `payment_failed` carries the canceled order (`order_id`, `order_no`, `status`), and the relay
 *    still takes it as a refusal;
 * 5. a callback's retry carries the order's state at the time of the try, with a fresh timestamp;
 * 6. authentication refusals carry Dujiao-Next's codes and statuses (internal/router/upstream_auth.go):
 *    401 `missing_auth_headers`, 401 `invalid_timestamp`, 401 `timestamp_expired`, 403
 *    `invalid_api_key`, 401 `invalid_signature`, the timestamp judged before the key;
 * 7. stock is `low_stock` from 1 to 20 and `in_stock` above 20;
 * 8. profile `dujiao-next`: a create the wallet cannot pay creates the order, cancels it and answers
 *    200 `payment_failed` naming it (the number stays tied to it); profile `spec` keeps 402
 *    `insufficient_balance`; the relay rejects either way;
 * 9. profile `dujiao-next`: inactive SKUs are left out of the product JSON (listing and detail); the
 *    relay's sync unlists a SKU that goes inactive and lists it again when it comes back;
 * 10. `manual_form_data` is checked against the product's `manual_form_schema` (a required field
 *    missing or empty: 400 `bad_request`), in both profiles.
 */
import http from 'node:http';
import axios from 'axios';
import type { AddressInfo } from 'node:net';
import { signedRequest } from '../src/sandbox/sandbox-request.js';
import { SandboxServer } from '../src/sandbox/sandbox.server.js';
import type { SandboxCallbackBody, SandboxOrderDetail, SandboxProductPage } from '../src/sandbox/sandbox.types.js';
import { signatureHeaderNames, verifySignature } from '../src/signing/signing.js';
import { useAppSuite } from './support/app-suite.js';
import { callbackHeaders, freePort, getOrder, waitFor, waitForOrder, type OrderView } from './support/child-app.js';
import { waitRun, type SyncRunView } from './support/sync-run.js';

interface EventView {
  source: string;
  kind: string;
  from: string | null;
  to: string | null;
}

async function withSandbox<T>(
  options: ConstructorParameters<typeof SandboxServer>[0],
  work: (sandbox: SandboxServer) => Promise<T>,
): Promise<T> {
  const sandbox = new SandboxServer({ catalog: { products: 3 }, allowPrivateCallbackUrls: true, ...options });
  await sandbox.start(0, '127.0.0.1');
  try {
    return await work(sandbox);
  } finally {
    await sandbox.stop();
  }
}

async function create(sandbox: SandboxServer, body: Record<string, unknown>) {
  const r = await signedRequest(sandbox.credentials, 'POST', '/orders', { body });
  return { status: r.status, json: r.json as Record<string, unknown> };
}

describe('sandbox fidelity: the sandbox alone', () => {
  describe('1. GET /orders/{id} and downstream_order_no', () => {
    it.each(['spec', 'dujiao-next'] as const)('profile %s: the order detail carries no downstream_order_no by default', async (profile) => {
      await withSandbox({ profile }, async (sandbox) => {
        const sku = sandbox.catalog.addProduct({ skus: [{ skuCode: 'D-1', price: '2.00' }] }).skus[0];
        const created = await create(sandbox, { sku_id: sku.id, quantity: 1, downstream_order_no: 'DNO-1' });
        expect(created.status).toBe(200);
        const detail = await signedRequest(sandbox.credentials, 'GET', `/orders/${created.json.order_id as number}`);
        expect(detail.status).toBe(200);
        expect(detail.json).toMatchObject({ ok: true, order_id: created.json.order_id });
        expect(detail.json).not.toHaveProperty('downstream_order_no');
        // the sandbox itself still knows it (control API, order views)
        expect(sandbox.order(created.json.order_id as number)!.downstream_order_no).toBe('DNO-1');
      });
    });

    it('with orderDetailShowsDownstreamNo the detail carries it (an upstream that shows it)', async () => {
      await withSandbox({ orderDetailShowsDownstreamNo: true }, async (sandbox) => {
        expect(sandbox.config.orderDetailShowsDownstreamNo).toBe(true);
        const sku = sandbox.catalog.addProduct({ skus: [{ skuCode: 'D-2', price: '2.00' }] }).skus[0];
        const created = await create(sandbox, { sku_id: sku.id, quantity: 1, downstream_order_no: 'DNO-2' });
        const detail = await signedRequest(sandbox.credentials, 'GET', `/orders/${created.json.order_id as number}`);
        expect((detail.json as SandboxOrderDetail).downstream_order_no).toBe('DNO-2');
        // an order created without one has none either way
        const bare = await create(sandbox, { sku_id: sku.id, quantity: 1 });
        const bareDetail = await signedRequest(sandbox.credentials, 'GET', `/orders/${bare.json.order_id as number}`);
        expect(bareDetail.json).not.toHaveProperty('downstream_order_no');
      });
    });
  });

  describe('2. payment in the create call and cancelable states', () => {
    it('dujiao-next: the create answers paid (wallet debited in the call) and the order goes on from paid', async () => {
      // the timetable's steps are far enough apart that the detail read right after the create sees paid on a busy machine
      await withSandbox(
        { profile: 'dujiao-next', timetable: { paidMs: null, fulfillingMs: 1000, deliveredMs: 1500, completedMs: null } },
        async (sandbox) => {
          const sku = sandbox.catalog.addProduct({ skus: [{ skuCode: 'P-1', price: '10.00', stockQuantity: 50 }] }).skus[0];
          const before = sandbox.walletBalance();
          const created = await create(sandbox, { sku_id: sku.id, quantity: 2, downstream_order_no: 'PAY-1' });
          expect(created.status).toBe(200);
          expect(created.json).toEqual({
            ok: true,
            order_id: expect.any(Number),
            order_no: expect.any(String),
            status: 'paid',
            amount: '20.00',
            currency: 'CNY',
          });
          expect(sandbox.walletBalance()).toBe((Number(before) - 20).toFixed(2));
          const id = created.json.order_id as number;
          expect(sandbox.order(id)!.history).toEqual(['pending_payment', 'paid']);
          const detail = await signedRequest(sandbox.credentials, 'GET', `/orders/${id}`);
          expect((detail.json as SandboxOrderDetail).status).toBe('paid');
          // its timetable starts at paid (paidMs plays no part: the payment was the create's)
          const delivered = await sandbox.waitForOrderStatus(id, 'delivered', 10_000);
          expect(delivered.history).toEqual(['pending_payment', 'paid', 'fulfilling', 'delivered']);
          // the same number returns the order as it is now
          const again = await create(sandbox, { sku_id: sku.id, quantity: 2, downstream_order_no: 'PAY-1' });
          expect(again.json).toMatchObject({ ok: true, order_id: id, status: 'delivered' });
          expect(sandbox.walletBalance()).toBe((Number(before) - 20).toFixed(2));
        },
      );
    });

    it('dujiao-next: a paid order cannot be canceled (409, nothing given back); a pending_payment one can', async () => {
      await withSandbox({ profile: 'dujiao-next', timetable: { fulfillingMs: null } }, async (sandbox) => {
        const sku = sandbox.catalog.addProduct({ skus: [{ skuCode: 'P-2', price: '10.00', stockQuantity: 50 }] }).skus[0];
        const paid = await create(sandbox, { sku_id: sku.id, quantity: 1 });
        expect(paid.json.status).toBe('paid');
        const balance = sandbox.walletBalance();
        const stock = sandbox.catalog.getSku('P-2')!.sku.stock_quantity;
        const refused = await signedRequest(sandbox.credentials, 'POST', `/orders/${paid.json.order_id as number}/cancel`);
        expect(refused.status).toBe(409);
        expect(refused.json).toMatchObject({ ok: false, error_code: 'cancel_not_allowed' });
        expect(sandbox.order(paid.json.order_id as number)!.status).toBe('paid');
        expect(sandbox.walletBalance()).toBe(balance);
        expect(sandbox.catalog.getSku('P-2')!.sku.stock_quantity).toBe(stock);
        expect(sandbox.stats.cancelsExecuted).toBe(0);

        const pending = await create(sandbox, { sku_id: sku.id, quantity: 1 });
        sandbox.setOrderStatus(pending.json.order_id as number, 'pending_payment');
        const balance2 = sandbox.walletBalance();
        const ok = await signedRequest(sandbox.credentials, 'POST', `/orders/${pending.json.order_id as number}/cancel`);
        expect(ok.status).toBe(200);
        expect(ok.json).toMatchObject({ ok: true, status: 'canceled' });
        expect(sandbox.walletBalance()).toBe((Number(balance2) + 10).toFixed(2));
      });
    });

    it('dujiao-next: the payment in the create is called back (order.status_changed, paid)', async () => {
      const receiver = await startReceiver(() => ({ status: 200, body: '{"ok":true}' }));
      try {
        await withSandbox({ profile: 'dujiao-next', timetable: { fulfillingMs: null } }, async (sandbox) => {
          const sku = sandbox.catalog.addProduct({ skus: [{ skuCode: 'P-3', price: '1.00' }] }).skus[0];
          const created = await create(sandbox, {
            sku_id: sku.id,
            quantity: 1,
            downstream_order_no: 'PAY-CB',
            callback_url: `${receiver.url}/cb`,
          });
          expect(created.json.status).toBe('paid');
          await waitFor(
            () => receiver.received.length,
            (n) => n >= 1,
            'the paid callback',
            5000,
          );
          expect(receiver.received[0].json).toMatchObject({
            event: 'order.status_changed',
            order_id: created.json.order_id,
            downstream_order_no: 'PAY-CB',
            status: 'paid',
          });
        });
      } finally {
        await receiver.stop();
      }
    });

    it("spec: the create answers pending_payment, and a paid order is still canceled (today's behaviour)", async () => {
      await withSandbox({ timetable: { paidMs: null } }, async (sandbox) => {
        const sku = sandbox.catalog.addProduct({ skus: [{ skuCode: 'P-4', price: '10.00' }] }).skus[0];
        const created = await create(sandbox, { sku_id: sku.id, quantity: 1 });
        expect(created.json.status).toBe('pending_payment');
        sandbox.setOrderStatus(created.json.order_id as number, 'paid');
        const r = await signedRequest(sandbox.credentials, 'POST', `/orders/${created.json.order_id as number}/cancel`);
        expect(r.status).toBe(200);
      });
    });
  });

  describe('3. stock moved by orders and updated_after', () => {
    it('a product sold down (and given stock back by a cancel) is not in an updated_after listing; an explicit stock edit is', async () => {
      await withSandbox({ timetable: { paidMs: null } }, async (sandbox) => {
        const product = sandbox.catalog.addProduct({ skus: [{ skuCode: 'S-1', price: '1.00', stockQuantity: 30 }] });
        const listingAfter = async (since: string) => {
          const r = await signedRequest(sandbox.credentials, 'GET', '/products', {
            query: { page: 1, page_size: 50, updated_after: since },
          });
          return (r.json as SandboxProductPage).items.map((p) => p.id);
        };
        const since = product.updated_at;
        const updatedAt = () => sandbox.catalog.getProduct(product.id)!.updated_at;

        const sold = await create(sandbox, { sku_id: product.skus[0].id, quantity: 25 });
        expect(sold.status).toBe(200);
        // the sale shows in a full listing and in the product's detail...
        const full = await signedRequest(sandbox.credentials, 'GET', '/products', { query: { page: 1, page_size: 50 } });
        const listed = (full.json as SandboxProductPage).items.find((p) => p.id === product.id)!;
        expect(listed.skus[0]).toMatchObject({ stock_quantity: 5, stock_status: 'low_stock' });
        const detail = await signedRequest(sandbox.credentials, 'GET', `/products/${product.id}`);
        expect((detail.json as { product: { skus: Array<{ stock_quantity: number }> } }).product.skus[0].stock_quantity).toBe(5);
        // ...but not in its updated_at, so not in an updated_after listing
        expect(updatedAt()).toBe(since);
        expect(await listingAfter(since)).not.toContain(product.id);

        const cancel = await signedRequest(sandbox.credentials, 'POST', `/orders/${sold.json.order_id as number}/cancel`);
        expect(cancel.status).toBe(200);
        expect(sandbox.catalog.getSku('S-1')!.sku).toMatchObject({ stock_quantity: 30, stock_status: 'in_stock' });
        expect(updatedAt()).toBe(since);
        expect(await listingAfter(since)).not.toContain(product.id);

        // an admin's edit of the stock is a change of the product row
        sandbox.catalog.setStock('S-1', 'in_stock', 40);
        expect(Date.parse(updatedAt())).toBeGreaterThan(Date.parse(since));
        expect(await listingAfter(since)).toContain(product.id);
      });
    });
  });

  describe('4. payment_failed', () => {
    it('answers 200 ok:false with the canceled order (order_id, order_no, status), which the same number then returns', async () => {
      await withSandbox({}, async (sandbox) => {
        const sku = sandbox.catalog.addProduct({ skus: [{ skuCode: 'F-1', price: '4.00' }] }).skus[0];
        sandbox.faults.set({ rules: [{ operation: 'createOrder', kind: 'payment_failed', times: 1 }] });
        const before = sandbox.walletBalance();
        const failed = await create(sandbox, { sku_id: sku.id, quantity: 1, downstream_order_no: 'PF-1' });
        expect(failed.status).toBe(200);
        expect(failed.json).toEqual({
          ok: false,
          error_code: 'payment_failed',
          error_message: expect.any(String),
          order_id: expect.any(Number),
          order_no: expect.any(String),
          status: 'canceled',
        });
        const order = sandbox.order(failed.json.order_id as number)!;
        expect(order).toMatchObject({ order_no: failed.json.order_no, downstream_order_no: 'PF-1', status: 'canceled' });
        expect(sandbox.walletBalance()).toBe(before);
        const again = await create(sandbox, { sku_id: sku.id, quantity: 1, downstream_order_no: 'PF-1' });
        expect(again.json).toMatchObject({ ok: true, order_id: failed.json.order_id, order_no: failed.json.order_no, status: 'canceled' });
      });
    });
  });

  describe('5. callback retries', () => {
    it('a retry carries the order as it is at the try (status, fulfillment, event), a fresh timestamp, signed over that body', async () => {
      const answers = [{ status: 500, body: '{"ok":false}' }];
      const receiver = await startReceiver((i) => answers[i] ?? { status: 200, body: '{"ok":true}' });
      let skewMs = 0;
      try {
        await withSandbox(
          { timetable: { paidMs: null }, callbackRetryDelaysMs: [300, 300, 300, 300], clock: () => Date.now() + skewMs },
          async (sandbox) => {
            const sku = sandbox.catalog.addProduct({ skus: [{ skuCode: 'CB-1', price: '1.00' }] }).skus[0];
            const created = await create(sandbox, {
              sku_id: sku.id,
              quantity: 2,
              downstream_order_no: 'CB-RETRY',
              callback_url: `${receiver.url}/cb`,
            });
            const id = created.json.order_id as number;
            sandbox.setOrderStatus(id, 'paid');
            await waitFor(
              () => sandbox.callbackLog.length,
              (n) => n >= 1,
              'the first try',
              5000,
            );
            const first = sandbox.callbackLog[0];
            expect(first).toMatchObject({ attempt: 1, ok: false, json: { status: 'paid', event: 'order.status_changed' } });
            expect(first.json.fulfillment).toBeUndefined();

            // before the retry: the order is delivered (its own callback dropped) and time moves on
            sandbox.faults.set({ callbacks: 'drop' });
            sandbox.setOrderStatus(id, 'delivered');
            sandbox.faults.reset();
            skewMs = 10_000;

            await waitFor(
              () => sandbox.callbackLog.length,
              (n) => n >= 2,
              'the retry',
              5000,
            );
            const retry = sandbox.callbackLog[1];
            expect(retry).toMatchObject({ attempt: 2, ok: true });
            const body = JSON.parse(receiver.received[1].raw) as SandboxCallbackBody;
            expect(body).toEqual(retry.json);
            expect(body).toMatchObject({ event: 'order.fulfilled', order_id: id, downstream_order_no: 'CB-RETRY', status: 'delivered' });
            expect(body.fulfillment).toMatchObject({ type: 'auto', status: 'delivered', payload: sandbox.order(id)!.payload });
            expect(body.timestamp).toBeGreaterThanOrEqual(first.json.timestamp + 9);
            // the retry is signed over what it carries
            const names = signatureHeaderNames('Service');
            const h = receiver.received[1].headers;
            expect(
              verifySignature({
                secret: 'sandbox-api-secret',
                template: '{method}\n{path}\n{timestamp}\n{body_md5}',
                expectedApiKey: 'sandbox-api-key',
                method: 'POST',
                path: '/cb',
                body: Buffer.from(receiver.received[1].raw, 'utf8'),
                apiKey: h[names.apiKey.toLowerCase()] as string,
                timestamp: h[names.timestamp.toLowerCase()] as string,
                signature: h[names.signature.toLowerCase()] as string,
                nowSeconds: Math.floor((Date.now() + skewMs) / 1000),
                toleranceSeconds: 60,
              }),
            ).toEqual({ ok: true });
          },
        );
      } finally {
        await receiver.stop();
      }
    });
  });
});

describe('sandbox fidelity: the sandbox alone (2)', () => {
  describe('6. authentication refusals', () => {
    it.each(['spec', 'dujiao-next'] as const)("profile %s: Dujiao-Next's codes and statuses, in its order", async (profile) => {
      await withSandbox({ profile }, async (sandbox) => {
        const names = signatureHeaderNames(sandbox.credentials.headerPrefix);
        const ping = async (opts: Parameters<typeof signedRequest>[3]) => {
          const r = await signedRequest(sandbox.credentials, 'POST', '/ping', opts);
          return [r.status, (r.json as { error_code?: string }).error_code ?? null];
        };
        expect(await ping({})).toEqual([200, null]);
        expect(await ping({ unsigned: true })).toEqual([401, 'missing_auth_headers']);
        expect(await ping({ headers: { [names.timestamp]: null } })).toEqual([401, 'missing_auth_headers']);
        expect(await ping({ headers: { [names.signature]: '' } })).toEqual([401, 'missing_auth_headers']);
        expect(await ping({ headers: { [names.timestamp]: 'now' } })).toEqual([401, 'invalid_timestamp']);
        expect(await ping({ timestampOffsetS: 300 })).toEqual([401, 'timestamp_expired']);
        expect(await ping({ apiKey: 'not-our-key' })).toEqual([403, 'invalid_api_key']);
        expect(await ping({ secret: 'not-our-secret' })).toEqual([401, 'invalid_signature']);
        // the timestamp before the key, the key before the signature
        expect(await ping({ apiKey: 'not-our-key', timestampOffsetS: -300 })).toEqual([401, 'timestamp_expired']);
        expect(await ping({ apiKey: 'not-our-key', headers: { [names.timestamp]: 'now' } })).toEqual([401, 'invalid_timestamp']);
        expect(await ping({ apiKey: 'not-our-key', secret: 'not-our-secret' })).toEqual([403, 'invalid_api_key']);
      });
    });
  });

  describe('7. stock statuses', () => {
    it('low_stock from 1 to 20, in_stock above 20, as served and as sales move it', async () => {
      await withSandbox({ catalog: { products: 40 } }, async (sandbox) => {
        const page = await signedRequest(sandbox.credentials, 'GET', '/products', { query: { page: 1, page_size: 50 } });
        const skus = (page.json as SandboxProductPage).items.flatMap((p) => p.skus);
        expect(skus.filter((s) => s.stock_status === 'low_stock').every((s) => s.stock_quantity >= 1 && s.stock_quantity <= 20)).toBe(true);
        expect(skus.filter((s) => s.stock_status === 'in_stock').every((s) => s.stock_quantity > 20)).toBe(true);

        const product = sandbox.catalog.addProduct({ skus: [{ skuCode: 'ST-1', price: '1.00', stockQuantity: 25 }] });
        expect(product.skus[0]).toMatchObject({ stock_status: 'in_stock', stock_quantity: 25 });
        expect((await create(sandbox, { sku_id: product.skus[0].id, quantity: 4 })).status).toBe(200);
        expect(sandbox.catalog.getSku('ST-1')!.sku).toMatchObject({ stock_status: 'in_stock', stock_quantity: 21 });
        expect((await create(sandbox, { sku_id: product.skus[0].id, quantity: 1 })).status).toBe(200);
        const detail = await signedRequest(sandbox.credentials, 'GET', `/products/${product.id}`);
        expect((detail.json as { product: { skus: unknown[] } }).product.skus[0]).toMatchObject({
          stock_status: 'low_stock',
          stock_quantity: 20,
        });
      });
    });
  });

  describe('8. a wallet that cannot pay', () => {
    it('dujiao-next: order created and canceled, 200 payment_failed names it; nothing taken; the number stays tied to it', async () => {
      await withSandbox({ profile: 'dujiao-next', wallet: { balance: '5.00' } }, async (sandbox) => {
        expect(sandbox.config.lowBalance).toBe('payment_failed');
        const sku = sandbox.catalog.addProduct({ skus: [{ skuCode: 'LB-1', price: '4.00', stockQuantity: 30 }] }).skus[0];
        const failed = await create(sandbox, { sku_id: sku.id, quantity: 2, downstream_order_no: 'LB-PF-1' });
        expect(failed.status).toBe(200);
        expect(failed.json).toEqual({
          ok: false,
          error_code: 'payment_failed',
          error_message: expect.stringMatching(/balance/),
          order_id: expect.any(Number),
          order_no: expect.any(String),
          status: 'canceled',
        });
        const order = sandbox.order(failed.json.order_id as number)!;
        expect(order).toMatchObject({ order_no: failed.json.order_no, downstream_order_no: 'LB-PF-1', status: 'canceled', amount: '8.00' });
        expect(order.history).toEqual(['pending_payment', 'canceled']);
        expect(sandbox.walletBalance()).toBe('5.00');
        expect(sandbox.catalog.getSku('LB-1')!.sku.stock_quantity).toBe(30);
        expect(sandbox.stats.createsExecuted).toBe(1);
        // the same number, even once the wallet could pay, returns that canceled order
        sandbox.setWalletBalance('100.00');
        const again = await create(sandbox, { sku_id: sku.id, quantity: 2, downstream_order_no: 'LB-PF-1' });
        expect(again.json).toMatchObject({ ok: true, order_id: order.id, order_no: order.order_no, status: 'canceled' });
        expect(sandbox.walletBalance()).toBe('100.00');
        expect(sandbox.orders()).toHaveLength(1);
        // a new number is paid
        const paid = await create(sandbox, { sku_id: sku.id, quantity: 2, downstream_order_no: 'LB-PF-2' });
        expect(paid.json).toMatchObject({ ok: true, status: 'paid', amount: '8.00' });
        expect(sandbox.walletBalance()).toBe('92.00');
      });
    });

    it('spec: 402 insufficient_balance (upstream-api.md §7), nothing recorded, the number still free', async () => {
      await withSandbox({ wallet: { balance: '5.00' } }, async (sandbox) => {
        expect(sandbox.config.lowBalance).toBe('insufficient_balance');
        const sku = sandbox.catalog.addProduct({ skus: [{ skuCode: 'LB-2', price: '4.00' }] }).skus[0];
        const refused = await create(sandbox, { sku_id: sku.id, quantity: 2, downstream_order_no: 'LB-IB-1' });
        expect(refused).toEqual({
          status: 402,
          json: { ok: false, error_code: 'insufficient_balance', error_message: expect.any(String) },
        });
        expect(sandbox.orders()).toEqual([]);
        sandbox.setWalletBalance('100.00');
        const placed = await create(sandbox, { sku_id: sku.id, quantity: 2, downstream_order_no: 'LB-IB-1' });
        expect(placed.json).toMatchObject({ ok: true, status: 'pending_payment' });
      });
    });

    it('the option lowBalance overrides the profile', async () => {
      await withSandbox({ profile: 'dujiao-next', lowBalance: 'insufficient_balance', wallet: { balance: '1.00' } }, async (sandbox) => {
        const sku = sandbox.catalog.addProduct({ skus: [{ skuCode: 'LB-3', price: '4.00' }] }).skus[0];
        expect((await create(sandbox, { sku_id: sku.id, quantity: 1 })).status).toBe(402);
        expect(sandbox.orders()).toEqual([]);
      });
      await withSandbox({ lowBalance: 'payment_failed', wallet: { balance: '1.00' } }, async (sandbox) => {
        const sku = sandbox.catalog.addProduct({ skus: [{ skuCode: 'LB-4', price: '4.00' }] }).skus[0];
        const failed = await create(sandbox, { sku_id: sku.id, quantity: 1 });
        expect(failed).toMatchObject({ status: 200, json: { ok: false, error_code: 'payment_failed', status: 'canceled' } });
      });
      expect(() => new SandboxServer({ lowBalance: 'refuse' as never })).toThrow(RangeError);
    });
  });

  describe('9. inactive SKUs in the product JSON', () => {
    const servedSkus = async (sandbox: SandboxServer, productId: number) => {
      const detail = await signedRequest(sandbox.credentials, 'GET', `/products/${productId}`);
      const page = await signedRequest(sandbox.credentials, 'GET', '/products', { query: { page: 1, page_size: 50 } });
      const listed = (page.json as SandboxProductPage).items.find((p) => p.id === productId)!;
      const fromDetail = (detail.json as { product: SandboxProductPage['items'][number] }).product.skus.map((s) => [
        s.sku_code,
        s.is_active,
      ]);
      expect(listed.skus.map((s) => [s.sku_code, s.is_active])).toEqual(fromDetail);
      return fromDetail;
    };
    const twoSkus = {
      skus: [
        { skuCode: 'IA-1', price: '1.00' },
        { skuCode: 'IA-2', price: '2.00', isActive: false },
      ],
    };

    it('dujiao-next: left out of the listing and the detail; back once active again', async () => {
      await withSandbox({ profile: 'dujiao-next' }, async (sandbox) => {
        expect(sandbox.config.servesInactiveSkus).toBe(false);
        const product = sandbox.catalog.addProduct(twoSkus);
        expect(await servedSkus(sandbox, product.id)).toEqual([['IA-1', true]]);
        // the seeded catalog: no inactive SKU anywhere in the listing
        const page = await signedRequest(sandbox.credentials, 'GET', '/products', { query: { page: 1, page_size: 50 } });
        expect((page.json as SandboxProductPage).items.flatMap((p) => p.skus).every((s) => s.is_active)).toBe(true);
        // ordering it by its id is still sku_unavailable
        const inactive = sandbox.catalog.getSku('IA-2')!.sku;
        expect((await create(sandbox, { sku_id: inactive.id, quantity: 1 })).json).toMatchObject({
          ok: false,
          error_code: 'sku_unavailable',
        });
        sandbox.catalog.setSkuActive('IA-2', true);
        expect(await servedSkus(sandbox, product.id)).toEqual([
          ['IA-1', true],
          ['IA-2', true],
        ]);
        sandbox.catalog.setSkuActive('IA-1', false);
        expect(await servedSkus(sandbox, product.id)).toEqual([['IA-2', true]]);
      });
    });

    it('spec: served with is_active false; the option servesInactiveSkus overrides the profile', async () => {
      await withSandbox({}, async (sandbox) => {
        expect(sandbox.config.servesInactiveSkus).toBe(true);
        const product = sandbox.catalog.addProduct(twoSkus);
        expect(await servedSkus(sandbox, product.id)).toEqual([
          ['IA-1', true],
          ['IA-2', false],
        ]);
      });
      await withSandbox({ profile: 'dujiao-next', servesInactiveSkus: true }, async (sandbox) => {
        const product = sandbox.catalog.addProduct(twoSkus);
        expect(await servedSkus(sandbox, product.id)).toEqual([
          ['IA-1', true],
          ['IA-2', false],
        ]);
      });
      await withSandbox({ servesInactiveSkus: false }, async (sandbox) => {
        const product = sandbox.catalog.addProduct(twoSkus);
        expect(await servedSkus(sandbox, product.id)).toEqual([['IA-1', true]]);
      });
    });
  });

  describe('10. manual_form_data and manual_form_schema', () => {
    it.each(['spec', 'dujiao-next'] as const)(
      'profile %s: a required field missing or empty is 400 bad_request, nothing recorded',
      async (profile) => {
        await withSandbox({ profile }, async (sandbox) => {
          const sku = sandbox.catalog.addProduct({
            fulfillmentType: 'manual',
            manualFormSchema: {
              fields: [
                { key: 'account', type: 'text', required: true },
                { key: 'region', type: 'select', required: false },
              ],
            },
            skus: [{ skuCode: 'MF-1', price: '3.00' }],
          }).skus[0];
          for (const data of [{}, { account: '' }, { region: 'CN' }]) {
            const r = await create(sandbox, { sku_id: sku.id, quantity: 1, manual_form_data: data });
            expect({ data, r }).toEqual({
              data,
              r: {
                status: 400,
                json: { ok: false, error_code: 'bad_request', error_message: expect.stringMatching(/^manual form data is invalid/) },
              },
            });
          }
          expect(sandbox.orders()).toEqual([]);
          const ok = await create(sandbox, { sku_id: sku.id, quantity: 1, manual_form_data: { account: 'player-9' } });
          expect(ok.status).toBe(200);
          expect(sandbox.order(ok.json.order_id as number)!.manual_form_data).toEqual({ account: 'player-9' });
        });
      },
    );
  });
});

describe('sandbox fidelity: the relay against the default sandbox (spec)', () => {
  const t = useAppSuite({
    sandbox: { catalog: { products: 2 }, timetable: { paidMs: 30, fulfillingMs: 60, deliveredMs: 100, completedMs: null } },
    prepare: (sandbox) => sandbox.catalog.addProduct({ skus: [{ skuCode: 'FID-AUTO', price: '5.00' }] }),
    env: { ORDER_POLL_BASE_MS: '50', ORDER_POLL_MAX_MS: '200', UPSTREAM_TIMEOUT_MS: '800' },
    seed: true,
  });
  const events = async (shopNo: string) =>
    ((await t.app.http.get(`/internal/orders/${shopNo}/events`)).data as { events: EventView[] }).events;

  it('resolve with an upstream order id that the upstream cannot prove: 409 resolve_mismatch saying why, nothing changed', async () => {
    const shopNo = 'FID-RESOLVE-1';
    t.sandbox.faults.set({ rules: [{ operation: 'createOrder', kind: 'error_after', status: 503, times: 1 }] });
    const placed = await t.app.http.post('/internal/orders', { shop_order_no: shopNo, sku_code: 'FID-AUTO', quantity: 1 });
    expect(placed.status).toBe(202);
    expect((placed.data as { order: OrderView }).order.status).toBe('submit_unknown');
    const upstream = t.sandbox.orders().find((o) => o.downstream_order_no === shopNo)!;
    expect(upstream).toBeDefined();
    const before = await events(shopNo);
    const reads = t.sandbox.stats.requests.getOrder;

    const r = await t.app.http.post(`/internal/orders/${shopNo}/resolve`, { upstream_order_id: upstream.id });
    expect(r.status).toBe(409);
    expect(r.data).toMatchObject({
      ok: false,
      error_code: 'resolve_mismatch',
      error_message:
        `upstream order ${upstream.id} does not show its downstream_order_no, so it cannot be proven to be attempt ${shopNo}'s: ` +
        'wait for its callback (or, where the upstream deduplicates order numbers, the automatic resend), or settle it with not_placed',
    });
    expect(t.sandbox.stats.requests.getOrder).toBe(reads + 1); // it did ask the upstream

    const order = await getOrder(t.app.http, shopNo);
    expect(order).toMatchObject({ status: 'submit_unknown', upstream_order_id: null, attempt: 1 });
    expect(await events(shopNo)).toEqual(before);
    const [attempt] = await t.db.query<{ status: string; upstream_order_id: string | null }>(
      'SELECT a.status, a.upstream_order_id::text AS upstream_order_id FROM order_attempts a JOIN orders o ON o.id = a.order_id ' +
        'WHERE o.shop_order_no = $1',
      [shopNo],
    );
    expect(attempt).toEqual({ status: 'submit_unknown', upstream_order_id: null });
    // still the operator's to settle
    const settled = await t.app.http.post(`/internal/orders/${shopNo}/resolve`, { not_placed: true, reason: 'fidelity test' });
    expect(settled.status).toBe(200);
  });

  it('payment_failed (now with the canceled order in the answer) is a refusal: 402, rejected; the next attempt: a new number', async () => {
    const shopNo = 'FID-PF-1';
    t.sandbox.faults.set({ rules: [{ operation: 'createOrder', kind: 'payment_failed', times: 1 }] });
    const refused = await t.app.http.post('/internal/orders', { shop_order_no: shopNo, sku_code: 'FID-AUTO', quantity: 1 });
    expect(refused.status).toBe(402);
    expect(refused.data).toMatchObject({ ok: false, error_code: 'payment_failed', order: { status: 'rejected', upstream_order_id: null } });
    const canceled = t.sandbox.orders().find((o) => o.downstream_order_no === shopNo)!;
    expect(canceled.status).toBe('canceled');

    const again = await t.app.http.post('/internal/orders', { shop_order_no: shopNo, sku_code: 'FID-AUTO', quantity: 1 });
    expect(again.status).toBe(201);
    expect((again.data as { order: OrderView }).order).toMatchObject({ attempt: 2, downstream_order_no: `${shopNo}-2` });
    expect((again.data as { order: OrderView }).order.upstream_order_id).not.toBe(canceled.id);
  });
});

describe('sandbox fidelity: the relay against the dujiao-next profile', () => {
  const t = useAppSuite({
    sandbox: { profile: 'dujiao-next', catalog: { products: 2 }, timetable: { fulfillingMs: null } },
    prepare: (sandbox) => {
      sandbox.catalog.addProduct({ skus: [{ skuCode: 'FID-DJ', price: '6.00' }] });
      sandbox.catalog.addProduct({
        skus: [
          { skuCode: 'FID-DJ-IA-1', price: '1.00' },
          { skuCode: 'FID-DJ-IA-2', price: '2.00' },
          { skuCode: 'FID-DJ-IA-3', price: '3.00', isActive: false },
        ],
      });
    },
    env: { UPSTREAM_PROFILE: 'dujiao-next', ORDER_POLL_BASE_MS: '50', ORDER_POLL_MAX_MS: '200', UPSTREAM_TIMEOUT_MS: '800' },
    seed: true,
  });

  const sync = async (): Promise<SyncRunView> => {
    const started = await t.app.http.post('/internal/catalog/sync', { mode: 'full' });
    expect(started.status).toBe(202);
    return waitRun(t.app.http, (started.data as { run_id: string }).run_id);
  };
  const localSku = async (code: string) => {
    const r = await t.app.http.get(`/internal/catalog/skus/${code}`);
    return r.status === 404 ? null : (r.data as { sku: { listed: boolean; available: boolean } }).sku;
  };

  it('an order is paid by its create; the upstream refuses to cancel it, so the relay does too', async () => {
    const shopNo = 'FID-DJ-1';
    const placed = await t.app.http.post('/internal/orders', { shop_order_no: shopNo, sku_code: 'FID-DJ', quantity: 1 });
    expect(placed.status).toBe(201);
    expect((placed.data as { order: OrderView }).order).toMatchObject({ status: 'paid', amount: '6.00' });
    const balance = t.sandbox.walletBalance();
    const cancel = await t.app.http.post(`/internal/orders/${shopNo}/cancel`);
    expect(cancel.status).toBe(409);
    expect(cancel.data).toMatchObject({ ok: false, error_code: 'cancel_not_allowed' });
    expect(await getOrder(t.app.http, shopNo)).toMatchObject({ status: 'paid', refund_state: 'not_refundable' });
    const upstreamId = (placed.data as { order: OrderView }).order.upstream_order_id!;
    expect(t.sandbox.order(upstreamId)!.status).toBe('paid');
    expect(t.sandbox.walletBalance()).toBe(balance);
  });

  it('a create the wallet cannot pay: canceled upstream (payment_failed), rejected here (402); the next attempt: new number', async () => {
    const shopNo = 'FID-DJ-LOW';
    const balance = t.sandbox.walletBalance();
    t.sandbox.setWalletBalance('1.00');
    try {
      const refused = await t.app.http.post('/internal/orders', { shop_order_no: shopNo, sku_code: 'FID-DJ', quantity: 1 });
      expect(refused.status).toBe(402);
      expect(refused.data).toMatchObject({
        ok: false,
        error_code: 'payment_failed',
        order: { status: 'rejected', upstream_order_id: null },
      });
      const canceled = t.sandbox.orders().find((o) => o.downstream_order_no === shopNo)!;
      expect(canceled).toMatchObject({ status: 'canceled', amount: '6.00' });
      expect(t.sandbox.walletBalance()).toBe('1.00');

      t.sandbox.setWalletBalance('100.00');
      const again = await t.app.http.post('/internal/orders', { shop_order_no: shopNo, sku_code: 'FID-DJ', quantity: 1 });
      expect(again.status).toBe(201);
      expect((again.data as { order: OrderView }).order).toMatchObject({ status: 'paid', attempt: 2, downstream_order_no: `${shopNo}-2` });
      expect((again.data as { order: OrderView }).order.upstream_order_id).not.toBe(canceled.id);
      expect(t.sandbox.walletBalance()).toBe('94.00');
    } finally {
      t.sandbox.setWalletBalance(balance);
    }
  });

  it('catalog sync: a SKU left out as inactive is not listed; one going inactive is unlisted, listed again when back', async () => {
    // FID-DJ-IA-3 was inactive at the first sync: the upstream never showed it
    expect(await localSku('FID-DJ-IA-1')).toMatchObject({ listed: true, available: true });
    expect(await localSku('FID-DJ-IA-2')).toMatchObject({ listed: true, available: true });
    expect(await localSku('FID-DJ-IA-3')).toBeNull();

    t.sandbox.catalog.setSkuActive('FID-DJ-IA-2', false);
    const gone = await sync();
    expect(gone).toMatchObject({ status: 'succeeded', skus_delisted: 1, skus_created: 0 });
    expect(await localSku('FID-DJ-IA-2')).toMatchObject({ listed: false, available: false });
    expect(await localSku('FID-DJ-IA-1')).toMatchObject({ listed: true, available: true });
    const refused = await t.app.http.post('/internal/orders', { shop_order_no: 'FID-DJ-IA-ORDER', sku_code: 'FID-DJ-IA-2', quantity: 1 });
    expect(refused.status).toBe(409);
    expect(refused.data).toMatchObject({ ok: false, error_code: 'sku_unavailable' });

    t.sandbox.catalog.setSkuActive('FID-DJ-IA-2', true);
    t.sandbox.catalog.setSkuActive('FID-DJ-IA-3', true);
    const back = await sync();
    expect(back).toMatchObject({ status: 'succeeded', skus_relisted: 1, skus_created: 1, skus_delisted: 0 });
    for (const code of ['FID-DJ-IA-1', 'FID-DJ-IA-2', 'FID-DJ-IA-3'])
      expect(await localSku(code)).toMatchObject({ listed: true, available: true });
    const placed = await t.app.http.post('/internal/orders', { shop_order_no: 'FID-DJ-IA-ORDER-2', sku_code: 'FID-DJ-IA-3', quantity: 1 });
    expect(placed.status).toBe(201);
  });
});

describe('sandbox fidelity: the relay against an upstream whose GET /orders/{id} shows downstream_order_no (option)', () => {
  const t = useAppSuite({
    sandbox: {
      profile: 'spec',
      dedupeDownstreamOrderNo: false,
      orderDetailShowsDownstreamNo: true,
      catalog: { products: 2 },
      timetable: { paidMs: 30, fulfillingMs: 60, deliveredMs: 100, completedMs: 150 },
    },
    prepare: (sandbox) => sandbox.catalog.addProduct({ skus: [{ skuCode: 'FID-SHOWN', price: '3.00' }] }),
    env: async () => {
      const port = await freePort();
      return {
        PORT: String(port),
        CALLBACK_PUBLIC_URL: `http://127.0.0.1:${port}/callbacks/upstream`,
        ORDER_POLL_BASE_MS: '50',
        ORDER_POLL_MAX_MS: '200',
      };
    },
    seed: true,
  });

  /** `shopNo` refused (payment_failed, nothing placed), then `otherNo` placed and completed: its upstream order id. */
  async function rejectedThenCompleted(shopNo: string, otherNo: string): Promise<number> {
    t.sandbox.faults.set({ rules: [{ operation: 'createOrder', kind: 'payment_failed', times: 1 }] });
    expect((await t.app.http.post('/internal/orders', { shop_order_no: shopNo, sku_code: 'FID-SHOWN', quantity: 1 })).status).toBe(402);
    expect((await t.app.http.post('/internal/orders', { shop_order_no: otherNo, sku_code: 'FID-SHOWN', quantity: 1 })).status).toBe(201);
    return (await waitForOrder(t.app.http, otherNo, (o) => o.status === 'completed')).upstream_order_id!;
  }

  it("a signed callback naming another order's upstream order is refused by the number the upstream's read shows", async () => {
    const shopNo = 'FID-SHOWN-PF';
    const otherNo = 'FID-SHOWN-OTHER';
    const upstreamId = await rejectedThenCompleted(shopNo, otherNo);

    const body = JSON.stringify({
      event: 'order.fulfilled',
      order_id: upstreamId,
      downstream_order_no: shopNo,
      status: 'completed',
      timestamp: Math.floor(Date.now() / 1000),
    });
    const posted = await axios.post(`${t.app.url}/callbacks/upstream`, body, {
      headers: callbackHeaders(body),
      validateStatus: () => true,
      transformRequest: [(d: unknown) => d],
    });
    expect([posted.status, posted.data]).toEqual([200, { ok: true }]);
    const [row] = await waitFor(
      () =>
        t.db.query<{ state: string; outcome: string | null }>(
          'SELECT state, outcome FROM callback_inbox WHERE upstream_order_id = $1 AND downstream_order_no = $2',
          [upstreamId, shopNo],
        ),
      (rows) => rows.length === 1 && rows[0].state !== 'pending',
      'the callback to be processed',
      20_000,
    );
    expect(row.state).toBe('ignored');
    expect(row.outcome).toMatch(new RegExp(`upstream order ${upstreamId} carries downstream_order_no ${otherNo}, not ${shopNo}`));
    expect(await getOrder(t.app.http, shopNo)).toMatchObject({ status: 'rejected', anomaly: null });
    expect(await getOrder(t.app.http, otherNo)).toMatchObject({ status: 'completed', anomaly: null });
  });

  it('callbacks of one upstream order claimed together are judged by the number each carries', async () => {
    // the upstream order's own callback and one naming it with another order's number, stored before
    // the processor looks (one statement: claimed in one batch, the order's own first)
    const shopNo = 'FID-SHOWN-PF2';
    const otherNo = 'FID-SHOWN-OTHER2';
    const upstreamId = await rejectedThenCompleted(shopNo, otherNo);
    await t.db.query(
      `INSERT INTO callback_inbox (body_sha256, event, upstream_order_id, downstream_order_no, reported_status, callback_ts, ` +
        `state, next_try_at, received_at)
       VALUES ($1, 'order.fulfilled', $3, $4, 'completed', 1, 'pending', now(), now()), ($2, 'order.fulfilled', $3, $5, ` +
        `'completed', 2, 'pending', now(), now())`,
      [`grouped-own-${upstreamId}`, `grouped-other-${upstreamId}`, upstreamId, otherNo, shopNo],
    );
    const rows = await waitFor(
      () =>
        t.db.query<{ downstream_order_no: string; state: string; outcome: string | null }>(
          'SELECT downstream_order_no, state, outcome FROM callback_inbox WHERE body_sha256 IN ($1, $2) ORDER BY id',
          [`grouped-own-${upstreamId}`, `grouped-other-${upstreamId}`],
        ),
      (r) => r.length === 2 && r.every((x) => x.state !== 'pending'),
      'the two callbacks to be processed',
      20_000,
    );
    expect(rows[0]).toMatchObject({ downstream_order_no: otherNo, state: 'applied' });
    expect(rows[1]).toMatchObject({ downstream_order_no: shopNo, state: 'ignored' });
    expect(rows[1].outcome).toMatch(new RegExp(`upstream order ${upstreamId} carries downstream_order_no ${otherNo}, not ${shopNo}`));
    expect(await getOrder(t.app.http, shopNo)).toMatchObject({ status: 'rejected', anomaly: null });
  });
});

// ------------------------------------------------------------------------------------ a receiver

interface Received {
  raw: string;
  json: SandboxCallbackBody;
  headers: http.IncomingHttpHeaders;
}

async function startReceiver(respond: (index: number) => { status: number; body: string }) {
  const received: Received[] = [];
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const raw = Buffer.concat(chunks).toString('utf8');
      const a = respond(received.length);
      received.push({ raw, json: JSON.parse(raw) as SandboxCallbackBody, headers: req.headers });
      res.writeHead(a.status, { 'content-type': 'application/json' });
      res.end(a.body);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
  return {
    received,
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    stop: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
