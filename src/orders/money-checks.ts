/**
 * The money checks of an order (CONTRACT §5), pure: exact decimal arithmetic with `Money` (decimal.js,
 * see catalog/pricing.ts), never a JavaScript number for money. No Nest, no I/O.
 *
 * - the price guard's ceiling: the highest unit cost the shop accepts, its `max_unit_cost`, else the
 *   sale price known before the fresh read (`priceCeiling`);
 * - the price guard: a fresh unit cost above the ceiling refuses the order, `price_changed`
 *   (`aboveCeiling`);
 * - the expected amount: what the relay expects to be charged, unit cost × quantity, printed at the
 *   unit cost's scale (`expectedAmount`);
 * - the overcharge: the upstream charged more than the expected amount (`overcharge`);
 * - two amounts are the same when they are equal as numbers, whatever their scale (`sameAmount`).
 */
import { Money } from '../catalog/pricing.js';

/**
 * The price guard's ceiling: `maxUnitCost` (the shop's `max_unit_cost`) when given, else `knownPrice`
 * (the sale price known before the fresh read; for a queued order, the ceiling recorded when it was
 * accepted), else `0` (no SKU known: the checks refuse the order before any price is compared).
 */
export function priceCeiling(maxUnitCost: string | null | undefined, knownPrice: string | null | undefined): string {
  return maxUnitCost ?? knownPrice ?? '0';
}

/** The price guard: whether the fresh unit cost is above the ceiling (equal passes). */
export function aboveCeiling(unitCost: string, ceiling: string): boolean {
  return new Money(unitCost).gt(new Money(ceiling));
}

/** Decimal places written in a decimal string (`12.50` → 2, `12` → 0). */
function scaleOf(text: string): number {
  return text.split('.')[1]?.length ?? 0;
}

/**
 * The order's expected amount: `unitCost` × `quantity`, at `unitCost`'s scale (`10.00` × 2 is
 * `20.00`). Exact: a whole quantity adds no decimal places.
 */
export function expectedAmount(unitCost: string, quantity: number): string {
  return new Money(unitCost).mul(quantity).toFixed(scaleOf(unitCost));
}

/**
 * The overcharge check: the expected amount of `quantity` units at the checked `unitCost` when the
 * upstream's `charged` amount is above it; null when it is not, or when either is unknown.
 */
export function overcharge(charged: string | null | undefined, unitCost: string | null, quantity: number): { expected: string } | null {
  if (!charged || unitCost === null) return null;
  const expected = expectedAmount(unitCost, quantity);
  return new Money(charged).gt(new Money(expected)) ? { expected } : null;
}

/** Whether two amounts are equal as numbers (`20` and `20.00` are); two absent ones are the same, one absent is not. */
export function sameAmount(a: string | null | undefined, b: string | null | undefined): boolean {
  return a == null || b == null ? a == b : new Money(a).eq(new Money(b));
}
