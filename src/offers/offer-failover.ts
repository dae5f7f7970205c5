/**
 * The next step of an order placed through an offer (CONTRACT §11), without I/O: from the route's steps
 * (offer-route.ts `planRoute`, planned again whenever the order moves on), the sources this pass through
 * the route already tried (its attempts), and how the last try ended.
 * - `stay`: the order stays where the last try left it (placed, `submit_unknown`, queued for a budget,
 *   or a refusal the route does not pass over, `failoverStep` ≠ `next`);
 * - `try`: the next untried source to try, after `refused`: the untried sources before it that the
 *   route refuses without a request (each recorded as an attempt rejected before sending);
 * - `exhausted`: no untried source left to try (`refused` as above): the order is `rejected` and the
 *   request waiting for it answers 409 `no_source_available`.
 * A source is one supplier's SKU (`supplier`, `sku_key`): tried once per pass whatever its position.
 */
import { failoverStep, type AttemptEnd, type RefuseStep, type RouteSource, type RouteStep } from './offer-route.js';

/** A source as an attempt names it. */
export interface SourceRef {
  supplier: string;
  sku_key: string | null;
}

export type OfferStep =
  { kind: 'try'; source: RouteSource; refused: RefuseStep[] } | { kind: 'stay' } | { kind: 'exhausted'; refused: RefuseStep[] };

const same = (a: SourceRef, b: SourceRef) => a.supplier === b.supplier && a.sku_key === b.sku_key;

export function nextOfferStep(steps: readonly RouteStep[], tried: readonly SourceRef[], last: AttemptEnd | null): OfferStep {
  if (last !== null && failoverStep(last) !== 'next') return { kind: 'stay' };
  const refused: RefuseStep[] = [];
  for (const step of steps) {
    if (tried.some((t) => same(t, step.source))) continue;
    if (step.kind === 'try') return { kind: 'try', source: step.source, refused };
    refused.push(step);
  }
  return { kind: 'exhausted', refused };
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
