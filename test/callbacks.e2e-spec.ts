/**
 * The callback endpoint (CONTRACT §4, §6): every bad callback refused with a 4xx and nothing touched;
 * duplicated, reordered and dropped callbacks; an unknown order; a database failure (5xx, so that the
 * upstream retries); a callback settling a `submit_unknown` attempt; and an upstream that refuses our
 * callback address.
 */
import axios from 'axios';
import { Metrics } from '../src/ops/metrics.js';
import type { SandboxServer } from '../src/sandbox/sandbox.server.js';
import { callbackHeaders, freePort, getOrder, seedCatalog, sleep, waitFor, waitForOrder, type OrderView } from './support/child-app.js';
import { openTestDatabase, startSandbox, startTestApp, type TestApp, type TestDatabase } from './support/test-app.js';

const RANKS: Record<string, number> = {
  submitting: 0,
  submit_unknown: 1,
  pending_payment: 10,
  paid: 20,
  fulfilling: 30,
  partially_delivered: 40,
  delivered: 50,
  completed: 60,
  canceled: 70,
  partially_refunded: 80,
  refunded: 90,
};

describe('callbacks', () => {
  let db: TestDatabase;
  let sandbox: SandboxServer;
  let app: TestApp;
  let n = 0;
  const no = (tag: string) => `${tag}-${++n}`;

  beforeAll(async () => {
    db = await openTestDatabase();
    sandbox = await startSandbox({
      catalog: { products: 2 },
      timetable: { paidMs: 30, fulfillingMs: 60, deliveredMs: 100, completedMs: 150 },
      callbackRetryDelaysMs: [100, 200, 400, 800],
    });
    sandbox.catalog.addProduct({ skus: [{ skuCode: 'CB-AUTO', price: '4.00' }] });
    const port = await freePort();
    app = await startTestApp(db, sandbox, {
      PORT: String(port),
      CALLBACK_PUBLIC_URL: `http://127.0.0.1:${port}/callbacks/upstream`,
      // polling is slow here, so that callbacks do the work (and polling only catches what they miss)
      ORDER_POLL_BASE_MS: '1000',
      ORDER_POLL_MAX_MS: '2000',
      UPSTREAM_TIMEOUT_MS: '800',
      CALLBACK_TOLERANCE_S: '60',
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

  const place = async (tag: string): Promise<OrderView> => {
    const r = await app.http.post('/internal/orders', { shop_order_no: no(tag), sku_code: 'CB-AUTO', quantity: 1 });
    expect(r.status).toBe(201);
    return (r.data as { order: OrderView }).order;
  };
  const post = (body: string, headers: Record<string, string>) =>
    axios.post(`${app.url}/callbacks/upstream`, body, { headers, validateStatus: () => true, transformRequest: [(d: unknown) => d] });
  const inboxCount = async () => (await db.query<{ n: number }>('SELECT count(*)::int AS n FROM callback_inbox'))[0].n;
  const events = async (shopNo: string) =>
    ((await app.http.get(`/internal/orders/${shopNo}/events`)).data as { events: Array<{ source: string; kind: string; from: string | null; to: string | null }> }).events;
  const expectMonotonic = (evs: Array<{ kind: string; to: string | null }>) => {
    const ranks = evs.filter((e) => e.kind === 'status').map((e) => RANKS[e.to as string]);
    expect(ranks).toEqual([...ranks].sort((a, b) => a - b));
  };

  it('refuses every bad callback with 401 invalid_signature (413 when oversized), never a 5xx, touching nothing', async () => {
    const order = await place('BAD');
    await waitForOrder(app.http, order.shop_order_no, (o) => o.status === 'completed');
    // every callback of its own taken (so that nothing legitimate moves it during the checks)
    await waitFor(
      () => db.query<{ state: string }>('SELECT state FROM callback_inbox WHERE upstream_order_id = $1', [order.upstream_order_id]),
      (rows) => rows.length >= 4 && rows.every((r) => r.state !== 'pending'),
    );
    const settled = await waitForOrder(app.http, order.shop_order_no, () => true);
    const body = JSON.stringify({ event: 'order.status_changed', order_id: order.upstream_order_id, status: 'canceled', timestamp: Math.floor(Date.now() / 1000) });
    const now = Math.floor(Date.now() / 1000);
    const good = callbackHeaders(body);
    const without = (name: string) => Object.fromEntries(Object.entries(good).filter(([k]) => k !== name));
    const cases: Array<[string, string, Record<string, string>]> = [
      ['tampered body', body.replace('canceled', 'refunded'), good],
      ['wrong secret', body, callbackHeaders(body, { secret: 'not-the-secret' })],
      ['wrong api key', body, callbackHeaders(body, { apiKey: 'someone-else' })],
      ['missing api key', body, without('Service-Api-Key')],
      ['missing timestamp', body, without('Service-Timestamp')],
      ['missing signature', body, without('Service-Signature')],
      ['timestamp too old', body, callbackHeaders(body, { timestamp: now - 120 })],
      ['timestamp in the future', body, callbackHeaders(body, { timestamp: now + 120 })],
      ['malformed timestamp', body, { ...good, 'Service-Timestamp': 'yesterday' }],
      ['malformed hex', body, { ...good, 'Service-Signature': 'z'.repeat(64) }],
      ['short hex', body, { ...good, 'Service-Signature': good['Service-Signature'].slice(0, 63) }],
      ['signed over another path', body, callbackHeaders(body, { path: '/api/v1/upstream/callback' })],
      ['other header prefix', body, callbackHeaders(body, { headerPrefix: 'Dujiao-Next' })],
    ];
    const rejected = app.relay.app.get(Metrics).callbacksRejected;
    const before = (await rejected.get()).values.reduce((s, v) => s + v.value, 0);
    const count = await inboxCount();
    for (const [what, b, headers] of cases) {
      const r = await post(b, headers);
      expect({ what, status: r.status, body: r.data }).toEqual({ what, status: 401, body: { ok: false, error_code: 'invalid_signature', error_message: expect.any(String) } });
    }
    const after = (await rejected.get()).values.reduce((s, v) => s + v.value, 0);
    expect(after - before).toBe(cases.length);

    const big = JSON.stringify({ order_id: order.upstream_order_id, status: 'canceled', pad: 'x'.repeat(70 * 1024) });
    const oversized = await post(big, callbackHeaders(big));
    expect(oversized.status).toBe(413);
    expect(oversized.data).toMatchObject({ ok: false, error_code: 'payload_too_large' });
    const notJson = await post('{"order_id":', callbackHeaders('{"order_id":'));
    expect(notJson.status).toBe(400);
    const noOrderId = JSON.stringify({ status: 'paid' });
    const malformed = await post(noOrderId, callbackHeaders(noOrderId));
    expect(malformed.status).toBe(400);

    expect(await inboxCount()).toBe(count);
    const after2 = await waitForOrder(app.http, order.shop_order_no, () => true);
    expect(after2.status).toBe(settled.status);
    expect(after2.updated_at).toBe(settled.updated_at);

    // the same body, correctly signed, is taken (timestamps within the tolerance either way)
    for (const ts of [now - 50, now + 50]) {
      const b = JSON.stringify({ order_id: order.upstream_order_id, status: 'completed', timestamp: ts });
      const ok = await post(b, callbackHeaders(b, { timestamp: ts }));
      expect(ok.status).toBe(200);
      expect(ok.data).toEqual({ ok: true });
    }
  });

  it('duplicated ×5 and reordered callbacks are recognised and never move an order back', async () => {
    sandbox.faults.set({ callbacks: 'duplicate', duplicateTimes: 5 });
    const dup = await place('DUP');
    await waitForOrder(app.http, dup.shop_order_no, (o) => o.status === 'completed');
    const rows = await waitFor(
      () => db.query<{ duplicates: number; state: string }>('SELECT duplicates, state FROM callback_inbox WHERE upstream_order_id = $1', [dup.upstream_order_id]),
      (r) => r.length >= 4 && r.reduce((s, x) => s + x.duplicates, 0) >= 4 * 4 && r.every((x) => x.state !== 'pending'),
    );
    expect(rows.length).toBeGreaterThanOrEqual(4);

    sandbox.faults.set({ callbacks: 'reorder' });
    const re = await place('REORDER');
    await waitForOrder(app.http, re.shop_order_no, (o) => o.status === 'completed');
    await waitFor(
      () => db.query<{ state: string }>('SELECT state FROM callback_inbox WHERE upstream_order_id = $1', [re.upstream_order_id]),
      (r) => r.length >= 4 && r.every((x) => x.state !== 'pending'),
    );
    for (const o of [dup, re]) {
      const evs = await events(o.shop_order_no);
      expectMonotonic(evs);
      expect(evs.some((e) => e.source === 'callback')).toBe(true);
      expect((await waitForOrder(app.http, o.shop_order_no, () => true)).status).toBe('completed');
    }
  });

  it('replayed old snapshots are harmless: the upstream state is read, never the claim', async () => {
    const o = await place('REPLAY');
    await waitForOrder(app.http, o.shop_order_no, (x) => x.status === 'completed');
    const old = JSON.stringify({ event: 'order.status_changed', order_id: o.upstream_order_id, status: 'pending_payment', timestamp: 1 });
    const r = await post(old, callbackHeaders(old));
    expect(r.status).toBe(200);
    await waitFor(
      () => db.query<{ state: string }>("SELECT state FROM callback_inbox WHERE upstream_order_id = $1 AND reported_status = 'pending_payment'", [o.upstream_order_id]),
      (rows) => rows[0]?.state === 'applied',
    );
    expect((await waitForOrder(app.http, o.shop_order_no, () => true)).status).toBe('completed');
    expectMonotonic(await events(o.shop_order_no));
  });

  it('dropped callbacks: the order is delivered by polling', async () => {
    sandbox.faults.set({ callbacks: 'drop' });
    const o = await place('DROP');
    const done = await waitForOrder(app.http, o.shop_order_no, (x) => x.status === 'completed');
    expect(done.items).toHaveLength(1);
    expect(await db.query('SELECT 1 FROM callback_inbox WHERE upstream_order_id = $1', [o.upstream_order_id])).toHaveLength(0);
    expect((await events(o.shop_order_no)).some((e) => e.source === 'poll')).toBe(true);
  });

  it('a callback for an unknown order is stored and acknowledged, never applied', async () => {
    const body = JSON.stringify({ event: 'order.status_changed', order_id: 987_654, order_no: 'DJX', downstream_order_no: 'NOT-OURS', status: 'paid', timestamp: 1 });
    const r = await post(body, callbackHeaders(body));
    expect(r.status).toBe(200);
    expect(r.data).toEqual({ ok: true });
    await waitFor(
      () => db.query<{ state: string }>('SELECT state FROM callback_inbox WHERE upstream_order_id = 987654'),
      (rows) => rows[0]?.state === 'unknown_order',
    );
    expect(await db.query("SELECT 1 FROM orders WHERE downstream_order_no = 'NOT-OURS'")).toHaveLength(0);
  });

  it('a database failure answers 5xx (the upstream retries); the retry is stored', async () => {
    const body = JSON.stringify({ event: 'order.status_changed', order_id: 987_655, status: 'paid', timestamp: 2 });
    await db.query('ALTER TABLE callback_inbox RENAME TO callback_inbox_away');
    try {
      const r = await post(body, callbackHeaders(body));
      expect(r.status).toBeGreaterThanOrEqual(500);
      expect(r.data).toMatchObject({ ok: false });
    } finally {
      await db.query('ALTER TABLE callback_inbox_away RENAME TO callback_inbox');
    }
    const retry = await post(body, callbackHeaders(body));
    expect(retry.status).toBe(200);
    expect(await db.query('SELECT 1 FROM callback_inbox WHERE upstream_order_id = 987655')).toHaveLength(1);
  });

  it('a callback carrying its downstream_order_no settles a submit_unknown attempt', async () => {
    const shopNo = no('UNKCB');
    sandbox.faults.set({ rules: [{ operation: 'createOrder', kind: 'error_after', status: 502, times: 1 }] });
    const r = await app.http.post('/internal/orders', { shop_order_no: shopNo, sku_code: 'CB-AUTO', quantity: 1 });
    expect(r.status).toBe(202);
    const upstream = sandbox.orders().find((o) => o.downstream_order_no === shopNo)!;
    const done = await waitForOrder(app.http, shopNo, (o) => o.status === 'completed');
    expect(done.upstream_order_id).toBe(upstream.id);
    const evs = await events(shopNo);
    expect(evs.find((e) => e.from === 'submit_unknown')).toMatchObject({ source: 'callback' });
    expect(sandbox.orders().filter((o) => o.downstream_order_no === shopNo)).toHaveLength(1);
  });

  it('a failed confirming read: the callback is stored as read_failed and answered 200, the order untouched, then settled by the poller', async () => {
    // the sandbox sends no callbacks of its own for this order: the only one is ours
    sandbox.faults.set({ callbacks: 'drop' });
    const o = await place('READFAIL');
    const upstreamId = o.upstream_order_id!;
    // GET /orders/{id} fails (503) while the callback is processed; nothing else is faulted
    sandbox.faults.set({ rules: [{ operation: 'getOrder', kind: 'error_before', status: 503 }] });
    await waitFor(() => sandbox.order(upstreamId)?.status, (s) => s === 'completed', 'the upstream order to complete');
    await sleep(100); // a poll answered before the fault was set has been applied by now
    const before = (await getOrder(app.http, o.shop_order_no))!;
    expect(before.status).not.toBe('completed');
    const eventsBefore = await events(o.shop_order_no);
    const readsBefore = sandbox.stats.requests.getOrder;

    const up = sandbox.order(upstreamId)!;
    const body = JSON.stringify({
      event: 'order.fulfilled',
      order_id: upstreamId,
      order_no: up.order_no,
      downstream_order_no: o.downstream_order_no,
      status: 'completed',
      fulfillment: { type: 'auto', status: 'delivered', payload: up.payload, delivered_at: new Date().toISOString() },
      timestamp: Math.floor(Date.now() / 1000),
    });
    const r = await post(body, callbackHeaders(body));
    // stored: acknowledged (a 5xx only when it could not be stored)
    expect(r.status).toBe(200);
    expect(r.data).toEqual({ ok: true });
    const [row] = await waitFor(
      () =>
        db.query<{ state: string; order_id: string | null; outcome: string | null; processed_at: Date | null; reported_status: string }>(
          'SELECT state, order_id, outcome, processed_at, reported_status FROM callback_inbox WHERE upstream_order_id = $1',
          [upstreamId],
        ),
      (rows) => rows.length === 1 && rows[0].state !== 'pending',
      'the callback to be processed',
    );
    expect(row).toMatchObject({ state: 'read_failed', reported_status: 'completed', order_id: expect.anything(), outcome: expect.any(String), processed_at: expect.anything() });
    // its confirming read reached the upstream and failed
    expect(sandbox.stats.requests.getOrder).toBeGreaterThan(readsBefore);

    // the callback's claim is never applied: the order is as it was
    const untouched = (await getOrder(app.http, o.shop_order_no))!;
    expect(untouched.status).toBe(before.status);
    expect(untouched.updated_at).toBe(before.updated_at);
    expect(untouched.items).toEqual(before.items);
    expect(await events(o.shop_order_no)).toEqual(eventsBefore);

    // the upstream answers again: the poller settles the order
    sandbox.faults.set({ rules: [] });
    const done = await waitForOrder(app.http, o.shop_order_no, (x) => x.status === 'completed');
    expect(done.items).toHaveLength(1);
    const evs = await events(o.shop_order_no);
    expectMonotonic(evs);
    expect(evs.some((e) => e.source === 'callback')).toBe(false);
    expect(evs.find((e) => e.kind === 'status' && e.to === 'completed')).toMatchObject({ source: 'poll' });
    // the inbox keeps its record (not retried, not rewritten)
    expect((await db.query<{ state: string }>('SELECT state FROM callback_inbox WHERE upstream_order_id = $1', [upstreamId])).map((x) => x.state)).toEqual([
      'read_failed',
    ]);
  });
});

describe('callbacks: an upstream that refuses our callback address', () => {
  let db: TestDatabase;
  let sandbox: SandboxServer;
  let app: TestApp;

  beforeAll(async () => {
    db = await openTestDatabase();
    sandbox = await startSandbox({ catalog: { products: 2 }, allowPrivateCallbackUrls: false, timetable: { paidMs: 20, fulfillingMs: 40, deliveredMs: 60 } });
    sandbox.catalog.addProduct({ skus: [{ skuCode: 'CB-PRIV', price: '1.00' }] });
    app = await startTestApp(db, sandbox, {
      CALLBACK_PUBLIC_URL: 'http://127.0.0.1:9/callbacks/upstream',
      ORDER_POLL_BASE_MS: '50',
      ORDER_POLL_MAX_MS: '200',
    });
    await seedCatalog(app.http);
  });

  afterAll(async () => {
    await app?.close();
    await sandbox?.stop();
    await db?.close();
  });

  it('sends the attempt again at once without callback_url (same number), then follows it by polling', async () => {
    const r = await app.http.post('/internal/orders', { shop_order_no: 'PRIV-1', sku_code: 'CB-PRIV', quantity: 1 });
    expect(r.status).toBe(201);
    expect(sandbox.stats.createsReceived).toBe(2);
    expect(sandbox.stats.createsExecuted).toBe(1);
    const [upstream] = sandbox.orders();
    expect(upstream).toMatchObject({ downstream_order_no: 'PRIV-1', callback_url: null });
    await waitForOrder(app.http, 'PRIV-1', (o) => o.status === 'delivered');
    const second = await app.http.post('/internal/orders', { shop_order_no: 'PRIV-2', sku_code: 'CB-PRIV', quantity: 1 });
    expect(second.status).toBe(201);
    expect(sandbox.stats.createsReceived).toBe(3);
  });
});

describe('callbacks: the refusal of our callback address is logged', () => {
  let db: TestDatabase;
  let sandbox: SandboxServer;
  let app: TestApp;

  beforeAll(async () => {
    db = await openTestDatabase();
    sandbox = await startSandbox({ catalog: { products: 1 }, allowPrivateCallbackUrls: false, timetable: { paidMs: 20, fulfillingMs: 40, deliveredMs: 60 } });
    sandbox.catalog.addProduct({ skus: [{ skuCode: 'CB-PRIVLOG', price: '1.00' }] });
    app = await startTestApp(
      db,
      sandbox,
      { LOG_LEVEL: 'info', CALLBACK_PUBLIC_URL: 'http://127.0.0.1:9/callbacks/upstream', ORDER_POLL_BASE_MS: '50', ORDER_POLL_MAX_MS: '200' },
      { logs: true },
    );
    await seedCatalog(app.http);
  });

  afterAll(async () => {
    await app?.close();
    await sandbox?.stop();
    await db?.close();
  });

  it('logs a warning naming the order when the upstream answers invalid_callback_url, and the order still goes through', async () => {
    const refusedBefore = app.logLines().filter((l) => JSON.stringify(l).includes('invalid_callback_url'));
    expect(refusedBefore).toHaveLength(0);
    const r = await app.http.post('/internal/orders', { shop_order_no: 'PRIVLOG-1', sku_code: 'CB-PRIVLOG', quantity: 1, trace_id: 'trace-PRIVLOG-1' });
    expect(r.status).toBe(201);
    expect(sandbox.stats.createsReceived).toBe(2);
    expect(sandbox.orders()).toEqual([expect.objectContaining({ downstream_order_no: 'PRIVLOG-1', callback_url: null })]);
    const warnings = await waitFor(
      () => app.logLines().filter((l) => l.level === 'warn' && typeof l.msg === 'string' && l.msg.includes('invalid_callback_url')),
      (ws) => ws.length > 0,
      'the invalid_callback_url warning',
      5_000,
    );
    expect(warnings).toHaveLength(1);
    expect(warnings[0]).toMatchObject({ level: 'warn', service: 'upstream-relay', shop_order_no: 'PRIVLOG-1', trace_id: 'trace-PRIVLOG-1' });
    await waitForOrder(app.http, 'PRIVLOG-1', (o) => o.status === 'delivered');
  });
});
