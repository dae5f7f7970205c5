/**
 * The request a log line belongs to: set for each HTTP request (request-logging.ts) and read by the
 * logger (every line written while serving a request carries its `request_id`). A handler may name
 * the order and trace id it works on, for the request's log line.
 */
import { AsyncLocalStorage } from 'node:async_hooks';

export interface RequestContext {
  requestId: string;
  shopOrderNo?: string;
  traceId?: string;
}

export const requestContext = new AsyncLocalStorage<RequestContext>();

export function currentRequestId(): string | undefined {
  return requestContext.getStore()?.requestId;
}

/** Adds the order number and trace id to the current request's log line (no-op outside a request). */
export function annotateRequest(fields: { shopOrderNo?: string | null; traceId?: string | null }): void {
  const ctx = requestContext.getStore();
  if (!ctx) return;
  if (fields.shopOrderNo) ctx.shopOrderNo = fields.shopOrderNo;
  if (fields.traceId) ctx.traceId = fields.traceId;
}
