/**
 * The HTTP adapter against the sandbox upstream as a real HTTP server (port 0), one test per fault,
 * plus the success paths. Connect timeouts use a loopback listener whose accept queue is full (a
 * worker thread listens and then blocks its own event loop, so nothing is ever accepted).
 */
import { getEventListeners } from 'node:events';
import { readFileSync } from 'node:fs';
import http from 'node:http';
import https from 'node:https';
import net from 'node:net';
import { Worker } from 'node:worker_threads';
import zlib from 'node:zlib';
import { DEFAULT_SIGNATURE_TEMPLATE, verifySignature } from '../signing/signing.js';
import { SandboxServer } from '../sandbox/sandbox.server.js';
import type { SandboxRequestEvent } from '../sandbox/sandbox.types.js';
import {
  UpstreamHttpClient,
  toRfc3339Seconds,
  type UpstreamCallEvent,
  type UpstreamHttpOptions,
} from './upstream-http.adapter.js';
import {
  UpstreamDefinitiveError,
  UpstreamError,
  UpstreamRetryableError,
  UpstreamUnknownError,
} from './upstream.errors.js';

type ErrorClass<T extends UpstreamError> = abstract new (...args: never[]) => T;

/** Awaits a promise that must reject with an error of the class, and returns that error. */
async function failure<T extends UpstreamError>(p: Promise<unknown>, cls: ErrorClass<T>): Promise<T> {
  const err = await p.then(
    (v) => {
      throw new Error(`expected a ${cls.name}, got ${JSON.stringify(v)}`);
    },
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(cls);
  return err as T;
}

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
      expect(plain.digest).toBeUndefined();
      const [a, b, other] = await Promise.all([
        client.listProducts({ page: 1, pageSize: 50, digest: true }),
        client.listProducts({ page: 1, pageSize: 50, digest: true }),
        client.listProducts({ page: 2, pageSize: 50, digest: true }),
      ]);
      expect(a.digest).toMatch(/^[A-Za-z0-9_-]{43}$/); // SHA-256, base64url
      expect(b.digest).toBe(a.digest);
      expect(other.digest).not.toBe(a.digest);
      sandbox.catalog.setPrice(a.items[3].skus[0].sku_code, '77.77');
      expect((await client.listProducts({ page: 1, pageSize: 50, digest: true })).digest).not.toBe(a.digest);
      expect((await client.listProducts({ page: 2, pageSize: 50, digest: true })).digest).toBe(other.digest);
    });

    it('a page whose digest the caller knows is answered by the caller, unparsed; only a 200 answer is offered', async () => {
      const page = await client.listProducts({ page: 1, pageSize: 50, digest: true });
      const asked: string[] = [];
      const known = { ok: true as const, items: [], unchanged: [{ id: 1, skus: 2 }], total: 60, page: 1, page_size: 50, digest: page.digest };
      const remembered = (d: string) => {
        asked.push(d);
        return d === page.digest ? known : undefined;
      };
      // the same bytes: the caller's page is the answer
      expect(await client.listProducts({ page: 1, pageSize: 50, digest: true, remembered })).toBe(known);
      // other bytes: parsed as usual
      const other = await client.listProducts({ page: 2, pageSize: 50, digest: true, remembered });
      expect(other.items).toHaveLength(10);
      expect(asked).toEqual([page.digest, other.digest]);
      // an error answer is classified as ever, the caller is not asked
      sandbox.faults.set({ rules: [{ operation: 'products', kind: 'rate_limit', retryAfterS: 1, times: 1 }] });
      await expect(client.listProducts({ page: 1, pageSize: 50, digest: true, remembered })).rejects.toMatchObject({ reason: 'rate_limited', httpStatus: 429 });
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
      sandbox.faults.set({ rules: [{ operation: 'createOrder', kind: 'garbage_after', body: '{"ok":true,"order_id":"1","amount":12.5}' }] });
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

/** A client of a test server on 127.0.0.1 (`over` replaces any of its options). */
function localClient(port: number, over: Partial<UpstreamHttpOptions> = {}, scheme: 'http' | 'https' = 'http'): UpstreamHttpClient {
  return new UpstreamHttpClient({
    baseUrl: `${scheme}://127.0.0.1:${port}/api/v1/upstream`,
    apiKey: 'k',
    apiSecret: 's',
    headerPrefix: 'Service',
    signatureTemplate: DEFAULT_SIGNATURE_TEMPLATE,
    timeoutMs: 5000,
    ...over,
  });
}

describe('UpstreamHttpClient over TLS', () => {
  const tlsClient = (port: number, over: Partial<UpstreamHttpOptions> = {}) => localClient(port, over, 'https');

  it('a TLS handshake that never completes is a connect timeout (retryable: nothing was sent)', async () => {
    const server = net.createServer((s) => s.on('data', () => undefined)); // takes the ClientHello, never answers
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const c = tlsClient((server.address() as net.AddressInfo).port, { connectTimeoutMs: 200 });
    try {
      const e = await failure(c.createOrder({ sku_id: 1, quantity: 1, downstream_order_no: 'TLS-1' }), UpstreamRetryableError);
      expect(e.reason).toBe('connect_timeout');
    } finally {
      c.close();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    }
  });

  it('a certificate nobody trusts fails the handshake: retryable, and no request reached the server', async () => {
    const fixtures = new URL('../../test/fixtures/tls/', import.meta.url);
    let requests = 0;
    const server = https.createServer({ key: readFileSync(new URL('self-signed.key', fixtures)), cert: readFileSync(new URL('self-signed.crt', fixtures)) }, (_req, res) => {
      requests++;
      res.end('{}');
    });
    server.on('tlsClientError', () => undefined);
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const c = tlsClient((server.address() as net.AddressInfo).port);
    try {
      const e = await failure(c.createOrder({ sku_id: 1, quantity: 1, downstream_order_no: 'TLS-2' }), UpstreamRetryableError);
      expect(e.reason).toMatch(/SELF_SIGNED|CERT/);
      expect(requests).toBe(0);
    } finally {
      c.close();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    }
  });
});

describe('UpstreamHttpClient on raw sockets', () => {
  it('a reset on a reused keep-alive socket after the request was written → unknown', async () => {
    let requests = 0;
    const server = net.createServer((s) => {
      s.on('data', () => {
        requests++;
        if (requests === 1) {
          const body = '{"ok":true,"site_name":"s","protocol_version":"1.0","user_id":1,"balance":"1.00","currency":"CNY"}';
          s.write(`HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\nConnection: keep-alive\r\n\r\n${body}`);
        } else {
          s.resetAndDestroy();
        }
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const port = (server.address() as net.AddressInfo).port;
    const c = localClient(port);
    try {
      await expect(c.ping()).resolves.toMatchObject({ ok: true });
      const e = await failure(c.cancelOrder(1), UpstreamUnknownError);
      expect(e.reason).toBe('ECONNRESET');
      expect(requests).toBe(2);
    } finally {
      c.close();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    }
  });

  it('signs the path with the base prefix and the exact body bytes, without the query string', async () => {
    const seen: { method: string; url: string; headers: Record<string, string | string[] | undefined>; body: string }[] = [];
    const server = http.createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (d: Buffer) => chunks.push(d));
      req.on('end', () => {
        seen.push({ method: req.method ?? '', url: req.url ?? '', headers: req.headers, body: Buffer.concat(chunks).toString('utf8') });
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end('{"ok":true,"items":[],"total":0,"page":2,"page_size":50}');
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const port = (server.address() as net.AddressInfo).port;
    const c = new UpstreamHttpClient({
      baseUrl: `http://127.0.0.1:${port}/prefix/api/v1/upstream/`,
      apiKey: 'key-1',
      apiSecret: 'secret-1',
      headerPrefix: 'X-Up',
      signatureTemplate: '{method} {path} {timestamp} {body}',
      timeoutMs: 5000,
      clock: () => Date.UTC(2025, 0, 1, 0, 0, 0),
    });
    try {
      await c.listProducts({ page: 2, pageSize: 50, updatedAfter: new Date(Date.UTC(2025, 0, 1, 0, 0, 5, 678)) });
      expect(seen[0].url).toBe('/prefix/api/v1/upstream/products?page=2&page_size=50&updated_after=2025-01-01T00%3A00%3A05Z');
      expect(seen[0].headers['content-type']).toBe('application/json');
      expect(seen[0].headers['x-up-timestamp']).toBe(String(Date.UTC(2025, 0, 1) / 1000));
      const verified = verifySignature({
        secret: 'secret-1',
        template: '{method} {path} {timestamp} {body}',
        expectedApiKey: 'key-1',
        method: 'GET',
        path: '/prefix/api/v1/upstream/products',
        body: '',
        apiKey: seen[0].headers['x-up-api-key'] as string,
        timestamp: seen[0].headers['x-up-timestamp'] as string,
        signature: seen[0].headers['x-up-signature'] as string,
        nowSeconds: Date.UTC(2025, 0, 1) / 1000,
        toleranceSeconds: 60,
      });
      expect(verified).toEqual({ ok: true });
      expect(toRfc3339Seconds(new Date(Date.UTC(2025, 0, 1, 0, 0, 5, 678)))).toBe('2025-01-01T00:00:05Z');
    } finally {
      c.close();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    }
  });
});

describe('UpstreamHttpClient over plain HTTP: encodings, cut answers, limits, keep-alive', () => {
  const PING = '{"ok":true,"site_name":"s","protocol_version":"1.0","user_id":1,"balance":"1.00","currency":"CNY"}';
  const servers: net.Server[] = [];
  const clients: UpstreamHttpClient[] = [];

  async function listen<S extends net.Server>(server: S): Promise<number> {
    servers.push(server);
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    return (server.address() as net.AddressInfo).port;
  }
  function clientOn(port: number, over: Partial<UpstreamHttpOptions> = {}): UpstreamHttpClient {
    const c = localClient(port, { timeoutMs: 60_000, ...over }); // a leaked timer would outlive the test
    clients.push(c);
    return c;
  }
  /** The client's http agent: which sockets are busy, which are kept for the next call. */
  function agentOf(c: UpstreamHttpClient): http.Agent {
    return (c as unknown as { httpAgent: http.Agent }).httpAgent;
  }
  const socketCount = (sockets: NodeJS.ReadOnlyDict<unknown[]>): number =>
    Object.values(sockets).reduce((n, list) => n + (list?.length ?? 0), 0);
  /** Busy sockets of the agent, once destroyed ones had their 'close' (a tick or two after the failure). */
  async function busySockets(c: UpstreamHttpClient): Promise<number> {
    for (let i = 0; i < 50 && socketCount(agentOf(c).sockets) > 0; i++) await new Promise((r) => setTimeout(r, 10));
    return socketCount(agentOf(c).sockets);
  }
  const activeTimers = (): number => process.getActiveResourcesInfo().filter((r) => r === 'Timeout').length;

  afterEach(async () => {
    for (const c of clients.splice(0)) c.close();
    await Promise.all(
      servers.splice(0).map(
        (server) =>
          new Promise<void>((resolve) => {
            (server as http.Server).closeAllConnections?.();
            server.close(() => resolve());
          }),
      ),
    );
  });

  it.each([
    ['gzip', (b: Buffer) => zlib.gzipSync(b)],
    ['x-gzip', (b: Buffer) => zlib.gzipSync(b)],
    ['deflate', (b: Buffer) => zlib.deflateSync(b)],
    ['deflate', (b: Buffer) => zlib.deflateRawSync(b)], // raw deflate, as some servers send it
    ['deflate', (b: Buffer) => zlib.deflateSync(b, { windowBits: 10 })], // a zlib stream with a 1 KiB window: first byte 0x28, not 0x78
    ['br', (b: Buffer) => zlib.brotliCompressSync(b)],
  ])('decodes a %s-encoded answer (and asks for one)', async (encoding, encode) => {
    const seen: http.IncomingHttpHeaders[] = [];
    const port = await listen(
      http.createServer((req, res) => {
        seen.push(req.headers);
        req.resume();
        res.writeHead(200, { 'content-type': 'application/json', 'content-encoding': encoding });
        res.end(encode(Buffer.from(PING)));
      }),
    );
    const c = clientOn(port);
    await expect(c.ping()).resolves.toMatchObject({ ok: true, balance: '1.00' });
    expect(seen[0]).toMatchObject({
      'accept-encoding': 'gzip, deflate, br',
      'user-agent': 'upstream-relay',
      accept: 'application/json',
      'content-type': 'application/json',
      'content-length': '0', // a POST with an empty body, as axios sent it
    });
  });

  it('a 101 Switching Protocols → unknown at once (the request was sent), not after the response timer', async () => {
    const port = await listen(
      http.createServer((req, res) => {
        req.resume();
        res.socket?.write('HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n');
      }),
    );
    // the response timer at its longest (about 24.8 days): a client that waited for it would not
    // answer within the test; the reason says which ended the call
    const e = await failure(clientOn(port, { timeoutMs: 2_147_483_647 }).ping(), UpstreamUnknownError);
    expect(e.reason).toBe('unexpected_upgrade');
  });

  it('refuses a timeout a Node timer cannot hold (it would fire after 1 ms)', () => {
    expect(() => clientOn(1, { timeoutMs: 2_147_483_648 })).toThrow(/up to 2147483647/);
    expect(() => clientOn(1, { timeoutMs: 2_147_483_647 })).not.toThrow();
  });

  it('an encoded answer that does not decode → unknown (a failure after connect)', async () => {
    const port = await listen(
      http.createServer((req, res) => {
        req.resume();
        res.writeHead(200, { 'content-type': 'application/json', 'content-encoding': 'gzip' });
        res.end('{"ok":true} is not gzip');
      }),
    );
    const e = await failure(clientOn(port).ping(), UpstreamUnknownError);
    expect(e.reason).toMatch(/^Z_/);
  });

  it('a GET carries no body and no Content-Length; an unknown Content-Encoding is kept as received', async () => {
    const seen: http.IncomingHttpHeaders[] = [];
    const port = await listen(
      http.createServer((req, res) => {
        seen.push(req.headers);
        res.writeHead(200, { 'content-type': 'application/json', 'content-encoding': 'identity' });
        res.end('{"ok":true,"categories":[]}');
      }),
    );
    await expect(clientOn(port).listCategories()).resolves.toEqual([]);
    expect(seen[0]['content-length']).toBeUndefined();
    expect(seen[0]['transfer-encoding']).toBeUndefined();
  });

  it('a redirect is an answer, not followed → unknown http_302', async () => {
    let requests = 0;
    const port = await listen(
      http.createServer((req, res) => {
        requests++;
        req.resume();
        res.writeHead(302, { location: '/api/v1/upstream/elsewhere' });
        res.end();
      }),
    );
    const e = await failure(clientOn(port).ping(), UpstreamUnknownError);
    expect([e.reason, e.httpStatus]).toEqual(['http_302', 302]);
    expect(requests).toBe(1);
  });

  it.each([
    ['closed', (s: net.Socket) => s.destroy()],
    ['reset', (s: net.Socket) => s.resetAndDestroy()],
  ])('an answer cut mid-body (connection %s after the headers) → unknown ECONNRESET, nothing left behind', async (_how, cut) => {
    const port = await listen(
      net.createServer((s) => {
        s.once('data', () => {
          s.write(`HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: ${PING.length}\r\n\r\n${PING.slice(0, 20)}`);
          setTimeout(() => cut(s), 20);
        });
      }),
    );
    const c = clientOn(port);
    const controller = new AbortController();
    const timersBefore = activeTimers();
    const e = await failure(c.getProduct(1, controller.signal), UpstreamUnknownError);
    expect(e.reason).toBe('ECONNRESET');
    expect(getEventListeners(controller.signal, 'abort')).toHaveLength(0);
    expect(activeTimers()).toBe(timersBefore);
    expect(await busySockets(c)).toBe(0);
    expect(socketCount(agentOf(c).freeSockets)).toBe(0);
  });

  it('keeps the connection alive: two calls, one connection, the socket back in the pool, no listener left', async () => {
    let connections = 0;
    const server = http.createServer((req, res) => {
      req.resume();
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(PING);
    });
    server.on('connection', () => connections++);
    const port = await listen(server);
    const c = clientOn(port);
    const controller = new AbortController();
    const timersBefore = activeTimers();
    await expect(c.ping(controller.signal)).resolves.toMatchObject({ ok: true });
    await expect(c.ping(controller.signal)).resolves.toMatchObject({ ok: true });
    expect(connections).toBe(1);
    expect(socketCount(agentOf(c).sockets)).toBe(0);
    expect(socketCount(agentOf(c).freeSockets)).toBe(1);
    expect(getEventListeners(controller.signal, 'abort')).toHaveLength(0);
    expect(activeTimers()).toBe(timersBefore);
  });

  it('an answer larger than maxResponseBytes is dropped → unknown, and its socket destroyed', async () => {
    const big = `{"ok":true,"pad":"${'x'.repeat(4096)}"}`;
    const port = await listen(
      http.createServer((req, res) => {
        req.resume();
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end(big);
      }),
    );
    const c = clientOn(port, { maxResponseBytes: 1024 });
    const e = await failure(c.listCategories(), UpstreamUnknownError);
    expect(e.reason).toBe('response_too_large');
    expect(await busySockets(c)).toBe(0);
    expect(socketCount(agentOf(c).freeSockets)).toBe(0);
    // the limit is on the answer, not the request: an answer of exactly the limit passes
    const exact = clientOn(port, { maxResponseBytes: Buffer.byteLength(big) });
    await expect(exact.listCategories()).rejects.toMatchObject({ reason: 'unexpected_shape' });
  });

  it('the limit applies to the decoded answer: a small gzip body that inflates past it → unknown', async () => {
    const port = await listen(
      http.createServer((req, res) => {
        req.resume();
        res.writeHead(200, { 'content-type': 'application/json', 'content-encoding': 'gzip' });
        res.end(zlib.gzipSync(Buffer.from(`{"ok":true,"pad":"${'x'.repeat(1 << 20)}"}`)));
      }),
    );
    const e = await failure(clientOn(port, { maxResponseBytes: 64 * 1024 }).ping(), UpstreamUnknownError);
    expect(e.reason).toBe('response_too_large');
  });

  it('a body still arriving when the response timer fires → unknown response_timeout, socket destroyed', async () => {
    const port = await listen(
      net.createServer((s) => {
        s.once('data', () => {
          s.write(`HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: ${PING.length}\r\n\r\n${PING.slice(0, 10)}`);
        });
      }),
    );
    const c = clientOn(port, { timeoutMs: 300 });
    const e = await failure(c.ping(), UpstreamUnknownError);
    expect(e.reason).toBe('response_timeout');
    expect(await busySockets(c)).toBe(0);
  });
});
