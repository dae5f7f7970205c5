/**
 * The `offers` and `offer_sources` tables (migration 20261129134000), and the sources' view of the
 * local catalog: each source's SKU in its supplier's catalog (`catalog_skus` by supplier and sku_key)
 * with its supplier's currency.
 *
 * A supplier's currency is the catalog's (relay_state, set by each sync's ping): the key
 * `catalog.currency:<supplier>`, and for the `UPSTREAM_*` supplier also `catalog.currency`.
 */
import { Injectable } from '@nestjs/common';
import { DataSource, type EntityManager } from 'typeorm';
import { sqlRows } from '../ops/sql.js';
import { SupplierRegistry } from '../suppliers/supplier-registry.service.js';
import { sourceKey, type OfferSourceRef, type Routing } from './offer-input.js';
import type { OfferValue, SourceFacts } from './offer-value.js';

type Db = Pick<EntityManager, 'query'>;

/** relay_state's key of a supplier's catalog currency. */
export const supplierCurrencyKey = (supplier: string): string => `catalog.currency:${supplier}`;
/** The `UPSTREAM_*` supplier's key (the catalog's own, CURRENCY_KEY in catalog/catalog.records.ts). */
const ENV_CURRENCY_KEY = 'catalog.currency';

export interface OfferRecord extends OfferValue {
  code: string;
  title: string | null;
  routing: Routing;
  operator_sale_price: string | null;
  created_at: Date;
  updated_at: Date;
}

/** A source in its offer, with its local view. */
export interface OfferSourceRecord extends SourceFacts {
  offer_code: string;
  position: number;
}

interface OfferRow {
  code: string;
  title: string | null;
  routing: Routing;
  operator_sale_price: string | null;
  sale_price: string | null;
  currency: string | null;
  available: boolean;
  created_at: Date | string;
  updated_at: Date | string;
}

const OFFER_COLUMNS = `code, title, routing, operator_sale_price::text AS operator_sale_price, sale_price::text AS sale_price,
  currency, available, created_at, updated_at`;

const toRecord = (r: OfferRow): OfferRecord => ({
  code: r.code,
  title: r.title,
  routing: r.routing,
  operator_sale_price: r.operator_sale_price,
  sale_price: r.sale_price,
  currency: r.currency,
  available: r.available,
  created_at: new Date(r.created_at),
  updated_at: new Date(r.updated_at),
});

/** A source's SKU and currency; `$env`: the env supplier's name. */
const currencyOf = (supplier: string, env: string) =>
  `coalesce((SELECT value->>'currency' FROM relay_state WHERE key = '${supplierCurrencyKey('')}' || ${supplier}),
    CASE WHEN ${supplier} = ${env} THEN (SELECT value->>'currency' FROM relay_state WHERE key = '${ENV_CURRENCY_KEY}') END)`;

export interface OfferListFilter {
  available?: boolean;
  changedSince?: Date;
  offset: number;
  limit: number;
}

@Injectable()
export class OfferRepository {
  constructor(
    private readonly dataSource: DataSource,
    private readonly registry: SupplierRegistry,
  ) {}

  /**
   * The SKUs of `refs` that their suppliers' catalogs hold, with the currency, by `sourceKey`. With
   * `lock`, their rows are locked FOR SHARE (in one order): a catalog write of one of them waits for
   * the caller's transaction, and the caller reads them after any such write committed.
   */
  async skuFacts(db: Db, refs: readonly OfferSourceRef[], opts: { lock?: boolean } = {}): Promise<Map<string, SourceFacts>> {
    if (refs.length === 0) return new Map();
    const rows = await sqlRows<SourceFacts>(
      db,
      `SELECT s.supplier, s.sku_key, s.cost_price::text AS cost_price, s.sale_price::text AS sale_price, s.available, s.stock_status,
              ${currencyOf('s.supplier', '$2')} AS currency
         FROM catalog_skus s
         JOIN json_to_recordset($1::json) AS r(supplier text, sku_key text) ON r.supplier = s.supplier AND r.sku_key = s.sku_key
        ORDER BY s.supplier, s.sku_key${opts.lock ? ' FOR SHARE OF s' : ''}`,
      [JSON.stringify(refs.map((r) => ({ supplier: r.supplier, sku_key: r.sku_key }))), this.registry.envName],
    );
    return new Map(rows.map((r) => [sourceKey(r), r]));
  }

  /** The sources of these offers in their order, each with its local view (a SKU the catalog lacks: no cost, unavailable). */
  async sourcesOf(db: Db, codes: readonly string[]): Promise<Map<string, OfferSourceRecord[]>> {
    const out = new Map<string, OfferSourceRecord[]>(codes.map((c) => [c, []]));
    if (codes.length === 0) return out;
    const rows = await sqlRows<OfferSourceRecord>(
      db,
      `SELECT o.offer_code, o.position, o.supplier, o.sku_key, s.cost_price::text AS cost_price, s.sale_price::text AS sale_price,
              coalesce(s.available, false) AS available, s.stock_status,
              CASE WHEN s.sku_key IS NULL THEN NULL ELSE ${currencyOf('o.supplier', '$2')} END AS currency
         FROM offer_sources o
         LEFT JOIN catalog_skus s ON s.supplier = o.supplier AND s.sku_key = o.sku_key
        WHERE o.offer_code = ANY($1::text[])
        ORDER BY o.offer_code, o.position`,
      [codes, this.registry.envName],
    );
    for (const r of rows) out.get(r.offer_code)!.push(r);
    return out;
  }

  async find(code: string, db: Db = this.dataSource.manager, opts: { lock?: boolean } = {}): Promise<OfferRecord | null> {
    const rows = await sqlRows<OfferRow>(db, `SELECT ${OFFER_COLUMNS} FROM offers WHERE code = $1${opts.lock ? ' FOR UPDATE' : ''}`, [
      code,
    ]);
    return rows[0] ? toRecord(rows[0]) : null;
  }

  /** The offers with a source among `skuKeys` of `supplier`, locked FOR UPDATE in the order of their codes. */
  async lockBySkus(db: Db, supplier: string, skuKeys: readonly string[]): Promise<OfferRecord[]> {
    if (skuKeys.length === 0) return [];
    const rows = await sqlRows<OfferRow>(
      db,
      `SELECT ${OFFER_COLUMNS} FROM offers
        WHERE code IN (SELECT offer_code FROM offer_sources WHERE supplier = $1 AND sku_key = ANY($2::text[]))
        ORDER BY code FOR UPDATE`,
      [supplier, skuKeys],
    );
    return rows.map(toRecord);
  }

  /** Creates or replaces an offer and its sources; `updatedAt`: when its value moved (else the stored one is kept). */
  async save(
    db: Db,
    offer: { code: string; title: string | null; routing: Routing; operatorSalePrice: string | null; value: OfferValue },
    sources: readonly OfferSourceRef[],
    updatedAt: Date | null,
  ): Promise<void> {
    await db.query(
      `INSERT INTO offers AS o (code, title, routing, operator_sale_price, sale_price, currency, available, created_at, updated_at)
       VALUES ($1, $2, $3, $4::numeric, $5::numeric, $6, $7, coalesce($8::timestamptz, clock_timestamp()),
         coalesce($8::timestamptz, clock_timestamp()))
       ON CONFLICT (code) DO UPDATE SET title = EXCLUDED.title, routing = EXCLUDED.routing, operator_sale_price =
         EXCLUDED.operator_sale_price,
         sale_price = EXCLUDED.sale_price, currency = EXCLUDED.currency, available = EXCLUDED.available,
         updated_at = coalesce($8::timestamptz, o.updated_at)`,
      [
        offer.code,
        offer.title,
        offer.routing,
        offer.operatorSalePrice,
        offer.value.sale_price,
        offer.value.currency,
        offer.value.available,
        updatedAt,
      ],
    );
    await db.query(`DELETE FROM offer_sources WHERE offer_code = $1`, [offer.code]);
    await db.query(
      `INSERT INTO offer_sources (offer_code, position, supplier, sku_key)
       SELECT $1, r.position, r.supplier, r.sku_key FROM json_to_recordset($2::json) AS r(position integer, supplier text, sku_key text)`,
      [offer.code, JSON.stringify(sources.map((s, position) => ({ position, supplier: s.supplier, sku_key: s.sku_key })))],
    );
  }

  /** Writes new values of offers (already locked), stamped with `updatedAt`. */
  async setValues(db: Db, values: ReadonlyArray<{ code: string; value: OfferValue }>, updatedAt: Date): Promise<void> {
    if (values.length === 0) return;
    await db.query(
      `UPDATE offers o SET sale_price = v.sale_price::numeric, currency = v.currency, available = v.available, updated_at = $2::timestamptz
         FROM json_to_recordset($1::json) AS v(code text, sale_price text, currency text, available boolean)
        WHERE o.code = v.code`,
      [JSON.stringify(values.map((v) => ({ code: v.code, ...v.value }))), updatedAt],
    );
  }

  /** The database's clock to the millisecond (offers' `updated_at`, as the catalog's SKUs are stamped). */
  async now(db: Db): Promise<Date> {
    const rows = await sqlRows<{ now: Date | string }>(db, `SELECT date_trunc('milliseconds', clock_timestamp()) AS now`);
    return new Date(rows[0].now);
  }

  async delete(code: string): Promise<boolean> {
    const rows = await sqlRows<{ code: string }>(this.dataSource.manager, `DELETE FROM offers WHERE code = $1 RETURNING code`, [code]);
    return rows.length > 0;
  }

  /** A page of offers: by code, or with `changedSince` those changed later, by (updated_at, code). */
  async list(filter: OfferListFilter): Promise<{ items: OfferRecord[]; total: number }> {
    const where: string[] = [];
    const params: unknown[] = [];
    if (filter.available !== undefined) where.push(`available = $${params.push(filter.available)}`);
    if (filter.changedSince !== undefined) where.push(`updated_at > $${params.push(filter.changedSince)}::timestamptz`);
    const clause = where.length ? `WHERE ${where.join(' AND ')}` : '';
    const order = filter.changedSince !== undefined ? 'updated_at, code' : 'code';
    const db = this.dataSource.manager;
    const [rows, count] = await Promise.all([
      sqlRows<OfferRow>(
        db,
        `SELECT ${OFFER_COLUMNS} FROM offers ${clause} ORDER BY ${order} LIMIT $${params.length + 1} OFFSET $${params.length + 2}`,
        [...params, filter.limit, filter.offset],
      ),
      sqlRows<{ n: number }>(db, `SELECT count(*)::int AS n FROM offers ${clause}`, params),
    ]);
    return { items: rows.map(toRecord), total: count[0].n };
  }
}
