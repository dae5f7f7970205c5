/**
 * The order lifecycle's tables (CONTRACT §5), pure: the statuses with their ranks, the contradictions
 * (ANOMALIES), the table of allowed local moves, the status sets (followed, unfinished, …), refund
 * eligibility and the stuck rule. No Nest, no I/O.
 *
 * Two kinds of move:
 * - a report of the upstream's state: applied only when it ranks above the current status (a later
 *   status never moves an order back); a lower or equal rank is ignored (a regression is counted); a
 *   contradiction listed in ANOMALIES (e.g. `canceled` after items were delivered) is kept as an
 *   anomaly and not applied. The verdict is `decideReport` (report-plan.ts), which reads RANK and
 *   ANOMALIES;
 * - a local move with a named trigger (`submit`, `submit_outcome`, `resubmit`, `local_cancel`,
 *   `not_placed`, `adopt`, `sweep`): allowed only where TRANSITIONS lists it.
 */
import { Decimal } from 'decimal.js';

export const UPSTREAM_STATUSES = [
  'pending_payment',
  'paid',
  'fulfilling',
  'partially_delivered',
  'delivered',
  'completed',
  'canceled',
  'partially_refunded',
  'refunded',
] as const;
export type UpstreamStatus = (typeof UPSTREAM_STATUSES)[number];

export const LOCAL_STATUSES = ['queued', 'submitting', 'submit_unknown', 'rejected'] as const;
export type LocalStatus = (typeof LOCAL_STATUSES)[number];

export type OrderStatus = UpstreamStatus | LocalStatus;
export const ORDER_STATUSES: readonly OrderStatus[] = [...LOCAL_STATUSES, ...UPSTREAM_STATUSES];

/** Where a status change came from (stored with every event). */
export type EventSource = 'api' | 'callback' | 'poll' | 'operator';

/**
 * Ranks: a report applies only when it ranks higher than the current status. The local statuses
 * rank below every upstream status (an upstream report always settles them), except `rejected`,
 * which no report may move (the upstream never had that attempt).
 */
export const RANK: Readonly<Record<OrderStatus, number>> = {
  queued: -1,
  submitting: 0,
  submit_unknown: 1,
  pending_payment: 10,
  paid: 20,
  fulfilling: 30,
  partially_delivered: 40,
  delivered: 50,
  completed: 60,
  canceled: 70,
  partially_refunded: 80,
  refunded: 90,
  rejected: 100,
};

export type LocalTrigger =
  /** a new order's first attempt is reserved: sent now (`submitting`) or waiting for the request budget (`queued`) */
  | 'submit'
  /** the create could not be sent for the request budget (no token in time, or a 429: nothing processed): it waits */
  | 'requeue'
  /** a queued attempt is taken from the queue: sent (`submitting`), or refused by the checks made then (`rejected`) */
  | 'dequeue'
  /** the create call answered: accepted (an upstream status), refused (`rejected`) or unknown */
  | 'submit_outcome'
  /** a `rejected` order is submitted again with the same key: a new attempt */
  | 'resubmit'
  /** cancel of a `rejected` or `queued` order: nothing exists upstream */
  | 'local_cancel'
  /** the operator settles a `submit_unknown` order as never placed */
  | 'not_placed'
  /** the operator settles a `rejected` order the upstream showed an order for: it follows that order */
  | 'adopt'
  /** an attempt found `submitting` past its lease (after a crash) */
  | 'sweep';

const ANY_UPSTREAM: readonly OrderStatus[] = UPSTREAM_STATUSES;

/** The local moves: trigger → from → allowed targets. */
export const TRANSITIONS: Readonly<
  Record<LocalTrigger, ReadonlyArray<readonly [readonly (OrderStatus | null)[], readonly OrderStatus[]]>>
> = {
  submit: [[[null], ['submitting', 'queued']]],
  requeue: [[['submitting'], ['queued']]],
  dequeue: [[['queued'], ['submitting', 'rejected']]],
  submit_outcome: [
    [['submitting'], ['rejected', 'submit_unknown', ...ANY_UPSTREAM]],
    // the outcome of a send made while the attempt was already unknown (a re-send, or a slow sender)
    [['submit_unknown'], ['rejected', ...ANY_UPSTREAM]],
  ],
  resubmit: [[['rejected'], ['submitting', 'queued']]],
  local_cancel: [[['rejected', 'queued'], ['canceled']]],
  not_placed: [[['submit_unknown'], ['rejected']]],
  adopt: [[['rejected'], ANY_UPSTREAM]],
  sweep: [[['submitting'], ['submit_unknown']]],
};

export function canTransition(trigger: LocalTrigger, from: OrderStatus | null, to: OrderStatus): boolean {
  return TRANSITIONS[trigger].some(([froms, tos]) => froms.includes(from) && tos.includes(to));
}

/** Statuses where items have been handed over: canceling after them is a contradiction. */
export const ITEMS_DELIVERED: ReadonlySet<OrderStatus> = new Set(['partially_delivered', 'delivered', 'completed']);

/** The upstream reported `canceled` for an order whose items were delivered. */
export const CANCELED_AFTER_DELIVERY = 'canceled_after_delivery';

/**
 * The upstream reported items delivered (`partially_delivered`, `delivered`, `completed`) for an order
 * it had canceled: the order stays `canceled` (refundable, as the upstream's cancel made it), the items
 * it reports are stored (no delivered item is lost), and the operator is told.
 */
export const DELIVERED_AFTER_CANCEL = 'delivered_after_cancel';

/** Contradictions: reported `to` while the order is in one of `from`. Kept, logged, not applied. */
export const ANOMALIES: ReadonlyArray<{ from: ReadonlySet<OrderStatus>; to: OrderStatus; reason: string }> = [
  { from: ITEMS_DELIVERED, to: 'canceled', reason: CANCELED_AFTER_DELIVERY },
  ...[...ITEMS_DELIVERED].map((to) => ({ from: new Set<OrderStatus>(['canceled']), to, reason: DELIVERED_AFTER_CANCEL })),
];

/**
 * Anomaly: the upstream (its own `GET /orders/{id}`) shows an order placed for one of this order's
 * attempts while the order follows none (the attempt was closed here, e.g. `rejected`). Such an order
 * is not canceled locally, refunded or submitted again: an operator settles it.
 */
export const UPSTREAM_ORDER_EXISTS = 'upstream_order_exists';
/** Anomaly: another upstream order exists for this order besides the one it follows. */
export const DUPLICATE_UPSTREAM_ORDER = 'duplicate_upstream_order';

/** Upstream states in which the upstream keeps nothing of an order (nothing charged, or all given back). */
export const NOTHING_KEPT: ReadonlySet<OrderStatus> = new Set(['canceled', 'refunded']);

/** Whether the upstream keeps nothing of an order it reports in `status`. */
export function upstreamKeptNothing(status: string): boolean {
  return NOTHING_KEPT.has(status as OrderStatus);
}

/** Statuses the poller keeps following. */
export const FOLLOWED: ReadonlySet<OrderStatus> = new Set(['pending_payment', 'paid', 'fulfilling', 'partially_delivered']);
/** Statuses with an attempt whose outcome is not known yet. */
export const OUTCOME_UNKNOWN: ReadonlySet<OrderStatus> = new Set(['submitting', 'submit_unknown']);
/** Accepted here, waiting for the upstream's request budget: nothing sent yet. */
export const WAITING: ReadonlySet<OrderStatus> = new Set(['queued']);
/** Unfinished: still expected to move (followed, waiting, or its attempt still open). */
export const UNFINISHED: ReadonlySet<OrderStatus> = new Set([...FOLLOWED, ...OUTCOME_UNKNOWN, ...WAITING]);

/**
 * What a status report is: `read`, the upstream's order detail (`GET /orders/{id}`), which carries the
 * fulfillment whenever there is one; or `answer`, the answer to a create or a cancel, which never does
 * (a deduplicated create answers the existing order's current status without its items).
 */
export type ReportKind = 'read' | 'answer';

export function isUpstreamStatus(s: string): s is UpstreamStatus {
  return (UPSTREAM_STATUSES as readonly string[]).includes(s);
}

export function isOrderStatus(s: string): s is OrderStatus {
  return (ORDER_STATUSES as readonly string[]).includes(s);
}

// ------------------------------------------------------------------------------------------ refunds

export type RefundState = 'not_refundable' | 'refundable' | 'refunded';

export interface RefundFacts {
  status: OrderStatus;
  /** What the upstream charged (null when it never charged). */
  amount: string | null;
  /** The order's whole amount when nothing was charged (quantity × checked unit price). */
  expectedAmount: string | null;
  /** With `partially_refunded` / `refunded`: what the upstream gave back. */
  refundedAmount: string | null;
  /** A local refund has been recorded. */
  refundRecorded: boolean;
  /** The amount it was recorded with (what the shop was told it could refund then). */
  recordedAmount?: string | null;
  /** The order's anomaly: UPSTREAM_ORDER_EXISTS makes it not refundable. */
  anomaly?: string | null;
}

/** Statuses that make the whole order refundable: nothing was kept by the upstream. */
export const REFUNDABLE_WHOLE: ReadonlySet<OrderStatus> = new Set(['rejected', 'canceled', 'refunded']);

/**
 * Refund eligibility: `rejected`, `canceled` or `refunded` make the whole amount refundable,
 * `partially_refunded` the refunded amount; once recorded, `refunded`. "No refund unless the
 * upstream canceled" is this guard: every other status is not refundable, and so is an order whose
 * anomaly is UPSTREAM_ORDER_EXISTS (the upstream may have charged for it).
 */
export function refundEligibility(f: RefundFacts): { state: RefundState; amount: string | null } {
  const whole = f.amount ?? f.expectedAmount;
  if (f.refundRecorded) {
    // what was recorded, not what the order's status would allow now (a later full refund upstream
    // does not make a recorded partial one larger)
    if (f.recordedAmount !== undefined && f.recordedAmount !== null) return { state: 'refunded', amount: f.recordedAmount };
    return { state: 'refunded', amount: f.status === 'partially_refunded' ? f.refundedAmount : whole };
  }
  if (f.anomaly === UPSTREAM_ORDER_EXISTS) return { state: 'not_refundable', amount: null };
  if (REFUNDABLE_WHOLE.has(f.status)) return { state: 'refundable', amount: whole };
  if (f.status === 'partially_refunded' && f.refundedAmount !== null) {
    // what the upstream says it gave back, never more than the order cost, never nothing or less
    const back = new Decimal(f.refundedAmount);
    if (back.lte(0)) return { state: 'not_refundable', amount: null };
    return { state: 'refundable', amount: whole !== null && back.gt(whole) ? whole : f.refundedAmount };
  }
  return { state: 'not_refundable', amount: null };
}

// ------------------------------------------------------------------------------------------- stuck

/** A `submit_unknown` attempt older than this is stuck (or STUCK_ORDER_ALERT_S when shorter). */
export const SUBMIT_UNKNOWN_STUCK_S = 600;

export interface StuckFacts {
  status: OrderStatus;
  /** Last time the order moved. */
  progressAt: Date;
  /** When it entered its current status. */
  statusChangedAt: Date;
}

/** The thresholds of `isStuck`, as instants (the SQL filter uses the same ones). */
export function stuckThresholds(now: Date, stuckAlertS: number): { stuckBefore: Date; unknownBefore: Date } {
  return {
    stuckBefore: new Date(now.getTime() - stuckAlertS * 1000),
    unknownBefore: new Date(now.getTime() - Math.min(SUBMIT_UNKNOWN_STUCK_S, stuckAlertS) * 1000),
  };
}

/** Statuses judged by their progress for STUCK_ORDER_ALERT_S (`submit_unknown` is judged apart). */
export const PROGRESS_WATCHED: ReadonlySet<OrderStatus> = new Set<OrderStatus>(['submitting', ...WAITING, ...FOLLOWED]);

/** Stuck: unfinished (queued included) without progress for STUCK_ORDER_ALERT_S, or `submit_unknown` for 10 minutes. */
export function isStuck(f: StuckFacts, now: Date, stuckAlertS: number): boolean {
  const t = stuckThresholds(now, stuckAlertS);
  if (f.status === 'submit_unknown') return f.statusChangedAt < t.unknownBefore;
  return PROGRESS_WATCHED.has(f.status) && f.progressAt < t.stuckBefore;
}
