/**
 * Outgoing status callbacks of the sandbox, received by a real HTTP server and verified with the
 * signing module, for both profiles, with retries and each callback fault.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { signatureHeaderNames, verifySignature, type VerifyResult } from '../signing/signing.js';
import { callbackUrlProblem, isPrivateHost } from './sandbox-callbacks.js';
import { signedRequest } from './sandbox-request.js';
import { SandboxServer } from './sandbox.server.js';
import type { SandboxCallbackBody, SandboxCreatedOrder } from './sandbox.types.js';

interface Received {
  path: string;
  headers: http.IncomingHttpHeaders;
  raw: string;
  json: SandboxCallbackBody;
}

type Responder = (index: number) => { status: number; body: string };
const OK: Responder = () => ({ status: 200, body: '{"ok":true}' });

class Receiver {
  received: Received[] = [];
  respond: Responder = OK;
  private server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const raw = Buffer.concat(chunks).toString('utf8');
      const index = this.received.length;
      this.received.push({ path: req.url ?? '', headers: req.headers, raw, json: JSON.parse(raw) as SandboxCallbackBody });
      const a = this.respond(index);
      res.writeHead(a.status, { 'content-type': 'application/json' });
      res.end(a.body);
    });
  });

  get url(): string {
    return `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
  }

  start(): Promise<void> {
    return new Promise((resolve) => this.server.listen(0, '127.0.0.1', () => resolve()));
  }

  stop(): Promise<void> {
    this.server.closeAllConnections();
    return new Promise((resolve) => this.server.close(() => resolve()));
  }

  clear(): void {
    this.received = [];
    this.respond = OK;
  }
}

async function until(cond: () => boolean, what: string, timeoutMs = 5000): Promise<void> {
  const end = Date.now() + timeoutMs;
  while (!cond()) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

const pause = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

function verify(r: Received, opts: { prefix: string; path: string; secret: string; apiKey: string }): VerifyResult {
  const names = signatureHeaderNames(opts.prefix);
  const h = (n: string): string | undefined => r.headers[n.toLowerCase()] as string | undefined;
  return verifySignature({
    secret: opts.secret,
    template: '{method}\n{path}\n{timestamp}\n{body_md5}',
    expectedApiKey: opts.apiKey,
    method: 'POST',
    path: opts.path,
    body: Buffer.from(r.raw, 'utf8'),
    apiKey: h(names.apiKey),
    timestamp: h(names.timestamp),
    signature: h(names.signature),
    nowSeconds: Math.floor(Date.now() / 1000),
    toleranceSeconds: 60,
  });
}

describe('sandbox callbacks', () => {
  const receiver = new Receiver();
  let sandbox: SandboxServer;
  let skuId: number;

  async function order(extra: Record<string, unknown> = {}): Promise<SandboxCreatedOrder> {
    const r = await signedRequest(sandbox.credentials, 'POST', '/orders', {
      body: { sku_id: skuId, quantity: 2, callback_url: `${receiver.url}/hooks/upstream?shop=1`, ...extra },
    });
    expect(r.status).toBe(200);
    return r.json as SandboxCreatedOrder;
  }

  beforeAll(async () => {
    await receiver.start();
    sandbox = new SandboxServer({
      catalog: { products: 20 },
      timetable: { paidMs: 20, fulfillingMs: 40, deliveredMs: 60 },
      callbackRetryDelaysMs: [20, 20, 20, 20],
      allowPrivateCallbackUrls: true,
    });
    await sandbox.start();
  });
  afterAll(async () => {
    await sandbox.stop();
    await receiver.stop();
  });
  beforeEach(() => {
    sandbox.reset();
    receiver.clear();
    skuId = sandbox.catalog.findSku({ fulfillmentType: 'auto', stockStatus: 'unlimited' })!.sku.id;
  });

  it('posts a signed snapshot at each status change, signed over the callback_url path (spec profile)', async () => {
    const o = await order({ downstream_order_no: 'CB-1' });
    await until(() => receiver.received.length === 3, 'three callbacks');
    expect(receiver.received.map((r) => [r.json.status, r.json.event])).toEqual([
      ['paid', 'order.status_changed'],
      ['fulfilling', 'order.status_changed'],
      ['delivered', 'order.fulfilled'],
    ]);
    for (const r of receiver.received) {
      expect(r.path).toBe('/hooks/upstream?shop=1');
      expect(verify(r, { prefix: 'Service', path: '/hooks/upstream', secret: 'sandbox-api-secret', apiKey: 'sandbox-api-key' })).toEqual({
        ok: true,
      });
      expect(r.json).toMatchObject({
        order_id: o.order_id,
        order_no: o.order_no,
        downstream_order_no: 'CB-1',
        timestamp: expect.any(Number),
      });
    }
    const delivered = receiver.received[2].json;
    expect(delivered.fulfillment).toMatchObject({ type: 'auto', status: 'delivered' });
    expect(delivered.fulfillment!.payload.split(/\r?\n/).filter(Boolean)).toHaveLength(2);
    expect(receiver.received[0].json.fulfillment).toBeUndefined();
    await until(() => sandbox.callbackLog.length === 3, 'the log');
    expect(sandbox.callbackLog.map((e) => [e.status, e.ok, e.attempt])).toEqual([
      [200, true, 1],
      [200, true, 1],
      [200, true, 1],
    ]);
    expect(sandbox.stats).toMatchObject({ callbacksAttempted: 3, callbacksSucceeded: 3 });
  });

  it('calls back a cancel (order.status_changed) and a completion (order.fulfilled)', async () => {
    sandbox.setTimetable({ paidMs: null });
    const a = await order();
    const c = await signedRequest(sandbox.credentials, 'POST', `/orders/${a.order_id}/cancel`);
    expect(c.status).toBe(200);
    const b = await order();
    sandbox.setOrderStatus(b.order_id, 'completed');
    await until(() => receiver.received.length === 2, 'two callbacks');
    const byOrder = new Map(receiver.received.map((r) => [r.json.order_id, r.json]));
    expect(byOrder.get(a.order_id)).toMatchObject({ status: 'canceled', event: 'order.status_changed' });
    expect(byOrder.get(b.order_id)).toMatchObject({ status: 'completed', event: 'order.fulfilled' });
  });

  it('signs over the fixed /api/v1/upstream/callback under the dujiao-next profile, with callbackSecret', async () => {
    const dj = new SandboxServer({
      profile: 'dujiao-next',
      callbackSecret: 'cb-secret',
      catalog: { products: 10 },
      timetable: { paidMs: null },
      allowPrivateCallbackUrls: true,
    });
    await dj.start();
    try {
      const sku = dj.catalog.findSku({ fulfillmentType: 'auto' })!.sku.id;
      // Dujiao-Next pays in the create call, and calls that payment back
      const r = await signedRequest(dj.credentials, 'POST', '/orders', {
        body: { sku_id: sku, quantity: 1, callback_url: `${receiver.url}/anything/else` },
      });
      expect((r.json as SandboxCreatedOrder).status).toBe('paid');
      // two callbacks for the change: Dujiao-Next calls back for the order and for its child order,
      // both with the order's one body
      await until(() => receiver.received.length === 2, 'the two callbacks of the change');
      expect(receiver.received[1].raw).toBe(receiver.received[0].raw);
      const got = receiver.received[0];
      expect(got.json).toMatchObject({ order_id: (r.json as SandboxCreatedOrder).order_id, status: 'paid' });
      expect(got.headers['dujiao-next-api-key']).toBe('sandbox-api-key');
      const keys = { prefix: 'Dujiao-Next', secret: 'cb-secret', apiKey: 'sandbox-api-key' };
      expect(verify(got, { ...keys, path: '/api/v1/upstream/callback' })).toEqual({ ok: true });
      expect(verify(got, { ...keys, path: '/anything/else' })).toEqual({ ok: false, reason: 'signature_mismatch' });
    } finally {
      await dj.stop();
    }
  });

  it(
    'dujiao-next: each status change is called back twice with one body (the order and its child order), each copy ' +
      'signed and retried on its own',
    async () => {
      const dj = new SandboxServer({
        profile: 'dujiao-next',
        catalog: { products: 10 },
        timetable: { fulfillingMs: null },
        callbackRetryDelaysMs: [20, 20, 20, 20],
        allowPrivateCallbackUrls: true,
      });
      await dj.start();
      try {
        // the first try of each copy of the paid change is refused once: both are tried again
        receiver.respond = (i) => (i < 2 ? { status: 500, body: '{"ok":false}' } : { status: 200, body: '{"ok":true}' });
        const sku = dj.catalog.findSku({ fulfillmentType: 'auto' })!.sku.id;
        const r = await signedRequest(dj.credentials, 'POST', '/orders', {
          body: { sku_id: sku, quantity: 1, downstream_order_no: 'TWO-1', callback_url: `${receiver.url}/cb` },
        });
        const id = (r.json as SandboxCreatedOrder).order_id;
        await until(() => dj.callbackLog.filter((e) => e.ok).length === 2, 'both copies of the paid change acknowledged');
        expect(dj.callbackLog.map((e) => [e.json.status, e.attempt, e.ok])).toEqual([
          ['paid', 1, false],
          ['paid', 1, false],
          ['paid', 2, true],
          ['paid', 2, true],
        ]);
        dj.setOrderStatus(id, 'delivered');
        await until(() => receiver.received.length === 6, 'both copies of the delivered change');
        const delivered = receiver.received.slice(4);
        // one body: the order's id, number, status and fulfillment, taken in the same second
        expect(delivered[0].raw).toBe(delivered[1].raw);
        expect(delivered[0].json).toMatchObject({
          event: 'order.fulfilled',
          order_id: id,
          downstream_order_no: 'TWO-1',
          status: 'delivered',
        });
        for (const got of receiver.received) {
          expect(
            verify(got, {
              prefix: 'Dujiao-Next',
              secret: 'sandbox-api-secret',
              apiKey: 'sandbox-api-key',
              path: '/api/v1/upstream/callback',
            }),
          ).toEqual({ ok: true });
        }
        expect(dj.stats).toMatchObject({ callbacksAttempted: 6, callbacksSucceeded: 4 });

        // the drop fault drops both copies
        dj.faults.set({ callbacks: 'drop' });
        dj.setOrderStatus(id, 'completed');
        expect(dj.stats.callbacksDropped).toBe(2);
      } finally {
        await dj.stop();
      }
      // spec: one callback per change
      const o = await order();
      await until(() => receiver.received.length >= 9, "the spec order's three callbacks");
      await pause(100);
      expect(receiver.received.slice(6).map((x) => [x.json.order_id, x.json.status])).toEqual([
        [o.order_id, 'paid'],
        [o.order_id, 'fulfilling'],
        [o.order_id, 'delivered'],
      ]);
    },
  );

  it('dujiao-next: a refund made upstream (an admin refund) is not called back; asked with callback: true, it is', async () => {
    const dj = new SandboxServer({
      profile: 'dujiao-next',
      catalog: { products: 10 },
      timetable: { fulfillingMs: null },
      allowPrivateCallbackUrls: true,
    });
    await dj.start();
    try {
      receiver.respond = () => ({ status: 200, body: '{"ok":true}' });
      const before = receiver.received.length;
      const sku = dj.catalog.findSku({ fulfillmentType: 'auto' })!.sku.id;
      const r = await signedRequest(dj.credentials, 'POST', '/orders', {
        body: { sku_id: sku, quantity: 2, downstream_order_no: 'ADMIN-REFUND', callback_url: `${receiver.url}/cb` },
      });
      const { order_id: id, amount } = r.json as SandboxCreatedOrder;
      await until(() => receiver.received.length === before + 2, 'both copies of the paid change');
      dj.setOrderStatus(id, 'delivered');
      await until(() => receiver.received.length === before + 4, 'both copies of the delivered change');
      dj.refundOrder(id, (Number(amount) / 2).toFixed(2)); // as the admin refunds: no callback
      dj.refundOrder(id, undefined, { callback: true }); // the rest, called back
      await until(() => receiver.received.length >= before + 6, 'both copies of the called-back refund');
      expect(receiver.received.slice(before).map((x) => x.json.status)).toEqual([
        'paid',
        'paid',
        'delivered',
        'delivered',
        'refunded',
        'refunded',
      ]);
      expect(dj.orders().find((o) => o.id === id)?.history).toEqual(expect.arrayContaining(['partially_refunded', 'refunded']));
    } finally {
      await dj.stop();
    }
  });

  it('retries until the answer is HTTP 200 with {"ok":true}', async () => {
    sandbox.setTimetable({ paidMs: null });
    const answers = [
      { status: 500, body: '{"ok":false}' },
      { status: 200, body: '{"ok":false,"message":"busy"}' },
      { status: 200, body: 'OK' },
      { status: 200, body: '{"ok":true}' },
    ];
    receiver.respond = (i) => answers[Math.min(i, answers.length - 1)];
    const o = await order();
    sandbox.setOrderStatus(o.order_id, 'paid');
    await until(() => sandbox.callbackLog.some((e) => e.ok), 'a successful try');
    expect(sandbox.callbackLog.map((e) => [e.attempt, e.status, e.ok])).toEqual([
      [1, 500, false],
      [2, 200, false],
      [3, 200, false],
      [4, 200, true],
    ]);
    // the order did not move between the tries: each carries the same state (a retry's timestamp is its own)
    const withoutTimestamp = ({ timestamp: _timestamp, ...rest }: SandboxCallbackBody) => JSON.stringify(rest);
    expect(new Set(receiver.received.map((r) => withoutTimestamp(r.json))).size).toBe(1);
    expect(receiver.received[0].json.status).toBe('paid');
    for (const r of receiver.received) {
      expect(verify(r, { prefix: 'Service', path: '/hooks/upstream', secret: 'sandbox-api-secret', apiKey: 'sandbox-api-key' }).ok).toBe(
        true,
      );
    }
  });

  it('gives up after 5 tries', async () => {
    sandbox.setTimetable({ paidMs: null });
    receiver.respond = () => ({ status: 503, body: 'down' });
    const o = await order();
    sandbox.setOrderStatus(o.order_id, 'paid');
    await until(() => sandbox.callbackLog.length === 5, 'five tries');
    await pause(150); // several retry delays
    expect(receiver.received).toHaveLength(5);
    expect(sandbox.callbackLog.map((e) => e.attempt)).toEqual([1, 2, 3, 4, 5]);
  });

  it('records an unreachable receiver as a try with no status', async () => {
    sandbox.setTimetable({ paidMs: null });
    const r = await signedRequest(sandbox.credentials, 'POST', '/orders', {
      body: { sku_id: skuId, quantity: 1, callback_url: 'http://127.0.0.1:9/cb' },
    });
    sandbox.setOrderStatus((r.json as SandboxCreatedOrder).order_id, 'paid');
    await until(() => sandbox.callbackLog.length >= 1, 'a try');
    expect(sandbox.callbackLog[0]).toMatchObject({ status: null, ok: false, error: expect.any(String) });
  });

  it('fault drop: sends nothing', async () => {
    sandbox.faults.set({ callbacks: 'drop' });
    const o = await order();
    await sandbox.waitForOrderStatus(o.order_id, 'delivered');
    sandbox.faults.set({ callbacks: 'normal' });
    const marker = await order(); // a later callback proves the dropped ones are not just late
    sandbox.setOrderStatus(marker.order_id, 'canceled');
    await until(() => receiver.received.some((r) => r.json.order_id === marker.order_id), 'the marker');
    expect(receiver.received.filter((r) => r.json.order_id === o.order_id)).toEqual([]);
    expect(sandbox.stats.callbacksDropped).toBe(3);
  });

  it('fault duplicate: each snapshot arrives duplicateTimes times', async () => {
    sandbox.setTimetable({ paidMs: null });
    sandbox.faults.set({ callbacks: 'duplicate', duplicateTimes: 3 });
    const o = await order();
    sandbox.setOrderStatus(o.order_id, 'paid');
    await until(() => receiver.received.length === 3, 'three copies');
    expect(new Set(receiver.received.map((r) => r.raw)).size).toBe(1);
    expect(receiver.received[0].json.status).toBe('paid');
  });

  it('fault reorder: the snapshots of one order arrive newest first', async () => {
    sandbox.faults.set({ callbacks: 'reorder' });
    await order();
    await until(() => receiver.received.length === 3, 'three callbacks');
    expect(receiver.received.map((r) => r.json.status)).toEqual(['delivered', 'fulfilling', 'paid']);
  });

  it('fault reorder: held snapshots of an unsettled order go out on flushHeldCallbacks()', async () => {
    sandbox.setTimetable({ paidMs: null });
    sandbox.faults.set({ callbacks: 'reorder' });
    const o = await order();
    sandbox.setOrderStatus(o.order_id, 'paid');
    sandbox.setOrderStatus(o.order_id, 'fulfilling');
    sandbox.flushHeldCallbacks();
    await until(() => receiver.received.length === 2, 'two callbacks');
    expect(receiver.received.map((r) => r.json.status)).toEqual(['fulfilling', 'paid']);
  });

  it('fault reorder: snapshots still held go out newest first with the next change after the fault is off', async () => {
    sandbox.setTimetable({ paidMs: null });
    sandbox.faults.set({ callbacks: 'reorder' });
    const o = await order();
    sandbox.setOrderStatus(o.order_id, 'paid');
    sandbox.setOrderStatus(o.order_id, 'fulfilling');
    sandbox.faults.reset();
    sandbox.setOrderStatus(o.order_id, 'delivered');
    await until(() => receiver.received.length === 3, 'three callbacks');
    expect(receiver.received.map((r) => r.json.status)).toEqual(['delivered', 'fulfilling', 'paid']);
  });

  it('fault delay: a callback is held back by delayMs', async () => {
    sandbox.setTimetable({ paidMs: null });
    const slow = await order();
    const fast = await order();
    sandbox.faults.set({ callbacks: 'delay', delayMs: 60_000 });
    sandbox.setOrderStatus(slow.order_id, 'paid');
    sandbox.faults.set({ callbacks: 'normal' });
    sandbox.setOrderStatus(fast.order_id, 'paid');
    await until(() => receiver.received.length === 1, 'the undelayed callback');
    expect(receiver.received[0].json.order_id).toBe(fast.order_id);

    sandbox.faults.set({ callbacks: 'delay', delayMs: 30 });
    sandbox.setOrderStatus(slow.order_id, 'fulfilling');
    await until(() => receiver.received.length === 2, 'the delayed callback');
    expect(receiver.received[1].json).toMatchObject({ order_id: slow.order_id, status: 'fulfilling' });
  });

  it('fault bad_signature: the signature does not verify, and the refused callback is retried', async () => {
    sandbox.setTimetable({ paidMs: null });
    sandbox.faults.set({ callbacks: 'bad_signature' });
    receiver.respond = () => ({ status: 401, body: '{"ok":false,"error_code":"invalid_signature"}' });
    const o = await order();
    sandbox.setOrderStatus(o.order_id, 'paid');
    await until(() => receiver.received.length === 5, 'five tries');
    for (const r of receiver.received) {
      expect(verify(r, { prefix: 'Service', path: '/hooks/upstream', secret: 'sandbox-api-secret', apiKey: 'sandbox-api-key' })).toEqual({
        ok: false,
        reason: 'signature_mismatch',
      });
    }
    expect(sandbox.callbackLog.every((e) => e.badSignature && e.status === 401)).toBe(true);
  });
});

describe('callback_url checks', () => {
  it('recognises private, loopback and link-local hosts', () => {
    for (const h of [
      'localhost',
      'api.localhost',
      '127.0.0.1',
      '10.0.0.1',
      '172.16.5.5',
      '172.31.255.255',
      '192.168.1.1',
      '169.254.1.1',
      '0.0.0.0',
      '[::1]',
      'fd00::1',
      'fe80::1',
      '::ffff:127.0.0.1',
      '100.64.0.1',
    ]) {
      expect({ h, private: isPrivateHost(h) }).toEqual({ h, private: true });
    }
    for (const h of ['example.com', '8.8.8.8', '172.32.0.1', '2001:db8::1', '[2606:4700::1111]']) {
      expect({ h, private: isPrivateHost(h) }).toEqual({ h, private: false });
    }
  });

  it('refuses what is not an http(s) URL, and private hosts unless allowed', () => {
    expect(callbackUrlProblem('not a url', true)).not.toBeNull();
    expect(callbackUrlProblem('mailto:x@example.com', true)).not.toBeNull();
    expect(callbackUrlProblem('http://127.0.0.1/cb', false)).not.toBeNull();
    expect(callbackUrlProblem('http://127.0.0.1/cb', true)).toBeNull();
    expect(callbackUrlProblem('https://shop.example.com/cb', false)).toBeNull();
  });
});
