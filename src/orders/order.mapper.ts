/**
 * The order as the internal API shows it (CONTRACT §5). Pure: the caller hands in the decrypted items.
 */
import { isStuck, refundEligibility, type OrderStatus, type RefundState } from './order-state.js';
import type { OrderEventRecord, OrderRecord } from './order.records.js';
import type { DeliveredData } from './payload-cipher.service.js';
import type { RefundRecord } from './refund-records.js';
import { codeOfKey } from '../catalog/sku-key.js';
import type { RouteEntry } from '../offers/offer-failover.js';

export interface OrderResponse {
  shop_order_no: string;
  /** The supplier the order is placed at (CONTRACT §10). */
  supplier: string;
  /** The SKU the order resolved to, `<product_id>:<sku_code>` (null for an order recorded without one). */
  sku_key: string | null;
  /** The offer (CONTRACT §11) the order was placed through, null when placed by SKU. */
  offer: string | null;
  /** An offer order's attempts, one entry each (where it went and how it ended); absent for an order placed by SKU. */
  route?: RouteEntry[];
  /** The SKU's code (what the shop sent when it has no key). */
  sku_code: string;
  quantity: number;
  status: OrderStatus;
  attempt: number;
  downstream_order_no: string;
  upstream_order_id: number | null;
  upstream_order_no: string | null;
  amount: string | null;
  currency: string | null;
  error_code: string | null;
  error_message: string | null;
  items: string[];
  fulfillment: {
    type: string | null;
    status: 'delivered' | 'pending';
    delivered_at: string | null;
    delivery_data: Record<string, unknown> | null;
  };
  refund_state: RefundState;
  refundable_amount: string | null;
  refunded_amount: string | null;
  /** The refunds the upstream reports on the order (its last read), oldest first. */
  refund_records: RefundRecord[];
  anomaly: string | null;
  stuck: boolean;
  trace_id: string;
  created_at: string;
  updated_at: string;
}

/** The refund eligibility of a stored order: what the API shows, and what cancel and refund decide on. */
export function orderRefund(o: OrderRecord): ReturnType<typeof refundEligibility> {
  return refundEligibility({
    status: o.status,
    amount: o.amount,
    expectedAmount: o.expectedAmount,
    refundedAmount: o.refundedAmount,
    refundRecorded: o.refundAt !== null,
    recordedAmount: o.refundAmount,
    anomaly: o.anomaly,
  });
}

export function toOrderResponse(o: OrderRecord, delivered: DeliveredData | null, now: Date, stuckAlertS: number): OrderResponse {
  const refund = orderRefund(o);
  return {
    shop_order_no: o.shopOrderNo,
    supplier: o.supplier,
    sku_key: o.skuKey,
    offer: o.offer ?? null,
    sku_code: o.skuKey !== null ? codeOfKey(o.skuKey) : o.skuCode,
    quantity: o.quantity,
    status: o.status,
    attempt: o.attempt,
    downstream_order_no: o.downstreamOrderNo,
    upstream_order_id: o.upstreamOrderId,
    upstream_order_no: o.upstreamOrderNo,
    amount: o.amount,
    currency: o.currency,
    error_code: o.errorCode,
    error_message: o.errorMessage,
    items: delivered?.items ?? [],
    fulfillment: {
      type: o.fulfillmentType,
      status: o.deliveredAt ? 'delivered' : 'pending',
      delivered_at: o.deliveredAt ? o.deliveredAt.toISOString() : null,
      delivery_data: delivered?.delivery_data ?? null,
    },
    refund_state: refund.state,
    refundable_amount: refund.amount,
    refunded_amount: o.refundedAmount,
    refund_records: o.refundRecords ?? [],
    anomaly: o.anomaly,
    stuck: isStuck(o, now, stuckAlertS),
    trace_id: o.traceId,
    created_at: o.createdAt.toISOString(),
    updated_at: o.updatedAt.toISOString(),
  };
}

export interface OrderEventResponse {
  id: string;
  source: string;
  kind: string;
  from: string | null;
  to: string | null;
  detail: Record<string, unknown> | null;
  at: string;
}

export function toOrderEventResponse(e: OrderEventRecord): OrderEventResponse {
  return { id: e.id, source: e.source, kind: e.kind, from: e.oldStatus, to: e.newStatus, detail: e.detail, at: e.createdAt.toISOString() };
}
