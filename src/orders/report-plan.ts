/**
 * What an upstream report (a create's or a cancel's answer, a callback, a poll, an operator's read)
 * changes on an order, pure: `planReport` decides, OrderUpdater.applyReport writes the plan inside the
 * caller's transaction on the locked row. No Nest, no I/O.
 *
 * The plan says:
 * - the status move: `decideReport`'s verdict (order-state.ts) on the reported status;
 * - the columns to write: the report's data (order number, amount, currency, refunded amount,
 *   refunds) when its status is taken, the sealed items when the report's items are taken
 *   (`reportTakesItems`), the status and its time, a new anomaly, the progress marks;
 * - the event to record: the status change (with its shop notification), or a new anomaly;
 * - the follow-up: a regression to count, whether the order stays followed, whether its items are
 *   read at once (`itemsFollowUp`), whether the time to delivery is observed.
 * A delivering status (`partially_delivered`, `delivered`, `completed`) reported without its items for
 * an order that has none stored, or only a part (`partially_delivered`), is not a delivery (CONTRACT §5): the status is held back, the order
 * keeps its earlier status (and its other data is taken), and it stays followed until a report brings
 * the status and its items together, which then move in one write.
 * The polling schedule itself is the writer's (it depends on the configured pace).
 */
import type { UpstreamFulfillment } from '../upstream/upstream.types.js';
import { sameAmount } from './money-checks.js';
import {
  DELIVERED_AFTER_CANCEL,
  ITEMS_DELIVERED,
  itemsFollowUp,
  type ItemsFollowUp,
  type OrderStatus,
  type ReportDecision,
  type ReportKind,
} from './order-state.js';
import type { OrderPatch, OrderRecord } from './order.records.js';
import { normalizeRefundRecords } from './refund-records.js';

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
