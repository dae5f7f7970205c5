/**
 * When the price guard may skip its `GET /products/{id}` (ORDER_PRICE_FRESH_S). The cost of a SKU is
 * fresh when, within the window:
 * - the product was read (one read gives every SKU of the product), or
 * - a create for that very SKU was answered with a charge of exactly quantity × the cost the relay
 *   checked (the upstream charged that unit price when it took the order: the SKU existed under that
 *   sku_id, it and its product were active, it was in stock, and its price was that cost).
 * A charge above it (a price rise) confirms nothing, and the product's cached read is forgotten so that
 * its next order reads it fresh; a charge below it (a member price, a wholesale tier) confirms nothing
 * and keeps the read.
 *
 * Times are milliseconds of the service's clock; a time ahead of now (the clock went back) is not fresh.
 */
import { expectedAmount, sameAmount } from '../orders/place-plan.js';
import { Money } from './pricing.js';

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
 * What a create's answer says of the cost checked for it:
 * - `confirms`: `amount` is exactly `quantity` × `unitCost` (decimal arithmetic), in the currency the
 *   relay knows (when both are known);
 * - `below`: less than that, in that currency (a member price, a wholesale tier): the unit price paid
 *   is below the checked cost, which says nothing new of the cost: neither confirmed nor doubted;
 * - `differs`: more (a price rise), another currency, no amount or not a decimal: the product's
 *   cached read is doubted.
 */
export function chargeVerdict(
  charged: { amount?: string | null; currency?: string | null },
  checked: { unitCost: string; quantity: number; currency: string | null },
): 'confirms' | 'below' | 'differs' {
  if (!charged.amount) return 'differs';
  if (charged.currency && checked.currency && charged.currency !== checked.currency) return 'differs';
  try {
    const cmp = new Money(charged.amount).cmp(expectedAmount(checked.unitCost, checked.quantity));
    return cmp === 0 ? 'confirms' : cmp < 0 ? 'below' : 'differs';
  } catch {
    return 'differs'; // not a decimal
  }
}

/**
 * Whether a confirmation serves the price guard for the local SKU now: fresh, for the sku_id the local
 * catalog holds, at the cost the local catalog holds (a sync or a product read that moved either since
 * makes the guard read again).
 */
export function confirmationServes(
  c: CostConfirmation | undefined,
  local: { upstreamSkuId: number; costPrice: string },
  now: number,
  freshMs: number,
): c is CostConfirmation {
  if (!c || !isFresh(c.at, now, freshMs) || c.skuId !== local.upstreamSkuId) return false;
  try {
    return sameAmount(c.unitCost, local.costPrice);
  } catch {
    return false;
  }
}
