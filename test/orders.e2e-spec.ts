/**
 * Placing orders (CONTRACT §5) against the sandbox upstream: the checks before sending, each outcome
 * class of the create call from its fault, idempotency, concurrent identical requests, following an
 * order to delivery by polling, the operator's resolve of an unknown outcome, and the lists.
 */
import axios from 'axios';
import { Metrics } from '../src/ops/metrics.service.js';
import { UNFINISHED } from '../src/orders/order-state.js';
import type { SandboxServer } from '../src/sandbox/sandbox.server.js';
import type { SandboxRequestEvent } from '../src/sandbox/sandbox.types.js';
import { getOrder, seedCatalog, waitFor, waitForOrder, type OrderView } from './support/child-app.js';
import { useAppSuite } from './support/app-suite.js';
import { openTestDatabase, startSandbox, startTestApp, type TestApp, type TestDatabase } from './support/test-app.js';

describe('orders: placing and following', () => {
  let db: TestDatabase;
  let sandbox: SandboxServer;
  let app: TestApp;
  let n = 0;
  const no = (tag: string) => `${tag}-${++n}`;

  beforeAll(async () => {
    db = await openTestDatabase();
    sandbox = await startSandbox({
      catalog: { products: 3 },
      timetable: { paidMs: 30, fulfillingMs: 60, deliveredMs: 100, completedMs: null },
      // the operator's resolve by upstream order id (below) is proven by the order's
      // downstream_order_no, which the real upstream's GET /orders/{id} does not show (against it:
      // test/sandbox-fidelity.e2e-spec.ts): an upstream that shows it
      orderDetailShowsDownstreamNo: true,
    });
    sandbox.catalog.addProduct({ skus: [{ skuCode: 'T-AUTO', price: '10.00' }] });
    sandbox.catalog.addProduct({ skus: [{ skuCode: 'T-PRICE', price: '10.00' }] });
    sandbox.catalog.addProduct({ skus: [{ skuCode: 'T-GONE', price: '10.00' }] });
    sandbox.catalog.addProduct({ skus: [{ skuCode: 'T-REPLAY', price: '10.00' }] });
    sandbox.catalog.addProduct({ skus: [{ skuCode: 'T-OFF', price: '10.00', isActive: false }] });
    sandbox.catalog.addProduct({ skus: [{ skuCode: 'T-STOCK', price: '10.00' }] });
    sandbox.catalog.addProduct({
      skus: [
        { skuCode: 'T-PAIR-KEPT', price: '4.00' },
        { skuCode: 'T-PAIR-GONE', price: '5.00' },
      ],
    });
    sandbox.catalog.addProduct({
      fulfillmentType: 'manual',
      manualFormSchema: { fields: [{ key: 'account', type: 'text', required: true }] },
      skus: [{ skuCode: 'T-MANUAL', price: '3.00' }],
    });
    app = await startTestApp(db, sandbox, {
      ORDER_POLL_BASE_MS: '50',
      ORDER_POLL_MAX_MS: '200',
      UPSTREAM_TIMEOUT_MS: '800',
      ORDER_MAX_QUANTITY: '50',
      STUCK_ORDER_ALERT_S: '2',
    });
    await seedCatalog(app.http);
  });

  afterEach(() => {
    sandbox.faults.reset();
  });

  afterAll(async () => {
    await app?.close();
    await sandbox?.stop();
    await db?.close();
  });

  const place = (body: Record<string, unknown>) => app.http.post('/internal/orders', body);

  it('places an order (201) and follows it by polling to delivered, items split per line', async () => {
    const shopNo = no('OK');
    const r = await place({ shop_order_no: shopNo, sku_code: 'T-AUTO', quantity: 3 });
    expect(r.status).toBe(201);
    const order = (r.data as { order: OrderView }).order;
    expect(order).toMatchObject({
      shop_order_no: shopNo,
      sku_code: 'T-AUTO',
      quantity: 3,
      attempt: 1,
      downstream_order_no: shopNo,
      amount: '30.00',
      currency: 'CNY',
    });
    expect(order.upstream_order_id).toEqual(expect.any(Number));
    expect(['pending_payment', 'paid', 'fulfilling']).toContain(order.status);

    const done = await waitForOrder(app.http, shopNo, (o) => o.status === 'delivered');
    const upstream = sandbox.order(done.upstream_order_id as number)!;
    expect(upstream.downstream_order_no).toBe(shopNo);
    expect(done.items).toEqual(upstream.payload!.split(/\r?\n/).filter((l) => l.trim() !== ''));
    expect(done.items).toHaveLength(3);
    expect(done.fulfillment).toMatchObject({ type: 'auto', status: 'delivered', delivered_at: expect.any(String) });
    expect(done.refund_state).toBe('not_refundable');

    const events = (await app.http.get(`/internal/orders/${shopNo}/events`)).data as {
      events: Array<{ source: string; from: string | null; to: string | null }>;
    };
    expect(events.events[0]).toMatchObject({ source: 'api', from: null, to: 'submitting' });
    expect(events.events[1]).toMatchObject({ source: 'api', from: 'submitting' });
    expect(events.events.at(-1)).toMatchObject({ to: 'delivered' });
    expect(events.events.some((e) => e.source === 'poll')).toBe(true);
  });

  it('answers the same key and body with the recorded order (200), another body with 409, never a second create', async () => {
    const shopNo = no('IDEM');
    const first = await place({ shop_order_no: shopNo, sku_code: 'T-AUTO', quantity: 1 });
    expect(first.status).toBe(201);
    const creates = sandbox.stats.createsReceived;
    const again = await place({ shop_order_no: shopNo, sku_code: 'T-AUTO', quantity: 1, trace_id: 'another-trace' });
    expect(again.status).toBe(200);
    expect((again.data as { order: OrderView }).order.upstream_order_id).toBe((first.data as { order: OrderView }).order.upstream_order_id);
    const other = await place({ shop_order_no: shopNo, sku_code: 'T-AUTO', quantity: 2 });
    expect(other.status).toBe(409);
    expect(other.data).toMatchObject({ ok: false, error_code: 'idempotency_conflict' });
    expect(sandbox.stats.createsReceived).toBe(creates);
  });

  it('a replay is answered from the record whatever the catalog and the upstream say now; another body is still 409', async () => {
    const shopNo = no('REPLAY');
    const first = await place({ shop_order_no: shopNo, sku_code: 'T-REPLAY', quantity: 1 });
    expect(first.status).toBe(201);
    const recorded = (first.data as { order: OrderView }).order;
    const creates = sandbox.stats.createsReceived;
    // the price went up (a new order would be 409 price_changed) and the product cannot be read (503)
    sandbox.catalog.setPrice('T-REPLAY', '12.00');
    for (const faults of [{}, { rules: [{ operation: 'product' as const, kind: 'error_before' as const, status: 503 }] }]) {
      sandbox.faults.set(faults);
      const again = await place({ shop_order_no: shopNo, sku_code: 'T-REPLAY', quantity: 1 });
      expect({ status: again.status, id: (again.data as { order: OrderView }).order.upstream_order_id }).toEqual({
        status: 200,
        id: recorded.upstream_order_id,
      });
      const other = await place({ shop_order_no: shopNo, sku_code: 'T-REPLAY', quantity: 2 });
      expect({ status: other.status, code: (other.data as { error_code: string }).error_code }).toEqual({
        status: 409,
        code: 'idempotency_conflict',
      });
    }
    // a recorded number with a sku_code the catalog does not have: the record's body differs (409), not 404
    const unknownSku = await place({ shop_order_no: shopNo, sku_code: 'NO-SUCH-SKU', quantity: 1 });
    expect({ status: unknownSku.status, code: (unknownSku.data as { error_code: string }).error_code }).toEqual({
      status: 409,
      code: 'idempotency_conflict',
    });
    expect(sandbox.stats.createsReceived).toBe(creates);
  });

  it('20 concurrent identical requests place exactly one upstream order', async () => {
    const shopNo = no('RACE');
    sandbox.faults.set({ latencyMs: 100 });
    const creates = sandbox.stats.createsReceived;
    const answers = await Promise.all(Array.from({ length: 20 }, () => place({ shop_order_no: shopNo, sku_code: 'T-AUTO', quantity: 1 })));
    expect(sandbox.stats.createsReceived - creates).toBe(1);
    expect(answers.map((a) => a.status).filter((s) => s === 201)).toHaveLength(1);
    for (const a of answers) expect([200, 201]).toContain(a.status);
    const ids = new Set(answers.map((a) => (a.data as { order: OrderView }).order.upstream_order_id));
    expect(ids.size).toBe(1);
    expect(sandbox.orders().filter((o) => o.downstream_order_no === shopNo)).toHaveLength(1);
  });

  it("the price guard's fresh read of a product that lost a SKU unlists that SKU and places the order", async () => {
    const sku = async (code: string) =>
      ((await app.http.get(`/internal/catalog/skus/${code}`)).data as { sku: { listed: boolean; available: boolean } }).sku;
    expect(await sku('T-PAIR-GONE')).toMatchObject({ listed: true });
    sandbox.catalog.removeSku('T-PAIR-GONE');
    const r = await place({ shop_order_no: no('PAIR'), sku_code: 'T-PAIR-KEPT', quantity: 1 });
    expect(r.status).toBe(201);
    expect(await sku('T-PAIR-GONE')).toMatchObject({ listed: false, available: false });
    expect(await sku('T-PAIR-KEPT')).toMatchObject({ listed: true, available: true });
    const gone = await place({ shop_order_no: no('PAIR'), sku_code: 'T-PAIR-GONE', quantity: 1 });
    expect(gone.status).toBe(409);
    expect(gone.data).toMatchObject({ error_code: 'sku_unavailable' });
  });

  it('records what the upstream charged; a charge above quantity × the checked unit price is counted', async () => {
    const overcharges = app.relay.app.get(Metrics).overcharges;
    const before = (await overcharges.get()).values[0]?.value ?? 0;
    // the same counter as GET /metrics shows it, asked without a token
    const scraped = async (): Promise<number> => {
      const r = await axios.get(`${app.url}/metrics`, { validateStatus: () => true, responseType: 'text' });
      expect(r.status).toBe(200);
      const m = /^relay_order_overcharge_total\{supplier="main"\} (\S+)$/m.exec(r.data as string);
      expect(m).not.toBeNull();
      return Number(m![1]);
    };
    const scrapedBefore = await scraped();
    expect(scrapedBefore).toBe(before);
    sandbox.faults.set({ latencyMs: 50 });
    const raise = (e: SandboxRequestEvent) => {
      if (e.operation === 'createOrder' && e.phase === 'received') sandbox.catalog.setPrice('T-AUTO', '11.00');
    };
    sandbox.events.on('request', raise);
    try {
      const r = await place({ shop_order_no: no('OVER'), sku_code: 'T-AUTO', quantity: 2 });
      expect(r.status).toBe(201);
      expect((r.data as { order: OrderView }).order.amount).toBe('22.00');
    } finally {
      sandbox.events.off('request', raise);
      sandbox.catalog.setPrice('T-AUTO', '10.00');
    }
    expect((await overcharges.get()).values[0]?.value ?? 0).toBe(before + 1);
    expect(await scraped()).toBe(scrapedBefore + 1);
  });

  it('trace_id: sent upstream as given (up to 128 characters); one is generated when absent', async () => {
    const given = `trace-${'x'.repeat(122)}`;
    expect(given).toHaveLength(128);
    const withTrace = no('TRACE');
    const r = await place({ shop_order_no: withTrace, sku_code: 'T-AUTO', quantity: 1, trace_id: given });
    expect(r.status).toBe(201);
    const sent = sandbox.order((r.data as { order: OrderView }).order.upstream_order_id as number)!;
    expect(sent).toMatchObject({ downstream_order_no: withTrace, trace_id: given });

    const withoutTrace = no('NOTRACE');
    const generated = await place({ shop_order_no: withoutTrace, sku_code: 'T-AUTO', quantity: 1 });
    expect(generated.status).toBe(201);
    const upstream = sandbox.order((generated.data as { order: OrderView }).order.upstream_order_id as number)!;
    expect(upstream.downstream_order_no).toBe(withoutTrace);
    expect(typeof upstream.trace_id).toBe('string');
    expect((upstream.trace_id ?? '').trim()).not.toBe('');
    expect(upstream.trace_id).not.toBe(given);
  });

  it('never loses a delivered item: a later report that lacks some adds its new ones to those stored', async () => {
    const shopNo = no('KEEP');
    const r = await place({ shop_order_no: shopNo, sku_code: 'T-MANUAL', quantity: 2, manual_form_data: { account: 'a-1' } });
    expect(r.status).toBe(201);
    const id = (r.data as { order: OrderView }).order.upstream_order_id as number;
    await waitFor(
      () => Promise.resolve(sandbox.order(id)?.status),
      (s) => s === 'fulfilling',
      'the manual order waiting',
    );
    sandbox.deliverManual(id, 'K-1\nK-2');
    await waitForOrder(app.http, shopNo, (o) => o.status === 'delivered');
    expect((await getOrder(app.http, shopNo))?.items).toEqual(['K-1', 'K-2']);
    // a later report with an empty payload (read by an operator's refresh: delivered is not polled): the items stay
    sandbox.setOrderStatus(id, 'completed', { payload: '' });
    expect((await app.http.post(`/internal/orders/${shopNo}/refresh`)).status).toBe(200);
    expect(await getOrder(app.http, shopNo)).toMatchObject({ status: 'completed', items: ['K-1', 'K-2'] });
    // one that lacks K-1 but brings K-3: both kept
    sandbox.setOrderStatus(id, 'completed', { payload: 'K-2\r\nK-3' });
    expect((await app.http.post(`/internal/orders/${shopNo}/refresh`)).status).toBe(200);
    expect((await getOrder(app.http, shopNo))?.items).toEqual(['K-1', 'K-2', 'K-3']);
  });

  describe('checks before sending: nothing recorded, nothing sent', () => {
    const expectNothing = async (shopNo: string, creates: number) => {
      expect(await getOrder(app.http, shopNo)).toBeNull();
      expect(sandbox.stats.createsReceived).toBe(creates);
    };

    it('400 bad_request with the fields at fault', async () => {
      const creates = sandbox.stats.createsReceived;
      const bad = await place({ shop_order_no: 'bad no!', sku_code: 'T-AUTO', quantity: 0, max_unit_cost: 'ten' });
      expect(bad.status).toBe(400);
      expect(bad.data).toMatchObject({ ok: false, error_code: 'bad_request' });
      expect(Object.keys((bad.data as { fields: object }).fields).sort()).toEqual(['max_unit_cost', 'quantity', 'shop_order_no']);
      const tooMany = await place({ shop_order_no: no('MAXQ'), sku_code: 'T-AUTO', quantity: 51 });
      expect(tooMany.status).toBe(400);
      expect((tooMany.data as { fields: object }).fields).toHaveProperty('quantity');
      const notJson = await app.http.post('/internal/orders', '{"shop_order_no":', { headers: { 'content-type': 'application/json' } });
      expect(notJson.status).toBe(400);
      expect(notJson.data).toMatchObject({ ok: false, error_code: 'bad_request' });
      expect(sandbox.stats.createsReceived).toBe(creates);
    });

    it('404 sku_not_found, 409 sku_unavailable (locally, and gone on the fresh read), 400 manual_form_required', async () => {
      const creates = sandbox.stats.createsReceived;
      let shopNo = no('CHK');
      const unknown = await place({ shop_order_no: shopNo, sku_code: 'NO-SUCH-SKU', quantity: 1 });
      expect(unknown.status).toBe(404);
      expect(unknown.data).toMatchObject({ error_code: 'sku_not_found' });
      await expectNothing(shopNo, creates);

      shopNo = no('CHK');
      const off = await place({ shop_order_no: shopNo, sku_code: 'T-OFF', quantity: 1 });
      expect(off.status).toBe(409);
      expect(off.data).toMatchObject({ error_code: 'sku_unavailable' });
      await expectNothing(shopNo, creates);

      shopNo = no('CHK');
      sandbox.catalog.delistProduct(sandbox.catalog.getSku('T-GONE')!.product.id);
      const gone = await place({ shop_order_no: shopNo, sku_code: 'T-GONE', quantity: 1 });
      expect(gone.status).toBe(409);
      expect(gone.data).toMatchObject({ error_code: 'sku_unavailable' });
      await expectNothing(shopNo, creates);

      shopNo = no('CHK');
      const manual = await place({ shop_order_no: shopNo, sku_code: 'T-MANUAL', quantity: 1 });
      expect(manual.status).toBe(400);
      expect(manual.data).toMatchObject({ error_code: 'manual_form_required' });
      await expectNothing(shopNo, creates);
      const manualOk = await place({ shop_order_no: shopNo, sku_code: 'T-MANUAL', quantity: 1, manual_form_data: { account: 'player-1' } });
      expect(manualOk.status).toBe(201);
      expect(sandbox.order((manualOk.data as { order: OrderView }).order.upstream_order_id as number)?.manual_form_data).toEqual({
        account: 'player-1',
      });
    });

    it('400 bad_request for a trace_id over 128 characters', async () => {
      const creates = sandbox.stats.createsReceived;
      const shopNo = no('LONGTRACE');
      const r = await place({ shop_order_no: shopNo, sku_code: 'T-AUTO', quantity: 1, trace_id: 't'.repeat(129) });
      expect(r.status).toBe(400);
      expect(r.data).toMatchObject({ ok: false, error_code: 'bad_request' });
      expect(Object.keys((r.data as { fields: object }).fields)).toEqual(['trace_id']);
      const missing = await app.http.get(`/internal/orders/${shopNo}`);
      expect(missing.status).toBe(404);
      expect(missing.data).toMatchObject({ ok: false, error_code: 'order_not_found' });
      await expectNothing(shopNo, creates);
    });

    it('409 sku_unavailable when the SKU is out of stock locally, before the fresh read', async () => {
      sandbox.catalog.setStock('T-STOCK', 'out_of_stock');
      try {
        await seedCatalog(app.http);
        const local = (await app.http.get('/internal/catalog/skus/T-STOCK')).data as { sku: Record<string, unknown> };
        expect(local.sku).toMatchObject({ stock_status: 'out_of_stock', listed: true, available: false });
        const creates = sandbox.stats.createsReceived;
        const reads = sandbox.stats.requests.product;
        // a fresh read would fail (503): the local check answers first
        sandbox.faults.set({ rules: [{ operation: 'product', kind: 'error_before', status: 503 }] });
        const shopNo = no('NOSTOCK');
        const r = await place({ shop_order_no: shopNo, sku_code: 'T-STOCK', quantity: 1 });
        expect(r.status).toBe(409);
        expect(r.data).toMatchObject({ ok: false, error_code: 'sku_unavailable' });
        expect(sandbox.stats.requests.product).toBe(reads);
        await expectNothing(shopNo, creates);
        expect(sandbox.orders().filter((o) => o.sku_code === 'T-STOCK')).toHaveLength(0);
      } finally {
        sandbox.catalog.setStock('T-STOCK', 'unlimited');
      }
    });

    it('409 price_changed when the fresh price is above the ceiling (default: the sale price before the read)', async () => {
      const creates = sandbox.stats.createsReceived;
      sandbox.catalog.setPrice('T-PRICE', '12.00');
      const shopNo = no('PRICE');
      const r = await place({ shop_order_no: shopNo, sku_code: 'T-PRICE', quantity: 1 });
      expect(r.status).toBe(409);
      expect(r.data).toMatchObject({ error_code: 'price_changed' });
      await expectNothing(shopNo, creates);
      const low = await place({ shop_order_no: shopNo, sku_code: 'T-PRICE', quantity: 1, max_unit_cost: '11.99' });
      expect(low.status).toBe(409);
      const ok = await place({ shop_order_no: shopNo, sku_code: 'T-PRICE', quantity: 1, max_unit_cost: '12.00' });
      expect(ok.status).toBe(201);
      expect((ok.data as { order: OrderView }).order.amount).toBe('12.00');
    });

    it('503 upstream_unavailable when the product cannot be read', async () => {
      const creates = sandbox.stats.createsReceived;
      // (a 429 is no failure of the read: the order is queued, test/orders-429-budget-off.e2e-spec.ts)
      sandbox.faults.set({ rules: [{ operation: 'product', kind: 'error_before', status: 503 }] });
      const shopNo = no('PREAD');
      const r = await place({ shop_order_no: shopNo, sku_code: 'T-AUTO', quantity: 1 });
      expect(r.status).toBe(503);
      expect(r.data).toMatchObject({ error_code: 'upstream_unavailable' });
      await expectNothing(shopNo, creates);
    });
  });

  describe('outcome classes of the create call', () => {
    it('a definitive refusal: rejected with the upstream status and code; the same key then makes attempt 2 as <no>-2', async () => {
      const shopNo = no('REFUSED');
      sandbox.faults.set({
        rules: [{ operation: 'createOrder', kind: 'coded_error', status: 402, errorCode: 'insufficient_balance', times: 1 }],
      });
      const r = await place({ shop_order_no: shopNo, sku_code: 'T-AUTO', quantity: 1 });
      expect(r.status).toBe(402);
      expect(r.data).toMatchObject({
        ok: false,
        error_code: 'insufficient_balance',
        order: { status: 'rejected', attempt: 1, refund_state: 'refundable' },
      });
      const again = await place({ shop_order_no: shopNo, sku_code: 'T-AUTO', quantity: 1 });
      expect(again.status).toBe(201);
      expect((again.data as { order: OrderView }).order).toMatchObject({ attempt: 2, downstream_order_no: `${shopNo}-2` });
      expect(sandbox.orders().filter((o) => o.downstream_order_no?.startsWith(shopNo))).toHaveLength(1);
    });

    it('payment_failed is 402 payment_failed; an upstream 401 is 502 upstream_auth_failed', async () => {
      sandbox.faults.set({ rules: [{ operation: 'createOrder', kind: 'payment_failed', times: 1 }] });
      const paid = await place({ shop_order_no: no('PAYFAIL'), sku_code: 'T-AUTO', quantity: 1 });
      expect(paid.status).toBe(402);
      expect(paid.data).toMatchObject({ error_code: 'payment_failed', order: { status: 'rejected' } });
      sandbox.faults.set({
        rules: [{ operation: 'createOrder', kind: 'coded_error', status: 401, errorCode: 'invalid_signature', times: 1 }],
      });
      const auth = await place({ shop_order_no: no('AUTH'), sku_code: 'T-AUTO', quantity: 1 });
      expect(auth.status).toBe(502);
      expect(auth.data).toMatchObject({ error_code: 'upstream_auth_failed', order: { status: 'rejected' } });
    });

    it('an upstream 403 (a key it does not know, as Dujiao-Next answers it) is 502 upstream_auth_failed too', async () => {
      sandbox.faults.set({
        rules: [{ operation: 'createOrder', kind: 'coded_error', status: 403, errorCode: 'invalid_api_key', times: 1 }],
      });
      const r = await place({ shop_order_no: no('FORBID'), sku_code: 'T-AUTO', quantity: 1 });
      expect(r.status).toBe(502);
      expect(r.data).toMatchObject({ error_code: 'upstream_auth_failed', order: { status: 'rejected' } });
    });

    it.each([
      ['hang_after', {}],
      ['reset_after', {}],
      ['error_after', { status: 502 }],
      ['garbage_after', {}],
    ] as const)('%s: 202 submit_unknown; the upstream has the order', async (kind, extra) => {
      const shopNo = no(`UNK-${kind}`);
      const executed = sandbox.stats.createsExecuted;
      sandbox.faults.set({ rules: [{ operation: 'createOrder', kind, times: 1, ...extra }] });
      const r = await place({ shop_order_no: shopNo, sku_code: 'T-AUTO', quantity: 1 });
      expect(r.status).toBe(202);
      expect(r.data).toMatchObject({ ok: true, order: { status: 'submit_unknown', upstream_order_id: null } });
      expect(sandbox.stats.createsExecuted).toBe(executed + 1);
      // same key: the recorded order, nothing sent again
      const again = await place({ shop_order_no: shopNo, sku_code: 'T-AUTO', quantity: 1 });
      expect(again.status).toBe(200);
      expect(sandbox.stats.createsExecuted).toBe(executed + 1);
      const cancel = await app.http.post(`/internal/orders/${shopNo}/cancel`);
      expect(cancel.status).toBe(409);
      expect(cancel.data).toMatchObject({ error_code: 'outcome_unknown' });
    });

    it('an accepted create with a status we do not know: kept as an anomaly, the order followed until it says a known one', async () => {
      expect((await place({ shop_order_no: no('BEFORE-ODD'), sku_code: 'T-AUTO', quantity: 1 })).status).toBe(201);
      const nextId = Math.max(...sandbox.orders().map((o) => o.id)) + 1;
      const shopNo = no('ODD-STATUS');
      // the upstream does the work and answers with a status outside the documented set
      const body = JSON.stringify({
        ok: true,
        order_id: nextId,
        order_no: `ODD-${nextId}`,
        status: 'on_hold',
        amount: '10.00',
        currency: 'CNY',
      });
      sandbox.faults.set({ rules: [{ operation: 'createOrder', kind: 'garbage_after', body, times: 1 }] });
      const r = await place({ shop_order_no: shopNo, sku_code: 'T-AUTO', quantity: 1 });
      expect(r.status).toBe(201);
      expect(r.data).toMatchObject({ order: { upstream_order_id: nextId, anomaly: 'unknown_status' } });
      expect(sandbox.orders().find((o) => o.id === nextId)?.downstream_order_no).toBe(shopNo);
      // followed by polling like any order the upstream has: the known statuses are applied
      const done = await waitForOrder(app.http, shopNo, (o) => o.status === 'delivered');
      expect(done.items?.length).toBeGreaterThan(0);
      const [{ anomalies }] = await db.query<{ anomalies: number }>(
        'SELECT count(*)::int AS anomalies FROM order_events e JOIN orders o ON o.id = e.order_id WHERE o.shop_order_no = $1 ' +
          "AND e.kind = 'anomaly'",
        [shopNo],
      );
      expect(anomalies).toBe(1);
    });
  });

  describe('operator actions', () => {
    const unknownOrder = async (tag: string) => {
      const shopNo = no(tag);
      sandbox.faults.set({ rules: [{ operation: 'createOrder', kind: 'error_after', status: 503, times: 1 }] });
      const r = await place({ shop_order_no: shopNo, sku_code: 'T-AUTO', quantity: 1 });
      expect(r.status).toBe(202);
      const upstream = sandbox.orders().find((o) => o.downstream_order_no === shopNo)!;
      return { shopNo, upstream };
    };

    it('resolve with the upstream order id: checked against the attempt number, then followed', async () => {
      const { shopNo, upstream } = await unknownOrder('RESOLVE');
      const other = sandbox.orders().find((o) => o.downstream_order_no !== shopNo)!;
      const mismatch = await app.http.post(`/internal/orders/${shopNo}/resolve`, { upstream_order_id: other.id });
      expect(mismatch.status).toBe(409);
      expect(mismatch.data).toMatchObject({ error_code: 'resolve_mismatch' });
      const missing = await app.http.post(`/internal/orders/${shopNo}/resolve`, { upstream_order_id: 99_999_999 });
      expect(missing.status).toBe(409);
      const ok = await app.http.post(`/internal/orders/${shopNo}/resolve`, { upstream_order_id: upstream.id });
      expect(ok.status).toBe(200);
      expect((ok.data as { order: OrderView }).order.upstream_order_id).toBe(upstream.id);
      await waitForOrder(app.http, shopNo, (o) => o.status === 'delivered');
      const again = await app.http.post(`/internal/orders/${shopNo}/resolve`, { upstream_order_id: upstream.id });
      expect(again.status).toBe(409);
      expect(again.data).toMatchObject({ error_code: 'not_unknown' });
      const events = (await app.http.get(`/internal/orders/${shopNo}/events`)).data as {
        events: Array<{ source: string; from: string | null }>;
      };
      expect(events.events.some((e) => e.source === 'operator' && e.from === 'submit_unknown')).toBe(true);
    });

    it('resolve as not placed: rejected (then refundable); a bad body is 400', async () => {
      const { shopNo } = await unknownOrder('NOTPLACED');
      expect((await app.http.post(`/internal/orders/${shopNo}/resolve`, {})).status).toBe(400);
      const r = await app.http.post(`/internal/orders/${shopNo}/resolve`, { not_placed: true, reason: 'checked the supplier console' });
      expect(r.status).toBe(200);
      expect((r.data as { order: OrderView }).order).toMatchObject({
        status: 'rejected',
        error_code: 'not_placed',
        refund_state: 'refundable',
      });
    });

    it('refresh reads the order from the upstream; the wallet comes from ping', async () => {
      const shopNo = no('REFRESH');
      sandbox.setTimetable({ paidMs: null });
      try {
        const r = await place({ shop_order_no: shopNo, sku_code: 'T-AUTO', quantity: 1 });
        expect(r.status).toBe(201);
        const id = (r.data as { order: OrderView }).order.upstream_order_id as number;
        // the change reaches the relay by the operator's refresh only: its callback is dropped, and the
        // order's next poll is moved out of the way once no poll holds it (either would race the refresh)
        sandbox.faults.set({ callbacks: 'drop' });
        await waitFor(
          () =>
            db.query<{ id: string }>(
              `UPDATE orders SET next_poll_at = now() + interval '1 hour'
                WHERE shop_order_no = $1 AND (poll_lease_until IS NULL OR poll_lease_until < now()) RETURNING id`,
              [shopNo],
            ),
          (rows) => rows.length === 1,
          'the order out of the poller',
        );
        sandbox.setOrderStatus(id, 'paid');
        const refreshed = await app.http.post(`/internal/orders/${shopNo}/refresh`);
        expect(refreshed.status).toBe(200);
        expect((refreshed.data as { order: OrderView }).order.status).toBe('paid');
        const events = (await app.http.get(`/internal/orders/${shopNo}/events`)).data as {
          events: Array<{ source: string; kind: string; from: string; to: string }>;
        };
        expect(events.events.filter((e) => e.source === 'operator')).toEqual([
          expect.objectContaining({ kind: 'status', from: 'pending_payment', to: 'paid' }),
          expect.objectContaining({ kind: 'refresh', from: 'pending_payment', to: 'paid' }),
        ]);
      } finally {
        sandbox.faults.set({ callbacks: 'normal' });
        sandbox.setTimetable({ paidMs: 30 });
      }
      const wallet = await app.http.get('/internal/wallet');
      expect(wallet.status).toBe(200);
      expect(wallet.data).toEqual({
        ok: true,
        balance: sandbox.walletBalance(),
        currency: 'CNY',
        member_level: expect.any(Object),
        checked_at: expect.any(String),
      });
      expect((await app.http.post('/internal/orders/NO-SUCH/refresh')).status).toBe(404);
    });
  });

  it('lists orders by status and page, flags stuck ones, and needs the token', async () => {
    const delivered = (await app.http.get('/internal/orders', { params: { status: 'delivered', page_size: 500 } })).data as {
      items: OrderView[];
      total: number;
    };
    expect(delivered.total).toBeGreaterThan(0);
    expect(delivered.items.every((o) => o.status === 'delivered')).toBe(true);
    const page = (await app.http.get('/internal/orders', { params: { page: 2, page_size: 1 } })).data as {
      items: OrderView[];
      page: number;
      page_size: number;
    };
    expect(page).toMatchObject({ page: 2, page_size: 1 });
    expect(page.items).toHaveLength(1);
    expect((await app.http.get('/internal/orders', { params: { status: 'nope' } })).status).toBe(400);
    // the submit_unknown orders above (and the manual one, waiting for its delivery) are stuck after
    // STUCK_ORDER_ALERT_S (2 s here); delivered ones never are
    const stuck = await waitFor(
      async () =>
        ((await app.http.get('/internal/orders', { params: { stuck: 'true', page_size: 500 } })).data as { items: OrderView[] }).items,
      (items) => items.some((o) => o.status === 'submit_unknown'),
    );
    for (const o of stuck) {
      expect(o.stuck).toBe(true);
      expect([...UNFINISHED]).toContain(o.status); // the statuses isStuck can flag
    }
    const registry = app.relay.app.get(Metrics).registry;
    const metrics = await waitFor(
      () => registry.metrics(),
      (text) => /relay_orders_stuck [1-9]/.test(text),
    );
    expect(metrics).toMatch(/relay_order_placements_total\{outcome="unknown",supplier="main"\} [1-9]/);
    const noToken = await app.http.get('/internal/orders', { headers: { authorization: '' } });
    expect(noToken.status).toBe(401);
  });
});

/**
 * The create that reaches nothing (the upstream refuses connections). A product read confirmed by a
 * create serves the price guard for ORDER_PRICE_FRESH_S, so that these orders send nothing before the
 * create; the create's tries are counted in `relay_upstream_calls_total` (the sandbox sees none).
 * (A 429 reaches the upstream, which processes nothing: the order is queued instead,
 * test/orders-429-budget-off.e2e-spec.ts.)
 */
describe('orders: the create reaches nothing', () => {
  const t = useAppSuite({
    sandbox: { catalog: { products: 2 } },
    prepare: (sandbox) => sandbox.catalog.addProduct({ skus: [{ skuCode: 'T-DOWN', price: '10.00' }] }),
    env: { ORDER_PRICE_FRESH_S: '30', UPSTREAM_TIMEOUT_MS: '2000' },
    seed: true,
  });
  let n = 0;
  const no = (tag: string) => `${tag}-${++n}`;
  const place = (body: Record<string, unknown>) => t.app.http.post('/internal/orders', body);
  const createCalls = async (): Promise<number> => {
    const text = (await axios.get(`${t.app.url}/metrics`, { responseType: 'text' })).data as string;
    return [...text.matchAll(/^relay_upstream_calls_total\{([^}]*)\} (\d+)$/gm)]
      .filter((m) => m[1].includes('operation="createOrder"'))
      .reduce((sum, m) => sum + Number(m[2]), 0);
  };

  beforeAll(async () => {
    // the first order's create confirms the SKU's cost: the next ones read nothing before their create
    expect((await place({ shop_order_no: no('WARM'), sku_code: 'T-DOWN', quantity: 1 })).status).toBe(201);
  });

  afterEach(async () => {
    await t.sandbox.acceptConnections();
  });

  it('nothing reached the upstream: a few quick tries, then 503 upstream_unavailable and rejected', async () => {
    const before = await createCalls();
    const products = t.sandbox.stats.requests.product;
    await t.sandbox.refuseConnections();
    const r = await place({ shop_order_no: no('DOWN'), sku_code: 'T-DOWN', quantity: 1 });
    expect(r.status).toBe(503);
    expect(r.data).toMatchObject({ error_code: 'upstream_unavailable', order: { status: 'rejected', error_code: 'upstream_unavailable' } });
    const tries = (await createCalls()) - before;
    expect(tries).toBeGreaterThan(1);
    expect(tries).toBeLessThanOrEqual(3);
    expect(t.sandbox.stats.requests.product).toBe(products);
  });

  it('a blip: the first try reaches nothing, a quick try after it is placed (201)', async () => {
    const before = await createCalls();
    await t.sandbox.refuseConnections();
    const placing = place({ shop_order_no: no('BLIP'), sku_code: 'T-DOWN', quantity: 1 });
    // the upstream listens again once the first try has failed
    await waitFor(createCalls, (c) => c > before, 'the first try');
    await t.sandbox.acceptConnections();
    const r = await placing;
    expect(r.status).toBe(201);
    expect((await createCalls()) - before).toBeGreaterThan(1);
  });

  it('a rejected attempt that never reached the upstream still counts: the resubmission is <no>-2, created once', async () => {
    const shopNo = no('UNSENT');
    const body = { shop_order_no: shopNo, sku_code: 'T-DOWN', quantity: 1 };
    await t.sandbox.refuseConnections();
    const first = await place(body);
    expect(first.status).toBe(503);
    expect(first.data).toMatchObject({
      ok: false,
      error_code: 'upstream_unavailable',
      order: { status: 'rejected', attempt: 1, downstream_order_no: shopNo },
    });
    await t.sandbox.acceptConnections();
    expect(t.sandbox.orders().filter((o) => o.downstream_order_no?.startsWith(shopNo))).toHaveLength(0);
    expect(await getOrder(t.app.http, shopNo)).toMatchObject({ status: 'rejected', attempt: 1 });

    const creates = t.sandbox.stats.createsReceived;
    const again = await place(body);
    expect(again.status).toBe(201);
    const order = (again.data as { order: OrderView }).order;
    expect(order).toMatchObject({ attempt: 2, downstream_order_no: `${shopNo}-2` });
    expect(t.sandbox.stats.createsReceived - creates).toBe(1);
    const upstream = t.sandbox.orders().filter((o) => o.downstream_order_no?.startsWith(shopNo));
    expect(upstream.map((o) => o.downstream_order_no)).toEqual([`${shopNo}-2`]);
    expect(upstream[0].id).toBe(order.upstream_order_id);
  });
});
