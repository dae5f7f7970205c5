/**
 * What an upstream report (a create's or a cancel's answer, a callback, a poll, an operator's read)
 * does to an order, pure: `decideReport` gives the verdict on the reported status, `planReport` the
 * whole plan, `mergeItems` the items to store; OrderUpdater.applyReport writes the plan inside the
 * caller's transaction on the locked row. No Nest, no I/O.
 *
 * 1. The verdict (`decideReport`): a status that ranks above the order's (RANK, order-state.ts) is
 *    applied, whatever steps it skips; the same status is `same` (its data may still change); a lower
 *    or equal rank is a regression, ignored and counted; a contradiction (ANOMALIES: `canceled` after
 *    items were delivered, items delivered after a cancel), a status not known here, or any report for
 *    a `rejected` order is an anomaly, kept and not applied.
 * 2. The plan (`planReport`) says:
 *    - the status move: the verdict, unless held back (below);
 *    - the columns to write: the report's data (order number, amount, currency, refunded amount,
 *      refunds) when its status is taken, the sealed items when the report's items are taken
 *      (`reportTakesItems`), the status and its time, a new anomaly, the progress marks;
 *    - the event to record: the status change (with its shop notification), or a new anomaly;
 *    - the follow-up: a regression to count, whether the order stays followed, whether its items are
 *      read at once (`itemsFollowUp`), whether the time to delivery is observed.
 *    A delivering status (`partially_delivered`, `delivered`, `completed`) reported without its items
 *    for an order that has none stored, or only a part (`partially_delivered`), is not a delivery
 *    (CONTRACT §5): the status is held back, the order keeps its earlier status (and its other data is
 *    taken), and it stays followed until a report brings the status and its items together, which then
 *    move in one write. The polling schedule itself is the writer's (it depends on the configured pace).
 * 3. The item merge (`mergeItems`): how the items a report brings merge with the items stored (opened
 *    by the updater, the one writer that decrypts) so that none is lost. A report that lacks some of
 *    the stored items (a stale read, an empty payload) adds its new ones after them instead of
 *    replacing them, and keeps the stored delivery data when it brings none; a report that has every
 *    stored item is taken as it is. `OrderUpdater` seals and writes what `mergeItems` decides.
 */
import type { UpstreamFulfillment } from '../upstream/upstream.types.js';
import { sameAmount } from './place-plan.js';
import {
  ANOMALIES,
  DELIVERED_AFTER_CANCEL,
  ITEMS_DELIVERED,
  RANK,
  isUpstreamStatus,
  type OrderStatus,
  type ReportKind,
  type UpstreamStatus,
} from './order-state.js';
import type { OrderPatch, OrderRecord } from './order.records.js';
import { normalizeRefundRecords } from './refund-records.js';

// -------------------------------------------------------------------------------------- 1. the verdict

export type ReportDecision =
  | { kind: 'apply'; to: UpstreamStatus }
  /** same status: nothing to record (data such as items or refunded_amount may still be taken) */
  | { kind: 'same' }
  /** ranks below (or beside) the current status: ignored and counted */
  | { kind: 'regression' }
  | { kind: 'anomaly'; reason: string };

/**
 * What to do with a report of the upstream's state `reported` for an order in `current`: from the
 * ranks (RANK) and the contradictions (ANOMALIES) of order-state.ts.
 */
export function decideReport(current: OrderStatus, reported: string): ReportDecision {
  if (!isUpstreamStatus(reported)) return { kind: 'anomaly', reason: 'unknown_status' };
  if (current === 'rejected') {
    // nothing exists upstream for a rejected attempt: a report for it contradicts what we know
    return { kind: 'anomaly', reason: 'report_for_rejected' };
  }
  if (reported === current) return { kind: 'same' };
  const anomaly = ANOMALIES.find((a) => a.to === reported && a.from.has(current));
  if (anomaly) return { kind: 'anomaly', reason: anomaly.reason };
  if (RANK[reported] > RANK[current]) return { kind: 'apply', to: reported };
  return { kind: 'regression' };
}

/**
 * After a report, what the order's items still need:
 * - `none`: nothing (no items are due in this status, or they are stored);
 * - `follow`: a read named a delivering or delivered state without the fulfillment: the order stays
 *   followed at the poll's pace until a read brings the items;
 * - `read_now`: an answer that is not a read named such a state: the order stays followed and is read
 *   at once, not at the next poll.
 * A status without its fulfillment is not a delivery: only a report that carries the fulfillment stores
 * items, and only stored items end the following of a delivered order.
 */
export type ItemsFollowUp = 'none' | 'follow' | 'read_now';

export function itemsFollowUp(status: OrderStatus, itemsStored: boolean, kind: ReportKind): ItemsFollowUp {
  if (!ITEMS_DELIVERED.has(status) || itemsStored) return 'none';
  return kind === 'answer' ? 'read_now' : 'follow';
}

// ----------------------------------------------------------------------------------------- 2. the plan

/** What the upstream says about an order (a created-order answer, an order detail). */
export interface UpstreamReport {
  status: string;
  order_no?: string;
  amount?: string;
  currency?: string;
  refunded_amount?: string | null;
  /** The refunds made on the order (newer Dujiao-Next's detail), read by normalizeRefundRecords. */
  refund_records?: unknown;
  fulfillment?: UpstreamFulfillment | null;
}

/** The order's columns a report is weighed against. */
export type ReportedOrder = Pick<
  OrderRecord,
  | 'status'
  | 'upstreamOrderId'
  | 'upstreamOrderNo'
  | 'amount'
  | 'currency'
  | 'refundedAmount'
  | 'refundRecords'
  | 'deliveredAt'
  | 'errorCode'
  | 'errorMessage'
  | 'anomaly'
>;

/**
 * Whether a report's items are taken (sealed and stored): when its status is taken (applied, or the
 * same), and when it reports items delivered for an order the upstream canceled (no delivered item is
 * lost, even when the status contradicts the order's).
 */
export function reportTakesItems(decision: ReportDecision): boolean {
  return (
    decision.kind === 'apply' || decision.kind === 'same' || (decision.kind === 'anomaly' && decision.reason === DELIVERED_AFTER_CANCEL)
  );
}

export interface ReportPlanInput {
  /** What the report is: the upstream's order detail (`read`) or a create's or cancel's `answer`. */
  kind: ReportKind;
  /** Columns the caller sets along with the report (e.g. the upstream ids of an accepted attempt). */
  patch?: OrderPatch;
  /**
   * The columns of the report's items, sealed (new or changed ones); null when it brings none. Taken
   * only where `reportTakesItems` allows.
   */
  delivery: OrderPatch | null;
  now: Date;
}

/** The event row a report records. */
export type ReportEvent =
  /** a status change, with its shop notification */
  | { kind: 'status'; from: OrderStatus; to: OrderStatus }
  /** a contradiction the order did not already carry as its anomaly */
  | { kind: 'anomaly'; reason: string; reported: string };

export interface ReportPlan {
  decision: ReportDecision;
  from: OrderStatus;
  to: OrderStatus;
  /** The columns to write (without the polling schedule); empty when the report changes nothing. */
  patch: OrderPatch;
  /** The status changed, or items / a refunded amount arrived. */
  progressed: boolean;
  event: ReportEvent | null;
  /** The report would move the order back: ignored, counted. */
  regression: boolean;
  /**
   * The order stays followed even in a status that is not (an order known upstream reported in a
   * status we do not know; a delivering or delivered status without its items).
   */
  follow: boolean;
  /** What the order's items still need (`read_now`: the order is read at once). */
  items: ItemsFollowUp;
  /** A delivering status reported without its items and held back (the order keeps `from`); else null. */
  held: OrderStatus | null;
  /** The order's first items, stored in a delivered status: its time to delivery is observed. */
  firstDelivery: boolean;
}

/** What `report` changes on `order`, given `decision` (`decideReport(order.status, report.status)`). */
export function planReport(order: ReportedOrder, report: UpstreamReport, decision: ReportDecision, input: ReportPlanInput): ReportPlan {
  const { now } = input;
  const patch: OrderPatch = { ...input.patch };
  let to = order.status;
  let progressed = false;
  let deliveredNow = false;
  let event: ReportEvent | null = null;

  if (decision.kind === 'apply' || decision.kind === 'same') {
    if (report.order_no && report.order_no !== order.upstreamOrderNo) patch.upstream_order_no = report.order_no;
    if (report.amount && !sameAmount(report.amount, order.amount)) patch.amount = report.amount;
    if (report.currency && report.currency !== order.currency) patch.currency = report.currency;
    if (report.refunded_amount != null && !sameAmount(report.refunded_amount, order.refundedAmount)) {
      patch.refunded_amount = report.refunded_amount;
      progressed = true;
    }
    // the refunds as the upstream's last read lists them (replacing the earlier list: its entries have no stable ids)
    const refunds = normalizeRefundRecords(report.refund_records);
    if (refunds !== undefined && JSON.stringify(refunds) !== JSON.stringify(order.refundRecords ?? []))
      patch.refund_records = JSON.stringify(refunds);
  }
  const itemsTaken = input.delivery !== null && reportTakesItems(decision);
  if (input.delivery && itemsTaken) {
    Object.assign(patch, input.delivery);
    progressed = true;
    deliveredNow = order.deliveredAt === null;
  }
  // a delivering status without its items is not a delivery when the order has none stored, or only
  // a part (`partially_delivered`): the status waits for the report that brings them
  const itemsShort = order.deliveredAt === null || order.status === 'partially_delivered';
  const held = decision.kind === 'apply' && ITEMS_DELIVERED.has(decision.to) && !itemsTaken && itemsShort ? decision.to : null;

  if (decision.kind === 'apply' && held === null) {
    to = decision.to;
    progressed = true;
    Object.assign(patch, { status: to, status_changed_at: now });
    if ((order.errorCode !== null || order.errorMessage !== null) && patch.error_code === undefined)
      Object.assign(patch, { error_code: null, error_message: null });
    event = { kind: 'status', from: order.status, to };
  } else if (decision.kind === 'anomaly' && order.anomaly !== decision.reason) {
    patch.anomaly = decision.reason;
    event = { kind: 'anomaly', reason: decision.reason, reported: report.status };
  }

  if (progressed) Object.assign(patch, { progress_at: now, stuck_since: null });
  // updated_at moves only when something the API shows changed, not for the polling schedule
  if (Object.keys(patch).length > 0) patch.updated_at = now;
  // A status we do not know on an order that exists upstream (e.g. the create's answer): it is read
  // again until it says something we know, rather than left unfollowed in `submitting`.
  const unknownThere =
    decision.kind === 'anomaly' && decision.reason === 'unknown_status' && (patch.upstream_order_id ?? order.upstreamOrderId) != null;
  // A delivering or delivered status whose items no report has brought is not a delivery: the order
  // stays followed, and is read at once when the report was not itself a read (a deduplicated
  // re-send answers the order's current status without its items).
  const items =
    held !== null
      ? itemsFollowUp(held, false, input.kind)
      : itemsFollowUp(to, (patch.delivered_at ?? order.deliveredAt) !== null, input.kind);
  return {
    decision,
    from: order.status,
    to,
    patch,
    progressed,
    event,
    regression: decision.kind === 'regression',
    follow: unknownThere || items !== 'none' || held !== null,
    items,
    held,
    firstDelivery: deliveredNow && ITEMS_DELIVERED.has(to),
  };
}

// ----------------------------------------------------------------------------------- 3. the item merge

/** Delivered items and their delivery data (the shape the updater seals). */
export interface DeliveredItems {
  items: string[];
  delivery_data: Record<string, unknown> | null;
}

/**
 * `store`: write `data`; `unchanged`: the merge equals what is stored, nothing to write. `kept`: how
 * many stored items the report lacked and the merge kept (0: none), of the `storedCount` stored.
 */
export type ItemMerge = ({ kind: 'unchanged' } | { kind: 'store'; data: DeliveredItems }) & { kept: number; storedCount: number };

/** The items of `items` that `other` does not have (as many times as they are missing: a multiset difference). */
export function withoutItems(items: readonly string[], other: readonly string[]): string[] {
  const left = new Map<string, number>();
  for (const i of other) left.set(i, (left.get(i) ?? 0) + 1);
  return items.filter((i) => {
    const n = left.get(i) ?? 0;
    if (n === 0) return true;
    left.set(i, n - 1);
    return false;
  });
}

/** `stored`: the items stored, null when there are none (or they cannot be opened: the report replaces them). */
export function mergeItems(stored: DeliveredItems | null, reported: DeliveredItems): ItemMerge {
  if (!stored) return { kind: 'store', data: reported, kept: 0, storedCount: 0 };
  const missing = withoutItems(stored.items, reported.items);
  const data =
    missing.length > 0
      ? {
          items: [...stored.items, ...withoutItems(reported.items, stored.items)],
          delivery_data: reported.delivery_data ?? stored.delivery_data,
        }
      : reported;
  const counts = { kept: missing.length, storedCount: stored.items.length };
  return JSON.stringify(stored) === JSON.stringify(data) ? { kind: 'unchanged', ...counts } : { kind: 'store', data, ...counts };
}
