/**
 * Behaviour of a real Dujiao-Next server that the relay meets under its profile (the sandbox's
 * `dujiao-next` profile reproduces each):
 * - a manual product whose form has no fields is ordered with no form data; a key the form lacks is
 *   refused before anything is sent (Dujiao-Next refuses it: "manual form field invalid");
 * - the wallet answers 502 upstream_auth_failed when the upstream refuses our credentials: a wrong
 *   secret (401 invalid_signature) or a disabled API user (403 user_disabled);
 * - a `payment_failed` refusal names the order the upstream created and canceled: it is recorded on
 *   the rejected attempt's event, so that an operator sees what the upstream kept;
 * - an order detail carries `refund_records`: the order response shows them.
 */
import { useAppSuite } from './support/app-suite.js';
import { freePort } from './support/child-app.js';
import { startTestApp } from './support/test-app.js';

describe('a real Dujiao-Next catalog and wallet (profile dujiao-next)', () => {
  const env = { UPSTREAM_PROFILE: 'dujiao-next' };
  const t = useAppSuite({
    sandbox: { profile: 'dujiao-next', catalog: { products: 2 } },
    prepare: (sandbox) => {
      sandbox.catalog.addProduct({
        fulfillmentType: 'manual',
        manualFormSchema: { fields: [] },
        skus: [{ skuCode: 'M-NOFIELDS', price: '5.00' }],
      });
      sandbox.catalog.addProduct({
        fulfillmentType: 'manual',
        manualFormSchema: {
          fields: [
            { key: 'account', type: 'text', required: true },
            { key: 'note', type: 'text', required: false },
          ],
        },
        skus: [{ skuCode: 'M-ACCOUNT', price: '6.00' }],
      });
      sandbox.catalog.addProduct({ skus: [{ skuCode: 'A-PAY', price: '7.00' }] });
    },
    env: async () => ({ ...env, PORT: String(await freePort()) }),
    seed: true,
  });

  afterEach(() => {
    t.sandbox.faults.reset();
    t.sandbox.userDisabled = false;
  });

  describe('manual forms', () => {
    it('a product whose form has no fields is ordered with no form data', async () => {
      const r = await t.app.http.post('/internal/orders', { shop_order_no: 'MF-1', sku_code: 'M-NOFIELDS', quantity: 1 });
      expect(r.status).toBe(201);
      const upstream = t.sandbox.orders().find((o) => o.downstream_order_no === 'MF-1');
      expect(upstream).toBeDefined();
      expect(upstream?.manual_form_data ?? {}).toEqual({});
    });

    it('a key the form does not have is refused before anything is sent', async () => {
      const creates = t.sandbox.stats.createsReceived;
      const noFields = await t.app.http.post('/internal/orders', {
        shop_order_no: 'MF-2',
        sku_code: 'M-NOFIELDS',
        quantity: 1,
        manual_form_data: { server: 'asia' },
      });
      expect(noFields.status).toBe(400);
      expect(noFields.data).toMatchObject({ error_code: 'bad_request', fields: { 'manual_form_data.server': [expect.any(String)] } });
      const stray = await t.app.http.post('/internal/orders', {
        shop_order_no: 'MF-3',
        sku_code: 'M-ACCOUNT',
        quantity: 1,
        manual_form_data: { account: 'p-1', server: 'asia' },
      });
      expect(stray.status).toBe(400);
      expect(stray.data).toMatchObject({ error_code: 'bad_request', fields: { 'manual_form_data.server': [expect.any(String)] } });
      expect(t.sandbox.stats.createsReceived).toBe(creates);
      expect((await t.app.http.get('/internal/orders/MF-2')).status).toBe(404);
    });

    it('a required field is still required; the optional one may be left out', async () => {
      const missing = await t.app.http.post('/internal/orders', { shop_order_no: 'MF-4', sku_code: 'M-ACCOUNT', quantity: 1 });
      expect(missing.status).toBe(400);
      expect(missing.data).toMatchObject({ error_code: 'manual_form_required', fields: { 'manual_form_data.account': ['required'] } });
      const ok = await t.app.http.post('/internal/orders', {
        shop_order_no: 'MF-5',
        sku_code: 'M-ACCOUNT',
        quantity: 1,
        manual_form_data: { account: 'p-1' },
      });
      expect(ok.status).toBe(201);
      expect(t.sandbox.orders().find((o) => o.downstream_order_no === 'MF-5')?.manual_form_data).toEqual({ account: 'p-1' });
    });
  });

  describe('the wallet when the upstream refuses our credentials', () => {
    it('a disabled API user (403 user_disabled): 502 upstream_auth_failed', async () => {
      expect((await t.app.http.get('/internal/wallet')).status).toBe(200);
      t.sandbox.userDisabled = true;
      const r = await t.app.http.get('/internal/wallet');
      expect(r.status).toBe(502);
      expect(r.data).toMatchObject({ ok: false, error_code: 'upstream_auth_failed' });
      expect(r.data.error_message).toContain('user_disabled');
    });

    it('a wrong secret (401 invalid_signature): 502 upstream_auth_failed', async () => {
      const wrong = await startTestApp(
        t.db,
        t.sandbox,
        { ...env, UPSTREAM_API_SECRET: 'not-the-secret', PORT: String(await freePort()) },
        { workers: false },
      );
      try {
        const r = await wrong.http.get('/internal/wallet');
        expect(r.status).toBe(502);
        expect(r.data).toMatchObject({ ok: false, error_code: 'upstream_auth_failed' });
        expect(r.data.error_message).toContain('invalid_signature');
      } finally {
        await wrong.close();
      }
    });
  });

  it('payment_failed names the canceled upstream order: recorded on the rejected attempt', async () => {
    t.sandbox.faults.set({ rules: [{ operation: 'createOrder', kind: 'payment_failed', times: 1 }] });
    const r = await t.app.http.post('/internal/orders', { shop_order_no: 'PF-1', sku_code: 'A-PAY', quantity: 1 });
    expect(r.status).toBe(402);
    expect(r.data).toMatchObject({ error_code: 'payment_failed', order: { status: 'rejected', refund_state: 'refundable' } });
    const canceled = t.sandbox.orders().find((o) => o.downstream_order_no === 'PF-1');
    expect(canceled?.status).toBe('canceled');
    const [attempt] = await t.db.query<{ upstream_order_id: string | number | null }>(
      'SELECT a.upstream_order_id FROM order_attempts a JOIN orders o ON o.id = a.order_id WHERE o.shop_order_no = $1',
      ['PF-1'],
    );
    expect(Number(attempt.upstream_order_id)).toBe(canceled?.id);
    const { events } = (await t.app.http.get('/internal/orders/PF-1/events')).data as {
      events: Array<{ to: string | null; detail: Record<string, unknown> | null }>;
    };
    expect(events.find((e) => e.to === 'rejected')?.detail).toMatchObject({
      error_code: 'payment_failed',
      upstream_order_id: canceled?.id,
    });
  });

  it('refund_records of the upstream order detail appear in the order response', async () => {
    const r = await t.app.http.post('/internal/orders', { shop_order_no: 'RR-1', sku_code: 'A-PAY', quantity: 2 });
    expect(r.status).toBe(201);
    const id = r.data.order.upstream_order_id as number;
    expect(r.data.order.refund_records).toEqual([]);
    await t.sandbox.waitForOrderStatus(id, 'delivered', 10_000);
    t.sandbox.refundOrder(id, '3.50');
    const refreshed = (await t.app.http.post('/internal/orders/RR-1/refresh', {})).data.order;
    expect(refreshed).toMatchObject({
      status: 'partially_refunded',
      refunded_amount: '3.50',
      refund_state: 'refundable',
      refundable_amount: '3.50',
    });
    expect(refreshed.refund_records).toEqual([
      { upstream_order_id: id, type: 'wallet', amount: '3.50', currency: 'CNY', remark: null, created_at: expect.stringMatching(/Z$/) },
    ]);
    expect((await t.app.http.get('/internal/orders/RR-1')).data.order.refund_records).toHaveLength(1);
  });
});
