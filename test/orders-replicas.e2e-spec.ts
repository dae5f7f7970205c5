/**
 * Several replicas on one database (CONTRACT §9): two app instances place the same 30 orders at once,
 * cancel half of them at once, and follow the rest. No upstream order is created twice, none is
 * canceled twice, and no order is polled by both at the same time. And a callback may reach any of
 * them: one for an order placed through one instance, delivered to the other (then to both).
 */
import axios from 'axios';
import { CallbackProcessor } from '../src/callbacks/callback-processor.service.js';
import type { SandboxRequestEvent } from '../src/sandbox/sandbox.types.js';
import { useAppSuite } from './support/app-suite.js';
import { callbackHeaders, getOrder, waitFor, type OrderView } from './support/child-app.js';
import type { TestApp } from './support/test-app.js';
import { passesRun } from './support/wait.js';

describe('two replicas on one database', () => {
  const t = useAppSuite({
    sandbox: {
      dedupeDownstreamOrderNo: false,
      catalog: { products: 2 },
      // orders stop at paid (cancelable) until the test delivers them
      timetable: { paidMs: 50, fulfillingMs: null, deliveredMs: null, completedMs: null },
    },
    prepare: (sandbox) => sandbox.catalog.addProduct({ skus: [{ skuCode: 'REP', price: '2.00' }] }),
    // (a timeout well above a busy machine's answers: this file is about exactly-once, not about timeouts)
    env: { ORDER_POLL_BASE_MS: '50', ORDER_POLL_MAX_MS: '100', UPSTREAM_TIMEOUT_MS: '10000' },
    instances: 2,
    seed: true,
  });

  it('30 orders placed through both at once, half canceled through both at once: one create and at most one cancel each', async () => {
    const { db, sandbox } = t;
    const [a, b] = t.apps;
    sandbox.faults.set({ latencyMs: 20 });
    // getOrder calls in flight per upstream order: a poll by both replicas at once would show as 2
    const inFlight = new Map<string, number>();
    let overlaps = 0;
    const watch = (e: SandboxRequestEvent) => {
      if (e.operation !== 'getOrder') return;
      const n = (inFlight.get(e.path) ?? 0) + (e.phase === 'received' ? 1 : -1);
      inFlight.set(e.path, n);
      if (n > 1) overlaps++;
    };
    sandbox.events.on('request', watch);
    try {
      const nos = Array.from({ length: 30 }, (_, i) => `REP-${i}`);
      const placed = await Promise.all(
        nos.flatMap((shopNo) =>
          [a, b].map((app) => app.http.post('/internal/orders', { shop_order_no: shopNo, sku_code: 'REP', quantity: 1 })),
        ),
      );
      for (const r of placed) expect([200, 201]).toContain(r.status);
      expect(sandbox.stats.createsReceived).toBe(30);
      expect(sandbox.stats.createsExecuted).toBe(30);
      for (const shopNo of nos) expect(sandbox.orders().filter((o) => o.downstream_order_no === shopNo)).toHaveLength(1);

      const toCancel = nos.slice(0, 15);
      const canceled = await Promise.all(
        toCancel.flatMap((shopNo) => [a, b].map((app) => app.http.post(`/internal/orders/${shopNo}/cancel`))),
      );
      for (const r of canceled) {
        expect({ status: r.status, order_status: (r.data as { order?: OrderView }).order?.status }).toEqual({
          status: 200,
          order_status: 'canceled',
        });
      }
      expect(sandbox.stats.requests.cancelOrder).toBe(15);
      expect(sandbox.stats.cancelsExecuted).toBe(15);

      const rest = nos.slice(15);
      for (const shopNo of rest) sandbox.setOrderStatus(sandbox.orders().find((o) => o.downstream_order_no === shopNo)!.id, 'delivered');
      const orders = await waitFor(
        async () => ((await b.http.get('/internal/orders', { params: { page_size: 500 } })).data as { items: OrderView[] }).items,
        (items) => rest.every((shopNo) => items.find((o) => o.shop_order_no === shopNo)?.status === 'delivered'),
        'the other 15 orders to be delivered',
        30_000,
      );
      for (const shopNo of toCancel) expect(orders.find((o) => o.shop_order_no === shopNo)?.status).toBe('canceled');
      const sources = await db.query<{ n: number }>(
        "SELECT count(*)::int AS n FROM order_events WHERE source = 'poll' AND new_status = 'delivered'",
      );
      expect(sources[0].n).toBe(15);
      expect(overlaps).toBe(0);
    } finally {
      sandbox.events.off('request', watch);
    }
  });
});

describe('two replicas on one database: a callback may reach either', () => {
  const t = useAppSuite({
    sandbox: {
      catalog: { products: 1 },
      // orders stay pending_payment until the test moves them
      timetable: { paidMs: null, fulfillingMs: null, deliveredMs: null, completedMs: null },
    },
    prepare: (sandbox) => sandbox.catalog.addProduct({ skus: [{ skuCode: 'REP-CB', price: '3.00' }] }),
    // polling is far off (a minute), so that only the callback can move the order during the test
    env: {
      ORDER_POLL_BASE_MS: '60000',
      ORDER_POLL_MAX_MS: '120000',
      UPSTREAM_TIMEOUT_MS: '2000',
      CALLBACK_SIGNATURE_PATH: '/callbacks/upstream',
    },
    instances: 2,
    seed: true,
  });

  const received = async (app: TestApp): Promise<number> => {
    const r = await axios.get(`${app.url}/metrics`, { validateStatus: () => true, responseType: 'text' });
    expect(r.status).toBe(200);
    return [...(r.data as string).matchAll(/^relay_callbacks_received_total(?:\{[^}]*\})? (\S+)$/gm)].reduce(
      (sum, m) => sum + Number(m[1]),
      0,
    );
  };
  const events = async (app: TestApp, shopNo: string) =>
    (
      (await app.http.get(`/internal/orders/${shopNo}/events`)).data as {
        events: Array<{ source: string; kind: string; from: string | null; to: string | null }>;
      }
    ).events;

  it("an order via A, its signed callback to B only: B applies it unread (CALLBACK_TRUST=verified); A's duplicate: no-op", async () => {
    const { db, sandbox } = t;
    const [a, b] = t.apps;
    const placed = await a.http.post('/internal/orders', { shop_order_no: 'REPCB-1', sku_code: 'REP-CB', quantity: 2 });
    expect(placed.status).toBe(201);
    const order = (placed.data as { order: OrderView }).order;
    expect(order.status).toBe('pending_payment');
    const upstreamId = order.upstream_order_id!;
    const path = `/orders/${upstreamId}`;

    // the upstream delivers it, and says so in a callback (to B, which did not place the order)
    const up = sandbox.setOrderStatus(upstreamId, 'delivered');
    expect(up.payload).toEqual(expect.any(String));
    let reads = 0;
    const countReads = (e: SandboxRequestEvent) => {
      if (e.operation === 'getOrder' && e.phase === 'received' && e.path.endsWith(path)) reads++;
    };
    sandbox.events.on('request', countReads);
    try {
      const [aBefore, bBefore] = [await received(a), await received(b)];
      const eventsBefore = await events(a, 'REPCB-1');
      expect(eventsBefore.some((e) => e.source === 'callback')).toBe(false);
      const body = JSON.stringify({
        event: 'order.fulfilled',
        order_id: upstreamId,
        order_no: up.order_no,
        downstream_order_no: 'REPCB-1',
        status: 'delivered',
        fulfillment: { type: 'auto', status: 'delivered', payload: up.payload, delivered_at: new Date().toISOString() },
        timestamp: Math.floor(Date.now() / 1000),
      });
      const headers = callbackHeaders(body);
      const toB = await axios.post(`${b.url}/callbacks/upstream`, body, {
        headers,
        validateStatus: () => true,
        transformRequest: [(d: unknown) => d],
      });
      expect({ status: toB.status, body: toB.data as unknown }).toEqual({ status: 200, body: { ok: true } });
      // B verified and took it; A saw nothing
      expect(await received(b)).toBe(bBefore + 1);
      expect(await received(a)).toBe(aBefore);

      // a verified callback with its fulfillment is applied as it stands, items included: A's API shows it
      const delivered = await waitFor(
        () => getOrder(a.http, 'REPCB-1'),
        (o) => o?.status === 'delivered',
        'REPCB-1 to be delivered through the callback',
        15_000,
      );
      expect(reads).toBe(0);
      expect(delivered!.items).toEqual(up.payload!.split(/\r?\n/).filter((l) => l.trim() !== ''));
      expect(delivered!.items).toHaveLength(2);
      expect(await getOrder(b.http, 'REPCB-1')).toMatchObject({ status: 'delivered', items: delivered!.items });
      const [row] = await waitFor(
        () =>
          db.query<{ state: string; duplicates: number }>('SELECT state, duplicates FROM callback_inbox WHERE upstream_order_id = $1', [
            upstreamId,
          ]),
        (rows) => rows.length === 1 && rows[0].state !== 'pending',
        'the callback to be processed',
      );
      expect(row).toMatchObject({ state: 'applied', duplicates: 0 });
      const afterCallback = await events(a, 'REPCB-1');
      const moved = afterCallback.filter((e) => e.kind === 'status' && e.to === 'delivered');
      expect(moved).toEqual([expect.objectContaining({ source: 'callback', from: 'pending_payment', to: 'delivered' })]);

      // the same callback delivered to A as well (the upstream retries; another replica answers)
      const toA = await axios.post(`${a.url}/callbacks/upstream`, body, {
        headers,
        validateStatus: () => true,
        transformRequest: [(d: unknown) => d],
      });
      expect({ status: toA.status, body: toA.data as unknown }).toEqual({ status: 200, body: { ok: true } });
      // recognised as a duplicate: one inbox record, counted once
      expect(
        await db.query<{ state: string; duplicates: number }>('SELECT state, duplicates FROM callback_inbox WHERE upstream_order_id = $1', [
          upstreamId,
        ]),
      ).toEqual([{ state: 'applied', duplicates: 1 }]);
      expect(await received(a)).toBe(aBefore);
      expect(await received(b)).toBe(bBefore + 1);
      // whole drains of either replica's inbox begun after (its retries): nothing more happens to the order
      await Promise.all([a, b].map((app) => passesRun(app.relay.app.get(CallbackProcessor).drains, 2, 'inbox drains')));
      expect(await events(a, 'REPCB-1')).toEqual(afterCallback);
      expect(await events(b, 'REPCB-1')).toEqual(afterCallback);
      expect(await getOrder(a.http, 'REPCB-1')).toMatchObject({ status: 'delivered', items: delivered!.items });
    } finally {
      sandbox.events.off('request', countReads);
    }
  });
});
