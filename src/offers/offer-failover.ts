/**
 * The next step of an order placed through an offer (CONTRACT §11), without I/O: from the route's
 * sources to try (offer-route.ts `planRoute`), how many of them this pass tried, and how the last try
 * ended. `try` the next source (the first one, or the next after a definitive refusal before any
 * charge, `failoverStep` = `next`); `stay` when the order stays where the last try left it (placed,
 * `submit_unknown`, queued for a budget, or a refusal the route does not pass over); `exhausted` when
 * every source to try refused (409 `no_source_available`).
 */
import { failoverStep, type AttemptEnd, type RouteSource } from './offer-route.js';

export type OfferStep = { kind: 'try'; source: RouteSource } | { kind: 'stay' } | { kind: 'exhausted' };

export function nextOfferStep(tries: readonly RouteSource[], tried: number, last: AttemptEnd | null): OfferStep {
  if (last !== null && failoverStep(last) !== 'next') return { kind: 'stay' };
  const source = tries[tried];
  return source === undefined ? { kind: 'exhausted' } : { kind: 'try', source };
}

/** An attempt as the order's `route` shows it. */
export interface RouteEntry {
  attempt: number;
  supplier: string;
  sku_key: string | null;
  /** The attempt's status: `queued`, `submitting`, `accepted`, `rejected` or `submit_unknown`. */
  outcome: string;
  error_code: string | null;
}
