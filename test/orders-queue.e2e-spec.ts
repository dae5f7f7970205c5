/**
 * Orders under the upstream's request budget (CONTRACT §5): the sandbox limits the API key as
 * Dujiao-Next does (scaled in time) and the relay's budget holds the same rule. A burst larger than the
 * budget is answered 201 while tokens last and 202 `queued` past ORDER_QUEUE_WAIT_MS; the queued orders
 * are placed in arrival order, each exactly once, and no request of theirs meets a 429. A queued order
 * is canceled locally (nothing was sent). A 429 on a create is no refusal: the same attempt is sent
 * again after the block under the same number. A product read serves the price guard for
 * ORDER_PRICE_FRESH_S, and concurrent orders of one product share one read; a create charged exactly
 * quantity × the checked cost confirms that SKU's cost for ORDER_PRICE_FRESH_S too, and a create
 * charged otherwise makes the next order read the product fresh.
 */
import axios, { type AxiosInstance } from 'axios';
import { createRelayApp } from '../src/app.factory.js';
import { loadConfig } from '../src/config/app-config.js';
import type { SandboxServer } from '../src/sandbox/sandbox.server.js';
import { useAppSuite } from './support/app-suite.js';
import { freePort, seedCatalog, waitFor, waitForOrder, type OrderView } from './support/child-app.js';
import { openTestDatabase, startSandbox, startTestApp, testEnv, TEST_TOKEN, type TestApp, type TestDatabase } from './support/test-app.js';
import { TestClock } from './support/test-clock.js';

const LIMIT = { requests: 10, windowMs: 1000, blockMs: 600 };

describe('orders under the request budget', () => {
  let db: TestDatabase;
  let sandbox: SandboxServer;
  let app: TestApp;

  beforeAll(async () => {
    db = await openTestDatabase();
    sandbox = await startSandbox({
      profile: 'dujiao-next',
      dedupeDownstreamOrderNo: true,
      catalog: { products: 2 },
      timetable: { paidMs: 20, fulfillingMs: 40, deliveredMs: 60, completedMs: null },
    });
    sandbox.catalog.addProduct({ skus: [{ skuCode: 'Q-1', price: '3.00' }] });
    sandbox.catalog.addProduct({ skus: [{ skuCode: 'Q-2', price: '4.00' }] });
    app = await startTestApp(db, sandbox, {
      UPSTREAM_PROFILE: 'dujiao-next',
      UPSTREAM_RATE_LIMIT: `${LIMIT.requests}/${LIMIT.windowMs}ms`,
      UPSTREAM_RATE_LIMIT_BLOCK_S: '1',
      ORDER_QUEUE_WAIT_MS: '150',
      ORDER_PRICE_FRESH_S: '30',
      ORDER_POLL_BASE_MS: '100',
      ORDER_POLL_MAX_MS: '400',
      PORT: String(await freePort()),
    });
    await seedCatalog(app.http);
    // the limiter from here on: the catalog is in
    sandbox.setRateLimit(LIMIT);
  });

  afterAll(async () => {
    await app?.close();
    await sandbox?.stop();
    await db?.close();
  });

  const upstreamOf = (shopNo: string) => sandbox.orders().filter((o) => o.downstream_order_no === shopNo);

  it('a burst beyond the budget: 201 while tokens last, then 202 queued; all placed once, queued in arrival order, no 429', async () => {
    const limited = () => Object.values(sandbox.stats.rateLimited).reduce((a, b) => a + b, 0);
    const before = limited();
    const n = 24;
    const answers: Array<{ no: string; status: number; order: OrderView }> = [];
    // sent one after another so that arrival order is known
    for (let i = 0; i < n; i++) {
      const no = `BURST-${String(i).padStart(2, '0')}`;
      const r = await app.http.post('/internal/orders', { shop_order_no: no, sku_code: i % 2 ? 'Q-1' : 'Q-2', quantity: 1 });
      expect([201, 202]).toContain(r.status);
      answers.push({ no, status: r.status, order: r.data.order as OrderView });
    }
    const queued = answers.filter((a) => a.status === 202);
    expect(queued.length).toBeGreaterThan(0);
    for (const q of queued) expect(q.order.status).toBe('queued');

    for (const a of answers) await waitForOrder(app.http, a.no, (o) => o.status === 'delivered' && o.items.length === 1, 60_000);
    for (const a of answers) expect(upstreamOf(a.no)).toHaveLength(1);
    // the queued ones reached the upstream in the order they arrived
    const ids = queued.map((q) => upstreamOf(q.no)[0].id);
    expect([...ids].sort((x, y) => x - y)).toEqual(ids);
    expect(limited()).toBe(before);
  });

  it('a queued order is canceled locally (nothing was sent) and refundable', async () => {
    // a 429 with Retry-After 3 s: the key is blocked for every caller, and the order waits in the queue
    sandbox.faults.set({ rules: [{ operation: 'createOrder', kind: 'rate_limit', retryAfterS: 3, times: 1 }] });
    const r = await app.http.post('/internal/orders', { shop_order_no: 'QCANCEL-1', sku_code: 'Q-1', quantity: 1 });
    expect(r.status).toBe(202);
    expect(r.data.order).toMatchObject({ status: 'queued' });
    const listed = (await app.http.get('/internal/orders', { params: { status: 'queued' } })).data as {
      items: Array<{ shop_order_no: string }>;
    };
    expect(listed.items.map((o) => o.shop_order_no)).toContain('QCANCEL-1');
    const c = await app.http.post('/internal/orders/QCANCEL-1/cancel', {});
    expect(c.status).toBe(200);
    expect(c.data.order).toMatchObject({ status: 'canceled', refund_state: 'refundable' });
    const refund = await app.http.post('/internal/orders/QCANCEL-1/refund', {});
    expect(refund.data.order).toMatchObject({ status: 'canceled', refund_state: 'refunded' });
    // the attempt is closed: the queue never sends it, even once the block is over
    const [attempt] = await db.query<{ status: string; error_code: string }>(
      'SELECT a.status, a.error_code FROM order_attempts a JOIN orders o ON o.id = a.order_id WHERE o.shop_order_no = $1',
      ['QCANCEL-1'],
    );
    expect(attempt).toMatchObject({ status: 'rejected', error_code: 'canceled' });
    const next = await app.http.post('/internal/orders', { shop_order_no: 'QCANCEL-2', sku_code: 'Q-1', quantity: 1 });
    await waitForOrder(app.http, 'QCANCEL-2', (o) => o.status === 'delivered', 30_000);
    expect(next.status === 201 || next.status === 202).toBe(true);
    expect(upstreamOf('QCANCEL-1')).toHaveLength(0);
    sandbox.faults.reset();
  });

  it('a refund asked of a queued order cancels it locally first, then records the refund; nothing is ever sent', async () => {
    sandbox.faults.set({ rules: [{ operation: 'createOrder', kind: 'rate_limit', retryAfterS: 3, times: 1 }] });
    const r = await app.http.post('/internal/orders', { shop_order_no: 'QREFUND-1', sku_code: 'Q-2', quantity: 1 });
    expect(r.status).toBe(202);
    expect(r.data.order).toMatchObject({ status: 'queued', refund_state: 'not_refundable' });
    const refund = await app.http.post('/internal/orders/QREFUND-1/refund', {});
    expect(refund.status).toBe(200);
    expect(refund.data.order).toMatchObject({ status: 'canceled', refund_state: 'refunded' });
    await waitFor(
      async () => (await app.http.get('/internal/orders', { params: { status: 'queued' } })).data.total as number,
      (t) => t === 0,
    );
    expect(upstreamOf('QREFUND-1')).toHaveLength(0);
    sandbox.faults.reset();
  });

  it('a 429 on a create: the same attempt is sent again after the block, under the same number; one upstream order', async () => {
    await waitFor(
      async () => (await app.http.get('/internal/orders', { params: { status: 'queued' } })).data.total as number,
      (t) => t === 0,
    );
    const creates = sandbox.stats.requests.createOrder;
    sandbox.faults.set({ rules: [{ operation: 'createOrder', kind: 'rate_limit', times: 1 }] });
    const r = await app.http.post('/internal/orders', { shop_order_no: 'Q429-1', sku_code: 'Q-2', quantity: 1 });
    expect(r.status).toBe(202);
    expect(r.data.order).toMatchObject({ status: 'queued', attempt: 1, downstream_order_no: 'Q429-1' });
    const done = await waitForOrder(app.http, 'Q429-1', (o) => o.status === 'delivered', 30_000);
    expect(done).toMatchObject({ attempt: 1, downstream_order_no: 'Q429-1' });
    expect(upstreamOf('Q429-1')).toHaveLength(1);
    expect(sandbox.stats.requests.createOrder - creates).toBe(2);
    sandbox.faults.reset();
  });

  it('the price read serves ORDER_PRICE_FRESH_S: the next order of the product reads nothing', async () => {
    const reads = () => sandbox.stats.requests.product;
    await app.http.post('/internal/orders', { shop_order_no: 'FRESH-1', sku_code: 'Q-1', quantity: 1 });
    const after = reads();
    const second = await app.http.post('/internal/orders', { shop_order_no: 'FRESH-2', sku_code: 'Q-1', quantity: 1 });
    expect([201, 202]).toContain(second.status);
    expect(reads()).toBe(after);
    await waitForOrder(app.http, 'FRESH-2', (o) => o.status === 'delivered', 30_000);
  });
});

/**
 * A service whose price reads are kept ORDER_PRICE_FRESH_S = `freshS`, with one product of one SKU `skuCode` at 3.00
 * (on `clock`, when given: a clock the test moves).
 */
const priceSuite = (skuCode: string, freshS: string, clock?: TestClock) =>
  useAppSuite({
    clock,
    sandbox: { catalog: { products: 2 } },
    prepare: (sandbox) => sandbox.catalog.addProduct({ skus: [{ skuCode, price: '3.00' }] }),
    env: async () => ({ ORDER_PRICE_FRESH_S: freshS, PORT: String(await freePort()) }),
    seed: true,
  });

describe('the price read past ORDER_PRICE_FRESH_S', () => {
  const clock = new TestClock();
  const t = priceSuite('F-1', '60', clock);

  it('is read again once the last read is older than it; concurrent orders of one product share one read', async () => {
    const reads = () => t.sandbox.stats.requests.product;
    const before = reads();
    // three orders at once: one read between them
    const at = await Promise.all(
      ['SH-1', 'SH-2', 'SH-3'].map((no) => t.app.http.post('/internal/orders', { shop_order_no: no, sku_code: 'F-1', quantity: 1 })),
    );
    for (const r of at) expect(r.status).toBe(201);
    expect(reads() - before).toBe(1);
    // past the freshness: the next order reads the product again
    clock.advance(60_001);
    const later = await t.app.http.post('/internal/orders', { shop_order_no: 'SH-4', sku_code: 'F-1', quantity: 1 });
    expect(later.status).toBe(201);
    expect(reads() - before).toBe(2);
  });
});

describe("a create's charge confirms the SKU's cost (ORDER_PRICE_FRESH_S 30, on a clock the test moves)", () => {
  let db: TestDatabase;
  let sandbox: SandboxServer;
  let http: AxiosInstance;
  let close: (() => Promise<void>) | null = null;
  const clock = new TestClock();
  const FRESH_MS = 30_000;

  beforeAll(async () => {
    db = await openTestDatabase();
    sandbox = await startSandbox({ catalog: { products: 2 } });
    // one product, two SKUs: a read of the product serves both, a create confirms only its own
    sandbox.catalog.addProduct({
      skus: [
        { skuCode: 'CC-1', price: '3.00' },
        { skuCode: 'CC-2', price: '5.00' },
      ],
    });
    const config = loadConfig({ ...testEnv(sandbox, { ORDER_PRICE_FRESH_S: String(FRESH_MS / 1000) }), DATABASE_URL: db.url });
    const relay = await createRelayApp(config, { endpoint: db.endpoint, logger: false, clock });
    close = () => relay.close();
    http = axios.create({
      baseURL: relay.url,
      headers: { authorization: `Bearer ${TEST_TOKEN}` },
      validateStatus: () => true,
      timeout: 30_000,
    });
    await seedCatalog(http);
  });

  afterAll(async () => {
    await close?.();
    await sandbox?.stop();
    await db?.close();
  });

  const reads = () => sandbox.stats.requests.product;
  const order = (no: string, sku: string, extra: Record<string, unknown> = {}) =>
    http.post('/internal/orders', { shop_order_no: no, sku_code: sku, quantity: 2, ...extra });
  const upstreamOf = (no: string) => sandbox.orders().filter((o) => o.downstream_order_no === no);

  it("orders in a row for one SKU read the product once, each create confirming the next's cost; another SKU of it is read", async () => {
    const before = reads();
    expect((await order('CC-A1', 'CC-1')).status).toBe(201);
    expect(reads() - before).toBe(1);
    // each order comes 2/3 of the window after the last: past the product's read from the third on,
    // within the window of the last create's confirmation
    for (const no of ['CC-A2', 'CC-A3', 'CC-A4', 'CC-A5']) {
      clock.advance((FRESH_MS * 2) / 3);
      const r = await order(no, 'CC-1');
      expect(r.status).toBe(201);
      expect(r.data.order).toMatchObject({ amount: '6.00' });
    }
    expect(reads() - before).toBe(1);
    // the other SKU of the product: no create confirmed it, and the product's read is old
    expect((await order('CC-B1', 'CC-2')).status).toBe(201);
    expect(reads() - before).toBe(2);
  });

  it('a price change upstream: a create charged another price confirms nothing; the next reads fresh, the guard refuses it', async () => {
    clock.advance(FRESH_MS + 1); // every read and confirmation so far is old
    expect((await order('CC-C1', 'CC-1', { max_unit_cost: '3.50' })).status).toBe(201);
    const before = reads();
    sandbox.catalog.setPrice('CC-1', '4.00');
    // within the window of CC-C1's confirmation: no read; the upstream charges the new price
    const charged = await order('CC-C2', 'CC-1', { max_unit_cost: '3.50' });
    expect(charged.status).toBe(201);
    expect(charged.data.order).toMatchObject({ amount: '8.00' });
    expect(reads()).toBe(before);
    // that charge forgot the SKU's confirmation: read fresh, 4.00 is above the ceiling, nothing sent
    const refused = await order('CC-C3', 'CC-1', { max_unit_cost: '3.50' });
    expect(refused.status).toBe(409);
    expect(refused.data).toMatchObject({ error_code: 'price_changed', unit_cost: '4.00', max_unit_cost: '3.50' });
    expect(reads() - before).toBe(1);
    expect(upstreamOf('CC-C3')).toHaveLength(0);
    // at the new price, it is ordered and confirmed again
    expect((await order('CC-C4', 'CC-1', { max_unit_cost: '4.00' })).status).toBe(201);
    clock.advance((FRESH_MS * 2) / 3);
    expect((await order('CC-C5', 'CC-1', { max_unit_cost: '4.00' })).status).toBe(201);
    expect(reads() - before).toBe(1);
  });
});

describe('ORDER_PRICE_FRESH_S 0', () => {
  const t = priceSuite('Z-1', '0');

  it('reads the product for every order, whatever the creates confirmed', async () => {
    const before = t.sandbox.stats.requests.product;
    for (const no of ['Z0-1', 'Z0-2', 'Z0-3'])
      expect((await t.app.http.post('/internal/orders', { shop_order_no: no, sku_code: 'Z-1', quantity: 1 })).status).toBe(201);
    expect(t.sandbox.stats.requests.product - before).toBe(3);
  });
});
