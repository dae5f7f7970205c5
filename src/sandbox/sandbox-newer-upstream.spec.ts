/**
 * Newer Dujiao-Next behaviour of the catalog (CONTRACT §4, last bullet) and of a repeated
 * `downstream_order_no`, by profile.
 */
import { signedRequest, type RawResponse, type SignedRequestOptions } from './sandbox-request.js';
import { SandboxServer } from './sandbox.server.js';
import type { SandboxCreatedOrder, SandboxOrderDetail, SandboxProduct, SandboxProductPage } from './sandbox.types.js';

describe('newer upstream behaviour', () => {
  let dj: SandboxServer;
  let spec: SandboxServer;
  const api = (s: SandboxServer, method: string, path: string, opts?: SignedRequestOptions): Promise<RawResponse> =>
    signedRequest(s.credentials, method, path, opts);
  const listAll = async (s: SandboxServer, query: Record<string, string | number>): Promise<SandboxProductPage> =>
    (await api(s, 'GET', '/products', { query: { page_size: 50, ...query } })).json as SandboxProductPage;

  beforeAll(async () => {
    dj = new SandboxServer({ profile: 'dujiao-next', catalog: { products: 8 }, timetable: { fulfillingMs: 0, deliveredMs: 0 } });
    spec = new SandboxServer({ profile: 'spec', catalog: { products: 8 } });
    await Promise.all([dj.start(), spec.start()]);
  });
  afterAll(() => Promise.all([dj.stop(), spec.stop()]));
  beforeEach(() => {
    dj.reset();
    spec.reset();
  });

  describe('GET /products?include_inactive=true', () => {
    it('dujiao-next: lists delisted products too, with is_active false, in listing order, and echoes includes_inactive', async () => {
      dj.catalog.delistProduct(3);
      dj.catalog.deleteProduct(5);
      const all = await listAll(dj, { include_inactive: 'true' });
      expect(all).toMatchObject({ ok: true, total: 7, includes_inactive: true });
      expect(all.items.map((p) => [p.id, p.is_active])).toEqual([
        [1, true],
        [2, true],
        [3, false],
        [4, true],
        [6, true],
        [7, true],
        [8, true],
      ]);
      // without it (or with anything but `true`): as before, and the echo says so
      for (const query of [{}, { include_inactive: '1' }] as Record<string, string>[]) {
        const listed = await listAll(dj, query);
        expect(listed).toMatchObject({ total: 6, includes_inactive: false });
        expect(listed.items.map((p) => p.id)).toEqual([1, 2, 4, 6, 7, 8]);
      }
    });

    it('dujiao-next: the updated_after filter applies to the inactive products too', async () => {
      const since = new Date(Date.now() - 1000).toISOString();
      dj.catalog.delistProduct(2);
      const changed = await listAll(dj, { include_inactive: 'true', updated_after: since });
      expect(changed.items.map((p) => [p.id, p.is_active])).toEqual([[2, false]]);
    });

    it('spec: the parameter is ignored and nothing is echoed', async () => {
      spec.catalog.delistProduct(3);
      const page = await listAll(spec, { include_inactive: 'true' });
      expect(page.total).toBe(7);
      expect(page.items.map((p) => p.id)).not.toContain(3);
      expect(page).not.toHaveProperty('includes_inactive');
    });
  });

  describe('GET /products/{id} of a withdrawn product', () => {
    it('dujiao-next: 200 with is_active false; 404 product_not_found once deleted', async () => {
      dj.catalog.delistProduct(3);
      const withdrawn = await api(dj, 'GET', '/products/3');
      expect(withdrawn.status).toBe(200);
      expect((withdrawn.json as { product: SandboxProduct }).product).toMatchObject({ id: 3, is_active: false });
      dj.catalog.deleteProduct(3);
      const gone = await api(dj, 'GET', '/products/3');
      expect(gone.status).toBe(404);
      expect(gone.json).toMatchObject({ ok: false, error_code: 'product_not_found' });
    });

    it("dujiao-next: a withdrawn product still cannot be ordered (400 product_unavailable); a deleted one's SKU is unknown", async () => {
      const sku = dj.catalog.findSku({ fulfillmentType: 'auto', stockStatus: 'unlimited' })!;
      dj.catalog.delistProduct(sku.product.id);
      const refused = await api(dj, 'POST', '/orders', { body: { sku_id: sku.sku.id, quantity: 1 } });
      expect(refused.json).toMatchObject({ ok: false, error_code: 'product_unavailable' });
      dj.catalog.deleteProduct(sku.product.id);
      const unknown = await api(dj, 'POST', '/orders', { body: { sku_id: sku.sku.id, quantity: 1 } });
      expect(unknown.json).toMatchObject({ ok: false, error_code: 'sku_unavailable' });
      expect(dj.catalog.getSku(sku.sku.sku_code)).toBeUndefined();
    });

    it('spec: 404 product_unavailable, as before', async () => {
      spec.catalog.delistProduct(3);
      const r = await api(spec, 'GET', '/products/3');
      expect(r.status).toBe(404);
      expect(r.json).toMatchObject({ ok: false, error_code: 'product_unavailable' });
    });

    it('the options override the profile', () => {
      expect(new SandboxServer({ profile: 'spec', listsInactiveProducts: true, servesWithdrawnProducts: true }).config).toMatchObject({
        listsInactiveProducts: true,
        servesWithdrawnProducts: true,
      });
      expect(
        new SandboxServer({ profile: 'dujiao-next', listsInactiveProducts: false, servesWithdrawnProducts: false }).config,
      ).toMatchObject({
        listsInactiveProducts: false,
        servesWithdrawnProducts: false,
      });
    });
  });

  describe('a repeated downstream_order_no (dedupeDownstreamOrderNo)', () => {
    it('is answered with the existing order as it is now: its current status, no fulfillment, nothing charged again', async () => {
      const sku = spec.catalog.findSku({ fulfillmentType: 'auto', stockStatus: 'unlimited' })!.sku;
      spec.setTimetable({ paidMs: null });
      const first = (await api(spec, 'POST', '/orders', { body: { sku_id: sku.id, quantity: 1, downstream_order_no: 'DUP-1' } }))
        .json as SandboxCreatedOrder;
      expect(first.status).toBe('pending_payment');
      const balance = spec.walletBalance();
      spec.setOrderStatus(first.order_id, 'fulfilling');
      const again = await api(spec, 'POST', '/orders', { body: { sku_id: sku.id, quantity: 1, downstream_order_no: 'DUP-1' } });
      expect(again.json).toEqual({
        ok: true,
        order_id: first.order_id,
        order_no: first.order_no,
        status: 'fulfilling',
        amount: first.amount,
        currency: first.currency,
      });
      expect(spec.orders()).toHaveLength(1);
      expect(spec.walletBalance()).toBe(balance);
    });

    it('dujiao-next: an auto order the sandbox already delivered is answered delivered, without its fulfillment', async () => {
      const sku = dj.catalog.findSku({ fulfillmentType: 'auto', stockStatus: 'unlimited' })!.sku;
      const first = (await api(dj, 'POST', '/orders', { body: { sku_id: sku.id, quantity: 2, downstream_order_no: 'DUP-DJ' } }))
        .json as SandboxCreatedOrder;
      expect(first.status).toBe('paid');
      await dj.waitForOrderStatus(first.order_id, 'delivered');
      const again = (await api(dj, 'POST', '/orders', { body: { sku_id: sku.id, quantity: 2, downstream_order_no: 'DUP-DJ' } }))
        .json as Record<string, unknown>;
      expect(again).toMatchObject({ ok: true, order_id: first.order_id, status: 'delivered' });
      expect(again).not.toHaveProperty('fulfillment');
      // the items are read with GET /orders/{id}
      const detail = (await api(dj, 'GET', `/orders/${first.order_id}`)).json as SandboxOrderDetail;
      expect(detail.fulfillment?.payload.split('\n')).toHaveLength(2);
      expect(dj.orders()).toHaveLength(1);
    });
  });
  describe('refund_records on GET /orders/{id}', () => {
    it('dujiao-next: an empty list before any refund, then each refund (oldest first) as Dujiao-Next lists it', async () => {
      const sku = dj.catalog.findSku({ fulfillmentType: 'auto' })!.sku;
      const created = (await api(dj, 'POST', '/orders', { body: { sku_id: sku.id, quantity: 2 } })).json as SandboxCreatedOrder;
      const read = async () => (await api(dj, 'GET', `/orders/${created.order_id}`)).json as SandboxOrderDetail;
      expect((await read()).refund_records).toEqual([]);
      const half = (Number(created.amount) / 2).toFixed(2);
      dj.refundOrder(created.order_id, half);
      dj.refundOrder(created.order_id);
      const d = await read();
      expect(d).toMatchObject({ status: 'refunded', refunded_amount: created.amount });
      expect(d.refund_records).toEqual([
        {
          id: 1,
          user_id: 1,
          guest_email: '',
          order_id: created.order_id,
          type: 'wallet',
          amount: half,
          currency: 'CNY',
          remark: '',
          created_at: expect.any(String),
          updated_at: expect.any(String),
        },
        {
          id: 2,
          user_id: 1,
          guest_email: '',
          order_id: created.order_id,
          type: 'wallet',
          amount: (Number(created.amount) - Number(half)).toFixed(2),
          currency: 'CNY',
          remark: '',
          created_at: expect.any(String),
          updated_at: expect.any(String),
        },
      ]);
      for (const r of d.refund_records!) expect(new Date(r.created_at).toISOString()).toBe(r.created_at);
    });

    it('spec: not carried', async () => {
      const sku = spec.catalog.findSku({ fulfillmentType: 'auto' })!.sku;
      const created = (await api(spec, 'POST', '/orders', { body: { sku_id: sku.id, quantity: 1 } })).json as SandboxCreatedOrder;
      spec.setOrderStatus(created.order_id, 'paid');
      spec.refundOrder(created.order_id);
      const d = (await api(spec, 'GET', `/orders/${created.order_id}`)).json as SandboxOrderDetail;
      expect(d.status).toBe('refunded');
      expect(d).not.toHaveProperty('refund_records');
    });
  });
});
