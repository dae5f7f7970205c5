/**
 * The callback endpoint (CONTRACT §4, §6): every unverified callback refused with 401 (413 when
 * oversized) whatever its content type or body, and nothing touched; a verified one taken whatever its
 * content type, and stored and acknowledged even when it cannot be used (as `ignored`, never applied);
 * duplicated, reordered and dropped callbacks; an unknown order; a database failure (5xx, so that the
 * upstream retries); a callback settling a `submit_unknown` attempt; and an upstream that refuses our
 * callback address.
 */
import axios from 'axios';
import { createHash } from 'node:crypto';
import http from 'node:http';
import { Metrics } from '../src/ops/metrics.service.js';
import { CallbackProcessor } from '../src/callbacks/callback-processor.service.js';
import { OrderPoller } from '../src/orders/order-poller.service.js';
import { RANK, type OrderStatus } from '../src/orders/order-state.js';
import { useAppSuite } from './support/app-suite.js';
import { callbackHeaders, freePort, getOrder, waitFor, waitForOrder, type OrderView } from './support/child-app.js';
import { passesRun } from './support/wait.js';

describe('callbacks', () => {
  const t = useAppSuite({
    sandbox: {
      catalog: { products: 2 },
      timetable: { paidMs: 30, fulfillingMs: 60, deliveredMs: 100, completedMs: 150 },
      callbackRetryDelaysMs: [100, 200, 400, 800],
    },
    prepare: (sandbox) => sandbox.catalog.addProduct({ skus: [{ skuCode: 'CB-AUTO', price: '4.00' }] }),
    env: async () => {
      // the callback URL names the service's own port: chosen before it starts
      const port = await freePort();
      return {
        PORT: String(port),
        CALLBACK_PUBLIC_URL: `http://127.0.0.1:${port}/callbacks/upstream`,
        // polling is slow here, so that callbacks do the work (and polling only catches what they miss)
        ORDER_POLL_BASE_MS: '1000',
        ORDER_POLL_MAX_MS: '2000',
        UPSTREAM_TIMEOUT_MS: '800',
        CALLBACK_TOLERANCE_S: '60',
      };
    },
    seed: true,
  });
  let n = 0;
  const no = (tag: string) => `${tag}-${++n}`;

  const place = async (tag: string): Promise<OrderView> => {
    const r = await t.app.http.post('/internal/orders', { shop_order_no: no(tag), sku_code: 'CB-AUTO', quantity: 1 });
    expect(r.status).toBe(201);
    return (r.data as { order: OrderView }).order;
  };
  const post = (body: string, headers: Record<string, string>) =>
    axios.post(`${t.app.url}/callbacks/upstream`, body, { headers, validateStatus: () => true, transformRequest: [(d: unknown) => d] });
  const inboxCount = async () => (await t.db.query<{ n: number }>('SELECT count(*)::int AS n FROM callback_inbox'))[0].n;
  const events = async (shopNo: string) =>
    (
      (await t.app.http.get(`/internal/orders/${shopNo}/events`)).data as {
        events: Array<{ source: string; kind: string; from: string | null; to: string | null }>;
      }
    ).events;
  const expectMonotonic = (evs: Array<{ kind: string; to: string | null }>) => {
    const ranks = evs.filter((e) => e.kind === 'status').map((e) => RANK[e.to as OrderStatus]);
    expect(ranks).toEqual([...ranks].sort((a, b) => a - b));
  };

  it('refuses every bad callback with 401 invalid_signature (413 when oversized), never a 5xx, touching nothing', async () => {
    const order = await place('BAD');
    await waitForOrder(t.app.http, order.shop_order_no, (o) => o.status === 'completed');
    // every callback of its own taken (so that nothing legitimate moves it during the checks)
    await waitFor(
      () => t.db.query<{ state: string }>('SELECT state FROM callback_inbox WHERE upstream_order_id = $1', [order.upstream_order_id]),
      (rows) => rows.length >= 4 && rows.every((r) => r.state !== 'pending'),
    );
    const settled = await waitForOrder(t.app.http, order.shop_order_no, () => true);
    const body = JSON.stringify({
      event: 'order.status_changed',
      order_id: order.upstream_order_id,
      status: 'canceled',
      timestamp: Math.floor(Date.now() / 1000),
    });
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
    const rejected = t.app.relay.app.get(Metrics).callbacksRejected;
    const before = (await rejected.get()).values.reduce((s, v) => s + v.value, 0);
    const count = await inboxCount();
    for (const [what, b, headers] of cases) {
      const r = await post(b, headers);
      expect({ what, status: r.status, body: r.data }).toEqual({
        what,
        status: 401,
        body: { ok: false, error_code: 'invalid_signature', error_message: expect.any(String) },
      });
    }
    const after = (await rejected.get()).values.reduce((s, v) => s + v.value, 0);
    expect(after - before).toBe(cases.length);

    const big = JSON.stringify({ order_id: order.upstream_order_id, status: 'canceled', pad: 'x'.repeat(70 * 1024) });
    const oversized = await post(big, callbackHeaders(big));
    expect(oversized.status).toBe(413);
    expect(oversized.data).toMatchObject({ ok: false, error_code: 'payload_too_large' });
    expect(await inboxCount()).toBe(count);
    // verified but unusable (CONTRACT §6: a verified callback is stored and answered 200, never 400):
    // stored as `ignored`, acknowledged, the order untouched
    const notJson = await post('{"order_id":', callbackHeaders('{"order_id":'));
    expect([notJson.status, notJson.data]).toEqual([200, { ok: true }]);
    const noOrderId = JSON.stringify({ status: 'paid' });
    const malformed = await post(noOrderId, callbackHeaders(noOrderId));
    expect([malformed.status, malformed.data]).toEqual([200, { ok: true }]);
    expect(await inboxCount()).toBe(count + 2);
    expect(
      (await t.db.query<{ state: string }>("SELECT state FROM callback_inbox WHERE outcome LIKE 'unusable:%'")).map((r) => r.state),
    ).toEqual(['ignored', 'ignored']);

    const after2 = await waitForOrder(t.app.http, order.shop_order_no, () => true);
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

  /** Sent as written (an HTTP client would add or normalise a content-type). */
  const rawPost = (headers: Record<string, string>, body: string | Buffer) =>
    new Promise<{ status: number; body: Record<string, unknown> }>((resolve, reject) => {
      const u = new URL(t.app.url);
      const req = http.request({ host: u.hostname, port: u.port, path: '/callbacks/upstream', method: 'POST', headers }, (res) => {
        let b = '';
        res.on('data', (c: Buffer) => (b += c.toString()));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body: JSON.parse(b) as Record<string, unknown> }));
      });
      req.on('error', reject);
      req.end(body);
    });
  const signatureOnly = (headers: Record<string, string>) =>
    Object.fromEntries(Object.entries(headers).filter(([k]) => k.toLowerCase() !== 'content-type'));

  it('refuses an unsigned or wrongly signed callback: 401 invalid_signature whatever its content type or body, 413 oversized', async () => {
    const json = JSON.stringify({
      event: 'order.status_changed',
      order_id: 987_700,
      status: 'paid',
      timestamp: Math.floor(Date.now() / 1000),
    });
    const form = new FormData();
    form.append('order_id', '987700');
    const bodies: Array<[string, string | undefined, string | Buffer]> = [
      ['application/xml', 'application/xml', '<callback><order_id>987700</order_id></callback>'],
      ['application/json, not JSON', 'application/json', 'not json'],
      ['application/json, empty', 'application/json', ''],
      ['application/json, charset', 'application/json; charset=utf-8', json],
      ['application/octet-stream', 'application/octet-stream', Buffer.from([0, 1, 2, 255])],
      ['text/plain', 'text/plain', json],
      ['application/vnd.api+json', 'application/vnd.api+json', json],
      ['application/x-www-form-urlencoded', 'application/x-www-form-urlencoded', 'order_id=987700&status=paid'],
      ['no content-type', undefined, json],
      ['an unreadable content-type', 'not a media type', json],
    ];
    const rejected = t.app.relay.app.get(Metrics).callbacksRejected;
    const sum = async () => (await rejected.get()).values.reduce((s, v) => s + v.value, 0);
    const before = await sum();
    const count = await inboxCount();
    let sent = 0;
    for (const [what, type, body] of bodies) {
      const ct: Record<string, string> = type === undefined ? {} : { 'content-type': type };
      const signedForAnother = signatureOnly(callbackHeaders(`${String(body)} `));
      for (const [how, headers] of [
        ['unsigned', ct],
        ['signed over another body', { ...ct, ...signedForAnother }],
        ['bad signature', { ...ct, ...signedForAnother, 'Service-Signature': 'ab'.repeat(32) }],
      ] as const) {
        const r = await rawPost(headers, body);
        sent++;
        expect({ what, how, ...r }).toEqual({
          what,
          how,
          status: 401,
          body: { ok: false, error_code: 'invalid_signature', error_message: expect.any(String) },
        });
      }
    }
    // multipart, as a client builds it
    const multipart = await axios.post(`${t.app.url}/callbacks/upstream`, form, { validateStatus: () => true });
    sent++;
    expect([multipart.status, multipart.data]).toEqual([
      401,
      { ok: false, error_code: 'invalid_signature', error_message: expect.any(String) },
    ]);
    expect((await sum()) - before).toBe(sent);
    // the body limit stands, whatever the type
    for (const type of ['application/xml', 'application/json']) {
      const big = await rawPost({ 'content-type': type }, 'x'.repeat(70 * 1024));
      expect([type, big.status, big.body.error_code]).toEqual([type, 413, 'payload_too_large']);
    }
    const chunked = await rawPost({ 'content-type': 'application/xml', 'transfer-encoding': 'chunked' }, 'x'.repeat(70 * 1024));
    expect([chunked.status, chunked.body.error_code]).toEqual([413, 'payload_too_large']);
    expect(await inboxCount()).toBe(count);
  });

  it('takes a correctly signed callback whatever content type it is sent with', async () => {
    const count = await inboxCount();
    const types: Array<string | undefined> = [
      'application/json',
      'application/xml',
      'text/plain',
      'application/octet-stream',
      undefined,
      'not a media type',
    ];
    let id = 987_710;
    for (const type of types) {
      const body = JSON.stringify({
        event: 'order.status_changed',
        order_id: ++id,
        status: 'paid',
        timestamp: Math.floor(Date.now() / 1000),
      });
      const headers = { ...signatureOnly(callbackHeaders(body)), ...(type === undefined ? {} : { 'content-type': type }) };
      const r = await rawPost(headers, body);
      expect({ type, ...r }).toEqual({ type, status: 200, body: { ok: true } });
    }
    expect(await inboxCount()).toBe(count + types.length);
    // stored as any callback, and taken up (an unknown order: recorded, never applied)
    const rows = await waitFor(
      () => t.db.query<{ state: string }>('SELECT state FROM callback_inbox WHERE upstream_order_id BETWEEN 987711 AND $1', [id]),
      (r) => r.length === types.length && r.every((x) => x.state === 'unknown_order'),
      'the callbacks to be processed',
    );
    expect(rows).toHaveLength(types.length);
  });

  it('stores a verified callback it cannot use as ignored and answers 200 {ok:true}, never touching an order', async () => {
    const order = await place('UNUSABLE');
    const done = await waitForOrder(t.app.http, order.shop_order_no, (o) => o.status === 'completed');
    await waitFor(
      () => t.db.query<{ state: string }>('SELECT state FROM callback_inbox WHERE upstream_order_id = $1', [order.upstream_order_id]),
      (rows) => rows.length >= 4 && rows.every((r) => r.state !== 'pending'),
    );
    const eventsBefore = await events(order.shop_order_no);
    const reads = t.sandbox.stats.requests.getOrder;
    const rejected = t.app.relay.app.get(Metrics).callbacksRejected;
    const rejectedBefore = (await rejected.get()).values.reduce((s, v) => s + v.value, 0);
    const ts = Math.floor(Date.now() / 1000);
    const cases: Array<[string, string, RegExp]> = [
      [
        'no status',
        JSON.stringify({
          event: 'order.status_changed',
          order_id: order.upstream_order_id,
          downstream_order_no: order.shop_order_no,
          timestamp: ts,
        }),
        /^unusable: no status/,
      ],
      [
        'no order_id',
        JSON.stringify({ event: 'order.status_changed', downstream_order_no: order.shop_order_no, status: 'canceled', timestamp: ts }),
        /^unusable: no order_id/,
      ],
      [
        'order_id as a string',
        JSON.stringify({ order_id: String(order.upstream_order_id), status: 'canceled', timestamp: ts }),
        /^unusable: no order_id/,
      ],
      ['order_id 0, status empty', JSON.stringify({ order_id: 0, status: '', timestamp: ts }), /^unusable: no order_id .* and no status/],
      ['not JSON', `order ${order.upstream_order_id} canceled`, /^unusable: not valid JSON$/],
      ['a JSON array', JSON.stringify([{ order_id: order.upstream_order_id, status: 'canceled' }]), /^unusable: not a JSON object$/],
    ];
    for (const [what, body, outcome] of cases) {
      const r = await post(body, callbackHeaders(body));
      expect({ what, status: r.status, body: r.data }).toEqual({ what, status: 200, body: { ok: true } });
      const sha = createHash('sha256').update(body).digest('hex');
      const [row] = await t.db.query<{
        state: string;
        outcome: string;
        processed_at: Date | null;
        duplicates: number;
        upstream_order_id: string | null;
      }>(
        'SELECT state, outcome, processed_at, duplicates, upstream_order_id::text AS upstream_order_id FROM callback_inbox ' +
          'WHERE body_sha256 = $1',
        [sha],
      );
      expect({ what, row }).toEqual({
        what,
        row: {
          state: 'ignored',
          outcome: expect.stringMatching(outcome),
          processed_at: expect.anything(),
          duplicates: 0,
          upstream_order_id: what === 'no status' ? String(order.upstream_order_id) : null,
        },
      });
      expect(row.outcome).not.toContain('canceled'); // what is wrong, never what the body says
    }
    // the same one again: recognised as a duplicate, acknowledged
    const [, again] = cases[0];
    expect((await post(again, callbackHeaders(again))).data).toEqual({ ok: true });
    const [dup] = await t.db.query<{ duplicates: number }>('SELECT duplicates FROM callback_inbox WHERE body_sha256 = $1', [
      createHash('sha256').update(again).digest('hex'),
    ]);
    expect(dup.duplicates).toBe(1);
    // never refused, never applied, never read back
    expect((await rejected.get()).values.reduce((s, v) => s + v.value, 0)).toBe(rejectedBefore);
    // whole passes of the inbox and the poller begun after: neither applied nor read anything
    await passesRun(t.app.relay.app.get(CallbackProcessor).drains, 2, 'inbox drains');
    await passesRun(t.app.relay.app.get(OrderPoller).passes, 2, 'poller passes');
    const after = (await getOrder(t.app.http, order.shop_order_no))!;
    expect([after.status, after.updated_at]).toEqual([done.status, done.updated_at]);
    expect(await events(order.shop_order_no)).toEqual(eventsBefore);
    expect(t.sandbox.stats.requests.getOrder).toBe(reads);
    expect(await t.db.query("SELECT 1 FROM callback_inbox WHERE outcome LIKE 'unusable:%' AND state <> 'ignored'")).toHaveLength(0);
  });

  it('duplicated ×5 and reordered callbacks are recognised and never move an order back', async () => {
    t.sandbox.faults.set({ callbacks: 'duplicate', duplicateTimes: 5 });
    const dup = await place('DUP');
    await waitForOrder(t.app.http, dup.shop_order_no, (o) => o.status === 'completed');
    const rows = await waitFor(
      () =>
        t.db.query<{ duplicates: number; state: string }>('SELECT duplicates, state FROM callback_inbox WHERE upstream_order_id = $1', [
          dup.upstream_order_id,
        ]),
      (r) => r.length >= 4 && r.reduce((s, x) => s + x.duplicates, 0) >= 4 * 4 && r.every((x) => x.state !== 'pending'),
    );
    expect(rows.length).toBeGreaterThanOrEqual(4);

    t.sandbox.faults.set({ callbacks: 'reorder' });
    const re = await place('REORDER');
    await waitForOrder(t.app.http, re.shop_order_no, (o) => o.status === 'completed');
    await waitFor(
      () => t.db.query<{ state: string }>('SELECT state FROM callback_inbox WHERE upstream_order_id = $1', [re.upstream_order_id]),
      (r) => r.length >= 4 && r.every((x) => x.state !== 'pending'),
    );
    for (const o of [dup, re]) {
      const evs = await events(o.shop_order_no);
      expectMonotonic(evs);
      expect(evs.some((e) => e.source === 'callback')).toBe(true);
      expect((await waitForOrder(t.app.http, o.shop_order_no, () => true)).status).toBe('completed');
    }
  });

  it('replayed old snapshots are harmless: the upstream state is read, never the claim', async () => {
    const o = await place('REPLAY');
    await waitForOrder(t.app.http, o.shop_order_no, (x) => x.status === 'completed');
    const old = JSON.stringify({ event: 'order.status_changed', order_id: o.upstream_order_id, status: 'pending_payment', timestamp: 1 });
    const r = await post(old, callbackHeaders(old));
    expect(r.status).toBe(200);
    await waitFor(
      () =>
        t.db.query<{ state: string }>(
          "SELECT state FROM callback_inbox WHERE upstream_order_id = $1 AND reported_status = 'pending_payment'",
          [o.upstream_order_id],
        ),
      (rows) => rows[0]?.state === 'applied',
    );
    expect((await waitForOrder(t.app.http, o.shop_order_no, () => true)).status).toBe('completed');
    expectMonotonic(await events(o.shop_order_no));
  });

  it('dropped callbacks: the order is delivered by polling', async () => {
    t.sandbox.faults.set({ callbacks: 'drop' });
    const o = await place('DROP');
    const done = await waitForOrder(t.app.http, o.shop_order_no, (x) => x.status === 'completed');
    expect(done.items).toHaveLength(1);
    expect(await t.db.query('SELECT 1 FROM callback_inbox WHERE upstream_order_id = $1', [o.upstream_order_id])).toHaveLength(0);
    expect((await events(o.shop_order_no)).some((e) => e.source === 'poll')).toBe(true);
  });

  it('a callback for an unknown order is stored and acknowledged, never applied', async () => {
    const body = JSON.stringify({
      event: 'order.status_changed',
      order_id: 987_654,
      order_no: 'DJX',
      downstream_order_no: 'NOT-OURS',
      status: 'paid',
      timestamp: 1,
    });
    const r = await post(body, callbackHeaders(body));
    expect(r.status).toBe(200);
    expect(r.data).toEqual({ ok: true });
    await waitFor(
      () => t.db.query<{ state: string }>('SELECT state FROM callback_inbox WHERE upstream_order_id = 987654'),
      (rows) => rows[0]?.state === 'unknown_order',
    );
    expect(await t.db.query("SELECT 1 FROM orders WHERE downstream_order_no = 'NOT-OURS'")).toHaveLength(0);
  });

  it('a database failure answers 5xx (the upstream retries); the retry is stored', async () => {
    const body = JSON.stringify({ event: 'order.status_changed', order_id: 987_655, status: 'paid', timestamp: 2 });
    await t.db.query('ALTER TABLE callback_inbox RENAME TO callback_inbox_away');
    try {
      const r = await post(body, callbackHeaders(body));
      expect(r.status).toBeGreaterThanOrEqual(500);
      expect(r.data).toMatchObject({ ok: false });
    } finally {
      await t.db.query('ALTER TABLE callback_inbox_away RENAME TO callback_inbox');
    }
    const retry = await post(body, callbackHeaders(body));
    expect(retry.status).toBe(200);
    expect(await t.db.query('SELECT 1 FROM callback_inbox WHERE upstream_order_id = 987655')).toHaveLength(1);
  });

  it('a callback carrying its downstream_order_no settles a submit_unknown attempt', async () => {
    const shopNo = no('UNKCB');
    t.sandbox.faults.set({ rules: [{ operation: 'createOrder', kind: 'error_after', status: 502, times: 1 }] });
    const r = await t.app.http.post('/internal/orders', { shop_order_no: shopNo, sku_code: 'CB-AUTO', quantity: 1 });
    expect(r.status).toBe(202);
    const upstream = t.sandbox.orders().find((o) => o.downstream_order_no === shopNo)!;
    const done = await waitForOrder(t.app.http, shopNo, (o) => o.status === 'completed');
    expect(done.upstream_order_id).toBe(upstream.id);
    const evs = await events(shopNo);
    expect(evs.find((e) => e.from === 'submit_unknown')).toMatchObject({ source: 'callback' });
    expect(t.sandbox.orders().filter((o) => o.downstream_order_no === shopNo)).toHaveLength(1);
  });

  it('a failed confirming read: the callback kept as read_failed, answered 200, the order untouched, settled by the poller', async () => {
    // the sandbox sends no callbacks of its own for this order: the only one is ours
    t.sandbox.faults.set({ callbacks: 'drop' });
    const o = await place('READFAIL');
    const upstreamId = o.upstream_order_id!;
    // GET /orders/{id} fails (503) while the callback is processed; nothing else is faulted
    t.sandbox.faults.set({ rules: [{ operation: 'getOrder', kind: 'error_before', status: 503 }] });
    await waitFor(
      () => t.sandbox.order(upstreamId)?.status,
      (s) => s === 'completed',
      'the upstream order to complete',
    );
    // a whole pass of the poller begun after the fault was set: a poll answered before it is applied by now
    await passesRun(t.app.relay.app.get(OrderPoller).passes, 1, 'poller passes');
    const before = (await getOrder(t.app.http, o.shop_order_no))!;
    expect(before.status).not.toBe('completed');
    const eventsBefore = await events(o.shop_order_no);
    const readsBefore = t.sandbox.stats.requests.getOrder;

    const up = t.sandbox.order(upstreamId)!;
    const body = JSON.stringify({
      event: 'order.fulfilled',
      order_id: upstreamId,
      order_no: up.order_no,
      downstream_order_no: o.downstream_order_no,
      // without its fulfillment: a delivering claim the callback cannot complete costs a read (CONTRACT §6)
      status: 'completed',
      timestamp: Math.floor(Date.now() / 1000),
    });
    const r = await post(body, callbackHeaders(body));
    // stored: acknowledged (a 5xx only when it could not be stored)
    expect(r.status).toBe(200);
    expect(r.data).toEqual({ ok: true });
    const [row] = await waitFor(
      () =>
        t.db.query<{ state: string; order_id: string | null; outcome: string | null; processed_at: Date | null; reported_status: string }>(
          'SELECT state, order_id, outcome, processed_at, reported_status FROM callback_inbox WHERE upstream_order_id = $1',
          [upstreamId],
        ),
      (rows) => rows.length === 1 && rows[0].state !== 'pending',
      'the callback to be processed',
    );
    expect(row).toMatchObject({
      state: 'read_failed',
      reported_status: 'completed',
      order_id: expect.anything(),
      outcome: expect.any(String),
      processed_at: expect.anything(),
    });
    // its confirming read reached the upstream and failed
    expect(t.sandbox.stats.requests.getOrder).toBeGreaterThan(readsBefore);

    // the callback's claim is never applied: the order is as it was
    const untouched = (await getOrder(t.app.http, o.shop_order_no))!;
    expect(untouched.status).toBe(before.status);
    expect(untouched.updated_at).toBe(before.updated_at);
    expect(untouched.items).toEqual(before.items);
    expect(await events(o.shop_order_no)).toEqual(eventsBefore);

    // the upstream answers again: the poller settles the order
    t.sandbox.faults.set({ rules: [] });
    const done = await waitForOrder(t.app.http, o.shop_order_no, (x) => x.status === 'completed');
    expect(done.items).toHaveLength(1);
    const evs = await events(o.shop_order_no);
    expectMonotonic(evs);
    expect(evs.some((e) => e.source === 'callback')).toBe(false);
    expect(evs.find((e) => e.kind === 'status' && e.to === 'completed')).toMatchObject({ source: 'poll' });
    // the inbox keeps its record (not retried, not rewritten)
    expect(
      (await t.db.query<{ state: string }>('SELECT state FROM callback_inbox WHERE upstream_order_id = $1', [upstreamId])).map(
        (x) => x.state,
      ),
    ).toEqual(['read_failed']);
  });
});

describe('callbacks: an upstream that refuses our callback address', () => {
  const t = useAppSuite({
    sandbox: { catalog: { products: 2 }, allowPrivateCallbackUrls: false, timetable: { paidMs: 20, fulfillingMs: 40, deliveredMs: 60 } },
    prepare: (sandbox) => sandbox.catalog.addProduct({ skus: [{ skuCode: 'CB-PRIV', price: '1.00' }] }),
    env: {
      LOG_LEVEL: 'info',
      CALLBACK_PUBLIC_URL: 'http://127.0.0.1:9/callbacks/upstream',
      ORDER_POLL_BASE_MS: '50',
      ORDER_POLL_MAX_MS: '200',
    },
    seed: true,
    logs: true,
  });
  const refusals = () => t.app.logLines().filter((l) => JSON.stringify(l).includes('invalid_callback_url'));

  it('sends the attempt again at once without callback_url (same number), warns naming the order, then follows it by polling', async () => {
    const { app, sandbox } = t;
    expect(refusals()).toHaveLength(0);
    const r = await app.http.post('/internal/orders', {
      shop_order_no: 'PRIV-1',
      sku_code: 'CB-PRIV',
      quantity: 1,
      trace_id: 'trace-PRIV-1',
    });
    expect(r.status).toBe(201);
    expect(sandbox.stats.createsReceived).toBe(2);
    expect(sandbox.stats.createsExecuted).toBe(1);
    expect(sandbox.orders()).toEqual([expect.objectContaining({ downstream_order_no: 'PRIV-1', callback_url: null })]);
    const warnings = await waitFor(
      () => refusals().filter((l) => l.level === 'warn' && typeof l.msg === 'string' && l.msg.includes('invalid_callback_url')),
      (ws) => ws.length > 0,
      'the invalid_callback_url warning',
      5_000,
    );
    expect(warnings).toHaveLength(1);
    expect(warnings[0]).toMatchObject({ level: 'warn', service: 'upstream-relay', shop_order_no: 'PRIV-1', trace_id: 'trace-PRIV-1' });
    await waitForOrder(app.http, 'PRIV-1', (o) => o.status === 'delivered');
    const second = await app.http.post('/internal/orders', { shop_order_no: 'PRIV-2', sku_code: 'CB-PRIV', quantity: 1 });
    expect(second.status).toBe(201);
    expect(sandbox.stats.createsReceived).toBe(3);
  });
});
