/**
 * Cancel's decisions, pure, from the state table (order-state.ts TRANSITIONS): the route a cancel
 * takes for the order as read (`cancelRoute`), and the local move under the row lock
 * (`planLocalCancel`). An order whose status the table's `local_cancel` moves start from (`rejected`,
 * `queued`: nothing exists upstream) is canceled here, its queued attempt closed; an order the upstream
 * has is canceled there first (`OrderCancelService`), and one whose outcome is unknown cannot be.
 */
import type { AttemptPatch } from './order.records.js';
import { OUTCOME_UNKNOWN, TRANSITIONS, UPSTREAM_ORDER_EXISTS, type OrderStatus } from './order-state.js';

/** The statuses the table's `local_cancel` moves start from. */
export const LOCAL_CANCEL_FROM: ReadonlySet<OrderStatus> = new Set(
  TRANSITIONS.local_cancel.flatMap(([froms]) => froms.filter((s): s is OrderStatus => s !== null)),
);

/** The status the table's `local_cancel` moves go to. */
export const LOCAL_CANCEL_TO: OrderStatus = TRANSITIONS.local_cancel[0][1][0];

/**
 * `outcome_unknown`: refused (409), whether the upstream has it is not known yet; `already`: nothing to
 * do; `local`: canceled here (`planLocalCancel` under the lock); `upstream`: the upstream cancels first.
 */
export type CancelRoute = 'outcome_unknown' | 'already' | 'local' | 'upstream';

export function cancelRoute(status: OrderStatus): CancelRoute {
  if (OUTCOME_UNKNOWN.has(status)) return 'outcome_unknown';
  if (status === LOCAL_CANCEL_TO) return 'already';
  if (LOCAL_CANCEL_FROM.has(status)) return 'local';
  return 'upstream';
}

export type LocalCancelPlan =
  /**
   * The upstream showed an order for the attempt (UPSTREAM_ORDER_EXISTS): not ours to cancel here, an
   * operator settles it (409 `cancel_not_allowed`).
   */
  | { kind: 'refuse_upstream_order_exists' }
  /** Canceled already: answer with the order as it is. */
  | { kind: 'already' }
  /**
   * The order moved since it was read (a new attempt, the queue sent it, an operator adopted an order):
   * decide again from what it is now.
   */
  | { kind: 'decide_again' }
  /**
   * The `local_cancel` move to `to`; `closeQueuedAttempt`: the order's attempt, if still `queued`, is
   * closed with `attemptPatch` (never to be sent).
   */
  | { kind: 'move'; to: OrderStatus; closeQueuedAttempt: boolean };

/** The local cancel of the order as locked. */
export function planLocalCancel(locked: { status: OrderStatus; anomaly: string | null }): LocalCancelPlan {
  if (locked.anomaly === UPSTREAM_ORDER_EXISTS) return { kind: 'refuse_upstream_order_exists' };
  if (locked.status === LOCAL_CANCEL_TO) return { kind: 'already' };
  if (!LOCAL_CANCEL_FROM.has(locked.status)) return { kind: 'decide_again' };
  return { kind: 'move', to: LOCAL_CANCEL_TO, closeQueuedAttempt: locked.status === 'queued' };
}

/** How a queued attempt is closed when its order is canceled before it was sent. */
export function canceledQueuedAttempt(now: Date): AttemptPatch {
  return { status: 'rejected', finished_at: now, error_code: 'canceled', error_message: 'canceled before it was sent' };
}
