/**
 * Offers of the internal API (CONTRACT §11): create or replace, read, list, delete. A PUT is checked
 * (offer-input.ts: its shape, then its sources against the suppliers and their catalogs), valued from
 * its sources (offer-value.ts) and stored in one transaction that holds its sources' SKU rows (FOR
 * SHARE): a catalog write of one of them waits for it, and then values the new offer itself
 * (OfferValuation), so no change of a source is missed. Nothing is stored when a check fails.
 */
import { Injectable } from '@nestjs/common';
import { DataSource, type EntityManager } from 'typeorm';
import { AppError, badRequest } from '../common/app-error.js';
import { sqlState } from '../database/pg-errors.js';
import { OutboxWriter } from '../notifications/outbox.writer.js';
import { SupplierRegistry } from '../suppliers/supplier-registry.service.js';
import { checkOfferSources, parseOfferInput, sourceKey, type Fields, type OfferInput } from './offer-input.js';
import { valueChanged, valueOffer, type SourceFacts } from './offer-value.js';
import { offerChangedEvent } from './offer-valuation.service.js';
import { OfferRepository, type OfferListFilter, type OfferRecord, type OfferSourceRecord } from './offer.repository.js';

export interface OfferWithSources {
  offer: OfferRecord;
  sources: OfferSourceRecord[];
}

export const offerNotFound = (code: string) => new AppError('offer_not_found', `no offer ${code}`);
const invalid = (fields: Fields) => badRequest(`invalid offer: ${Object.keys(fields).join(', ')}`, fields);

@Injectable()
export class OffersService {
  constructor(
    private readonly dataSource: DataSource,
    private readonly repo: OfferRepository,
    private readonly registry: SupplierRegistry,
    private readonly outbox: OutboxWriter,
  ) {}

  /** Creates or replaces the offer `code`; `created`: it did not exist. */
  async put(code: string, body: unknown): Promise<OfferWithSources & { created: boolean }> {
    const parsed = parseOfferInput(code, body);
    if (!parsed.ok) throw invalid(parsed.fields);
    const input = parsed.input;
    // Another replica may have added a supplier since this one last read them.
    for (const name of new Set(input.sources.map((s) => s.supplier))) {
      if (this.registry.find(name) === undefined) await this.registry.resolve(name).catch(() => undefined);
    }
    const created = await this.retryOnDeadlock(() => this.dataSource.transaction((em) => this.store(em, input)));
    return { ...(await this.get(code)), created };
  }

  private async store(em: EntityManager, input: OfferInput): Promise<boolean> {
    const facts = await this.repo.skuFacts(em, input.sources, { lock: true });
    const fields = checkOfferSources(input.sources, { supplierKnown: (n) => this.registry.find(n) !== undefined, skus: facts });
    if (fields) throw invalid(fields);
    const old = await this.repo.find(input.code, em, { lock: true });
    const value = valueOffer(
      input.sources.map((s) => facts.get(sourceKey(s)) as SourceFacts),
      input.salePrice,
    );
    const moved = valueChanged(old, value);
    const now = moved ? await this.repo.now(em) : null;
    await this.repo.save(
      em,
      { code: input.code, title: input.title, routing: input.routing, operatorSalePrice: input.salePrice, value },
      input.sources,
      now,
    );
    if (now !== null) await this.outbox.append(em, [offerChangedEvent(input.code, input.title, old, value, now)]);
    return old === null;
  }

  async get(code: string): Promise<OfferWithSources> {
    const offer = await this.repo.find(code);
    if (offer === null) throw offerNotFound(code);
    const sources = await this.repo.sourcesOf(this.dataSource.manager, [code]);
    return { offer, sources: sources.get(code) ?? [] };
  }

  async list(filter: OfferListFilter): Promise<{ items: OfferWithSources[]; total: number }> {
    const { items, total } = await this.repo.list(filter);
    const sources = await this.repo.sourcesOf(
      this.dataSource.manager,
      items.map((o) => o.code),
    );
    return { items: items.map((offer) => ({ offer, sources: sources.get(offer.code) ?? [] })), total };
  }

  async delete(code: string): Promise<void> {
    if (!(await this.repo.delete(code))) throw offerNotFound(code);
  }

  /** Two writers of one SKU's rows in different orders: the server aborts one, which is simply done again. */
  private async retryOnDeadlock<T>(fn: () => Promise<T>): Promise<T> {
    for (let attempt = 1; ; attempt++) {
      try {
        return await fn();
      } catch (e) {
        const code = sqlState(e);
        if (attempt >= 3 || (code !== '40P01' && code !== '40001')) throw e;
      }
    }
  }
}
