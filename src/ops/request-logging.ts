/**
 * One JSON log line per HTTP request, with a correlation id:
 * - the id is the incoming `x-request-id` when it is sane (1–128 of `A-Z a-z 0-9 . _ : -`), else a
 *   new UUID; it is echoed in the `x-request-id` response header and carried by the log lines
 *   written where the request is at hand (request-context.ts);
 * - the line: `request_id, method, path` (no query string), `route, status, duration_ms`, and
 *   `shop_order_no` / `trace_id` / `downstream_order_no` when the path or the JSON body names them;
 * - never a header, a query string or a body: tokens, API keys, signatures and delivered items
 *   cannot reach it.
 */
import { randomUUID } from 'node:crypto';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { Logger as Pino } from 'pino';
import { requestFields } from './request-context.js';

export const REQUEST_ID_HEADER = 'x-request-id';
const SANE_REQUEST_ID = /^[A-Za-z0-9._:-]{1,128}$/;
const SHOP_ORDER_NO = /^[A-Za-z0-9._:-]{1,64}$/;
const PRINTABLE = /^[\x20-\x7e]{1,128}$/;

/** The request id: the caller's when sane, else a new one. */
export function requestIdFrom(header: string | string[] | undefined): string {
  const v = Array.isArray(header) ? header[0] : header;
  return typeof v === 'string' && SANE_REQUEST_ID.test(v) ? v : randomUUID();
}

function field(source: unknown, name: string, re: RegExp): string | undefined {
  if (source === null || typeof source !== 'object') return undefined;
  const v = (source as Record<string, unknown>)[name];
  return typeof v === 'string' && re.test(v) ? v : undefined;
}

export function installRequestLogging(fastify: FastifyInstance, log: Pino): void {
  fastify.addHook('onRequest', (req: FastifyRequest, reply: FastifyReply, done) => {
    void reply.header(REQUEST_ID_HEADER, String(req.id));
    done();
  });
  fastify.addHook('onResponse', (req: FastifyRequest, reply: FastifyReply, done) => {
    // (a level that writes no request line builds none)
    if (!log.isLevelEnabled(reply.statusCode >= 500 ? 'error' : 'info')) return done();
    const body = req.body;
    const path = req.url.split('?')[0];
    const status = reply.statusCode;
    const line: Record<string, unknown> = {
      ...requestFields(req),
      method: req.method,
      path,
      route: req.routeOptions?.url,
      status,
      duration_ms: Math.round(reply.elapsedTime * 10) / 10,
      shop_order_no: field(req.params, 'shop_order_no', SHOP_ORDER_NO) ?? field(body, 'shop_order_no', SHOP_ORDER_NO),
      trace_id: field(body, 'trace_id', PRINTABLE),
      downstream_order_no: field(body, 'downstream_order_no', SHOP_ORDER_NO),
    };
    for (const k of Object.keys(line)) if (line[k] === undefined) delete line[k];
    const msg = `${req.method} ${path} ${status}`;
    if (status >= 500) log.error(line, msg);
    else log.info(line, msg);
    done();
  });
}
