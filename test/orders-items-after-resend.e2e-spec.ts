/**
 * A delivered order never loses its items (CONTRACT §5): under profile `dujiao-next` the upstream
 * answers a repeated `downstream_order_no` with the order it already has and that order's current
 * status, without its fulfillment. When the first send's answer is lost (a hang, a reset, a 5xx after
 * the upstream did the work, or the relay killed right after sending) and the upstream delivers the
 * order before the same attempt is sent again, that re-send answers `delivered` with no items: the
 * order moves to `delivered` but stays followed until a read brings its items. Callbacks are dropped,
 * so the re-send and the reads that follow it are the only way the items can arrive.
 */
import { Decimal } from 'decimal.js';
import type { SandboxServer } from '../src/sandbox/sandbox.server.js';
import type { SandboxRequestEvent } from '../src/sandbox/sandbox.types.js';
import { freePort, getOrder, seedCatalog, startRelayChild, waitFor, waitForOrder, type OrderView } from './support/child-app.js';
import { openTestDatabase, startSandbox, startTestApp, type TestApp, type TestDatabase } from './support/test-app.js';

const PRICE = '7.00';
const QUANTITY = 3;

describe('orders: a re-send answered delivered without its items (profile dujiao-next)', () => {
  let db: TestDatabase;
  let sandbox: SandboxServer;

  const env = (): Record<string, string> => ({
    UPSTREAM_PROFILE: 'dujiao-next',
    UPSTREAM_ORDER_NO_IDEMPOTENT: 'true',
    SUBMIT_UNKNOWN_RECHECK_S: '1',
    UPSTREAM_TIMEOUT_MS: '1000',
    // a long backoff: the items must be read at once, not at the next poll
    ORDER_POLL_BASE_MS: '60000',
    ORDER_POLL_MAX_MS: '600000',
    UPSTREAM_RATE_LIMIT: 'off',
  });

  beforeAll(async () => {
    db = await openTestDatabase();
    sandbox = await startSandbox({
      profile: 'dujiao-next',
      dedupeDownstreamOrderNo: true,
      catalog: { products: 2 },
      // auto orders are delivered within a few hundred milliseconds, long before the re-send (1 s)
      timetable: { paidMs: 20, fulfillingMs: 40, deliveredMs: 60, completedMs: null },
    });
    sandbox.catalog.addProduct({ skus: [{ skuCode: 'X-ITEMS', price: PRICE, stockQuantity: 1000 }] });
  });

  afterEach(() => sandbox.faults.reset());

  afterAll(async () => {
    await sandbox?.stop();
    await db?.close();
  });

  /** Delivered with exactly the ordered items, one upstream order, one debit, followed no more. */
  const expectDelivered = async (order: OrderView, shopNo: string, balanceBefore: string) => {
    expect(order.status).toBe('delivered');
    expect(order.items).toHaveLength(QUANTITY);
    const upstream = sandbox.orders().filter((o) => o.downstream_order_no === shopNo);
    expect(upstream).toHaveLength(1);
    expect(upstream[0].status).toBe('delivered');
    expect(order.upstream_order_id).toBe(upstream[0].id);
    expect(sandbox.walletBalance()).toBe(new Decimal(balanceBefore).minus(new Decimal(PRICE).mul(QUANTITY)).toFixed(2));
    const [row] = await db.query<{ next_poll_at: Date | null }>('SELECT next_poll_at FROM orders WHERE shop_order_no = $1', [shopNo]);
    expect(row.next_poll_at).toBeNull();
  };

  /** The events of the order show the re-send's `delivered` before the items were read. */
  const resendSawNoItems = (events: Array<{ from: string | null; to: string | null; source: string }>) =>
    events.some((e) => e.from === 'submit_unknown' && e.to === 'delivered' && e.source === 'poll');

  describe('the answer to the first send is lost', () => {
    let app: TestApp;
    beforeAll(async () => {
      app = await startTestApp(db, sandbox, { ...env(), PORT: String(await freePort()) });
      await seedCatalog(app.http);
    });
    afterAll(async () => {
      await app?.close();
    });

    it.each([
      ['hang_after', {}],
      ['reset_after', {}],
      ['error_after', { status: 500 }],
    ] as const)('%s: the re-send answers delivered without items; the items are read and stored', async (kind, extra) => {
      sandbox.faults.set({ callbacks: 'drop', rules: [{ operation: 'createOrder', kind, times: 1, ...extra }] });
      const shopNo = `ITEMS-${kind}`;
      const balance = sandbox.walletBalance();
      const r = await app.http.post('/internal/orders', { shop_order_no: shopNo, sku_code: 'X-ITEMS', quantity: QUANTITY });
      expect(r.status).toBe(202);
      const done = await waitForOrder(app.http, shopNo, (o) => o.status === 'delivered' && (o.items as unknown[]).length > 0, 20_000);
      await expectDelivered(done, shopNo, balance);
      const { events } = (await app.http.get(`/internal/orders/${shopNo}/events`)).data as {
        events: Array<{ from: string | null; to: string | null; source: string }>;
      };
      expect(resendSawNoItems(events)).toBe(true);
    });

    it('an order stored delivered without its items and followed by nothing is found at start, counted and read', async () => {
      const shopNo = 'ITEMS-REPAIR';
      const balance = sandbox.walletBalance();
      const r = await app.http.post('/internal/orders', { shop_order_no: shopNo, sku_code: 'X-ITEMS', quantity: QUANTITY });
      expect(r.status).toBe(201);
      // delivered upstream, then read (the poll backoff is long here): delivered with its items
      await waitFor(
        async () => sandbox.orders().find((o) => o.downstream_order_no === shopNo),
        (o) => o?.status === 'delivered',
      );
      expect((await app.http.post(`/internal/orders/${shopNo}/refresh`, {})).data.order).toMatchObject({
        status: 'delivered',
        items: [expect.any(String), expect.any(String), expect.any(String)],
      });
      // as an order was left when a delivered status without its fulfillment ended the following
      await db.query(
        'UPDATE orders SET delivery_sealed = NULL, delivered_at = NULL, next_poll_at = NULL, poll_interval_ms = NULL WHERE ' +
          'shop_order_no = $1',
        [shopNo],
      );
      expect(await getOrder(app.http, shopNo)).toMatchObject({ status: 'delivered', items: [] });
      const reads = sandbox.stats.requests.getOrder;
      // a second instance on the same database: its start finds the order and puts it back on the poller
      const second = await startTestApp(db, sandbox, { ...env(), PORT: String(await freePort()) });
      try {
        const done = await waitForOrder(app.http, shopNo, (o) => (o.items as unknown[]).length > 0, 20_000);
        await expectDelivered(done, shopNo, balance);
        expect(sandbox.stats.requests.getOrder).toBeGreaterThan(reads);
        const metrics = (await second.http.get('/metrics')).data as string;
        expect(metrics).toMatch(/^relay_order_items_requeued_total 1$/m);
      } finally {
        await second.close();
      }
    });
  });

  it('SIGKILL right after the upstream received the create, restart: delivered with its items', async () => {
    const port = await freePort();
    const childEnv = { ...env(), CALLBACK_PUBLIC_URL: `http://127.0.0.1:${port}/callbacks/upstream` };
    const first = await startRelayChild({ databaseUrl: db.url, sandbox, port, env: childEnv });
    let second: Awaited<ReturnType<typeof startRelayChild>> | null = null;
    try {
      await seedCatalog(first.http);
      sandbox.faults.set({ callbacks: 'drop', latencyMs: 300 });
      const balance = sandbox.walletBalance();
      const onRequest = (e: SandboxRequestEvent) => {
        if (e.operation === 'createOrder' && e.phase === 'received') first.process.kill('SIGKILL');
      };
      sandbox.events.on('request', onRequest);
      const shopNo = 'ITEMS-KILL';
      const answer = await first.http
        .post('/internal/orders', { shop_order_no: shopNo, sku_code: 'X-ITEMS', quantity: QUANTITY })
        .catch((e: Error) => e);
      sandbox.events.off('request', onRequest);
      expect(answer).toBeInstanceOf(Error);
      expect(await first.exited).toBeNull();
      sandbox.faults.set({ latencyMs: 0 });
      // the upstream delivers the order before the restarted relay sends the attempt again
      await waitFor(
        async () => sandbox.orders().find((o) => o.downstream_order_no === shopNo),
        (o) => o?.status === 'delivered',
      );
      second = await startRelayChild({ databaseUrl: db.url, sandbox, port, env: childEnv });
      const http = second.http;
      const done = await waitForOrder(http, shopNo, (o) => o.status === 'delivered' && (o.items as unknown[]).length > 0, 30_000);
      await expectDelivered(done, shopNo, balance);
      expect(await getOrder(http, shopNo)).toMatchObject({ status: 'delivered' });
    } finally {
      await first.kill('SIGKILL');
      await second?.kill('SIGTERM');
    }
  }, 150_000); // two services boot in child processes on a loaded machine
});
