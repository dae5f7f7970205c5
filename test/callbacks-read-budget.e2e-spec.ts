/**
 * Under CALLBACK_TRUST=confirm, callbacks decide when an order is read, not what is applied (CONTRACT
 * §6; issue 24, "spend fewer requests"), against the sandbox upstream as a real server, polling slow
 * enough (ORDER_POLL_BASE_MS 60 s) that every read counted here is a callback's (the default,
 * `verified`, is counted in callbacks-verified.e2e-spec.ts):
 * - an order followed by its callbacks through paid → fulfilling → delivered is read once: the paid
 *   and fulfilling callbacks only bring its next poll closer, the delivered one reads it;
 * - a paid callback of a followed order moves its next poll to ORDER_POLL_BASE_MS from now at the
 *   latest, with no read;
 * - a delivered callback received while the order's confirming read is in flight shares that read;
 * - a submit_unknown attempt is still settled by its callback;
 * - a delivered callback whose read fails leaves the order to the poller.
 * Orders run one at a time, so that the sandbox's count of `GET /orders/{id}` is each one's.
 */
import axios from 'axios';
import { useAppSuite } from './support/app-suite.js';
import { callbackHeaders, freePort, waitFor, waitForOrder, type OrderView } from './support/child-app.js';

const POLL_BASE_MS = 60_000;

interface InboxRow {
  reported_status: string;
  state: string;
  outcome: string | null;
  received_at: Date;
  processed_at: Date | null;
}

describe('callbacks under CALLBACK_TRUST=confirm: one read per delivered order', () => {
  const t = useAppSuite({
    sandbox: {
      catalog: { products: 2 },
      // no completedMs: the upstream order rests at `delivered`, so that no later callback reads it
      timetable: { paidMs: 30, fulfillingMs: 60, deliveredMs: 100 },
      callbackRetryDelaysMs: [100, 200, 400, 800],
    },
    prepare: (sandbox) => sandbox.catalog.addProduct({ skus: [{ skuCode: 'RB-AUTO', price: '4.00' }] }),
    env: async () => {
      const port = await freePort();
      return {
        PORT: String(port),
        CALLBACK_PUBLIC_URL: `http://127.0.0.1:${port}/callbacks/upstream`,
        // no poll comes before the callbacks are done: every read counted is a callback's (or a read
        // a test makes the poller do)
        ORDER_POLL_BASE_MS: String(POLL_BASE_MS),
        ORDER_POLL_MAX_MS: String(POLL_BASE_MS),
        UPSTREAM_TIMEOUT_MS: '1000',
        CALLBACK_TOLERANCE_S: '60',
        CALLBACK_TRUST: 'confirm',
      };
    },
    seed: true,
  });
  let n = 0;
  const no = (tag: string) => `RB-${tag}-${++n}`;
  const reads = () => t.sandbox.stats.requests.getOrder;

  const place = async (tag: string): Promise<OrderView> => {
    const r = await t.app.http.post('/internal/orders', { shop_order_no: no(tag), sku_code: 'RB-AUTO', quantity: 1 });
    expect(r.status).toBe(201);
    return (r.data as { order: OrderView }).order;
  };
  const inbox = (upstreamId: number) =>
    t.db.query<InboxRow>(
      'SELECT reported_status, state, outcome, received_at, processed_at FROM callback_inbox WHERE upstream_order_id = $1 ORDER BY id',
      [upstreamId],
    );
  /** The inbox rows of an upstream order once `count` of them are there and none is pending. */
  const processed = (upstreamId: number, count: number) =>
    waitFor(
      () => inbox(upstreamId),
      (rows) => rows.length >= count && rows.every((r) => r.state !== 'pending'),
      `the callbacks of upstream order ${upstreamId} to be processed`,
    );
  const events = async (shopNo: string) =>
    (
      (await t.app.http.get(`/internal/orders/${shopNo}/events`)).data as {
        events: Array<{ source: string; kind: string; from: string | null; to: string | null }>;
      }
    ).events;
  const followed = async (shopNo: string) =>
    (await t.db.query<{ next_poll_at: Date | null }>('SELECT next_poll_at FROM orders WHERE shop_order_no = $1', [shopNo]))[0].next_poll_at;
  /** Our own signed callback of the upstream order's current data, claiming `status` (`ts` makes bodies differ). */
  const callBack = async (o: OrderView, status: string, ts = Math.floor(Date.now() / 1000)) => {
    const up = t.sandbox.order(o.upstream_order_id!)!;
    const body = JSON.stringify({
      event: 'order.status_changed',
      order_id: up.id,
      order_no: up.order_no,
      downstream_order_no: o.downstream_order_no,
      status,
      ...(status === 'delivered'
        ? { fulfillment: { type: 'auto', status: 'delivered', payload: up.payload, delivered_at: new Date().toISOString() } }
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

  it('paid → fulfilling → delivered callbacks: the order is delivered with its items after one GET /orders/{id}', async () => {
    for (let i = 0; i < 3; i++) {
      const before = reads();
      const o = await place('FLOW');
      const done = await waitForOrder(t.app.http, o.shop_order_no, (x) => x.status === 'delivered' && x.items.length > 0);
      expect(done.items).toHaveLength(1);
      const rows = await processed(o.upstream_order_id!, 3);
      expect(rows.map((r) => r.reported_status)).toEqual(['paid', 'fulfilling', 'delivered']);
      expect(rows.map((r) => r.state)).toEqual(['applied', 'applied', 'applied']);
      // the earlier claims read nothing (the poll comes sooner, or the order is already there); the
      // delivered one is read, alone or together with the others claimed in its batch
      for (const row of rows) expect(row.outcome).toMatch(/^(poll_sooner: |late: |applied delivered$)/);
      expect(rows[2].outcome).toBe('applied delivered');
      expect(reads() - before).toBe(1);
      expect((await events(o.shop_order_no)).find((e) => e.kind === 'status' && e.to === 'delivered')).toMatchObject({
        source: 'callback',
      });
      // delivered with its items: no longer followed, so nothing reads it again
      expect(await followed(o.shop_order_no)).toBeNull();
    }
  });

  it('a paid callback of a followed order brings its next poll to ORDER_POLL_BASE_MS from now at the latest, without a read', async () => {
    t.sandbox.faults.set({ callbacks: 'drop' });
    const o = await place('SOONER');
    await t.sandbox.waitForOrderStatus(o.upstream_order_id!, 'delivered');
    const [{ far }] = await t.db.query<{ far: Date }>(
      "UPDATE orders SET next_poll_at = now() + interval '1 hour' WHERE shop_order_no = $1 RETURNING next_poll_at AS far",
      [o.shop_order_no],
    );
    const before = reads();
    await callBack(o, 'paid');
    const [row] = await processed(o.upstream_order_id!, 1);
    expect(row).toMatchObject({ reported_status: 'paid', state: 'applied', outcome: expect.stringMatching(/^poll_sooner: /) });
    const next = (await followed(o.shop_order_no))!;
    expect(next.getTime()).toBeLessThan(new Date(far).getTime());
    expect(next.getTime()).toBeLessThanOrEqual(new Date(row.processed_at!).getTime() + POLL_BASE_MS);
    expect(reads()).toBe(before);
    expect((await waitForOrder(t.app.http, o.shop_order_no, () => true)).status).toBe('pending_payment');

    // its delivered callback reads it: delivered with its items, no longer followed
    await callBack(o, 'delivered');
    const rows = await processed(o.upstream_order_id!, 2);
    expect(rows[1]).toMatchObject({ reported_status: 'delivered', state: 'applied', outcome: 'applied delivered' });
    expect(reads() - before).toBe(1);
    expect((await waitForOrder(t.app.http, o.shop_order_no, () => true)).items).toHaveLength(1);
    expect(await followed(o.shop_order_no)).toBeNull();
  });

  it("a delivered callback received while the order's confirming read is in flight shares that read", async () => {
    t.sandbox.faults.set({ callbacks: 'drop' });
    const o = await place('SHARED');
    await t.sandbox.waitForOrderStatus(o.upstream_order_id!, 'delivered');
    // the first confirming read is held at the upstream while the second callback comes in
    t.sandbox.faults.set({ callbacks: 'drop', rules: [{ operation: 'getOrder', kind: 'delay', delayMs: 800, times: 1 }] });
    const before = reads();
    const ts = Math.floor(Date.now() / 1000);
    await callBack(o, 'delivered', ts);
    await waitFor(reads, (x) => x > before, 'the first confirming read');
    await callBack(o, 'delivered', ts - 1);
    const rows = await processed(o.upstream_order_id!, 2);
    expect(rows.map((r) => [r.state, r.outcome])).toEqual([
      ['applied', 'applied delivered'],
      ['applied', 'applied delivered (shared read)'],
    ]);
    expect(reads() - before).toBe(1);
    const done = (await waitForOrder(t.app.http, o.shop_order_no, () => true))!;
    expect([done.status, done.items.length]).toEqual(['delivered', 1]);
  });

  it('a callback carrying its downstream_order_no still settles a submit_unknown attempt', async () => {
    const shopNo = no('UNKNOWN');
    t.sandbox.faults.set({ rules: [{ operation: 'createOrder', kind: 'error_after', status: 502, times: 1 }] });
    const before = reads();
    const r = await t.app.http.post('/internal/orders', { shop_order_no: shopNo, sku_code: 'RB-AUTO', quantity: 1 });
    expect(r.status).toBe(202);
    expect((r.data as { order: OrderView }).order.status).toBe('submit_unknown');
    const upstream = t.sandbox.orders().find((x) => x.downstream_order_no === shopNo)!;
    const done = await waitForOrder(t.app.http, shopNo, (x) => x.status === 'delivered' && x.items.length > 0);
    expect(done).toMatchObject({ upstream_order_id: upstream.id, attempt: 1 });
    expect((await events(shopNo)).find((e) => e.from === 'submit_unknown')).toMatchObject({ source: 'callback' });
    expect(t.sandbox.orders().filter((x) => x.downstream_order_no === shopNo)).toHaveLength(1);
    const rows = await processed(upstream.id, 3);
    expect(rows.map((x) => x.state)).toEqual(['applied', 'applied', 'applied']);
    expect(rows.some((x) => x.outcome === `resolved attempt ${shopNo}`)).toBe(true);
    // the read that settles the attempt, and at most one more for its delivery
    expect(reads() - before).toBeLessThanOrEqual(2);
  });

  it('a delivered callback whose confirming read fails is kept as read_failed and leaves the order to the poller', async () => {
    t.sandbox.faults.set({ callbacks: 'drop' });
    const o = await place('READFAIL');
    await t.sandbox.waitForOrderStatus(o.upstream_order_id!, 'delivered');
    t.sandbox.faults.set({ callbacks: 'drop', rules: [{ operation: 'getOrder', kind: 'error_before', status: 503, times: 1 }] });
    const before = reads();
    await callBack(o, 'delivered');
    const [row] = await processed(o.upstream_order_id!, 1);
    expect(row).toMatchObject({ reported_status: 'delivered', state: 'read_failed', outcome: expect.any(String) });
    // made due now: the poller reads it (not the callback's claim) and delivers its items
    const done = await waitForOrder(t.app.http, o.shop_order_no, (x) => x.status === 'delivered');
    expect(done.items).toHaveLength(1);
    const evs = await events(o.shop_order_no);
    expect(evs.some((e) => e.source === 'callback')).toBe(false);
    expect(evs.find((e) => e.kind === 'status' && e.to === 'delivered')).toMatchObject({ source: 'poll' });
    // the failed read and the poller's
    expect(reads() - before).toBe(2);
    expect((await inbox(o.upstream_order_id!)).map((x) => x.state)).toEqual(['read_failed']);
  });
});
