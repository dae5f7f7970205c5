/** The reconciliation's answers (CONTRACT §5), built from its records. */
import type { ReconciliationItemRecord, ReconciliationRunRecord } from './reconciliation.repository.js';

export function toReconciliationRunResponse(r: ReconciliationRunRecord) {
  return {
    run_id: r.runId,
    status: r.status,
    from: r.from.toISOString(),
    to: r.to.toISOString(),
    started_at: r.startedAt.toISOString(),
    finished_at: r.finishedAt?.toISOString() ?? null,
    orders_total: r.ordersTotal,
    orders_done: r.ordersDone,
    orders_failed: r.ordersFailed,
    differences: r.differences,
    error: r.error,
    heartbeat_at: r.heartbeatAt.toISOString(),
  };
}

export function toReconciliationItemResponse(i: ReconciliationItemRecord) {
  return {
    id: i.id,
    shop_order_no: i.shopOrderNo,
    field: i.field,
    local: i.local,
    upstream: i.upstream,
    applied: i.applied,
    run_id: i.runId,
    detected_at: i.detectedAt.toISOString(),
  };
}
