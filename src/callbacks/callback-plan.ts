/**
 * What a verified callback does (CONTRACT §6), pure: `planCallback` decides from the callback's claim,
 * the order it names (as the database has it) and CALLBACK_TRUST; CallbackProcessor carries the plan
 * out. No Nest, no I/O.
 *
 * Whatever the trust:
 * - no local order has the callback's number or upstream order: `store` (`unknown_order`), never applied;
 * - its number is another attempt's than the order's current one, or names an upstream order the
 *   order does not follow: `store` (`other_attempt`), never applied (the processor still has the
 *   upstream confirm whether such an order exists, to keep it as the order's anomaly);
 * - the order's attempt is in flight, or a cancel is in progress: `wait` (the callback stays in the
 *   inbox until the order is settled);
 * - the order's attempt is `submit_unknown`: `resolve` (the callback's number settles it, with one read
 *   that records the upstream order, its amount and its items).
 * Then, with `verified` (the callback is the upstream's word, signed with the API secret over its raw
 * bytes):
 * - a delivering state (`partially_delivered`, `delivered`, `completed`) with its `fulfillment`:
 *   `apply`, items included, no read;
 * - `pending_payment`, `paid`, `fulfilling`, `canceled`: `apply` as a status move, no read (`canceled`
 *   makes the order refundable for its whole amount, as the state machine's refund rule says);
 * - a delivering state without its `fulfillment`, a refund state (`refunded`, `partially_refunded`: the
 *   body carries no amounts), or a status this service does not know: `read`.
 * With `confirm`, the claim is never applied: an early claim (`pending_payment`, `paid`, `fulfilling`)
 * brings the order's next poll closer (`hint`), any other is `read`.
 * The order's state machine applies every move (never back), so duplicates, late and out-of-order
 * callbacks are harmless.
 */
import { ANOMALIES, ITEMS_DELIVERED, RANK, isUpstreamStatus, type OrderStatus, type UpstreamStatus } from '../orders/order-state.js';
import type { AttemptStatus } from '../orders/order.records.js';
import type { UpstreamReport } from '../orders/report-plan.js';
import type { UpstreamFulfillment } from '../upstream/upstream.types.js';
import type { CallbackTrust } from '../config/app-config.js';

/** What a verified callback says. */
export interface CallbackClaim {
  upstreamOrderId: number;
  upstreamOrderNo: string | null;
  downstreamOrderNo: string | null;
  status: string;
  /** The body's fulfillment, when it carries a usable one (a string payload); null otherwise. */
  fulfillment: UpstreamFulfillment | null;
}

/** The order a callback names, as the database has it. */
export interface CallbackOrderFacts {
  status: OrderStatus;
  /** The upstream order the order follows. */
  upstreamOrderId: number | null;
  /** The order's current attempt number. */
  attempt: number;
  /** A cancel (or another operation) holds the order. */
  operationInProgress: boolean;
  /** The attempt the callback's `downstream_order_no` names; null when it carries none or no attempt has it. */
  named: { attemptNo: number; status: AttemptStatus } | null;
}

export type CallbackPlan =
  /** The callbacks are the upstream's word: applied as reports, in order (a status, and its items when a callback carries them). */
  | { kind: 'apply'; reports: UpstreamReport[] }
  /** It needs a `GET /orders/{id}`, shared with the order's callbacks that arrive close together. */
  | { kind: 'read'; deliver: boolean }
  /** `confirm` only: an early claim brings the order's next poll closer, no read. */
  | { kind: 'hint' }
  /** It settles the order's `submit_unknown` attempt (one read). */
  | { kind: 'resolve' }
  /** It waits in the inbox until the order is settled. */
  | { kind: 'wait'; reason: 'attempt_in_flight' | 'operation_in_progress' }
  /** Stored, never applied. */
  | { kind: 'store'; reason: 'unknown_order' | 'other_attempt' };

/** Claims applied as status moves with no read under `verified`. */
export const STATUS_MOVES: ReadonlySet<string> = new Set<UpstreamStatus>(['pending_payment', 'paid', 'fulfilling', 'canceled']);
/** Claims that, under `confirm`, only bring the next poll closer. */
export const EARLY: ReadonlySet<string> = new Set<UpstreamStatus>(['pending_payment', 'paid', 'fulfilling']);

/** Whether `claim` is a delivering state. */
function delivering(status: string): boolean {
  return isUpstreamStatus(status) && ITEMS_DELIVERED.has(status);
}

export function planCallback(claim: CallbackClaim, order: CallbackOrderFacts | null, trust: CallbackTrust): CallbackPlan {
  if (!order) return { kind: 'store', reason: 'unknown_order' };
  const { named } = order;
  if (named?.status === 'submitting') return { kind: 'wait', reason: 'attempt_in_flight' };
  // an upstream order for an attempt closed here, or besides the one the order follows
  if (named && order.upstreamOrderId !== claim.upstreamOrderId && (named.status === 'rejected' || order.upstreamOrderId !== null)) {
    return { kind: 'store', reason: 'other_attempt' };
  }
  if (order.operationInProgress) return { kind: 'wait', reason: 'operation_in_progress' };
  if (order.status === 'submit_unknown' && named?.status === 'submit_unknown') return { kind: 'resolve' };
  // from here on the callback must name the order's current attempt (when it names one) and the upstream order it follows
  if ((named && named.attemptNo !== order.attempt) || order.upstreamOrderId !== claim.upstreamOrderId)
    return { kind: 'store', reason: 'other_attempt' };
  if (trust === 'confirm') return EARLY.has(claim.status) ? { kind: 'hint' } : { kind: 'read', deliver: delivering(claim.status) };
  const report: UpstreamReport = { status: claim.status, ...(claim.upstreamOrderNo !== null ? { order_no: claim.upstreamOrderNo } : {}) };
  if (STATUS_MOVES.has(claim.status)) return { kind: 'apply', reports: [report] };
  if (delivering(claim.status) && claim.fulfillment) return { kind: 'apply', reports: [{ ...report, fulfillment: claim.fulfillment }] };
  return { kind: 'read', deliver: delivering(claim.status) };
}

/**
 * One plan for the callbacks of one upstream order carrying one number (claimed together): the facts
 * decide alike for all of them but `apply`, `read` and `hint`, which depend on each claim. One read
 * answers them all when any needs one; they are applied, in order, when every one can be (`verified`);
 * under `confirm` (only `hint` and `read`), `hint` when every one is.
 */
export function planCallbacks(claims: readonly CallbackClaim[], order: CallbackOrderFacts | null, trust: CallbackTrust): CallbackPlan {
  const plans = claims.map((c) => planCallback(c, order, trust));
  const reads = plans.filter((p): p is Extract<CallbackPlan, { kind: 'read' }> => p.kind === 'read');
  if (reads.length > 0)
    return {
      kind: 'read',
      deliver: reads.some((p) => p.deliver) || plans.some((p) => p.kind === 'apply' && p.reports.some((r) => delivering(r.status))),
    };
  if (plans.every((p) => p.kind === 'apply'))
    return { kind: 'apply', reports: plans.flatMap((p) => (p.kind === 'apply' ? p.reports : [])) };
  return plans[0];
}

/** Partial states: reported again with more items or a larger refund, so never taken as shown by an earlier read of the same state. */
const PARTIAL: ReadonlySet<string> = new Set<UpstreamStatus>(['partially_delivered', 'partially_refunded']);

/**
 * Whether an order as a read left it shows what `claimed` says (a callback answered by that read): the
 * same status, or a later one that the claim does not contradict (ANOMALIES), with its items stored
 * where it is a delivered state.
 */
export function readShows(order: { status: string; deliveredAt: unknown }, claimed: string): boolean {
  if (!isUpstreamStatus(claimed) || !isUpstreamStatus(order.status)) return false;
  if (ITEMS_DELIVERED.has(order.status) && order.deliveredAt === null) return false;
  if (order.status === claimed) return !PARTIAL.has(claimed);
  const current = order.status;
  return RANK[current] > RANK[claimed] && !ANOMALIES.some((a) => a.to === claimed && a.from.has(current));
}
