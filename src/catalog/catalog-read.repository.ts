/**
 * The catalog's reads for its readers: a SKU by reference (a sku_key or a sku_code: the internal API,
 * and the orders engine's SKU columns), the SKU list (with `changed_since` behind the fence of catalog
 * writes), a SKU's history, the sku_code conflicts recorded before SKUs were keyed by product, and the
 * catalog currency. Every supplier's catalog is read (a SKU names its supplier) unless one is named.
 */
import { Injectable } from '@nestjs/common';
import { DataSource, type EntityManager } from 'typeorm';
import { runPrepared } from '../database/prepared-statements.js';
import {
  CURRENCY_KEY,
  currencyKey,
  select,
  toStoredSku,
  writesFence,
  type Db,
  type StoredChange,
  type StoredConflict,
  type StoredSku,
} from './catalog.records.js';
import { codeOfKey, parseSkuKey, resolveSkuRef, type CandidateRef } from './sku-key.js';

/** The columns of a SKU for reading (API, orders). */
const SKU_SELECT = `s.supplier, s.sku_key, s.sku_code, s.upstream_sku_id::text AS upstream_sku_id,
  s.product_id::text AS product_id, s.product_slug,
  s.product_title, s.product_description, s.category_id::text AS category_id, s.spec_values,
  s.cost_price::text AS cost_price, s.sale_price::text AS sale_price, s.original_price::text AS original_price,
  s.member_price::text AS member_price, s.stock_status, s.stock_quantity, s.sku_active, s.product_active,
  s.fulfillment_type, s.manual_form_schema, s.listed, s.available, s.created_at, s.updated_at`;

/**
 * A SKU's columns with its supplier's currency (relay_state key $2 (CURRENCY_KEY) + `:<supplier>`, see
 * currencyKey) and its product's stored fingerprint.
 */
export const SKU_WITH_CURRENCY = `${SKU_SELECT},
  (SELECT value->>'currency' FROM relay_state WHERE key = $2 || ':' || s.supplier) AS relay_currency,
  (SELECT f.fingerprint FROM catalog_product_fingerprints f
    WHERE f.supplier = s.supplier AND f.product_id = s.product_id) AS relay_fingerprint`;

/**
 * The most SKUs a reference reads: enough to resolve it (resolveSkuRef needs the key's SKU, or the
 * first two listed carrying the code, or the first two carrying it), and to name the candidates of an
 * ambiguous code (at most this many).
 */
export const SKU_REF_ROWS = 100;

/**
 * The catalog_skus rows a reference ($1: a sku_key or a plain sku_code) may name, as a subquery, of
 * the supplier named by parameter `supplierParam` (when it is not null; else every supplier's): the
 * SKUs whose key it is first, then those carrying it as their code, listed ones first, by key; at most
 * SKU_REF_ROWS. A code carried by one SKU reads one row, as a catalog of unique codes always did.
 */
export function skusByRef(supplierParam: string): string {
  return `(SELECT x.* FROM catalog_skus x WHERE (x.sku_key = $1 OR x.sku_code = $1) AND (${supplierParam}::text IS NULL OR
    x.supplier = ${supplierParam}::text)
  ORDER BY x.sku_key = $1 DESC, x.listed DESC, x.sku_key, x.supplier LIMIT ${SKU_REF_ROWS})`;
}

/** SKUS_BY_REF of every supplier. */
export const SKUS_BY_REF = `(SELECT x.* FROM catalog_skus x WHERE x.sku_key = $1 OR x.sku_code = $1
  ORDER BY x.sku_key = $1 DESC, x.listed DESC, x.sku_key, x.supplier LIMIT ${SKU_REF_ROWS})`;

const FIND_SKU_WITH_CURRENCY_SQL = `SELECT ${SKU_WITH_CURRENCY} FROM ${skusByRef('$3')} s`;

/** A SKU as an order reads it. */
export interface FoundSku {
  sku: StoredSku;
  currency: string | null;
  productFingerprint: string | null;
}

/** A row read with SKU_WITH_CURRENCY's columns as a FoundSku. */
export function toFoundSku(row: Record<string, unknown>): FoundSku {
  return {
    sku: toStoredSku(row),
    currency: (row.relay_currency as string | null) ?? null,
    productFingerprint: (row.relay_fingerprint as string | null) ?? null,
  };
}

/** What a reference names among the SKUs read for it (see resolveSkuRef in sku-key.ts). */
export type FoundResolution =
  { kind: 'found'; found: FoundSku } | { kind: 'not_found' } | { kind: 'ambiguous'; candidates: CandidateRef[]; listed: boolean };

export function resolveFound(ref: string, rows: readonly FoundSku[]): FoundResolution {
  const r = resolveSkuRef(
    ref,
    rows.map((f) => f.sku),
  );
  return r.kind === 'found' ? { kind: 'found', found: rows.find((f) => f.sku === r.sku)! } : r;
}

export interface SkuListFilter {
  supplier?: string;
  categoryId?: number;
  listed?: boolean;
  available?: boolean;
  changedSince?: Date;
  /**
   * With changedSince: the rows after (changedSince, afterSkuCode) in the order (updated_at,
   * sku_code) instead of those with updated_at after changedSince (keyset following).
   */
  afterSkuCode?: string;
  /**
   * With changedSince: the rows after (changedSince, the key's sku_code, the key's product_id) in the
   * order (updated_at, sku_code, product_id): keyset following that tells apart SKUs of one code.
   */
  afterSkuKey?: string;
  /** With afterSkuKey: the supplier of that SKU (the order's last column), for several suppliers' SKUs of one key and stamp. */
  afterSupplier?: string;
  offset: number;
  limit: number;
}

@Injectable()
export class CatalogReadRepository {
  constructor(private readonly dataSource: DataSource) {}

  private db(em?: Db): Db {
    return em ?? this.dataSource.manager;
  }

  /** A hot statement as a named prepared statement (see runPrepared). */
  private prepared<T>(em: Db, key: string, text: string, params: unknown[]): Promise<T[]> {
    return runPrepared<T>(this.dataSource, em as Partial<EntityManager>, { key, text }, params);
  }

  /**
   * The SKUs a reference (a sku_key or a sku_code) may name, with the currency and their product's
   * fingerprint, in one prepared statement (orders, the SKU API): resolve them with resolveFound.
   */
  async findSkusWithCurrency(ref: string, supplier?: string): Promise<FoundSku[]> {
    const rows = await this.prepared<Record<string, unknown>>(
      this.dataSource.manager,
      'find_sku_with_currency',
      FIND_SKU_WITH_CURRENCY_SQL,
      [ref, CURRENCY_KEY, supplier ?? null],
    );
    return rows.map(toFoundSku);
  }

  /** The (supplier, sku_key, sku_code, listed) of the SKUs each reference may name (SKUS_BY_REF's rows), e.g. for SKU rules. */
  async skusByRefs(
    em: Db | undefined,
    refs: string[],
  ): Promise<Map<string, Array<{ supplier: string; sku_key: string; sku_code: string; listed: boolean }>>> {
    const out = new Map<string, Array<{ supplier: string; sku_key: string; sku_code: string; listed: boolean }>>();
    if (refs.length === 0) return out;
    const rows = await select<{ ref: string; supplier: string; sku_key: string; sku_code: string; listed: boolean }>(
      this.db(em),
      `SELECT r.ref, s.supplier, s.sku_key, s.sku_code, s.listed FROM unnest($1::text[]) AS r(ref)
         CROSS JOIN LATERAL (SELECT x.supplier, x.sku_key, x.sku_code, x.listed FROM catalog_skus x WHERE x.sku_key = r.ref OR
           x.sku_code = r.ref
                              ORDER BY x.sku_key = r.ref DESC, x.listed DESC, x.sku_key, x.supplier LIMIT ${SKU_REF_ROWS}) s`,
      [[...new Set(refs)]],
    );
    for (const r of rows) {
      const list = out.get(r.ref) ?? [];
      list.push({ supplier: r.supplier, sku_key: r.sku_key, sku_code: r.sku_code, listed: r.listed });
      out.set(r.ref, list);
    }
    return out;
  }

  async listSkus(f: SkuListFilter): Promise<{ items: StoredSku[]; total: number }> {
    const where: string[] = [];
    const params: unknown[] = [];
    const p = (v: unknown) => {
      params.push(v);
      return `$${params.length}`;
    };
    if (f.supplier !== undefined) where.push(`s.supplier = ${p(f.supplier)}`);
    if (f.categoryId !== undefined) {
      const id = p(f.categoryId);
      where.push(
        `(s.category_id = ${id} OR s.category_id IN (SELECT c.id FROM catalog_categories c WHERE c.supplier = s.supplier ` +
          `AND c.parent_id = ${id}))`,
      );
    }
    if (f.listed !== undefined) where.push(`s.listed = ${p(f.listed)}`);
    if (f.available !== undefined) where.push(`s.available = ${p(f.available)}`);
    if (f.changedSince !== undefined) {
      // Only what every transaction that began before it has settled: a write stamps its rows with its
      // transaction's start (SkuWriteRepository.transactionNow) and may commit after a later one, so a
      // client that moved its cursor to the newest updated_at it saw would never get the earlier-stamped rows. Rows
      // stamped since the oldest open transaction of the service (its connections, by their
      // application_name: not a backup's or a vacuum's) began show once it ended. Both to the
      // millisecond: an open transaction's rows are stamped at or after the fence's millisecond.
      // The fence is read first, by a statement of its own; the count and the rows, later statements,
      // see every write stamped before it (see WRITES_FENCE_SQL in catalog.records.ts).
      const fence = await writesFence(this.dataSource);
      // Keyset: after (changedSince, afterSkuCode) or (changedSince, code, product of afterSkuKey) in
      // the list's order, which the index catalog_skus_updated (updated_at, sku_code, product_id)
      // serves. Both stamps are to the millisecond, as the API shows them, so a row's updated_at
      // given back equals it exactly.
      const key = f.afterSkuKey !== undefined ? parseSkuKey(f.afterSkuKey) : null;
      if (key && f.afterSupplier !== undefined) {
        where.push(
          `(s.updated_at, s.sku_code, s.product_id, s.supplier) > (${p(f.changedSince)}::timestamptz, ` +
            `${p(key.skuCode)}::text, ${p(key.productId)}::bigint, ${p(f.afterSupplier)}::text)`,
        );
      } else if (key) {
        where.push(
          `(s.updated_at, s.sku_code, s.product_id) > (${p(f.changedSince)}::timestamptz, ${p(key.skuCode)}::text, ` +
            `${p(key.productId)}::bigint)`,
        );
      } else if (f.afterSkuCode !== undefined) {
        where.push(`(s.updated_at, s.sku_code) > (${p(f.changedSince)}::timestamptz, ${p(f.afterSkuCode)}::text)`);
      } else {
        where.push(`s.updated_at > ${p(f.changedSince)}`);
      }
      where.push(`s.updated_at < ${p(fence)}::timestamptz`);
    }
    const clause = where.length ? `WHERE ${where.join(' AND ')}` : '';
    const order =
      f.changedSince !== undefined ? 's.updated_at, s.sku_code, s.product_id, s.supplier' : 's.sku_code, s.product_id, s.supplier';
    const [{ n }] = await select<{ n: number }>(this.db(), `SELECT count(*)::int AS n FROM catalog_skus s ${clause}`, params);
    const rows = await select<Record<string, unknown>>(
      this.db(),
      `SELECT ${SKU_SELECT} FROM catalog_skus s ${clause} ORDER BY ${order} LIMIT ${p(f.limit)} OFFSET ${p(f.offset)}`,
      params,
    );
    return { items: rows.map(toStoredSku), total: n };
  }

  /**
   * A SKU's history (by sku_key), newest first: its rows in catalog_sku_changes (and the rows of its
   * code recorded without a key, which belong to every SKU of that code), then (the oldest entry) its
   * `created` entry, read from the SKU row itself (id null) for SKUs created since migration
   * 20261122008000; older SKUs have theirs as a history row.
   */
  async skuChanges(supplier: string, skuKey: string, offset: number, limit: number): Promise<{ items: StoredChange[]; total: number }> {
    const code = codeOfKey(skuKey);
    const [{ n }] = await select<{ n: number }>(
      this.db(),
      `SELECT (SELECT count(*)::int FROM catalog_sku_changes WHERE supplier = $3 AND (sku_key = $1 OR (sku_key IS NULL AND sku_code = $2)))
            + (SELECT count(*)::int FROM catalog_skus WHERE supplier = $3 AND sku_key = $1 AND created_source IS NOT NULL) AS n`,
      [skuKey, code, supplier],
    );
    const items = await select<StoredChange & { seq: string }>(
      this.db(),
      `SELECT * FROM (
         SELECT c.id AS seq, c.id::text AS id, c.supplier, coalesce(c.sku_key, $1) AS sku_key, c.sku_code, c.field, c.kind,
           c.old_value, c.new_value, c.run_id, c.source, c.changed_at
           FROM catalog_sku_changes c WHERE c.supplier = $5 AND (c.sku_key = $1 OR (c.sku_key IS NULL AND c.sku_code = $4))
         UNION ALL
         SELECT 0, NULL, s.supplier, s.sku_key, s.sku_code, 'created', 'created', NULL, NULL, s.created_run_id, s.created_source,
           s.created_at
           FROM catalog_skus s WHERE s.supplier = $5 AND s.sku_key = $1 AND s.created_source IS NOT NULL
       ) h ORDER BY h.seq DESC LIMIT $2 OFFSET $3`,
      [skuKey, limit, offset, code, supplier],
    );
    return { items: items.map(({ seq: _, ...change }) => change), total: n };
  }

  async conflicts(offset: number, limit: number): Promise<{ items: StoredConflict[]; total: number }> {
    const [{ n }] = await select<{ n: number }>(this.db(), 'SELECT count(*)::int AS n FROM catalog_sku_conflicts');
    const items = await select<StoredConflict>(
      this.db(),
      `SELECT id::text AS id, sku_code, owner_product_id::text AS owner_product_id, claimant_product_id::text AS claimant_product_id,
              claimant_sku_id::text AS claimant_sku_id, run_id, occurrences, first_seen_at, last_seen_at
         FROM catalog_sku_conflicts c ORDER BY c.last_seen_at DESC, c.id DESC LIMIT $1 OFFSET $2`,
      [limit, offset],
    );
    return { items, total: n };
  }

  /** A supplier's catalog currency (its last ping's). */
  async currency(supplier: string, em?: Db): Promise<string | null> {
    const rows = await select<{ currency: string | null }>(
      this.db(em),
      `SELECT value->>'currency' AS currency FROM relay_state WHERE key = $1`,
      [currencyKey(supplier)],
    );
    return rows[0]?.currency ?? null;
  }
}
