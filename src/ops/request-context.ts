/**
 * The request a log line belongs to, for the lines written where the request is at hand (its request
 * line, a refused callback, an unhandled error): `requestFields(req)` gives its `request_id`.
 *
 * Deliberately not an AsyncLocalStorage: on Node 20 it installs promise hooks for every promise of
 * the process (polls, syncs, webhooks included) and takes V8 off its fast path for `await`, a
 * sizeable share of the CPU that placing and following an order cost. The order flows' own lines carry
 * `shop_order_no` and `trace_id` (the shop's correlation id) instead.
 */

/** `{ request_id }` of a Fastify request (its id is the sane `x-request-id`, else a new UUID). */
export function requestFields(req: { id?: unknown } | undefined): { request_id?: string } {
  return req?.id === undefined ? {} : { request_id: String(req.id) };
}
