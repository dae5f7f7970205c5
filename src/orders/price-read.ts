/**
 * The price guard's route when its fresh product read fails (CONTRACT §5), pure. The upstream read
 * nothing when the read waited for the request budget past the placement's wait, or was answered 429:
 * a placement that may be queued (a new one, with ORDER_QUEUE_WAIT_MS) is then queued as the local
 * catalog knows the SKU, its price read when it is sent (`defer`). Any other failure, or a read of a
 * queued order being sent, is 503 `upstream_unavailable` (`unavailable`), and nothing is recorded.
 */
export type PriceReadFailureRoute = 'defer' | 'unavailable';

export interface PriceReadFailure {
  /** The wait for the budget ran out before the read was sent (BudgetWaitExceeded). */
  budgetWaitExceeded: boolean;
  /** The upstream answered 429. */
  rateLimited: boolean;
}

export function priceReadFailureRoute(failure: PriceReadFailure, canQueue: boolean): PriceReadFailureRoute {
  return canQueue && (failure.budgetWaitExceeded || failure.rateLimited) ? 'defer' : 'unavailable';
}
