/**
 * CALLBACK_TRUST (CONTRACT §6, issue 30): a verified callback is the upstream's word. Each test counts
 * the upstream's `GET /orders/{id}` with the sandbox's request counts, polling slow enough
 * (ORDER_POLL_BASE_MS 60 s) that every read counted is a callback's. The sandbox's own callbacks are
 * dropped where a test sends its own signed ones.
 * - `verified` (the default): a `paid` callback costs 0 reads; a delivered one with its fulfillment 0;
 *   one without its fulfillment 1; a refund callback 1; two quick callbacks of one order share 1; a
 *   callback naming another attempt changes nothing; a delivered callback settles a `submit_unknown`
 *   order, after which the poller does not read it again;
 * - with the sandbox's callbacks on, 40 orders over 4 products cost one create each and the price
 *   reads, nothing more, each delivered with exactly the upstream's items;
 * - an order whose callbacks keep arriving is not polled on top of them, even with a brisk poll; one
 *   whose callbacks stop is polled;
 * - `confirm`: a false but validly signed claim is never applied.
 */
import axios from 'axios';
import { OrderPoller } from '../src/orders/order-poller.service.js';
import type { SandboxServer } from '../src/sandbox/sandbox.server.js';
import { useAppSuite, type AppSuite } from './support/app-suite.js';
import { callbackHeaders, freePort, getOrder, waitFor, waitForOrder, type OrderView } from './support/child-app.js';
import { runLimited } from '../src/orders/run-limited.js';
import { passesRun } from './support/wait.js';

interface InboxRow {
  reported_status: string;
  state: string;
  outcome: string | null;
}

/** Helpers over one suite: placing orders, sending our own signed callbacks, reading the inbox. */
function helpers(t: AppSuite, prefix: string, sku: string) {
  let n = 0;
  const reads = () => t.sandbox.stats.requests.getOrder;
  const place = async (tag: string): Promise<OrderView> => {
    const r = await t.app.http.post('/internal/orders', { shop_order_no: `${prefix}-${tag}-${++n}`, sku_code: sku, quantity: 1 });
    expect(r.status).toBe(201);
    return (r.data as { order: OrderView }).order;
  };
  const inbox = (upstreamId: number) =>
    t.db.query<InboxRow>('SELECT reported_status, state, outcome FROM callback_inbox WHERE upstream_order_id = $1 ORDER BY id', [
      upstreamId,
    ]);
  const processed = (upstreamId: number, count: number) =>
    waitFor(
      () => inbox(upstreamId),
      (rows) => rows.length >= count && rows.every((r) => r.state !== 'pending'),
      `the callbacks of upstream order ${upstreamId} to be processed`,
    );
  /** A signed callback for upstream order `upstreamId` claiming `status`, with `fulfillment` when given. */
  const callBack = async (
    upstreamId: number,
    downstreamOrderNo: string | null,
    status: string,
    opts: { payload?: string; ts?: number } = {},
  ): Promise<void> => {
    const up = t.sandbox.order(upstreamId)!;
    const ts = opts.ts ?? Math.floor(Date.now() / 1000);
    const body = JSON.stringify({
      event: status === 'delivered' || status === 'completed' ? 'order.fulfilled' : 'order.status_changed',
      order_id: upstreamId,
      order_no: up.order_no,
      ...(downstreamOrderNo !== null ? { downstream_order_no: downstreamOrderNo } : {}),
      status,
      ...(opts.payload !== undefined
        ? {
            fulfillment: {
              type: 'auto',
              status: 'delivered',
              payload: opts.payload,
              delivery_data: null,
              delivered_at: new Date().toISOString(),
            },
          }
        : {}),
      timestamp: ts,
    });
    const r = await axios.post(`${t.app.url}/callbacks/upstream`, body, {
      headers: callbackHeaders(body, { timestamp: ts }),
      validateStatus: () => true,
      transformRequest: [(d: unknown) => d],
    });
    expect([r.status, r.data]).toEqual([200, { ok: true }]);
  };
  const followed = async (shopNo: string) =>
    (await t.db.query<{ next_poll_at: Date | null }>('SELECT next_poll_at FROM orders WHERE shop_order_no = $1', [shopNo]))[0].next_poll_at;
  return { reads, place, inbox, processed, callBack, followed };
}

/** The 4 products of the 40 orders. */
const FORTY_SKUS = ['CV-P1', 'CV-P2', 'CV-P3', 'CV-P4'];

const upstreamItems = (sandbox: SandboxServer, upstreamId: number): string[] =>
  sandbox
    .order(upstreamId)!
    .payload!.split(/\r?\n/)
    .filter((l) => l.length > 0);

describe('callbacks under CALLBACK_TRUST=verified (the default): counted in upstream reads', () => {
  const t = useAppSuite({
    sandbox: {
      catalog: { products: 2 },
      // no completedMs: the upstream order rests at `delivered`
      timetable: { paidMs: 30, fulfillingMs: 60, deliveredMs: 100 },
      callbackRetryDelaysMs: [100, 200, 400, 800],
    },
    prepare: (sandbox) => {
      sandbox.catalog.addProduct({ skus: [{ skuCode: 'CV-AUTO', price: '4.00' }] });
      for (const [i, sku] of FORTY_SKUS.entries())
        sandbox.catalog.addProduct({ skus: [{ skuCode: sku, price: `${i + 2}.00`, stockQuantity: 1000 }] });
    },
    env: async () => {
      const port = await freePort();
      return {
        PORT: String(port),
        CALLBACK_PUBLIC_URL: `http://127.0.0.1:${port}/callbacks/upstream`,
        ORDER_POLL_BASE_MS: '60000',
        ORDER_POLL_MAX_MS: '60000',
        UPSTREAM_TIMEOUT_MS: '1000',
        // no scheduled sync: every request counted is an order's
        SYNC_CRON: 'off',
      };
    },
    seed: true,
  });
  const h = helpers(t, 'CV', 'CV-AUTO');

  it('a paid callback costs 0 reads: applied as a status move', async () => {
    t.sandbox.faults.set({ callbacks: 'drop' });
    const o = await h.place('PAID');
    expect(o.status).toBe('pending_payment');
    const before = h.reads();
    await h.callBack(o.upstream_order_id!, o.downstream_order_no, 'paid');
    const [row] = await h.processed(o.upstream_order_id!, 1);
    expect(row).toMatchObject({ reported_status: 'paid', state: 'applied' });
    expect((await getOrder(t.app.http, o.shop_order_no))!.status).toBe('paid');
    expect(h.reads() - before).toBe(0);
    // still followed, its next poll a base wait away
    expect(await h.followed(o.shop_order_no)).not.toBeNull();
  });

  it("a callback right behind another of the same state is recorded as applied and writes nothing of the order's row", async () => {
    t.sandbox.faults.set({ callbacks: 'drop' });
    const o = await h.place('PAID-TWICE');
    const ts = Math.floor(Date.now() / 1000);
    await h.callBack(o.upstream_order_id!, o.downstream_order_no, 'paid', { ts });
    await h.processed(o.upstream_order_id!, 1);
    const version = () =>
      t.db.query<{ xmin: string; next_poll_at: Date | null }>(
        'SELECT xmin::text AS xmin, next_poll_at FROM orders WHERE shop_order_no = $1',
        [o.shop_order_no],
      );
    const [before] = await version();
    expect(before.next_poll_at).not.toBeNull();
    // the same claim again (another body: another second), as the upstream's second callback of one change
    await h.callBack(o.upstream_order_id!, o.downstream_order_no, 'paid', { ts: ts + 1 });
    const rows = await h.processed(o.upstream_order_id!, 2);
    expect(rows.map((r) => [r.reported_status, r.state])).toEqual([
      ['paid', 'applied'],
      ['paid', 'applied'],
    ]);
    // its next poll was already a wait away: the order's row is the same version
    expect(await version()).toEqual([before]);
    expect((await getOrder(t.app.http, o.shop_order_no))!.status).toBe('paid');
  });

  it('a delivered callback with its fulfillment costs 0 reads: delivered with exactly the upstream items, followed no more', async () => {
    t.sandbox.faults.set({ callbacks: 'drop' });
    const o = await h.place('FULL');
    const up = await t.sandbox.waitForOrderStatus(o.upstream_order_id!, 'delivered');
    const before = h.reads();
    await h.callBack(up.id, o.downstream_order_no, 'delivered', { payload: up.payload! });
    const [row] = await h.processed(up.id, 1);
    expect(row).toMatchObject({ reported_status: 'delivered', state: 'applied' });
    const done = (await getOrder(t.app.http, o.shop_order_no))!;
    expect(done.status).toBe('delivered');
    expect(done.items).toEqual(upstreamItems(t.sandbox, up.id));
    expect(h.reads() - before).toBe(0);
    expect(await h.followed(o.shop_order_no)).toBeNull();
  });

  it('a canceled callback costs 0 reads: the order is canceled and refundable for its whole amount', async () => {
    t.sandbox.faults.set({ callbacks: 'drop' });
    t.sandbox.setTimetable({ paidMs: null });
    try {
      const o = await h.place('CANCELED');
      expect(o.status).toBe('pending_payment');
      expect(o.amount).toMatch(/^\d+(\.\d+)?$/);
      const up = t.sandbox.setOrderStatus(o.upstream_order_id!, 'canceled');
      const before = h.reads();
      await h.callBack(up.id, o.downstream_order_no, 'canceled');
      const [row] = await h.processed(up.id, 1);
      expect(row).toMatchObject({ reported_status: 'canceled', state: 'applied' });
      const done = (await getOrder(t.app.http, o.shop_order_no))!;
      expect(done).toMatchObject({ status: 'canceled', refund_state: 'refundable', refundable_amount: o.amount });
      expect(h.reads() - before).toBe(0);
    } finally {
      t.sandbox.setTimetable({ paidMs: 30 });
    }
  });

  it('a delivered callback without its fulfillment costs 1 read: the order keeps its status until the read brings the items', async () => {
    t.sandbox.faults.set({ callbacks: 'drop' });
    const o = await h.place('BARE');
    const up = await t.sandbox.waitForOrderStatus(o.upstream_order_id!, 'delivered');
    const before = h.reads();
    await h.callBack(up.id, o.downstream_order_no, 'delivered');
    const [row] = await h.processed(up.id, 1);
    expect(row).toMatchObject({ reported_status: 'delivered', state: 'applied', outcome: 'applied delivered' });
    const done = (await getOrder(t.app.http, o.shop_order_no))!;
    expect(done.status).toBe('delivered');
    expect(done.items).toEqual(upstreamItems(t.sandbox, up.id));
    expect(h.reads() - before).toBe(1);
  });

  it('a refund callback costs 1 read: the body carries no amounts', async () => {
    t.sandbox.faults.set({ callbacks: 'drop' });
    const o = await h.place('REFUND');
    const up = await t.sandbox.waitForOrderStatus(o.upstream_order_id!, 'delivered');
    await h.callBack(up.id, o.downstream_order_no, 'delivered', { payload: up.payload! });
    await h.processed(up.id, 1);
    t.sandbox.refundOrder(up.id, undefined, { callback: false });
    const before = h.reads();
    await h.callBack(up.id, o.downstream_order_no, 'refunded');
    const rows = await h.processed(up.id, 2);
    expect(rows[1]).toMatchObject({ reported_status: 'refunded', state: 'applied', outcome: 'applied refunded' });
    const after = (await getOrder(t.app.http, o.shop_order_no))!;
    expect(after).toMatchObject({ status: 'refunded', refund_state: 'refundable' });
    expect(h.reads() - before).toBe(1);
  });

  it('two quick callbacks of one order share one read', async () => {
    t.sandbox.faults.set({ callbacks: 'drop' });
    const o = await h.place('SHARE');
    const up = await t.sandbox.waitForOrderStatus(o.upstream_order_id!, 'delivered');
    // the read is held at the upstream while the second callback comes in
    t.sandbox.faults.set({ callbacks: 'drop', rules: [{ operation: 'getOrder', kind: 'delay', delayMs: 500, times: 1 }] });
    const before = h.reads();
    const ts = Math.floor(Date.now() / 1000);
    await Promise.all([
      h.callBack(up.id, o.downstream_order_no, 'delivered', { ts }),
      h.callBack(up.id, o.downstream_order_no, 'delivered', { ts: ts - 1 }),
    ]);
    const rows = await h.processed(up.id, 2);
    expect(rows.map((r) => r.state)).toEqual(['applied', 'applied']);
    expect((await getOrder(t.app.http, o.shop_order_no))!.items).toEqual(upstreamItems(t.sandbox, up.id));
    expect(h.reads() - before).toBe(1);
  });

  it("a callback naming another attempt than the order's current one changes nothing", async () => {
    t.sandbox.faults.set({
      callbacks: 'drop',
      rules: [{ operation: 'createOrder', kind: 'coded_error', status: 409, errorCode: 'insufficient_stock', times: 1 }],
    });
    const shopNo = 'CV-OTHER-1';
    const first = await t.app.http.post('/internal/orders', { shop_order_no: shopNo, sku_code: 'CV-AUTO', quantity: 1 });
    expect((first.data as { order: OrderView }).order.status).toBe('rejected');
    const again = await t.app.http.post('/internal/orders', { shop_order_no: shopNo, sku_code: 'CV-AUTO', quantity: 1 });
    expect(again.status).toBe(201);
    const o = (again.data as { order: OrderView }).order;
    expect(o.attempt).toBe(2);
    const up = await t.sandbox.waitForOrderStatus(o.upstream_order_id!, 'delivered');
    const before = await getOrder(t.app.http, shopNo);
    const reads = h.reads();
    // attempt 1's number, the upstream order attempt 2 follows: a claim that would cancel the order
    await h.callBack(up.id, shopNo, 'canceled');
    const [row] = await h.processed(up.id, 1);
    expect(row).toMatchObject({ reported_status: 'canceled', state: 'ignored' });
    expect(await getOrder(t.app.http, shopNo)).toEqual(before);
    expect(h.reads()).toBe(reads);
  });

  it('a delivered callback settles a submit_unknown order; the poller does not read it again', async () => {
    t.sandbox.faults.set({ callbacks: 'drop', rules: [{ operation: 'createOrder', kind: 'hang_after', times: 1 }] });
    const shopNo = 'CV-UNKNOWN-1';
    const r = await t.app.http.post('/internal/orders', { shop_order_no: shopNo, sku_code: 'CV-AUTO', quantity: 1 });
    expect([r.status, (r.data as { order: OrderView }).order.status]).toEqual([202, 'submit_unknown']);
    const up = await waitFor(
      async () => t.sandbox.orders().find((x) => x.downstream_order_no === shopNo),
      (x) => x?.status === 'delivered',
      'the upstream order to be delivered',
    );
    await h.callBack(up!.id, shopNo, 'delivered', { payload: up!.payload! });
    await h.processed(up!.id, 1);
    const done = await waitForOrder(t.app.http, shopNo, (x) => x.status === 'delivered');
    expect(done).toMatchObject({ upstream_order_id: up!.id, items: upstreamItems(t.sandbox, up!.id) });
    expect(await h.followed(shopNo)).toBeNull();
    const reads = h.reads();
    await passesRun(t.app.relay.app.get(OrderPoller).passes, 2, 'poller passes');
    expect(h.reads()).toBe(reads);
  });

  it("40 orders over 4 products, callbacks on: one create each and the price reads; each delivered with the upstream's items", async () => {
    const skus = FORTY_SKUS;
    const before = { ...t.sandbox.stats.requests };
    const totalBefore = t.sandbox.stats.totalRequests;
    const orders: OrderView[] = [];
    await runLimited(
      Array.from({ length: 40 }, (_, i) => i),
      8,
      async (i) => {
        const r = await t.app.http.post('/internal/orders', { shop_order_no: `CV-40-${i}`, sku_code: skus[i % 4], quantity: 1 + (i % 3) });
        expect(r.status).toBe(201);
        orders.push((r.data as { order: OrderView }).order);
      },
    );
    for (const o of orders) {
      const done = await waitForOrder(t.app.http, o.shop_order_no, (x) => x.status === 'delivered' && x.items.length > 0, 30_000);
      expect(done.items).toEqual(upstreamItems(t.sandbox, o.upstream_order_id!));
    }
    const spent = (op: 'createOrder' | 'getOrder' | 'product' | 'ping') => t.sandbox.stats.requests[op] - before[op];
    expect(spent('createOrder')).toBe(40);
    expect(spent('getOrder')).toBe(0);
    // nothing else but the creates and the price guard's product reads (the upstream monitor's ping
    // runs on its own schedule, whatever the orders: a slow run may catch one)
    expect(t.sandbox.stats.totalRequests - totalBefore - spent('ping')).toBe(40 + spent('product'));
  });
});

describe('callbacks while they flow: the poller does not read on top of them', () => {
  const t = useAppSuite({
    sandbox: {
      catalog: { products: 2 },
      // each step comes before the next poll would (a callback order is polled from 6 × the base: 1.2 s)
      timetable: { paidMs: 300, fulfillingMs: 600, deliveredMs: 900 },
      callbackRetryDelaysMs: [100, 200, 400, 800],
    },
    prepare: (sandbox) => sandbox.catalog.addProduct({ skus: [{ skuCode: 'CF-AUTO', price: '4.00' }] }),
    env: async () => {
      const port = await freePort();
      return {
        PORT: String(port),
        CALLBACK_PUBLIC_URL: `http://127.0.0.1:${port}/callbacks/upstream`,
        ORDER_POLL_BASE_MS: '200',
        ORDER_POLL_MAX_MS: '400',
        UPSTREAM_TIMEOUT_MS: '1000',
        // no scheduled sync: every request counted is an order's
        SYNC_CRON: 'off',
      };
    },
    seed: true,
  });
  const h = helpers(t, 'CF', 'CF-AUTO');

  it('an order whose callbacks keep arriving costs no poll; one whose callbacks stop is polled', async () => {
    const before = h.reads();
    const o = await h.place('FLOW');
    const done = await waitForOrder(t.app.http, o.shop_order_no, (x) => x.status === 'delivered' && x.items.length > 0);
    expect(done.items).toEqual(upstreamItems(t.sandbox, o.upstream_order_id!));
    await h.processed(o.upstream_order_id!, 3);
    expect(h.reads() - before).toBe(0);

    t.sandbox.faults.set({ callbacks: 'drop' });
    const quiet = await h.place('QUIET');
    const polled = await waitForOrder(t.app.http, quiet.shop_order_no, (x) => x.status === 'delivered' && x.items.length > 0);
    expect(polled.items).toEqual(upstreamItems(t.sandbox, quiet.upstream_order_id!));
    expect(h.reads() - before).toBeGreaterThan(0);
  });
});

describe('callbacks under CALLBACK_TRUST=confirm', () => {
  const t = useAppSuite({
    sandbox: {
      catalog: { products: 2 },
      // the upstream order stays pending_payment: nothing it says is delivered
      timetable: { paidMs: null, fulfillingMs: null, deliveredMs: null, completedMs: null },
    },
    prepare: (sandbox) => sandbox.catalog.addProduct({ skus: [{ skuCode: 'CC-AUTO', price: '4.00' }] }),
    env: async () => {
      const port = await freePort();
      return {
        PORT: String(port),
        CALLBACK_PUBLIC_URL: `http://127.0.0.1:${port}/callbacks/upstream`,
        ORDER_POLL_BASE_MS: '60000',
        ORDER_POLL_MAX_MS: '60000',
        UPSTREAM_TIMEOUT_MS: '1000',
        CALLBACK_TRUST: 'confirm',
      };
    },
    seed: true,
  });
  const h = helpers(t, 'CC', 'CC-AUTO');

  it('a false but validly signed claim is not applied: the upstream is read and its answer applied', async () => {
    t.sandbox.faults.set({ callbacks: 'drop' });
    const o = await h.place('FALSE');
    const before = h.reads();
    await h.callBack(o.upstream_order_id!, o.downstream_order_no, 'delivered', { payload: 'NOT-A-REAL-ITEM' });
    const [row] = await h.processed(o.upstream_order_id!, 1);
    expect(row).toMatchObject({ reported_status: 'delivered', state: 'applied' });
    expect(h.reads() - before).toBe(1);
    const after = (await getOrder(t.app.http, o.shop_order_no))!;
    expect(after).toMatchObject({ status: 'pending_payment', items: [] });
  });
});
