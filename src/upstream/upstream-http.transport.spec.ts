/**
 * The HTTP adapter's transport on local servers of the test's own: TLS, raw sockets (answers cut or
 * malformed at the byte level), and plain HTTP's encodings, limits and keep-alive. The sandbox-based
 * paths are in upstream-http.adapter.spec.ts.
 */
import { getEventListeners } from 'node:events';
import { readFileSync } from 'node:fs';
import http from 'node:http';
import https from 'node:https';
import net from 'node:net';
import zlib from 'node:zlib';
import { DEFAULT_SIGNATURE_TEMPLATE, verifySignature } from '../signing/signing.js';
import { UpstreamHttpClient, toRfc3339Seconds, type UpstreamHttpOptions } from './upstream-http.adapter.js';
import { failure } from '../../test/support/upstream-failure.js';
import { UpstreamRetryableError, UpstreamUnknownError } from './upstream.errors.js';

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
    const server = https.createServer(
      { key: readFileSync(new URL('self-signed.key', fixtures)), cert: readFileSync(new URL('self-signed.crt', fixtures)) },
      (_req, res) => {
        requests++;
        res.end('{}');
      },
    );
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
          s.write(
            `HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\nConnection: keep-alive\r\n\r\n${body}`,
          );
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
