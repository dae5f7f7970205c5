import Fastify from 'fastify';
import { Writable } from 'node:stream';
import { createPino, safeHeaders } from './json-logger.js';
import { installRequestLogging, requestIdFrom } from './request-logging.js';
import { toOpenApiPath } from './route-registry.js';

describe('request ids', () => {
  it('keeps a sane caller id and replaces anything else', () => {
    expect(requestIdFrom('req-1.a_b:c')).toBe('req-1.a_b:c');
    expect(requestIdFrom(['first', 'second'])).toBe('first');
    const uuid = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
    for (const bad of [undefined, '', 'has space', 'x'.repeat(129), 'a"b', '{"json":1}', 'line\nbreak']) {
      expect(requestIdFrom(bad)).toMatch(uuid);
    }
    expect(requestIdFrom(undefined)).not.toBe(requestIdFrom(undefined));
  });
});

describe('safe headers', () => {
  it('redacts credentials and signatures of any prefix, keeps the rest', () => {
    expect(
      safeHeaders({
        authorization: 'Bearer t',
        cookie: 'c',
        'service-api-key': 'k',
        'Dujiao-Next-Signature': 's',
        'relay-signature': 's',
        'x-secret-thing': 's',
        'x-request-id': 'r',
        'content-type': 'application/json',
      }),
    ).toEqual({
      authorization: '[redacted]',
      cookie: '[redacted]',
      'service-api-key': '[redacted]',
      'Dujiao-Next-Signature': '[redacted]',
      'relay-signature': '[redacted]',
      'x-secret-thing': '[redacted]',
      'x-request-id': 'r',
      'content-type': 'application/json',
    });
    expect(safeHeaders(null)).toBeNull();
  });
});

describe('route paths', () => {
  it('turns router parameters into OpenAPI ones', () => {
    expect(toOpenApiPath('/internal/orders/:shop_order_no/cancel')).toBe('/internal/orders/{shop_order_no}/cancel');
    expect(toOpenApiPath('/internal/catalog/sync-runs/:run_id')).toBe('/internal/catalog/sync-runs/{run_id}');
    expect(toOpenApiPath('/health')).toBe('/health');
  });
});

describe('request lines and the log level', () => {
  it('at warn: no line for a 2xx or 4xx request, an error line for a 5xx one', async () => {
    let output = '';
    const sink = new Writable({
      write(chunk: Buffer, _enc, done) {
        output += chunk.toString('utf8');
        done();
      },
    });
    const app = Fastify();
    installRequestLogging(app, createPino('warn', sink));
    app.get('/ok', async () => ({ ok: true }));
    app.get('/missing', async (_req, reply) => reply.code(404).send({ ok: false }));
    app.get('/boom', async (_req, reply) => reply.code(503).send({ ok: false }));
    const address = await app.listen({ port: 0, host: '127.0.0.1' });
    try {
      for (const path of ['/ok', '/missing', '/boom']) expect((await fetch(`${address}${path}`)).status).toBeGreaterThan(0);
      await new Promise((r) => setImmediate(r));
      const lines = output
        .split('\n')
        .filter(Boolean)
        .map((l) => JSON.parse(l) as Record<string, unknown>);
      expect(lines).toEqual([expect.objectContaining({ level: 'error', path: '/boom', status: 503 })]);
    } finally {
      await app.close();
    }
  });
});
