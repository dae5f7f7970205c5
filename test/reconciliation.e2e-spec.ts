/**
 * Reconciliation (issue 25, point 3): the upstream refunds a delivered order without a callback (an
 * admin refund sends none; here the relay has no CALLBACK_PUBLIC_URL, so the sandbox sends none) and
 * the relay, which no longer follows a delivered order, finds it by reading the order again:
 * - on its schedule (RECONCILE_AFTER, counted on the service's clock, which the test moves forward so
 *   that a read is due exactly when the test says, after the upstream changed the order);
 * - on demand, for a range of created_at: a run with its progress, one at a time.
 * Each difference is applied by the rules of a poll (`refunded` → refundable), listed as an item,
 * counted in relay_reconciliation_differences_total{field} and sent to the shop as `order.reconciled`.
 */
import { createRelayApp, type RelayApp } from '../src/app.factory.js';
import { loadConfig } from '../src/config/app-config.js';
import { OrderPoller } from '../src/orders/order-poller.service.js';
import { ReconciliationScheduler } from '../src/reconciliation/reconciliation.scheduler.js';
import type { SandboxServer } from '../src/sandbox/sandbox.server.js';
import axios, { type AxiosInstance } from 'axios';
import { useAppSuite } from './support/app-suite.js';
import { seedCatalog, waitForOrder, type OrderView } from './support/child-app.js';
import { FakeShop } from './support/fake-shop.js';
import { openTestDatabase, startSandbox, TEST_TOKEN, testEnv, type TestDatabase } from './support/test-app.js';
import { TestClock } from './support/test-clock.js';
import { passesRun, waitFor } from './support/wait.js';

const SECRET = 'reconciliation-webhook-secret';
const MINUTE = 60_000;
const HOUR = 60 * MINUTE;
/** Delivered quickly, then left `delivered` (no completion): the relay stops following it. */
const TIMETABLE = { paidMs: 20, fulfillingMs: 40, deliveredMs: 60, completedMs: null };

interface Item {
  id: string;
  shop_order_no: string;
  field: string;
  local: string | null;
  upstream: string | null;
  applied: boolean;
  run_id: string | null;
  detected_at: string;
}

async function itemsOf(http: AxiosInstance, query: string): Promise<{ items: Item[]; total: number }> {
  const r = await http.get(`/internal/reconciliation/items?${query}`);
  expect(r.status).toBe(200);
  return r.data as { items: Item[]; total: number };
}

async function placeDelivered(http: AxiosInstance, shopOrderNo: string, skuCode: string): Promise<OrderView> {
  const placed = await http.post('/internal/orders', { shop_order_no: shopOrderNo, sku_code: skuCode, quantity: 1 });
  expect(placed.status).toBe(201);
  return waitForOrder(http, shopOrderNo, (o) => o.status === 'delivered' && o.items.length > 0);
}

describe('scheduled reconciliation', () => {
  let db: TestDatabase;
  let sandbox: SandboxServer;
  let relay: RelayApp;
  let http: AxiosInstance;
  const clock = new TestClock();
  const shop = new FakeShop();

  beforeAll(async () => {
    await shop.start('/shop/hooks');
    db = await openTestDatabase();
    sandbox = await startSandbox({ catalog: { products: 2 }, timetable: TIMETABLE });
    sandbox.catalog.addProduct({ skus: [{ skuCode: 'REC-1', price: '2.00' }] });
    const config = loadConfig({
      ...testEnv(sandbox, {
        RECONCILE_AFTER: '1m,1h',
        SHOP_WEBHOOK_URL: shop.url,
        SHOP_WEBHOOK_SECRET: SECRET,
        ORDER_POLL_BASE_MS: '50',
        ORDER_POLL_MAX_MS: '200',
      }),
      DATABASE_URL: db.url,
    });
    relay = await createRelayApp(config, { endpoint: db.endpoint, logger: false, clock });
    http = axios.create({
      baseURL: relay.url,
      headers: { authorization: `Bearer ${TEST_TOKEN}` },
      validateStatus: () => true,
      timeout: 30_000,
    });
    await seedCatalog(http);
  });
  afterAll(async () => {
    await relay?.close();
    await sandbox?.stop();
    await db?.close();
    await shop.stop();
  });

  const schedule = async (shopOrderNo: string) =>
    (
      await db.query<{ reconcile_at: Date | null; reconcile_planned_at: Date | null; reconciled_at: Date | null }>(
        'SELECT reconcile_at, reconcile_planned_at, reconciled_at FROM orders WHERE shop_order_no = $1',
        [shopOrderNo],
      )
    )[0];
  /** The order joined the schedule: its first read is due one step (1 min) after, on the service's clock. */
  const planned = (shopOrderNo: string) =>
    waitFor(
      () => schedule(shopOrderNo),
      (s) => s.reconcile_planned_at !== null,
      `${shopOrderNo} planned`,
    );
  const reconciledWebhooks = (shopOrderNo: string) =>
    shop.received
      .map((h) => ({ ...h, parsed: JSON.parse(h.body) as { event: string; subject: string; data: Record<string, unknown> } }))
      .filter((h) => h.parsed.event === 'order.reconciled' && h.parsed.subject === shopOrderNo);
  const metric = async (field: string): Promise<number> => {
    const text = (await axios.get(`${relay.url}/metrics`)).data as string;
    const line = text.split('\n').find((l) => l.startsWith(`relay_reconciliation_differences_total{field="${field}",supplier="main"}`));
    return line ? Number(line.split(' ').pop()) : 0;
  };

  it('finds a refund the upstream made without a callback: refunded and refundable, two items, the metric, the shop webhook', async () => {
    const order = await placeDelivered(http, 'REC-FULL', 'REC-1');
    const first = await planned('REC-FULL');
    expect(first.reconcile_at!.getTime() - first.reconcile_planned_at!.getTime()).toBe(MINUTE);
    const before = { status: await metric('status'), refunded: await metric('refunded_amount') };

    sandbox.refundOrder(order.upstream_order_id!);
    // whole passes of the poller and of the reconciliation begun after: nothing follows a delivered
    // order, nothing tells it, and its scheduled read is not due yet
    await passesRun(relay.app.get(OrderPoller).passes, 2, 'poller passes');
    await passesRun(relay.app.get(ReconciliationScheduler).passes, 1, 'reconciliation passes');
    expect((await waitForOrder(http, 'REC-FULL', () => true)).status).toBe('delivered');
    expect((await itemsOf(http, 'shop_order_no=REC-FULL')).total).toBe(0);

    clock.advance(MINUTE + 1000); // the first scheduled read is due
    const refunded = await waitForOrder(http, 'REC-FULL', (o) => o.status === 'refunded');
    expect(refunded).toMatchObject({ refund_state: 'refundable', refundable_amount: '2.00', refunded_amount: '2.00' });

    const { items, total } = await itemsOf(http, 'shop_order_no=REC-FULL');
    expect(total).toBe(2);
    expect(items.map((i) => [i.field, i.local, i.upstream, i.applied, i.run_id]).sort()).toEqual([
      ['refunded_amount', null, '2.00', true, null],
      ['status', 'delivered', 'refunded', true, null],
    ]);
    expect(await metric('status')).toBe(before.status + 1);
    expect(await metric('refunded_amount')).toBe(before.refunded + 1);

    const [hook] = await waitFor(
      () => reconciledWebhooks('REC-FULL'),
      (h) => h.length > 0,
      'the order.reconciled webhook',
    );
    expect(shop.verify(hook, SECRET)).toEqual({ ok: true });
    expect(hook.parsed.data).toMatchObject({ shop_order_no: 'REC-FULL', status: 'refunded', previous_status: 'delivered', run_id: null });
    expect(hook.parsed.data.differences).toEqual(
      expect.arrayContaining([
        { field: 'status', local: 'delivered', upstream: 'refunded', applied: true },
        { field: 'refunded_amount', local: null, upstream: '2.00', applied: true },
      ]),
    );
    // the status change itself is announced as any other, and recorded as a poll's
    const events = (await http.get('/internal/orders/REC-FULL/events')).data as {
      events: Array<{ source: string; from: string | null; to: string | null }>;
    };
    expect(events.events.filter((e) => e.to === 'refunded')).toEqual([expect.objectContaining({ source: 'poll', from: 'delivered' })]);
    // a refunded order has nothing left to reconcile on the schedule
    expect((await schedule('REC-FULL')).reconcile_at).toBeNull();
  });

  it('finds a partial refund: partially_refunded with the refunded amount, refundable for it', async () => {
    const order = await placeDelivered(http, 'REC-PART', 'REC-1');
    await planned('REC-PART');
    sandbox.refundOrder(order.upstream_order_id!, '0.50');

    clock.advance(MINUTE + 1000);
    const partial = await waitForOrder(http, 'REC-PART', (o) => o.status === 'partially_refunded');
    expect(partial).toMatchObject({ refund_state: 'refundable', refundable_amount: '0.50', refunded_amount: '0.50' });
    const { items } = await itemsOf(http, 'shop_order_no=REC-PART');
    expect(items.map((i) => [i.field, i.local, i.upstream]).sort()).toEqual([
      ['refunded_amount', null, '0.50'],
      ['status', 'delivered', 'partially_refunded'],
    ]);
    await waitFor(
      () => reconciledWebhooks('REC-PART'),
      (h) => h.length === 1,
      'the order.reconciled webhook',
    );
    // partially refunded is still read on the schedule: its next step, an hour after it was planned
    const s = await schedule('REC-PART');
    expect(s.reconcile_at!.getTime() - s.reconcile_planned_at!.getTime()).toBe(HOUR);
  });

  it('records nothing for an order the upstream did not change, and thins its reads out until none is left', async () => {
    await placeDelivered(http, 'REC-SAME', 'REC-1');
    await planned('REC-SAME');

    clock.advance(MINUTE + 1000);
    const afterFirst = await waitFor(
      () => schedule('REC-SAME'),
      (s) => s.reconciled_at !== null,
      'the first scheduled read',
    );
    expect(afterFirst.reconcile_at!.getTime() - afterFirst.reconcile_planned_at!.getTime()).toBe(HOUR);

    clock.advance(HOUR);
    const afterLast = await waitFor(
      () => schedule('REC-SAME'),
      (s) => s.reconcile_at === null,
      'the last scheduled read',
    );
    expect(afterLast.reconciled_at!.getTime()).toBeGreaterThan(afterFirst.reconciled_at!.getTime());

    expect((await waitForOrder(http, 'REC-SAME', () => true)).status).toBe('delivered');
    expect((await itemsOf(http, 'shop_order_no=REC-SAME')).total).toBe(0);
    expect(reconciledWebhooks('REC-SAME')).toEqual([]);
  });
});

describe('on-demand reconciliation runs', () => {
  const t = useAppSuite({
    sandbox: { catalog: { products: 2 }, timetable: TIMETABLE },
    prepare: (sandbox) => sandbox.catalog.addProduct({ skus: [{ skuCode: 'REC-2', price: '3.00' }] }),
    env: { RECONCILE_AFTER: 'off', ORDER_POLL_BASE_MS: '50', ORDER_POLL_MAX_MS: '200' },
    seed: true,
  });

  interface Run {
    run_id: string;
    status: string;
    from: string;
    to: string;
    orders_total: number;
    orders_done: number;
    orders_failed: number;
    differences: number;
    error: string | null;
    finished_at: string | null;
  }
  const getRun = async (runId: string) =>
    (await t.app.http.get(`/internal/reconciliation/runs/${runId}`)).data as { ok: boolean; run: Run };

  it('reads the finished orders created in the range: progress, items, 409 while it runs', async () => {
    const http = t.app.http;
    const old = await placeDelivered(http, 'RUN-OLD', 'REC-2');
    // the range begins just after RUN-OLD's created_at (the service's clock, to the millisecond); the
    // orders below are created once that clock is past it
    const [{ created }] = await t.db.query<{ created: Date }>("SELECT created_at AS created FROM orders WHERE shop_order_no = 'RUN-OLD'");
    const from = new Date(created.getTime() + 1);
    await waitFor(
      () => Date.now(),
      (now) => now >= from.getTime(),
      "the clock past RUN-OLD's created_at",
    );
    const a = await placeDelivered(http, 'RUN-A', 'REC-2');
    const b = await placeDelivered(http, 'RUN-B', 'REC-2');
    const c = await placeDelivered(http, 'RUN-C', 'REC-2');
    const to = new Date();
    t.sandbox.refundOrder(old.upstream_order_id!);
    t.sandbox.refundOrder(a.upstream_order_id!);
    t.sandbox.refundOrder(c.upstream_order_id!, '1.25');
    // the run's read of RUN-B (an order of its range, and no other read) is held until the test lets it
    // go: the run is still running when it is asked for again
    t.sandbox.faults.set({ rules: [{ operation: 'getOrder', pathId: String(b.upstream_order_id), kind: 'hold_before', times: 1 }] });

    const started = await http.post('/internal/reconciliation', { from: from.toISOString(), to: to.toISOString() });
    expect(started.status).toBe(202);
    const { run_id: runId } = started.data as { ok: boolean; run_id: string; orders_total: number };
    expect(started.data).toMatchObject({ ok: true, orders_total: 3 });

    const again = await http.post('/internal/reconciliation', { from: from.toISOString(), to: to.toISOString() });
    expect(again.status).toBe(409);
    expect(again.data).toMatchObject({ ok: false, error_code: 'reconciliation_in_progress', run_id: runId });
    const running = await getRun(runId);
    expect(running.run).toMatchObject({
      run_id: runId,
      status: 'running',
      orders_total: 3,
      from: from.toISOString(),
      to: to.toISOString(),
      finished_at: null,
    });
    await waitFor(
      () => t.sandbox.heldRequests,
      (n) => n === 1,
      "the run's read of RUN-B held",
    );
    t.sandbox.releaseHeld();

    const done = await waitFor(
      () => getRun(runId),
      (r) => r.run.status !== 'running',
      'the run',
    );
    expect(done.run).toMatchObject({ status: 'succeeded', orders_total: 3, orders_done: 3, orders_failed: 0, differences: 4, error: null });
    expect(done.run.finished_at).not.toBeNull();

    const { items, total } = await itemsOf(http, `run_id=${runId}`);
    expect(total).toBe(4);
    expect(items.every((i) => i.run_id === runId && i.applied)).toBe(true);
    expect(items.map((i) => [i.shop_order_no, i.field, i.local, i.upstream]).sort()).toEqual([
      ['RUN-A', 'refunded_amount', null, '3.00'],
      ['RUN-A', 'status', 'delivered', 'refunded'],
      ['RUN-C', 'refunded_amount', null, '1.25'],
      ['RUN-C', 'status', 'delivered', 'partially_refunded'],
    ]);
    expect(await waitForOrder(http, 'RUN-A', () => true)).toMatchObject({
      status: 'refunded',
      refund_state: 'refundable',
      refundable_amount: '3.00',
    });
    expect(await waitForOrder(http, 'RUN-C', () => true)).toMatchObject({
      status: 'partially_refunded',
      refund_state: 'refundable',
      refundable_amount: '1.25',
    });
    // an order the upstream did not change, and one created before the range, are left as they were
    expect((await itemsOf(http, 'shop_order_no=RUN-B')).total).toBe(0);
    expect((await waitForOrder(http, 'RUN-OLD', () => true)).status).toBe('delivered');
    expect((await itemsOf(http, 'shop_order_no=RUN-OLD')).total).toBe(0);

    const list = (await http.get('/internal/reconciliation/runs')).data as {
      ok: boolean;
      items: Run[];
      total: number;
      page: number;
      page_size: number;
    };
    expect(list).toMatchObject({ ok: true, total: 1, page: 1, page_size: 100 });
    expect(list.items[0]).toMatchObject({ run_id: runId, status: 'succeeded' });
    const all = await itemsOf(http, 'page=1&page_size=2');
    expect(all.total).toBe(4);
    expect(all.items).toHaveLength(2);

    // the next run finds nothing more to change
    const second = await http.post('/internal/reconciliation', { from: from.toISOString(), to: to.toISOString() });
    expect(second.status).toBe(202);
    const secondId = (second.data as { run_id: string }).run_id;
    expect(
      (
        await waitFor(
          () => getRun(secondId),
          (r) => r.run.status !== 'running',
          'the second run',
        )
      ).run,
    ).toMatchObject({ status: 'succeeded', orders_done: 3, differences: 0 });
  });

  it('refuses a bad range with 400 and an unknown run with 404', async () => {
    const http = t.app.http;
    const bad = async (body: unknown, field: string) => {
      const r = await http.post('/internal/reconciliation', body);
      expect(r.status).toBe(400);
      expect(r.data).toMatchObject({ ok: false, error_code: 'bad_request' });
      expect(Object.keys((r.data as { fields: Record<string, string[]> }).fields)).toContain(field);
    };
    await bad({ to: '2026-11-22T00:00:00Z' }, 'from');
    await bad({ from: '2026-11-20T00:00:00Z' }, 'to');
    await bad({ from: '2026-02-30T00:00:00Z', to: '2026-11-22T00:00:00Z' }, 'from');
    await bad({ from: 'yesterday', to: '2026-11-22T00:00:00Z' }, 'from');
    await bad({ from: '2026-11-22T00:00:00Z', to: '2026-11-20T00:00:00Z' }, 'to');
    const notJson = await http.post('/internal/reconciliation', 'from=now', { headers: { 'content-type': 'text/plain' } });
    expect(notJson.status).toBe(400);

    const missing = await http.get('/internal/reconciliation/runs/rec_20260101000000_00000000');
    expect(missing.status).toBe(404);
    expect(missing.data).toMatchObject({ ok: false, error_code: 'reconciliation_run_not_found' });
    expect((await http.get('/internal/reconciliation/items?page_size=501')).status).toBe(400);
    expect((await axios.get(`${t.app.url}/internal/reconciliation/runs`, { validateStatus: () => true })).status).toBe(401);
  });
});

describe('scheduled reconciliation on two replicas', () => {
  let db: TestDatabase;
  let sandbox: SandboxServer;
  const relays: RelayApp[] = [];
  let http: AxiosInstance;
  const clock = new TestClock();

  beforeAll(async () => {
    db = await openTestDatabase();
    sandbox = await startSandbox({ catalog: { products: 2 }, timetable: TIMETABLE });
    sandbox.catalog.addProduct({ skus: [{ skuCode: 'REC-3', price: '1.00' }] });
    const config = () =>
      loadConfig({
        ...testEnv(sandbox, { RECONCILE_AFTER: '1m,1h', ORDER_POLL_BASE_MS: '50', ORDER_POLL_MAX_MS: '200' }),
        DATABASE_URL: db.url,
      });
    for (let i = 0; i < 2; i++) relays.push(await createRelayApp(config(), { endpoint: db.endpoint, logger: false, clock }));
    http = axios.create({
      baseURL: relays[0].url,
      headers: { authorization: `Bearer ${TEST_TOKEN}` },
      validateStatus: () => true,
      timeout: 30_000,
    });
    await seedCatalog(http);
  });
  afterAll(async () => {
    for (const r of relays) await r.close();
    await sandbox?.stop();
    await db?.close();
  });

  it('reads each due order once between them', async () => {
    const nos = Array.from({ length: 8 }, (_, i) => `REC-REP-${i}`);
    const orders = await Promise.all(nos.map((no) => placeDelivered(http, no, 'REC-3')));
    const states = () =>
      db.query<{ planned: number; read: number }>(
        `SELECT count(*) FILTER (WHERE reconcile_planned_at IS NOT NULL)::int AS planned,
                count(*) FILTER (WHERE reconciled_at IS NOT NULL)::int AS read
         FROM orders WHERE shop_order_no LIKE 'REC-REP-%'`,
      );
    await waitFor(states, ([s]) => s.planned === nos.length, 'every order planned');
    for (const o of orders.slice(0, 3)) sandbox.refundOrder(o.upstream_order_id!);
    const readsBefore = sandbox.stats.requests.getOrder;

    clock.advance(MINUTE + 1000);
    await waitFor(states, ([s]) => s.read === nos.length, 'every order read');
    // whole passes of both replicas' reconciliation begun after: nothing is read twice
    await Promise.all(relays.map((r) => passesRun(r.app.get(ReconciliationScheduler).passes, 2, 'reconciliation passes')));
    expect(sandbox.stats.requests.getOrder - readsBefore).toBe(nos.length);
    const items = (await http.get('/internal/reconciliation/items?page_size=500')).data as { items: Item[] };
    expect(
      items.items
        .filter((i) => i.shop_order_no.startsWith('REC-REP-') && i.field === 'status')
        .map((i) => i.shop_order_no)
        .sort(),
    ).toEqual(nos.slice(0, 3));
  });
});
