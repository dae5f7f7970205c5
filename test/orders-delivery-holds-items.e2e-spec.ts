/**
 * A status without its items is not a delivery (CONTRACT §5, issue 30). Under profile `dujiao-next`
 * the upstream answers a repeated `downstream_order_no` with the order it has and its current status,
 * without the fulfillment. Through each unknown outcome of the first send (a hang, a reset, a 500
 * after the upstream did the work, the relay killed right after sending), the upstream delivers the
 * order before the same attempt is sent again; that re-send answers `delivered` with no items, and
 * the read that brings them is held at the upstream for a while. Meanwhile the order is read every
 * 10 ms: it is never `partially_delivered`, `delivered` or `completed` without its items; and the
 * shop, reading the order when the first webhook naming a delivering state reaches it, finds the items.
 * Callbacks are dropped: the re-send and the read that follows it are the only way the items arrive.
 */
import type { AxiosInstance } from 'axios';
import type { SandboxServer } from '../src/sandbox/sandbox.server.js';
import type { SandboxRequestEvent } from '../src/sandbox/sandbox.types.js';
import { freePort, getOrder, seedCatalog, startRelayChild, waitFor, waitForOrder, type OrderView } from './support/child-app.js';
import { FakeShop } from './support/fake-shop.js';
import { openTestDatabase, startSandbox, startTestApp, type TestApp, type TestDatabase } from './support/test-app.js';

const DELIVERING = new Set(['partially_delivered', 'delivered', 'completed']);
const QUANTITY = 2;
/** How long the read that brings the items is held at the upstream: the window the old order showed. */
const ITEMS_READ_DELAY_MS = 400;

interface Watch {
  /** Every view of the order read, in order. */
  seen: Array<{ status: string; items: number }>;
  stop(): Promise<void>;
}

/** Reads the order every 10 ms until stopped. */
function watch(http: () => AxiosInstance, shopNo: string): Watch {
  const seen: Watch['seen'] = [];
  let stopped = false;
  const loop = (async () => {
    while (!stopped) {
      const o = await getOrder(http(), shopNo).catch(() => null);
      if (o) seen.push({ status: o.status, items: o.items.length });
      await new Promise((r) => setTimeout(r, 10));
    }
  })();
  return {
    seen,
    stop: async () => {
      stopped = true;
      await loop;
    },
  };
}

describe('orders: a delivering status and its items move together (profile dujiao-next, re-send after an unknown outcome)', () => {
  let db: TestDatabase;
  let sandbox: SandboxServer;
  const shop = new FakeShop();
  /** The relay the shop reads when a webhook arrives. */
  let shopReads: AxiosInstance | null = null;
  /** Per order: the items the shop found when the first webhook naming a delivering state reached it. */
  const atFirstDeliveringWebhook = new Map<string, { status: string; items: number }>();

  const env = (): Record<string, string> => ({
    UPSTREAM_PROFILE: 'dujiao-next',
    UPSTREAM_ORDER_NO_IDEMPOTENT: 'true',
    SUBMIT_UNKNOWN_RECHECK_S: '1',
    UPSTREAM_TIMEOUT_MS: '1000',
    // a long backoff: the items must be read at once, not at the next poll
    ORDER_POLL_BASE_MS: '60000',
    ORDER_POLL_MAX_MS: '600000',
    UPSTREAM_RATE_LIMIT: 'off',
    SHOP_WEBHOOK_URL: shop.url,
    SHOP_WEBHOOK_SECRET: 'shop-secret-for-items',
  });

  beforeAll(async () => {
    await shop.start('/shop/hooks');
    shop.respond = async (r) => {
      const parsed = JSON.parse(r.body) as { event: string; subject: string; data: { status: string } };
      if (
        parsed.event === 'order.status_changed' &&
        DELIVERING.has(parsed.data.status) &&
        !atFirstDeliveringWebhook.has(parsed.subject) &&
        shopReads
      ) {
        // as a shop does: the webhook names the status, the shop reads the order for its items
        const o = await getOrder(shopReads, parsed.subject);
        atFirstDeliveringWebhook.set(parsed.subject, { status: parsed.data.status, items: o?.items.length ?? -1 });
      }
      return 200;
    };
    db = await openTestDatabase();
    sandbox = await startSandbox({
      profile: 'dujiao-next',
      dedupeDownstreamOrderNo: true,
      catalog: { products: 2 },
      // auto orders are delivered within a few hundred milliseconds, long before the re-send (1 s)
      timetable: { paidMs: 20, fulfillingMs: 40, deliveredMs: 60, completedMs: null },
    });
    sandbox.catalog.addProduct({ skus: [{ skuCode: 'X-HOLD', price: '3.00', stockQuantity: 1000 }] });
  });

  afterEach(() => sandbox.faults.reset());

  afterAll(async () => {
    await sandbox?.stop();
    await db?.close();
    await shop.stop();
  });

  /** Delivered with its items, never seen delivering without them, the first delivering webhook found them. */
  const expectHeldUntilItems = async (w: Watch, done: OrderView, shopNo: string) => {
    expect(done.items).toHaveLength(QUANTITY);
    // the upstream was read while the order was watched (the re-send's answer had no items)
    expect(w.seen.length).toBeGreaterThan(0);
    const bare = w.seen.filter((v) => DELIVERING.has(v.status) && v.items === 0);
    expect(bare).toEqual([]);
    const first = await waitFor(
      () => atFirstDeliveringWebhook.get(shopNo),
      (v) => v !== undefined,
      `the first delivering webhook of ${shopNo}`,
    );
    expect(first).toEqual({ status: 'delivered', items: QUANTITY });
    expect(sandbox.orders().filter((o) => o.downstream_order_no === shopNo)).toHaveLength(1);
    const [row] = await db.query<{ next_poll_at: Date | null }>('SELECT next_poll_at FROM orders WHERE shop_order_no = $1', [shopNo]);
    expect(row.next_poll_at).toBeNull();
  };

  describe('in process', () => {
    let app: TestApp;
    beforeAll(async () => {
      app = await startTestApp(db, sandbox, { ...env(), PORT: String(await freePort()) });
      shopReads = app.http;
      await seedCatalog(app.http);
    });
    afterAll(async () => {
      await app?.close();
    });

    it.each([
      ['hang_after', {}],
      ['reset_after', {}],
      ['error_after', { status: 500 }],
    ] as const)(
      '%s: the re-send answers delivered without items; the order keeps its status until the items are read',
      async (kind, extra) => {
        sandbox.faults.set({
          callbacks: 'drop',
          rules: [
            { operation: 'createOrder', kind, times: 1, ...extra },
            { operation: 'getOrder', kind: 'delay', delayMs: ITEMS_READ_DELAY_MS, times: 1 },
          ],
        });
        const shopNo = `HOLD-${kind}`;
        const w = watch(() => app.http, shopNo);
        try {
          const r = await app.http.post('/internal/orders', { shop_order_no: shopNo, sku_code: 'X-HOLD', quantity: QUANTITY });
          expect(r.status).toBe(202);
          const done = await waitForOrder(app.http, shopNo, (o) => o.status === 'delivered' && o.items.length > 0, 20_000);
          await w.stop();
          await expectHeldUntilItems(w, done, shopNo);
          // the order was unknown, then delivered with its items in one move
          expect(w.seen.some((v) => v.status === 'submit_unknown')).toBe(true);
        } finally {
          await w.stop();
        }
      },
    );
  });

  it('SIGKILL right after the upstream received the create, restart: the order keeps its status until the items are read', async () => {
    const port = await freePort();
    const childEnv = { ...env(), CALLBACK_PUBLIC_URL: `http://127.0.0.1:${port}/callbacks/upstream` };
    const first = await startRelayChild({ databaseUrl: db.url, sandbox, port, env: childEnv });
    let second: Awaited<ReturnType<typeof startRelayChild>> | null = null;
    // the restarted instance listens on the same port: one client reads both
    shopReads = first.http;
    const shopNo = 'HOLD-KILL';
    let w: Watch | null = null;
    try {
      await seedCatalog(first.http);
      sandbox.faults.set({ callbacks: 'drop', latencyMs: 300 });
      const onRequest = (e: SandboxRequestEvent) => {
        if (e.operation === 'createOrder' && e.phase === 'received') first.process.kill('SIGKILL');
      };
      sandbox.events.on('request', onRequest);
      const answer = await first.http
        .post('/internal/orders', { shop_order_no: shopNo, sku_code: 'X-HOLD', quantity: QUANTITY })
        .catch((e: Error) => e);
      sandbox.events.off('request', onRequest);
      expect(answer).toBeInstanceOf(Error);
      expect(await first.exited).toBeNull();
      // the upstream delivers the order before the restarted relay sends the attempt again; the read
      // that brings the items is held
      sandbox.faults.set({
        callbacks: 'drop',
        latencyMs: 0,
        rules: [{ operation: 'getOrder', kind: 'delay', delayMs: ITEMS_READ_DELAY_MS, times: 1 }],
      });
      await waitFor(
        async () => sandbox.orders().find((o) => o.downstream_order_no === shopNo),
        (o) => o?.status === 'delivered',
      );
      second = await startRelayChild({ databaseUrl: db.url, sandbox, port, env: childEnv });
      w = watch(() => first.http, shopNo);
      const done = await waitForOrder(second.http, shopNo, (o) => o.status === 'delivered' && o.items.length > 0, 30_000);
      await w.stop();
      await expectHeldUntilItems(w, done, shopNo);
    } finally {
      await w?.stop();
      await first.kill('SIGKILL');
      await second?.kill('SIGTERM');
    }
  }, 150_000); // two services boot in child processes on a loaded machine
});
