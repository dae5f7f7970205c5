/**
 * The HTTP adapter against the sandbox upstream as a real HTTP server (port 0), one test per fault,
 * plus the success paths. Connect timeouts use a loopback listener whose accept queue is full (a
 * worker thread listens and then blocks its own event loop, so nothing is ever accepted).
 */
import net from 'node:net';
import { Worker } from 'node:worker_threads';
import { DEFAULT_SIGNATURE_TEMPLATE } from '../signing/signing.js';
import { SandboxServer } from '../sandbox/sandbox.server.js';
import type { SandboxRequestEvent } from '../sandbox/sandbox.types.js';
import { UpstreamHttpClient, type UpstreamCallEvent, type UpstreamHttpOptions } from './upstream-http.adapter.js';
import { failure } from '../../test/support/upstream-failure.js';
import { UpstreamDefinitiveError, UpstreamRetryableError, UpstreamUnknownError } from './upstream.errors.js';

/** A loopback address whose accept queue is full: a new connection never completes. */
async function blackHole(): Promise<{ port: number; close: () => Promise<void> }> {
  const code = `
    const { parentPort, workerData } = require('node:worker_threads');
    const net = require('node:net');
    const server = net.createServer(() => {});
    server.listen({ port: 0, host: '127.0.0.1', backlog: 1 }, () => {
      parentPort.postMessage(server.address().port);
      Atomics.wait(new Int32Array(workerData), 0, 0); // this thread's loop stops: nothing is accepted
      server.close();
      process.exit(0);
    });`;
  const flag = new SharedArrayBuffer(4);
  const worker = new Worker(code, { eval: true, workerData: flag });
  const port = await new Promise<number>((resolve, reject) => {
    worker.once('message', (m: number) => resolve(m));
    worker.once('error', reject);
  });
  // Fill the accept queue until a connection stays pending.
  const fillers: net.Socket[] = [];
  for (let i = 0; i < 64; i++) {
    const s = net.connect(port, '127.0.0.1');
    s.on('error', () => undefined);
    fillers.push(s);
    const connected = await new Promise<boolean>((resolve) => {
      const t = setTimeout(() => resolve(false), 250);
      s.once('connect', () => {
        clearTimeout(t);
        resolve(true);
      });
    });
    if (!connected) break;
  }
  return {
    port,
    close: async () => {
      for (const s of fillers) s.destroy();
      const exited = new Promise<void>((resolve) => worker.once('exit', () => resolve()));
      const view = new Int32Array(flag);
      Atomics.store(view, 0, 1);
      Atomics.notify(view, 0);
      await exited;
    },
  };
}

describe('UpstreamHttpClient against the sandbox upstream', () => {
  let sandbox: SandboxServer;
  let client: UpstreamHttpClient;
  const extraClients: UpstreamHttpClient[] = [];
  const calls: UpstreamCallEvent[] = [];

  function options(over: Partial<UpstreamHttpOptions> = {}): UpstreamHttpOptions {
    return {
      baseUrl: sandbox.baseUrl,
      apiKey: 'sandbox-api-key',
      apiSecret: 'sandbox-api-secret',
      headerPrefix: 'Service',
      signatureTemplate: DEFAULT_SIGNATURE_TEMPLATE,
      timeoutMs: 5000,
      onCall: (e) => calls.push(e),
      ...over,
    };
  }
  function newClient(over: Partial<UpstreamHttpOptions> = {}): UpstreamHttpClient {
    const c = new UpstreamHttpClient(options(over));
    extraClients.push(c);
    return c;
  }
  /** An active auto SKU with unlimited stock. */
  function autoSku(): { id: number; price: string } {
    const f = sandbox.catalog.findSku({ fulfillmentType: 'auto', stockStatus: 'unlimited' });
    if (!f) throw new Error('no auto SKU in the sandbox catalog');
    return { id: f.sku.id, price: f.sku.price_amount };
  }

  beforeAll(async () => {
    sandbox = new SandboxServer({
      profile: 'spec',
      apiKey: 'sandbox-api-key',
      apiSecret: 'sandbox-api-secret',
      pageSizeCap: 50,
      catalog: { products: 60, seed: 7 },
      // Orders stay where they are until the test moves them.
      timetable: { paidMs: 60_000, fulfillingMs: 60_000, deliveredMs: 60_000, completedMs: null },
      allowPrivateCallbackUrls: true,
    });
    await sandbox.start(0);
    client = new UpstreamHttpClient(options());
  });
  afterAll(async () => {
    client.close();
    for (const c of extraClients) c.close();
    await sandbox.stop();
  });
  beforeEach(() => {
    sandbox.reset();
    sandbox.setTimetable({ paidMs: 60_000, fulfillingMs: 60_000, deliveredMs: 60_000, completedMs: null });
    calls.length = 0;
  });

  describe('success paths', () => {
    it('pings (signed POST with an empty body) and reports the call', async () => {
      const ping = await client.ping();
      expect(ping).toMatchObject({ ok: true, protocol_version: '1.0', balance: '1000000.00', currency: 'CNY', user_id: 1 });
      expect(calls).toEqual([expect.objectContaining({ operation: 'ping', outcome: 'ok', httpStatus: 200 })]);
    });

    it('lists the categories', async () => {
      const categories = await client.listCategories();
      expect(categories.length).toBeGreaterThan(0);
      expect(categories.some((c) => c.parent_id === 0)).toBe(true);
      expect(categories.every((c) => typeof c.slug === 'string' && typeof c.sort_order === 'number')).toBe(true);
    });

    it('pages products: the upstream caps page_size and echoes the size it used', async () => {
      const first = await client.listProducts({ page: 1, pageSize: 100 });
      expect(first).toMatchObject({ page: 1, page_size: 50, total: 60 });
      expect(first.items).toHaveLength(50);
      const second = await client.listProducts({ page: 2, pageSize: first.page_size });
      expect(second.items).toHaveLength(10);
      const ids = new Set([...first.items, ...second.items].map((p) => p.id));
      expect(ids.size).toBe(60);
      expect(typeof first.items[0].skus[0].price_amount).toBe('string');
    });

    it("gives a page's body digest when asked: the same bytes the same digest, a change on the page another", async () => {
      const plain = await client.listProducts({ page: 1, pageSize: 50 });
      expect(plain).not.toHaveProperty('digest'); // not the upstream's: no field of the wire page
      const nothingKnown = () => undefined;
      const digestOf = async (page: number) => {
        const r = await client.listProductsRecognizing({ page, pageSize: 50 }, nothingKnown);
        if (r.kind !== 'parsed') throw new Error('recognised without being known');
        return r;
      };
      const [a, b, other] = await Promise.all([digestOf(1), digestOf(1), digestOf(2)]);
      expect(a.digest).toMatch(/^[A-Za-z0-9_-]{43}$/); // SHA-256, base64url
      expect(a.page).toEqual(plain);
      expect(b.digest).toBe(a.digest);
      expect(other.digest).not.toBe(a.digest);
      sandbox.catalog.setPrice(a.page.items[3].skus[0].sku_code, '77.77');
      expect((await digestOf(1)).digest).not.toBe(a.digest);
      expect((await digestOf(2)).digest).toBe(other.digest);
    });

    it('a page whose digest the caller knows is answered by the caller, unparsed; only a 200 answer is offered', async () => {
      const first = await client.listProductsRecognizing({ page: 1, pageSize: 50 }, () => undefined);
      if (first.kind !== 'parsed') throw new Error('recognised without being known');
      const asked: string[] = [];
      const known = { unchanged: [{ id: 1, skus: 2 }] };
      const recognize = (d: string) => {
        asked.push(d);
        return d === first.digest ? known : undefined;
      };
      // the same bytes: the caller's value is the answer
      expect(await client.listProductsRecognizing({ page: 1, pageSize: 50 }, recognize)).toEqual({ kind: 'recognized', known });
      expect(calls.at(-1)).toMatchObject({ operation: 'listProducts', outcome: 'ok', httpStatus: 200 });
      // other bytes: parsed as usual
      const other = await client.listProductsRecognizing({ page: 2, pageSize: 50 }, recognize);
      if (other.kind !== 'parsed') throw new Error('other bytes recognised');
      expect(other.page.items).toHaveLength(10);
      expect(asked).toEqual([first.digest, other.digest]);
      // an error answer is classified as ever, the caller is not asked
      sandbox.faults.set({ rules: [{ operation: 'products', kind: 'rate_limit', retryAfterS: 1, times: 1 }] });
      await expect(client.listProductsRecognizing({ page: 1, pageSize: 50 }, recognize)).rejects.toMatchObject({
        reason: 'rate_limited',
        httpStatus: 429,
      });
      expect(asked).toHaveLength(2);
    });

    it('sends updated_after (RFC 3339) when given', async () => {
      const all = sandbox.catalog.listedProducts();
      const latest = Math.max(...all.map((p) => Date.parse(p.updated_at)));
      const cutoff = new Date(Math.ceil((latest + 1) / 1000) * 1000);
      const none = await client.listProducts({ page: 1, pageSize: 50, updatedAfter: cutoff });
      expect(none.total).toBe(0);

      const touched = sandbox.catalog.touchProducts(3);
      const changed = await client.listProducts({ page: 1, pageSize: 50, updatedAfter: cutoff });
      expect(changed.total).toBe(3);
      expect(changed.items.map((p) => p.id).sort((a, b) => a - b)).toEqual([...touched].sort((a, b) => a - b));

      const unfiltered = await client.listProducts({ page: 1, pageSize: 50 });
      expect(unfiltered.total).toBe(60);
    });

    it('reads one product', async () => {
      const listed = sandbox.catalog.listedProducts()[4];
      await expect(client.getProduct(listed.id)).resolves.toEqual(listed);
    });

    it('creates an order, then reads it with its delivered payload', async () => {
      const sku = autoSku();
      const created = await client.createOrder({
        sku_id: sku.id,
        quantity: 3,
        downstream_order_no: 'SHOP-1',
        trace_id: 'trace-öß-1',
      });
      expect(created).toMatchObject({ ok: true, status: 'pending_payment', currency: 'CNY' });
      expect(typeof created.amount).toBe('string');
      expect(sandbox.order(created.order_id)).toMatchObject({ downstream_order_no: 'SHOP-1', trace_id: 'trace-öß-1', quantity: 3 });

      sandbox.advanceAll();
      const order = await client.getOrder(created.order_id);
      expect(order).toMatchObject({ ok: true, order_id: created.order_id, status: 'delivered', amount: created.amount });
      expect(order.fulfillment?.payload.split(/\r?\n/).filter((l) => l.trim() !== '')).toHaveLength(3);
    });

    it('cancels an order that may still be canceled', async () => {
      const created = await client.createOrder({ sku_id: autoSku().id, quantity: 1 });
      const canceled = await client.cancelOrder(created.order_id);
      expect(canceled).toMatchObject({ ok: true, order_id: created.order_id, status: 'canceled' });
      expect(sandbox.stats.cancelsExecuted).toBe(1);
    });

    it('passes the undocumented refunded / partially_refunded states through with refunded_amount', async () => {
      sandbox.catalog.setPrice(sandbox.catalog.findSku({ fulfillmentType: 'auto', stockStatus: 'unlimited' })!.sku.sku_code, '10.00');
      const created = await client.createOrder({ sku_id: autoSku().id, quantity: 2 });
      sandbox.advanceAll();
      sandbox.refundOrder(created.order_id, '5.00');
      await expect(client.getOrder(created.order_id)).resolves.toMatchObject({
        status: 'partially_refunded',
        refunded_amount: '5.00',
        amount: '20.00',
      });
      sandbox.refundOrder(created.order_id);
      await expect(client.getOrder(created.order_id)).resolves.toMatchObject({ status: 'refunded', refunded_amount: '20.00' });
    });

    it('signs with another header prefix and template (dujiao-next profile, body_sha256)', async () => {
      const template = '{api_key}\n{method}\n{path}\n{timestamp}\n{body_sha256}';
      const other = new SandboxServer({ profile: 'dujiao-next', signatureTemplate: template, catalog: { products: 5 } });
      await other.start(0);
      try {
        const c = newClient({ baseUrl: other.baseUrl, headerPrefix: 'Dujiao-Next', signatureTemplate: template });
        const f = other.catalog.findSku({ fulfillmentType: 'auto' })!;
        await expect(c.ping()).resolves.toMatchObject({ ok: true });
        await expect(c.createOrder({ sku_id: f.sku.id, quantity: 1 })).resolves.toMatchObject({ ok: true });
      } finally {
        await other.stop();
      }
    });
  });

  describe('faults, each with its failure class', () => {
    it('5xx before the work → unknown http_503 (nothing was created)', async () => {
      sandbox.faults.set({ rules: [{ operation: 'createOrder', kind: 'error_before', status: 503 }] });
      const e = await failure(client.createOrder({ sku_id: autoSku().id, quantity: 1 }), UpstreamUnknownError);
      expect([e.reason, e.httpStatus, e.operation]).toEqual(['http_503', 503, 'createOrder']);
      expect(sandbox.orders()).toHaveLength(0);
      expect(calls).toEqual([expect.objectContaining({ operation: 'createOrder', outcome: 'unknown', httpStatus: 503 })]);
    });

    it('5xx after the work → unknown (the order exists)', async () => {
      sandbox.faults.set({ rules: [{ operation: 'createOrder', kind: 'error_after', status: 502 }] });
      const e = await failure(client.createOrder({ sku_id: autoSku().id, quantity: 1 }), UpstreamUnknownError);
      expect([e.reason, e.httpStatus]).toEqual(['http_502', 502]);
      expect(sandbox.orders()).toHaveLength(1);
    });

    it('hang after the work → unknown response_timeout', async () => {
      sandbox.faults.set({ rules: [{ operation: 'createOrder', kind: 'hang_after' }] });
      const c = newClient({ timeoutMs: 300 });
      const e = await failure(c.createOrder({ sku_id: autoSku().id, quantity: 1 }), UpstreamUnknownError);
      expect(e.reason).toBe('response_timeout');
      expect(sandbox.orders()).toHaveLength(1);
    });

    it('reset after the work → unknown ECONNRESET', async () => {
      sandbox.faults.set({ rules: [{ operation: 'createOrder', kind: 'reset_after' }] });
      const e = await failure(client.createOrder({ sku_id: autoSku().id, quantity: 1 }), UpstreamUnknownError);
      expect(e.reason).toBe('ECONNRESET');
      expect(sandbox.orders()).toHaveLength(1);
    });

    it('reset before the work, once the request was sent → still unknown (the client cannot tell)', async () => {
      sandbox.faults.set({ rules: [{ operation: 'createOrder', kind: 'reset_before' }] });
      const e = await failure(client.createOrder({ sku_id: autoSku().id, quantity: 1 }), UpstreamUnknownError);
      expect(e.reason).toBe('ECONNRESET');
    });

    it("the caller's abort ends a catalog read at once → unknown aborted", async () => {
      sandbox.faults.set({ latencyMs: 5000 });
      const controller = new AbortController();
      // aborted once the upstream has the request; the upstream's answer comes 5 s later
      const seen: string[] = [];
      const onRequest = (ev: SandboxRequestEvent) => {
        if (ev.operation !== 'products') return;
        seen.push(ev.phase);
        if (ev.phase === 'received') controller.abort();
      };
      sandbox.events.on('request', onRequest);
      try {
        const e = await failure(client.listProducts({ page: 1, pageSize: 10 }, controller.signal), UpstreamUnknownError);
        expect(e.reason).toBe('aborted');
        // the read ended before the upstream answered: at once, not with the answer
        expect(seen).toEqual(['received']);
      } finally {
        sandbox.events.off('request', onRequest);
      }
      const again = await failure(client.getProduct(1, controller.signal), UpstreamUnknownError); // already aborted: not sent
      expect(again.reason).toBe('aborted');
    });

    it('429 → retryable rate_limited with retryAfterMs from Retry-After', async () => {
      sandbox.faults.set({ rules: [{ operation: 'createOrder', kind: 'rate_limit', retryAfterS: 2 }] });
      const e = await failure(client.createOrder({ sku_id: autoSku().id, quantity: 1 }), UpstreamRetryableError);
      expect([e.reason, e.retryAfterMs, e.httpStatus]).toEqual(['rate_limited', 2000, 429]);
      expect(calls).toEqual([expect.objectContaining({ outcome: 'retryable', httpStatus: 429 })]);
    });

    it('refused connection → retryable ECONNREFUSED', async () => {
      // A sandbox of its own: closing the listener also closes the kept-alive sockets of other clients.
      const closed = new SandboxServer({ catalog: { products: 3 } });
      await closed.start(0);
      try {
        const c = newClient({ baseUrl: closed.baseUrl });
        await closed.refuseConnections();
        const e = await failure(c.createOrder({ sku_id: 1, quantity: 1 }), UpstreamRetryableError);
        expect(e.reason).toBe('ECONNREFUSED');
        expect(calls).toEqual([expect.objectContaining({ outcome: 'retryable' })]);
        expect(calls[0].httpStatus).toBeUndefined();
        expect(closed.stats.createsReceived).toBe(0);
      } finally {
        await closed.stop();
      }
    });

    it('unparsable body (HTTP 200) → unknown unparsable_body', async () => {
      sandbox.faults.set({ rules: [{ operation: 'createOrder', kind: 'garbage_after' }] });
      const e = await failure(client.createOrder({ sku_id: autoSku().id, quantity: 1 }), UpstreamUnknownError);
      expect([e.reason, e.httpStatus]).toEqual(['unparsable_body', 200]);
    });

    it('HTTP 200 ok:true of the wrong shape → unknown unexpected_shape', async () => {
      sandbox.faults.set({
        rules: [{ operation: 'createOrder', kind: 'garbage_after', body: '{"ok":true,"order_id":"1","amount":12.5}' }],
      });
      const e = await failure(client.createOrder({ sku_id: autoSku().id, quantity: 1 }), UpstreamUnknownError);
      expect([e.reason, e.httpStatus]).toEqual(['unexpected_shape', 200]);
    });

    it('HTTP 200 ok:false payment_failed → definitive payment_failed', async () => {
      sandbox.faults.set({ rules: [{ operation: 'createOrder', kind: 'payment_failed' }] });
      const e = await failure(client.createOrder({ sku_id: autoSku().id, quantity: 1 }), UpstreamDefinitiveError);
      expect([e.errorCode, e.httpStatus]).toEqual(['payment_failed', 200]);
      expect(calls).toEqual([expect.objectContaining({ outcome: 'definitive', httpStatus: 200 })]);
    });

    it('cancel of a delivered order → definitive cancel_not_allowed (409)', async () => {
      const created = await client.createOrder({ sku_id: autoSku().id, quantity: 1 });
      sandbox.advanceAll();
      const e = await failure(client.cancelOrder(created.order_id), UpstreamDefinitiveError);
      expect([e.errorCode, e.httpStatus]).toEqual(['cancel_not_allowed', 409]);
    });

    it('unknown product → definitive product_not_found (404)', async () => {
      const e = await failure(client.getProduct(999_999), UpstreamDefinitiveError);
      expect([e.errorCode, e.httpStatus]).toEqual(['product_not_found', 404]);
    });

    it('a coded 402 → definitive insufficient_balance', async () => {
      sandbox.setWalletBalance('0.00');
      const e = await failure(client.createOrder({ sku_id: autoSku().id, quantity: 1 }), UpstreamDefinitiveError);
      expect([e.errorCode, e.httpStatus]).toEqual(['insufficient_balance', 402]);
    });

    it('wrong secret → definitive 401', async () => {
      const c = newClient({ apiSecret: 'not-the-secret' });
      const e = await failure(c.ping(), UpstreamDefinitiveError);
      expect(e.httpStatus).toBe(401);
      expect(e.errorCode).toBe('invalid_signature');
    });

    it('connect timeout (the socket never connects) → retryable connect_timeout', async () => {
      const hole = await blackHole();
      try {
        const c = newClient({ baseUrl: `http://127.0.0.1:${hole.port}/api/v1/upstream`, connectTimeoutMs: 200, timeoutMs: 5000 });
        const e = await failure(c.createOrder({ sku_id: 1, quantity: 1 }), UpstreamRetryableError);
        expect(e.reason).toBe('connect_timeout');
      } finally {
        await hole.close();
      }
    });

    it('the response timer firing before the socket connected is still a connect timeout', async () => {
      const hole = await blackHole();
      try {
        const c = newClient({ baseUrl: `http://127.0.0.1:${hole.port}/api/v1/upstream`, connectTimeoutMs: 5000, timeoutMs: 200 });
        const e = await failure(c.ping(), UpstreamRetryableError);
        expect(e.reason).toBe('connect_timeout');
      } finally {
        await hole.close();
      }
    });
  });
});
