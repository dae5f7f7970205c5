/**
 * The orders' records and their row mappers: one order row per shop order, one row per attempt, its
 * events, and the columns an update may set. The row types are the generated ones
 * (src/database/rows.generated.ts) with the domain's names for their text and jsonb columns. Records
 * (`OrderRecord`, `AttemptRecord`) never leave the orders module: responses are built by
 * `toOrderResponse()`.
 */
import type { EventSource, OrderStatus } from './order-state.js';
import type { OrderAttemptsRow, OrderRefundsRow, OrdersRow } from '../database/rows.generated.js';
import type { RefundRecord } from './refund-records.js';

export interface OrderRecord {
  id: string;
  shopOrderNo: string;
  /** The supplier (CONTRACT §10) the order is placed at: every upstream call of the order goes to it. */
  supplier: string;
  /** What the shop sent: a sku_code or a sku_key (the idempotency fingerprint is over it). */
  skuCode: string;
  /** The SKU it resolved to, `<product_id>:<sku_code>` (null only for an order recorded without one). */
  skuKey: string | null;
  /** The offer (CONTRACT §11) the order was placed through (null: placed by SKU). */
  offer: string | null;
  quantity: number;
  requestFingerprint: string;
  maxUnitCost: string | null;
  /** The most a unit may cost when the order is sent: max_unit_cost, or the SKU's sale price when it was accepted. */
  priceCeiling: string | null;
  /** The accepted attempt carried our callback_url: callbacks are expected (polled later, see pollPace). */
  callbacksExpected: boolean;
  traceId: string;
  status: OrderStatus;
  attempt: number;
  downstreamOrderNo: string;
  upstreamOrderId: number | null;
  upstreamOrderNo: string | null;
  productId: number | null;
  skuId: number | null;
  unitCost: string | null;
  expectedAmount: string | null;
  amount: string | null;
  currency: string | null;
  refundedAmount: string | null;
  /** The refunds the upstream's last read reported (null: it reported none, or no read carried them). */
  refundRecords: RefundRecord[] | null;
  errorCode: string | null;
  errorMessage: string | null;
  fulfillmentType: string | null;
  deliveredAt: Date | null;
  deliverySealed: Buffer | null;
  anomaly: string | null;
  statusChangedAt: Date;
  progressAt: Date;
  stuckSince: Date | null;
  nextPollAt: Date | null;
  pollIntervalMs: number | null;
  pollLeaseUntil: Date | null;
  opKind: string | null;
  opToken: string | null;
  opUntil: Date | null;
  createdAt: Date;
  updatedAt: Date;
  refundAt: Date | null;
  refundAmount: string | null;
}

export interface AttemptRequest {
  sku_id: number;
  quantity: number;
  manual_form_data?: Record<string, unknown>;
  trace_id: string;
  /** Send our callback_url with it (false once the upstream refused our address). */
  with_callback: boolean;
  /**
   * An offer order's attempt that a failover reserved: the attempt its pass through the route began
   * with (the sources of that pass's attempts are the ones tried). Absent: the attempt begins a pass.
   * Never sent upstream.
   */
  route_from?: number;
}

export type AttemptStatus = 'queued' | 'submitting' | 'accepted' | 'rejected' | 'submit_unknown';

export interface AttemptRecord {
  id: string;
  orderId: string;
  attemptNo: number;
  downstreamOrderNo: string;
  status: AttemptStatus;
  request: AttemptRequest;
  sends: number;
  sendingUntil: Date | null;
  unknownSince: Date | null;
  nextResendAt: Date | null;
  upstreamOrderId: number | null;
}

export interface OrderEventRecord {
  id: string;
  source: EventSource;
  kind: string;
  oldStatus: string | null;
  newStatus: string | null;
  detail: Record<string, unknown> | null;
  createdAt: Date;
}

/**
 * Columns an order update may set, with the types a statement is given: the `orders` table's own
 * (rows.generated.ts), but the upstream's ids as numbers and `refund_records` as JSON text.
 */
export type OrderPatch = Partial<
  Pick<
    OrderRow,
    | 'status'
    | 'attempt'
    | 'downstream_order_no'
    | 'upstream_order_no'
    | 'unit_cost'
    | 'expected_amount'
    | 'price_ceiling'
    | 'callbacks_expected'
    | 'amount'
    | 'currency'
    | 'refunded_amount'
    | 'error_code'
    | 'error_message'
    | 'fulfillment_type'
    | 'delivered_at'
    | 'delivery_sealed'
    | 'anomaly'
    | 'status_changed_at'
    | 'progress_at'
    | 'stuck_since'
    | 'next_poll_at'
    | 'poll_interval_ms'
    | 'poll_lease_until'
    | 'op_kind'
    | 'op_token'
    | 'op_until'
    | 'updated_at'
    | 'supplier'
  > & {
    sku_key: string;
    upstream_order_id: number | null;
    product_id: number | null;
    sku_id: number | null;
    /** JSON text of RefundRecord[] (a jsonb column). */
    refund_records: string;
  }
>;

/** Columns an attempt update may set: the `order_attempts` table's own, the upstream's id as a number. */
export type AttemptPatch = Partial<
  Pick<
    AttemptRow,
    | 'status'
    | 'request'
    | 'sends'
    | 'sending_until'
    | 'unknown_since'
    | 'next_resend_at'
    | 'http_status'
    | 'error_code'
    | 'error_message'
    | 'finished_at'
  > & { upstream_order_id: number | null }
>;

/**
 * An order as its statements read it: the `orders` row (generated from the schema), its status and
 * refunds as the domain names them, and, where the statement joins `order_refunds` (ORDER_SELECT,
 * `refundOf`), the refund's columns.
 */
export type OrderRow = Omit<OrdersRow, 'status' | 'refund_records'> & {
  status: OrderStatus;
  refund_records: RefundRecord[] | null;
  refund_at?: OrderRefundsRow['created_at'] | null;
  refund_amount?: OrderRefundsRow['amount'];
};

/** An attempt as its statements read it: the `order_attempts` row, its status and request as the domain names them. */
export type AttemptRow = Omit<OrderAttemptsRow, 'status' | 'request'> & { status: AttemptStatus; request: AttemptRequest };

const num = (v: string | number | null): number | null => (v === null ? null : Number(v));

export function toOrder(r: OrderRow): OrderRecord {
  return {
    id: String(r.id),
    shopOrderNo: r.shop_order_no,
    supplier: r.supplier,
    skuCode: r.sku_code,
    skuKey: r.sku_key ?? null,
    offer: r.offer ?? null,
    quantity: r.quantity,
    requestFingerprint: r.request_fingerprint,
    maxUnitCost: r.max_unit_cost,
    priceCeiling: r.price_ceiling ?? null,
    callbacksExpected: r.callbacks_expected ?? false,
    traceId: r.trace_id,
    status: r.status,
    attempt: r.attempt,
    downstreamOrderNo: r.downstream_order_no,
    upstreamOrderId: num(r.upstream_order_id),
    upstreamOrderNo: r.upstream_order_no,
    productId: num(r.product_id),
    skuId: num(r.sku_id),
    unitCost: r.unit_cost,
    expectedAmount: r.expected_amount,
    amount: r.amount,
    currency: r.currency,
    refundedAmount: r.refunded_amount,
    refundRecords: r.refund_records ?? null,
    errorCode: r.error_code,
    errorMessage: r.error_message,
    fulfillmentType: r.fulfillment_type,
    deliveredAt: r.delivered_at,
    deliverySealed: r.delivery_sealed,
    anomaly: r.anomaly,
    statusChangedAt: r.status_changed_at,
    progressAt: r.progress_at,
    stuckSince: r.stuck_since,
    nextPollAt: r.next_poll_at,
    pollIntervalMs: r.poll_interval_ms,
    pollLeaseUntil: r.poll_lease_until,
    opKind: r.op_kind,
    opToken: r.op_token,
    opUntil: r.op_until,
    createdAt: r.created_at,
    updatedAt: r.updated_at,
    refundAt: r.refund_at ?? null,
    refundAmount: r.refund_amount ?? null,
  };
}

export function toAttempt(r: AttemptRow): AttemptRecord {
  return {
    id: String(r.id),
    orderId: String(r.order_id),
    attemptNo: r.attempt_no,
    downstreamOrderNo: r.downstream_order_no,
    status: r.status,
    request: r.request,
    sends: r.sends,
    sendingUntil: r.sending_until,
    unknownSince: r.unknown_since,
    nextResendAt: r.next_resend_at,
    upstreamOrderId: num(r.upstream_order_id),
  };
}

export interface NewOrderInput {
  shopOrderNo: string;
  supplier: string;
  skuCode: string;
  /** The SKU it resolved to (null: not known; the order's code then names it). */
  skuKey: string | null;
  /** The offer it is placed through (absent or null: by SKU). */
  offer?: string | null;
  quantity: number;
  requestFingerprint: string;
  maxUnitCost: string | null;
  priceCeiling: string;
  traceId: string;
  productId: number;
  skuId: number;
  unitCost: string;
  expectedAmount: string;
  currency: string | null;
  fulfillmentType: string | null;
}
