/**
 * When the price guard may skip its `GET /products/{id}` (ORDER_PRICE_FRESH_S). The cost of a SKU is
 * fresh when, within the window:
 * - the product was read (one read gives every SKU of the product), or
 * - a create for that very SKU was answered with a charge of exactly quantity × the cost the relay
 *   checked (the upstream charged that unit price when it took the order: the SKU existed under that
 *   sku_id, it and its product were active, it was in stock, and its price was that cost).
 * A charge that differs (a price change, a wholesale tier, a member price) confirms nothing, and the
 * product's cached read is forgotten so that its next order reads it fresh.
 *
 * Times are milliseconds of the service's clock; a time ahead of now (the clock went back) is not fresh.
 */
import { Decimal } from 'decimal.js';

/** A create's confirmation of one SKU's cost: the sku_id it was ordered with and the unit cost charged, at `at`. */
export interface CostConfirmation {
  skuId: number;
  unitCost: string;
  at: number;
}

/** Whether something that happened at `at` is within `freshMs` of `now` (never with `freshMs` 0). */
export function isFresh(at: number, now: number, freshMs: number): boolean {
  return freshMs > 0 && at <= now && now - at <= freshMs;
}

/**
 * Whether a create's answer confirms the cost checked for it: `amount` is exactly `quantity` ×
 * `unitCost` (decimal arithmetic), in the currency the relay knows (when both are known).
 */
export function chargeConfirmsCost(
  charged: { amount?: string | null; currency?: string | null },
  checked: { unitCost: string; quantity: number; currency: string | null },
): boolean {
  if (!charged.amount) return false;
  if (charged.currency && checked.currency && charged.currency !== checked.currency) return false;
  try {
    return new Decimal(charged.amount).eq(new Decimal(checked.unitCost).mul(checked.quantity));
  } catch {
    return false; // not a decimal: confirms nothing
  }
}

/**
 * Whether a confirmation serves the price guard for the local SKU now: fresh, for the sku_id the local
 * catalog holds, at the cost the local catalog holds (a sync or a product read that moved either since
 * makes the guard read again).
 */
export function confirmationServes(c: CostConfirmation | undefined, local: { upstreamSkuId: number; costPrice: string }, now: number, freshMs: number): c is CostConfirmation {
  if (!c || !isFresh(c.at, now, freshMs) || c.skuId !== local.upstreamSkuId) return false;
  try {
    return new Decimal(c.unitCost).eq(new Decimal(local.costPrice));
  } catch {
    return false;
  }
}
