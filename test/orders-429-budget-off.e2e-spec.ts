/**
 * A 429 is never a refusal of the order, with the request budget off (UPSTREAM_RATE_LIMIT=off, the
 * `spec` profile's default; CONTRACT §5): the upstream processed nothing, so the order is answered 202
 * `queued` and the same attempt is sent again under the same number once the block is over (the
 * answer's Retry-After, else UPSTREAM_RATE_LIMIT_BLOCK_S). Meanwhile this process sends nothing: a
 * new order waits at most ORDER_QUEUE_WAIT_MS and is queued behind. A 429 on the price guard's read
 * queues the order the same way; a cancel or a refresh answered 429 is 503 with the order unchanged.
 * The Dujiao-Next 429 (no Retry-After, the server's generic body) is a `coded_error` fault with
 * status 429; the `rate_limit` fault adds a Retry-After.
 */
import { useAppSuite } from './support/app-suite.js';
import { freePort, getOrder, waitForOrder, type OrderView } from './support/child-app.js';
import { waitFor } from './support/wait.js';

const DUJIAO_429 = JSON.stringify({ status_code: 429, msg: 'too many requests', data: { request_id: 'req-429' } });

interface HealthView {
  upstream: { status: string };
  budget: { limit: string | null; blocked_until: string | null };
}

describe('a 429 with the request budget off', () => {
  const t = useAppSuite({
    sandbox: { timetable: { paidMs: 20, fulfillingMs: 40, deliveredMs: 60, completedMs: null } },
    prepare: (sandbox) => {
      sandbox.catalog.addProduct({ skus: [{ skuCode: 'RL-1', price: '3.00' }] });
      sandbox.catalog.addProduct({ skus: [{ skuCode: 'RL-2', price: '4.00' }] });
    },
    env: async () => ({
      UPSTREAM_RATE_LIMIT: 'off',
      UPSTREAM_RATE_LIMIT_BLOCK_S: '1',
      ORDER_QUEUE_WAIT_MS: '100',
      ORDER_POLL_BASE_MS: '100',
      ORDER_POLL_MAX_MS: '400',
      PORT: String(await freePort()),
    }),
    seed: true,
  });

  const place = (no: string, sku = 'RL-1') => t.app.http.post('/internal/orders', { shop_order_no: no, sku_code: sku, quantity: 1 });
  const upstreamOf = (no: string) => t.sandbox.orders().filter((o) => o.downstream_order_no?.startsWith(no));
  const health = async () => (await t.app.http.get('/health')).data as HealthView;
  /** The block of the last test is over: the next test starts with a free key. */
  const unblocked = () => waitFor(health, (h) => h.budget.blocked_until === null, 'the end of the block', 10_000);

  afterEach(async () => {
    await unblocked();
  });

  it('a create answered 429 without Retry-After: 202 queued; sent again after the block, same number; one upstream order', async () => {
    const creates = t.sandbox.stats.requests.createOrder;
    t.sandbox.faults.set({ rules: [{ operation: 'createOrder', kind: 'coded_error', status: 429, body: DUJIAO_429, times: 1 }] });
    const r = await place('OFF429-1');
    expect(r.status).toBe(202);
    expect(r.data).toMatchObject({
      ok: true,
      order: { status: 'queued', attempt: 1, downstream_order_no: 'OFF429-1', refund_state: 'not_refundable' },
    });
    // the key is blocked for UPSTREAM_RATE_LIMIT_BLOCK_S, and /health says so
    const blocked = await health();
    expect(blocked.budget).toMatchObject({ limit: null, blocked_until: expect.stringMatching(/^\d{4}-/) });
    expect(blocked.upstream.status).toBe('rate_limited');
    expect(upstreamOf('OFF429-1')).toHaveLength(0);

    const done = await waitForOrder(t.app.http, 'OFF429-1', (o) => o.status === 'delivered' && o.items.length === 1, 30_000);
    expect(done).toMatchObject({ attempt: 1, downstream_order_no: 'OFF429-1' });
    expect(upstreamOf('OFF429-1').map((o) => o.downstream_order_no)).toEqual(['OFF429-1']);
    expect(t.sandbox.stats.requests.createOrder - creates).toBe(2);
  });

  it('nothing is sent in the block: a new order waits ORDER_QUEUE_WAIT_MS at most, queues behind; both placed in order, once', async () => {
    t.sandbox.faults.set({ rules: [{ operation: 'createOrder', kind: 'rate_limit', retryAfterS: 2, times: 1 }] });
    const first = await place('OFFQ-1');
    expect(first.status).toBe(202);
    const reads = t.sandbox.stats.requests.product;
    const creates = t.sandbox.stats.requests.createOrder;
    const second = await place('OFFQ-2', 'RL-2');
    expect(second.status).toBe(202);
    expect(second.data).toMatchObject({ order: { status: 'queued', attempt: 1, downstream_order_no: 'OFFQ-2' } });
    // the second order's price read and create were held back by the block: nothing reached the upstream
    expect(t.sandbox.stats.requests.product).toBe(reads);
    expect(t.sandbox.stats.requests.createOrder).toBe(creates);

    for (const no of ['OFFQ-1', 'OFFQ-2']) await waitForOrder(t.app.http, no, (o) => o.status === 'delivered', 30_000);
    const [a, b] = [upstreamOf('OFFQ-1'), upstreamOf('OFFQ-2')];
    expect(a).toHaveLength(1);
    expect(b).toHaveLength(1);
    expect(a[0].id).toBeLessThan(b[0].id);
    expect(t.sandbox.stats.requests.createOrder - creates).toBe(2);
  });

  it("a 429 on the price guard's read: 202 queued, nothing sent; read and placed after the block, once", async () => {
    t.sandbox.faults.set({ rules: [{ operation: 'product', kind: 'rate_limit', retryAfterS: 1, times: 1 }] });
    const creates = t.sandbox.stats.requests.createOrder;
    const r = await place('OFFPR-1', 'RL-2');
    expect(r.status).toBe(202);
    expect(r.data).toMatchObject({ order: { status: 'queued', attempt: 1, downstream_order_no: 'OFFPR-1' } });
    expect(t.sandbox.stats.requests.createOrder).toBe(creates);
    const done = await waitForOrder(t.app.http, 'OFFPR-1', (o) => o.status === 'delivered', 30_000);
    expect(done).toMatchObject({ attempt: 1, downstream_order_no: 'OFFPR-1', amount: '4.00' });
    expect(upstreamOf('OFFPR-1')).toHaveLength(1);
    expect(t.sandbox.stats.requests.createOrder - creates).toBe(1);
  });

  it('a cancel or refresh answered 429: 503 upstream_unavailable, order unchanged; after the block the cancel goes through', async () => {
    t.sandbox.setTimetable({ paidMs: 60_000, fulfillingMs: 60_000, deliveredMs: 60_000, completedMs: null });
    try {
      const placed = await place('OFFC-1');
      expect(placed.status).toBe(201);
      const o = (placed.data as { order: OrderView }).order;
      t.sandbox.faults.set({ rules: [{ operation: 'cancelOrder', kind: 'rate_limit', retryAfterS: 1, times: 1 }] });
      const c = await t.app.http.post('/internal/orders/OFFC-1/cancel', {});
      expect(c.status).toBe(503);
      expect(c.data).toMatchObject({ error_code: 'upstream_unavailable', order: { status: 'pending_payment' } });
      expect(t.sandbox.order(o.upstream_order_id as number)?.status).toBe('pending_payment');
      await unblocked();

      t.sandbox.faults.set({ rules: [{ operation: 'getOrder', kind: 'rate_limit', retryAfterS: 1, times: 1 }] });
      const f = await t.app.http.post('/internal/orders/OFFC-1/refresh', {});
      expect(f.status).toBe(503);
      expect(f.data).toMatchObject({ error_code: 'upstream_unavailable' });
      expect(await getOrder(t.app.http, 'OFFC-1')).toMatchObject({ status: 'pending_payment', attempt: 1 });
      await unblocked();

      const again = await t.app.http.post('/internal/orders/OFFC-1/cancel', {});
      expect(again.status).toBe(200);
      expect(again.data).toMatchObject({ order: { status: 'canceled', refund_state: 'refundable' } });
    } finally {
      t.sandbox.setTimetable({ paidMs: 20, fulfillingMs: 40, deliveredMs: 60, completedMs: null });
    }
  });
});
