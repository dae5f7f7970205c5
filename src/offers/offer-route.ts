/**
 * The route of an order placed through an offer (CONTRACT §11), without I/O: which sources to try,
 * in which order, and why the others are passed over without a request; and after an attempt, whether
 * the order moves on to the next source.
 *
 * `planRoute`: `priority` takes the sources in their order, `cheapest` by ascending current (local)
 * cost, ties in their order. A source is refused without a request, for the first reason that holds,
 * when
 *   1. its supplier is unknown (`supplier_unknown`) or disabled (`supplier_disabled`),
 *   2. it is known unavailable locally, or its supplier's catalog lacks it (`unavailable`),
 *   3. its current cost is above the ceiling (`above_ceiling`): `max_unit_cost`, else the offer's sale
 *      price (`routeCeiling`), the price guard every source is held to.
 * A source whose supplier's key is blocked now is not refused: a block ends, as a budget fills again.
 * It is `held`: tried after every source that can be tried now (the order goes on at once to a source
 * that can take it), so that when no other source is left the order's attempt at the first held
 * source is `queued` for its budget, as any attempt the budget holds back, and sent when the block
 * ends. A source whose budget is merely exhausted is tried in its place and its attempt `queued`.
 *
 * The plan's `steps` are the sources the order meets, in order: the sources that can be tried now and
 * those the price guard refuses (`above_ceiling`) in the routing's order, then the held ones. A refused
 * step is recorded by the order as an attempt rejected before sending, with its code (REFUSAL_CODES),
 * so that its route shows it; the other refused sources (supplier unknown or disabled, unavailable)
 * are passed over and recorded nowhere, unless the order meets no source at all: then every source is
 * a refused step, so that the order is recorded `rejected` with one route entry per source saying why.
 *
 * `failoverStep`: `next` only after a definitive refusal before any charge (FAILOVER_CODES, the
 * route's own refusals before sending, and `upstream_unavailable` when nothing was sent); `queued`
 * when the budget held the attempt back (not a refusal: the order is routed again when a budget
 * allows); `wait` otherwise: the order stays with this attempt (placed; `submit_unknown`, which is
 * never followed by another source, so that no order is placed at two suppliers; or a refusal the
 * route does not pass over, which ends the order as it says).
 */
import { Money } from '../catalog/pricing.js';
import type { ErrorCode } from '../common/error-codes.js';
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

export const SKIP_REASONS = ['supplier_unknown', 'supplier_disabled', 'unavailable', 'above_ceiling'] as const;
export type SkipReason = (typeof SKIP_REASONS)[number];

/** The code an attempt refused by the route before any request is recorded with, by reason (error-codes.ts). */
export const REFUSAL_CODES: Readonly<Record<SkipReason, ErrorCode>> = {
  supplier_unknown: 'supplier_not_found',
  supplier_disabled: 'supplier_disabled',
  unavailable: 'sku_unavailable',
  above_ceiling: 'price_changed',
};

/** The route's own refusals of a source, before any request: the order moves on from each. */
const ROUTE_REFUSALS: ReadonlySet<string> = new Set(Object.values(REFUSAL_CODES));

/** A source the route refuses before any request, as the order records it (`code`, REFUSAL_CODES). */
export interface RefuseStep {
  kind: 'refuse';
  source: RouteSource;
  reason: SkipReason;
  code: ErrorCode;
}

/** A source the order meets on its route: tried, or refused before any request. */
export type RouteStep = { kind: 'try'; source: RouteSource } | RefuseStep;

/** The price guard's refusal of a source whose local cost is above the ceiling (CONTRACT §5 `price_changed`). */
export const CEILING_REFUSAL = REFUSAL_CODES.above_ceiling;

export interface RoutePlan {
  /** The sources to try, in order: those that can be tried now, then the held ones. */
  tries: RouteSource[];
  /** The sources whose supplier's key is blocked now, in the routing's order (the last of `tries`). */
  held: RouteSource[];
  /** The sources the order meets, in order (see the header). */
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

function skipReason(source: RouteSource, supplier: SupplierState | undefined, ceiling: string | null): SkipReason | null {
  if (supplier === undefined) return 'supplier_unknown';
  if (!supplier.enabled) return 'supplier_disabled';
  if (!source.available || source.cost_price === null) return 'unavailable';
  if (ceiling !== null && new Money(source.cost_price).gt(ceiling)) return 'above_ceiling';
  return null;
}

function refuseStep(source: RouteSource, reason: SkipReason): RefuseStep {
  return { kind: 'refuse', source, reason, code: REFUSAL_CODES[reason] };
}

export function planRoute(
  routing: Routing,
  sources: readonly RouteSource[],
  suppliers: ReadonlyMap<string, SupplierState>,
  ceiling: string | null,
  nowMs: number,
): RoutePlan {
  const plan: RoutePlan = { tries: [], held: [], steps: [], skipped: [] };
  for (const source of routeOrder(routing, sources)) {
    const state = suppliers.get(source.supplier);
    const reason = skipReason(source, state, ceiling);
    if (reason !== null) {
      plan.skipped.push({ source, reason });
      if (reason === 'above_ceiling') plan.steps.push(refuseStep(source, reason));
    } else if (state?.blockedUntil != null && state.blockedUntil > nowMs) {
      plan.held.push(source);
    } else {
      plan.tries.push(source);
      plan.steps.push({ kind: 'try', source });
    }
  }
  plan.tries.push(...plan.held);
  plan.steps.push(...plan.held.map((source): RouteStep => ({ kind: 'try', source })));
  // no source met: each one refused with its reason, so that the order records why
  if (plan.steps.length === 0) plan.steps = plan.skipped.map((s) => refuseStep(s.source, s.reason));
  return plan;
}

/** What the order records as a refused step's message. */
export function refusalMessage(step: RefuseStep): string {
  const { supplier, sku_key } = step.source;
  switch (step.reason) {
    case 'supplier_unknown':
      return `no supplier ${supplier}: ${sku_key} was not asked`;
    case 'supplier_disabled':
      return `supplier ${supplier} is disabled: it takes no new orders, ${sku_key} was not asked`;
    case 'unavailable':
      return `${supplier} ${sku_key} is known unavailable locally: it was not asked`;
    case 'above_ceiling':
      return `the price guard refused ${supplier} ${sku_key} before any request: its cost is above the ceiling`;
  }
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

/** Whether a refusal before sending with `code` passes an offer order on to its next source. */
export function passesOverBeforeSending(code: string | null): boolean {
  return failoverStep({ status: 'rejected', errorCode: code, sent: false }) === 'next';
}

export function failoverStep(end: AttemptEnd): FailoverStep {
  switch (end.status) {
    case 'queued':
      return 'queued';
    case 'placed':
    case 'submit_unknown':
      return 'wait';
    case 'rejected':
      if (end.errorCode !== null && FAILOVER_CODES.has(end.errorCode)) return 'next';
      if (end.sent || end.errorCode === null) return 'wait';
      return end.errorCode === 'upstream_unavailable' || ROUTE_REFUSALS.has(end.errorCode) ? 'next' : 'wait';
  }
}
