/** The offers' answers (CONTRACT §11), built from records: exactly the contract's members. */
import type { OfferWithSources } from './offers.service.js';

export interface OfferSourceResponse {
  supplier: string;
  sku_key: string;
  cost_price: string | null;
  currency: string | null;
  available: boolean;
  stock_status: string | null;
}

export interface OfferResponse {
  code: string;
  title: string | null;
  routing: string;
  sources: OfferSourceResponse[];
  sale_price: string | null;
  currency: string | null;
  available: boolean;
  updated_at: string;
}

export function toOfferResponse({ offer, sources }: OfferWithSources): OfferResponse {
  return {
    code: offer.code,
    title: offer.title,
    routing: offer.routing,
    sources: sources.map((s) => ({
      supplier: s.supplier,
      sku_key: s.sku_key,
      cost_price: s.cost_price,
      currency: s.currency,
      available: s.available,
      stock_status: s.stock_status,
    })),
    sale_price: offer.sale_price,
    currency: offer.currency,
    available: offer.available,
    updated_at: offer.updated_at.toISOString(),
  };
}
