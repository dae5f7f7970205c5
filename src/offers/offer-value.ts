/**
 * An offer's value from its sources (CONTRACT §11), without I/O:
 * - `sale_price`: the operator's when set; else the pricing rules applied to the HIGHEST cost among
 *   the available sources, so that every source the route may buy costs at most what the offer is
 *   sold for. The rules are the catalog's: a source's `sale_price` is its SKU's, priced by
 *   `catalog/pricing.ts` from that SKU's cost and rule (and repriced with the SKU whenever its cost or
 *   a rule changes), so the offer takes the sale price of its highest-cost available source (of those
 *   tied at that cost, the highest sale price). With no source available the same is taken over every
 *   source with a known cost (the shop keeps showing a price for a product out of stock, as a SKU keeps
 *   its own); with no known cost at all it is null.
 * - `available`: any source available (listed, active and not `out_of_stock` in its supplier's catalog).
 * - `currency`: the sources' (they share one: offer-input.ts), null while none is known.
 */
import { Money } from '../catalog/pricing.js';

/** A source as the local catalog shows it (the API's source view, plus its SKU's sale price). */
export interface SourceFacts {
  supplier: string;
  sku_key: string;
  /** null: the supplier's catalog has no such SKU (any more). */
  cost_price: string | null;
  sale_price: string | null;
  currency: string | null;
  available: boolean;
  stock_status: string | null;
}

export interface OfferValue {
  sale_price: string | null;
  currency: string | null;
  available: boolean;
}

/** The highest-cost source of `sources` (ties: the highest sale price), or null when none has a cost. */
function highestCost(sources: readonly SourceFacts[]): SourceFacts | null {
  let best: SourceFacts | null = null;
  for (const s of sources) {
    if (s.cost_price === null || s.sale_price === null) continue;
    if (best === null) {
      best = s;
      continue;
    }
    const byCost = new Money(s.cost_price).cmp(best.cost_price!);
    if (byCost > 0 || (byCost === 0 && new Money(s.sale_price).gt(best.sale_price!))) best = s;
  }
  return best;
}

export function valueOffer(sources: readonly SourceFacts[], operatorSalePrice: string | null): OfferValue {
  const available = sources.some((s) => s.available);
  const currency = sources.find((s) => s.currency !== null)?.currency ?? null;
  if (operatorSalePrice !== null) return { sale_price: operatorSalePrice, currency, available };
  const priced = highestCost(sources.filter((s) => s.available)) ?? highestCost(sources);
  return { sale_price: priced?.sale_price ?? null, currency, available };
}

/** Whether the shop sees a change: the sale price (by value: `12.5` is `12.50`), the availability or the currency. */
export function valueChanged(old: OfferValue | null, next: OfferValue): boolean {
  if (old === null) return true;
  if (old.available !== next.available || old.currency !== next.currency) return true;
  if (old.sale_price === null || next.sale_price === null) return old.sale_price !== next.sale_price;
  return !new Money(old.sale_price).eq(next.sale_price);
}
