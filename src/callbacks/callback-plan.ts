/**
 * What a verified callback does (CONTRACT §6), pure: `planCallback` decides from the callback's claim,
 * the order it names (as the database has it) and CALLBACK_TRUST; CallbackProcessor carries the plan
 * out. No Nest, no I/O.
 *
 * Whatever the trust:
 * - no local order has the callback's number or upstream order: `store` (`unknown_order`), never applied;
 * - it names an upstream order the order does not follow, for an attempt closed here (`rejected`) or
 *   besides the upstream order the order follows: `check_untracked`, never applied (the upstream's
 *   read confirms whether such an order exists, to keep it as the order's anomaly);
 * - its number is another attempt's than the order's current one, or it names an upstream order the
 *   order does not follow otherwise: `store` (`other_attempt`), never applied;
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
 *
 * The inbox's drain carries a plan out step by step (`planStep`, then `nextStep` after each piece of
 * work): each step is one piece of work (`DrainWork`), what the inbox records (`InboxRecord`), or
 * `again`: the order was settled while it was looked at (an operator, a poll), so it is planned again
 * from what it now is, once (`lastPass` says which look it is).
 */
import { ANOMALIES, ITEMS_DELIVERED, RANK, isUpstreamStatus, type OrderStatus, type UpstreamStatus } from '../orders/order-state.js';
import type { AttemptStatus } from '../orders/order.records.js';
import type { UpstreamReport } from '../orders/report-plan.js';
import type { UpstreamFulfillment, UpstreamOrder } from '../upstream/upstream.types.js';
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
  /** Never applied: the upstream's read of the upstream order it names decides whether the order keeps it as an anomaly. */
  | { kind: 'check_untracked' }
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
    return { kind: 'check_untracked' };
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

// ------------------------------------------------------------------------------- the drain's steps

/**
 * Confirming reads of a callback that the order does not follow on its own (a submit_unknown attempt,
 * an upstream order it does not follow) that may fail before it is left to the inbox's record alone.
 * Only reads count: waiting for an attempt in flight or a cancel in progress does not.
 */
export const MAX_RESOLVE_TRIES = 8;

/** A group of callbacks the drain takes up: one upstream order, one number (or none). */
export interface ClaimGroup {
  upstreamOrderId: number;
  number: string | null;
  /** The statuses they claim, each once, in their order. */
  claimed: readonly string[];
  /** The most failed reads one of them had (callback_inbox.tries). */
  tries: number;
}

/** The order a group names, as the drain's look at it found it. */
export interface ClaimOrder {
  shopOrderNo: string;
  status: string;
  attempt: number;
  /** The end of the op mark (a cancel in progress), when set. */
  opUntil: Date | null;
}

/** The attempt the group's number names. */
export interface NamedAttempt {
  downstreamOrderNo: string;
  status: string;
}

/** One piece of the drain's work, one call each. */
export type DrainWork =
  /** the plan applied on the locked order, the inbox rows finished in the same transaction */
  | { kind: 'apply' }
  /** the read that settles the order's `submit_unknown` attempt (in the `deliver` class) */
  | { kind: 'resolve' }
  /** the upstream's read of an upstream order the order does not follow */
  | { kind: 'check_untracked' }
  /** the order's next poll brought to ORDER_POLL_BASE_MS from now at the latest */
  | { kind: 'poll_sooner' }
  /** the order's confirming read: a recent one that shows every claim, or one of its own */
  | { kind: 'confirm' };

type ReadFailed = { kind: 'read_failed'; error: { message: string } };

/** What came of a piece of work (the shapes of OrderFollowService's results). */
export type WorkDone =
  | { work: 'apply'; result: { kind: 'applied' } | { kind: 'planned'; plan: CallbackPlan } }
  | {
      work: 'resolve';
      attempt: NamedAttempt;
      result: { kind: 'resolved' } | { kind: 'not_unknown'; answer?: UpstreamOrder } | { kind: 'mismatch'; reason: string } | ReadFailed;
    }
  | {
      work: 'check_untracked';
      attempt: NamedAttempt;
      result:
        | { kind: 'anomaly'; reason: string; status: string; order: { upstreamOrderId: number | null } }
        | { kind: 'nothing_kept'; status: string }
        | { kind: 'mismatch'; reason: string }
        | { kind: 'followed' }
        | ReadFailed;
    }
  /** `next`: the order's next poll, null when nothing polls the order */
  | { work: 'poll_sooner'; next: Date | null }
  | {
      work: 'confirm';
      result: { kind: 'applied'; order: { status: string } } | { kind: 'deferred' } | { kind: 'missing' } | ReadFailed;
      /** the read was a recent one of the order's, not one of its own */
      shared: boolean;
    };

/** What the inbox records for a group. */
export type InboxRecord =
  /** finished (`warn`: a line to log with it); every state but a group's unknown order names the order */
  | { kind: 'finish'; state: 'applied' | 'ignored' | 'unknown_order' | 'read_failed'; outcome: string; warn?: string }
  /** it waits for the order (taken up once the order is settled, or at `until`: `retry` is the inbox's retry interval) */
  | { kind: 'wait'; until: Date | 'retry'; outcome: string }
  /** a failed read no poll would make: tried again with a backoff, `tries` failed reads so far */
  | { kind: 'retry_read'; tries: number; outcome: string }
  /** a failed confirming read: finished `read_failed`, the order's read is due (the poller reads it soon) */
  | { kind: 'read_due'; outcome: string }
  /** shutdown ended the read: given back to the inbox as it was */
  | { kind: 'give_back' };

export type DrainStep =
  | { kind: 'do'; work: DrainWork }
  | { kind: 'record'; record: InboxRecord }
  /** the order was settled while it was looked at: planned again from what it now is (`answer`: the upstream's read, when made) */
  | { kind: 'again'; answer?: UpstreamOrder }
  /** nothing left to do (applied, the inbox rows finished with it) */
  | { kind: 'done' };

const record = (r: InboxRecord): DrainStep => ({ kind: 'record', record: r });
const work = (kind: DrainWork['kind']): DrainStep => ({ kind: 'do', work: { kind } });
const finish = (state: Extract<InboxRecord, { kind: 'finish' }>['state'], outcome: string, warn?: string): DrainStep =>
  record({ kind: 'finish', state, outcome, ...(warn !== undefined ? { warn } : {}) });

/** The first step of a group's plan; `order` null: no local order has its upstream order or number. */
export function planStep(plan: CallbackPlan, group: ClaimGroup, order: ClaimOrder | null): DrainStep {
  if (!order || (plan.kind === 'store' && plan.reason === 'unknown_order')) {
    return finish(
      'unknown_order',
      'no local order has this upstream order or number',
      `callback for an unknown order (upstream ${group.upstreamOrderId}): recorded, not applied`,
    );
  }
  switch (plan.kind) {
    case 'store':
      return finish(
        'ignored',
        `another attempt's callback (${group.number ?? 'no number'}): ` +
          `order ${order.shopOrderNo} is at attempt ${order.attempt}; not applied`,
      );
    case 'wait':
      return record({
        kind: 'wait',
        until: plan.reason === 'operation_in_progress' && order.opUntil ? order.opUntil : 'retry',
        outcome: plan.reason,
      });
    case 'hint': {
      // an order at or past every claimed state here is left as it is, with no read
      const { status } = order;
      if (!isUpstreamStatus(status) || !group.claimed.every((c) => isUpstreamStatus(c) && RANK[status] >= RANK[c]))
        return work('poll_sooner');
      return finish('applied', `late: order ${order.shopOrderNo} is ${status} here (claimed ${group.claimed.join(', ')}); not read`);
    }
    case 'read':
      return work('confirm');
    case 'apply':
    case 'resolve':
    case 'check_untracked':
      return work(plan.kind);
  }
}

/** A failed read of an upstream order no poll would make: tried again with a backoff, MAX_RESOLVE_TRIES failed reads at most. */
function readFailed(group: ClaimGroup, error: { message: string }): DrainStep {
  const tries = group.tries + 1;
  if (tries >= MAX_RESOLVE_TRIES) return finish('read_failed', error.message);
  return record({ kind: 'retry_read', tries, outcome: `read_failed: ${error.message}` });
}

/** Where the drain is: `lastPass`, the order was planned again already (no third look); `aborted`, shutdown ended the reads in flight. */
export interface DrainAt {
  lastPass: boolean;
  aborted: boolean;
}

/** The step after a piece of work. */
export function nextStep(done: WorkDone, group: ClaimGroup, order: ClaimOrder, at: DrainAt): DrainStep {
  switch (done.work) {
    case 'apply':
      return afterApply(done.result, group, order, at);
    case 'resolve':
      return afterResolve(done.result, done.attempt, group, at);
    case 'check_untracked':
      return afterUntracked(done.result, done.attempt, group, order, at);
    case 'poll_sooner':
      // an order nothing polls is read (the callback may be its only news)
      if (done.next === null) return work('confirm');
      return finish(
        'applied',
        `poll_sooner: order ${order.shopOrderNo} is polled by ${done.next.toISOString()} (claimed ${group.claimed.join(', ')}); not read`,
      );
    case 'confirm':
      return afterConfirm(done.result, done.shared, order, at);
  }
}

function afterApply(r: Extract<WorkDone, { work: 'apply' }>['result'], group: ClaimGroup, order: ClaimOrder, at: DrainAt): DrainStep {
  if (r.kind === 'applied') return { kind: 'done' };
  if (!at.lastPass) return { kind: 'again' }; // the order moved meanwhile
  // the plan on the locked row, carried out with what this look found; the upstream order was the
  // order's when this look read it, so a store of any reason is another attempt's callback
  if (r.plan.kind === 'apply') return record({ kind: 'wait', until: 'retry', outcome: 'order_moved' });
  if (r.plan.kind === 'store' || r.plan.kind === 'check_untracked')
    return planStep({ kind: 'store', reason: 'other_attempt' }, group, order);
  return planStep(r.plan, group, order);
}

function afterResolve(
  r: Extract<WorkDone, { work: 'resolve' }>['result'],
  attempt: NamedAttempt,
  group: ClaimGroup,
  at: DrainAt,
): DrainStep {
  switch (r.kind) {
    case 'resolved':
      return finish('applied', `resolved attempt ${attempt.downstreamOrderNo}`);
    case 'not_unknown':
      // settled meanwhile: looked at again as it now is (once), else read as any other order
      return at.lastPass ? work('confirm') : { kind: 'again', answer: r.answer };
    case 'mismatch':
      return finish('ignored', r.reason);
    case 'read_failed':
      return at.aborted ? record({ kind: 'give_back' }) : readFailed(group, r.error);
  }
}

/** An upstream order the order does not follow, as the upstream's read left it. */
function afterUntracked(
  r: Extract<WorkDone, { work: 'check_untracked' }>['result'],
  attempt: NamedAttempt,
  group: ClaimGroup,
  order: ClaimOrder,
  at: DrainAt,
): DrainStep {
  const upstream = group.upstreamOrderId;
  switch (r.kind) {
    case 'anomaly':
      // kept as an anomaly: stored as `unknown_order` (the inbox's states are fixed by its CHECK constraint)
      return finish(
        'unknown_order',
        `anomaly ${r.reason}: upstream order ${upstream} (${r.status}) exists for attempt ${attempt.downstreamOrderNo} ` +
          `(${attempt.status} here); order ${order.shopOrderNo} follows ${r.order.upstreamOrderId ?? 'no upstream order'}`,
      );
    case 'nothing_kept':
      return finish(
        'ignored',
        `upstream order ${upstream} for attempt ${attempt.downstreamOrderNo} is ${r.status} there: nothing kept`,
        `callback names upstream order ${upstream} for ${order.shopOrderNo} (attempt ${attempt.downstreamOrderNo}, ` +
          `${attempt.status} here), which the order does not follow; it is ${r.status} there: ignored`,
      );
    case 'mismatch':
      return finish('ignored', r.reason, `callback for ${order.shopOrderNo} not confirmed by the upstream: ${r.reason}; ignored`);
    case 'followed':
      // settled meanwhile: looked at again as it now is (once)
      if (!at.lastPass) return { kind: 'again' };
      return finish('ignored', `order ${order.shopOrderNo} follows upstream order ${upstream} now`);
    case 'read_failed':
      return at.aborted ? record({ kind: 'give_back' }) : readFailed(group, r.error);
  }
}

function afterConfirm(r: Extract<WorkDone, { work: 'confirm' }>['result'], shared: boolean, order: ClaimOrder, at: DrainAt): DrainStep {
  switch (r.kind) {
    case 'applied':
      return finish('applied', `applied ${r.order.status}${shared ? ' (shared read)' : ''}`);
    case 'deferred':
      return record({ kind: 'wait', until: 'retry', outcome: 'operation_in_progress' });
    case 'read_failed':
      // the read made the order due now (OrderFollowService.refresh): the poller reads it soon
      return at.aborted ? record({ kind: 'give_back' }) : record({ kind: 'read_due', outcome: r.error.message });
    case 'missing':
      return finish('ignored', `order ${order.shopOrderNo} has no upstream order to read (${order.status})`);
  }
}
