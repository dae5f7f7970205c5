/**
 * The route of an order placed through an offer (CONTRACT §11), without I/O: which sources to try,
 * in which order, and why the others are passed over without a request; and after an attempt, whether
 * the order moves on to the next source.
 *
 * `planRoute`: `priority` takes the sources in their order, `cheapest` by ascending current (local)
 * cost, ties in their order. A source is skipped, for the first reason that holds, when
 *   1. its supplier is unknown (`supplier_unknown`) or disabled (`supplier_disabled`),
 *   2. it is known unavailable locally, or its supplier's catalog lacks it (`unavailable`),
 *   3. its current cost is above the ceiling (`above_ceiling`): `max_unit_cost`, else the offer's sale
 *      price (`routeCeiling`), the price guard every source is held to,
 *   4. its supplier's key is blocked now (`key_blocked`): tried at once at the next source rather than
 *      waiting for the block.
 * A source whose budget is merely exhausted is NOT skipped: it is tried and its attempt is `queued`
 * (failoverStep).
 * The plan's `steps` are the sources in the routing's order that the order meets: each one to try, or
 * one the price guard refuses without a request (`above_ceiling`: `price_changed`), which the order
 * records as an attempt rejected before sending, so that its route shows it. The other skipped sources
 * (supplier unknown or disabled, unavailable, key blocked) are passed over and recorded nowhere.
 *
 * `failoverStep`: `next` only after a definitive refusal before any charge (FAILOVER_CODES, and
 * `upstream_unavailable` when nothing was sent); `queued` when the budget held the attempt back (not a
 * refusal: the order is routed again when a budget allows); `wait` otherwise: the order stays with this
 * attempt (placed; `submit_unknown`, which is never followed by another source, so that no order is
 * placed at two suppliers; or a refusal the route does not pass over, which ends the order as it says).
 */
import { Money } from '../catalog/pricing.js';
import type { Routing } from './offer-input.js';

/** A source as the route sees it: its place in the offer and its local view. */
export interface RouteSource {
  /** Its place in the offer's list (0 first). */
  position: number;
  supplier: string;
  sku_key: string;
  /** null: its supplier's catalog lacks it. */
  cost_price: string | null;
  available: boolean;
}

export interface SupplierState {
  enabled: boolean;
  /** The end of its key's block (epoch ms), or null when not blocked. */
  blockedUntil: number | null;
}

export const SKIP_REASONS = ['supplier_unknown', 'supplier_disabled', 'unavailable', 'above_ceiling', 'key_blocked'] as const;
export type SkipReason = (typeof SKIP_REASONS)[number];

/** A source the order meets on its route: tried, or refused by the price guard before any request (`code`). */
export type RouteStep = { kind: 'try'; source: RouteSource } | { kind: 'refuse'; source: RouteSource; code: string };

/** The price guard's refusal of a source whose local cost is above the ceiling (CONTRACT §5 `price_changed`). */
export const CEILING_REFUSAL = 'price_changed';

export interface RoutePlan {
  /** The sources to try, in order. */
  tries: RouteSource[];
  /** The sources tried and those the price guard refuses (`above_ceiling`), in the routing's order. */
  steps: RouteStep[];
  /** The others, in the routing's order, each with why it is not tried. */
  skipped: Array<{ source: RouteSource; reason: SkipReason }>;
}

/** The price ceiling of every source: `max_unit_cost` when the order gives one, else the offer's sale price (null: none). */
export function routeCeiling(maxUnitCost: string | null | undefined, offerSalePrice: string | null): string | null {
  return maxUnitCost ?? offerSalePrice;
}

/** The sources in the routing's order: as listed (`priority`), or by ascending cost, ties as listed, unknown costs last (`cheapest`). */
export function routeOrder(routing: Routing, sources: readonly RouteSource[]): RouteSource[] {
  const listed = [...sources].sort((a, b) => a.position - b.position);
  if (routing === 'priority') return listed;
  return listed.sort((a, b) => {
    if (a.cost_price === null || b.cost_price === null)
      return (a.cost_price === null ? 1 : 0) - (b.cost_price === null ? 1 : 0) || a.position - b.position;
    return new Money(a.cost_price).cmp(b.cost_price) || a.position - b.position;
  });
}

function skipReason(source: RouteSource, supplier: SupplierState | undefined, ceiling: string | null, nowMs: number): SkipReason | null {
  if (supplier === undefined) return 'supplier_unknown';
  if (!supplier.enabled) return 'supplier_disabled';
  if (!source.available || source.cost_price === null) return 'unavailable';
  if (ceiling !== null && new Money(source.cost_price).gt(ceiling)) return 'above_ceiling';
  if (supplier.blockedUntil !== null && supplier.blockedUntil > nowMs) return 'key_blocked';
  return null;
}

export function planRoute(
  routing: Routing,
  sources: readonly RouteSource[],
  suppliers: ReadonlyMap<string, SupplierState>,
  ceiling: string | null,
  nowMs: number,
): RoutePlan {
  const plan: RoutePlan = { tries: [], steps: [], skipped: [] };
  for (const source of routeOrder(routing, sources)) {
    const reason = skipReason(source, suppliers.get(source.supplier), ceiling, nowMs);
    if (reason === null) {
      plan.tries.push(source);
      plan.steps.push({ kind: 'try', source });
    } else {
      plan.skipped.push({ source, reason });
      if (reason === 'above_ceiling') plan.steps.push({ kind: 'refuse', source, code: CEILING_REFUSAL });
    }
  }
  return plan;
}

/** The refusals before any charge after which the next source is tried (CONTRACT §11). */
export const FAILOVER_CODES: ReadonlySet<string> = new Set([
  'insufficient_stock',
  'sku_unavailable',
  'product_unavailable',
  'price_changed',
  'insufficient_balance',
  'payment_failed',
  'upstream_auth_failed',
]);

/** How an attempt at one source ended. */
export type AttemptEnd =
  /** Accepted upstream. */
  | { status: 'placed' }
  /** Refused (by the upstream, by the price guard or a check) with `errorCode`; `sent`: a create went out. */
  | { status: 'rejected'; errorCode: string | null; sent: boolean }
  /** Sent, outcome unknown. */
  | { status: 'submit_unknown' }
  /** Held back by the request budget, a 429 or a block: nothing was processed. */
  | { status: 'queued' };

export type FailoverStep = 'next' | 'wait' | 'queued';

export function failoverStep(end: AttemptEnd): FailoverStep {
  switch (end.status) {
    case 'queued':
      return 'queued';
    case 'placed':
    case 'submit_unknown':
      return 'wait';
    case 'rejected':
      if (end.errorCode !== null && FAILOVER_CODES.has(end.errorCode)) return 'next';
      return end.errorCode === 'upstream_unavailable' && !end.sent ? 'next' : 'wait';
  }
}
