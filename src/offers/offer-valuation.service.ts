/**
 * Keeps each offer's sale price, currency and availability in step with its sources (CONTRACT §11):
 * called inside every catalog write's transaction with the SKUs it changed (CatalogWriter), and by
 * `PUT /internal/offers`. An offer whose value moved gets a new `updated_at` and an `offer.changed`
 * event for the shop in the same transaction (§7, as a SKU's change is announced).
 *
 * The offers are locked (in code order) before their sources are read, in a statement of its own: a
 * catalog write of another source of the same offer that committed meanwhile is then seen, so two
 * writes never leave an offer valued from a stale source.
 */
import { Injectable } from '@nestjs/common';
import type { EntityManager } from 'typeorm';
import { OutboxWriter, type OutboxEvent } from '../notifications/outbox.writer.js';
import { SupplierRegistry } from '../suppliers/supplier-registry.service.js';
import { valueChanged, valueOffer, type OfferValue } from './offer-value.js';
import { OfferRepository, type OfferRecord } from './offer.repository.js';

/** The shop's notification of an offer whose value moved (`old` null: a new offer). */
export function offerChangedEvent(
  code: string,
  title: string | null,
  old: OfferValue | null,
  next: OfferValue,
  updatedAt: Date,
): OutboxEvent {
  return {
    type: 'offer.changed',
    subject: code,
    payload: {
      offer: code,
      title,
      created: old === null,
      sale_price: next.sale_price,
      currency: next.currency,
      available: next.available,
      old_sale_price: old?.sale_price ?? null,
      old_available: old?.available ?? null,
      updated_at: updatedAt.toISOString(),
    },
  };
}

@Injectable()
export class OfferValuation {
  constructor(
    private readonly repo: OfferRepository,
    private readonly outbox: OutboxWriter,
    private readonly registry: SupplierRegistry,
  ) {}

  /** The `UPSTREAM_*` supplier: whose catalog a write that names no supplier is. */
  get envSupplier(): string {
    return this.registry.envName;
  }

  /**
   * Values again the offers with a source among `skuKeys` of `supplier`, inside the caller's
   * transaction (after the SKUs were written). Returns how many offers' values moved.
   */
  async refreshForSkus(em: EntityManager, supplier: string, skuKeys: readonly string[]): Promise<number> {
    const offers = await this.repo.lockBySkus(em, supplier, skuKeys);
    if (offers.length === 0) return 0;
    const sources = await this.repo.sourcesOf(
      em,
      offers.map((o) => o.code),
    );
    const moved: Array<{ offer: OfferRecord; value: OfferValue }> = [];
    for (const offer of offers) {
      const value = valueOffer(sources.get(offer.code) ?? [], offer.operator_sale_price);
      if (valueChanged(offer, value)) moved.push({ offer, value });
    }
    if (moved.length === 0) return 0;
    const now = await this.repo.now(em);
    await this.repo.setValues(
      em,
      moved.map((m) => ({ code: m.offer.code, value: m.value })),
      now,
    );
    await this.outbox.append(
      em,
      moved.map((m) => offerChangedEvent(m.offer.code, m.offer.title, m.offer, m.value, now)),
    );
    return moved.length;
  }
}
