/**
 * What a shop webhook looks like on the wire (CONTRACT §7). Pure.
 *
 * `POST <SHOP_WEBHOOK_URL>` with a JSON body
 *   {"id":"42","event":"order.status_changed","subject":"SO-1001","created_at":"…","data":{…}}
 * and headers
 *   Relay-Api-Key: upstream-relay        (fixed: identifies the sender)
 *   Relay-Timestamp: <Unix seconds>
 *   Relay-Signature: <lower-case hex HMAC-SHA256>
 *   Relay-Event-Id: 42                   (the shop's deduplication key: a retry or a replay sends the same id)
 *   Relay-Event: order.status_changed
 *   Relay-Attempt: 1                     (1 on the first try, counting up on retries)
 * The signature is §4's, with the published template `{method}\n{path}\n{timestamp}\n{body_md5}`
 * (method `POST`, path = the path of SHOP_WEBHOOK_URL without its query), keyed by SHOP_WEBHOOK_SECRET,
 * over the exact body bytes; a shop verifies it with `verifySignature` of src/signing (expected API
 * key `upstream-relay`) or any implementation of §4. The prefix `Relay` is fixed whatever the
 * upstream profile, so that the shop never confuses these with the upstream's own callbacks.
 * The body of an event is the same on every attempt; only the timestamp and signature change.
 *
 * `order.status_changed` carries `data.sequence` (a number, the event's id): it grows with each
 * status change of one order (the change and its outbox row are written under the order's row lock,
 * so a later change has a larger id). Events of one order are sent in order, but those after a
 * `dead` one go without it, and its replay (or any replay) brings an older change after a newer one:
 * a shop applies an order event only when its sequence is above the last one it applied for that order.
 */
import { DEFAULT_SIGNATURE_TEMPLATE, signedHeaders } from '../signing/signing.js';

export const WEBHOOK_HEADER_PREFIX = 'Relay';
export const WEBHOOK_API_KEY = 'upstream-relay';
export const WEBHOOK_SIGNATURE_TEMPLATE = DEFAULT_SIGNATURE_TEMPLATE;
export const WEBHOOK_EVENT_ID_HEADER = `${WEBHOOK_HEADER_PREFIX}-Event-Id`;
export const WEBHOOK_EVENT_HEADER = `${WEBHOOK_HEADER_PREFIX}-Event`;
export const WEBHOOK_ATTEMPT_HEADER = `${WEBHOOK_HEADER_PREFIX}-Attempt`;

export interface WebhookEventRecord {
  id: string;
  eventType: string;
  subject: string;
  /** The stored payload: `{event, …}`. */
  payload: Record<string, unknown>;
  createdAt: Date;
}

export interface WebhookRequest {
  body: string;
  headers: Record<string, string>;
}

/** Events whose `data.sequence` orders them per subject (see above). */
const SEQUENCED_EVENTS: ReadonlySet<string> = new Set(['order.status_changed']);

/** The body: the same bytes on every attempt. */
export function webhookBody(e: WebhookEventRecord): string {
  const { event: _event, ...fields } = e.payload;
  const data = SEQUENCED_EVENTS.has(e.eventType) ? { ...fields, sequence: Number(e.id) } : fields;
  return JSON.stringify({ id: e.id, event: e.eventType, subject: e.subject, created_at: e.createdAt.toISOString(), data });
}

/** The path a webhook is signed over: the path of the URL, without its query. */
export function webhookSignaturePath(url: string): string {
  return new URL(url).pathname || '/';
}

export function buildWebhookRequest(
  e: WebhookEventRecord,
  opts: { url: string; secret: string; nowSeconds: number; attempt: number },
): WebhookRequest {
  const body = webhookBody(e);
  const auth = signedHeaders(WEBHOOK_HEADER_PREFIX, opts.secret, WEBHOOK_SIGNATURE_TEMPLATE, {
    apiKey: WEBHOOK_API_KEY,
    timestamp: Math.floor(opts.nowSeconds),
    method: 'POST',
    path: webhookSignaturePath(opts.url),
    body,
  });
  return {
    body,
    headers: {
      'content-type': 'application/json; charset=utf-8',
      'user-agent': 'upstream-relay-webhooks',
      ...auth,
      [WEBHOOK_EVENT_ID_HEADER]: e.id,
      [WEBHOOK_EVENT_HEADER]: e.eventType,
      [WEBHOOK_ATTEMPT_HEADER]: String(opts.attempt),
    },
  };
}
