/**
 * The catalog's SKU writes (CatalogWriter's statements): SKU rows by multi-row, diff-guarded upserts or
 * by COPY, the SKU locks every catalog write takes first, product fingerprints and the run's "seen"
 * marks as pages are checked and written, unlisting, repricing and the change history. A SKU is the
 * pair (product_id, sku_code), named by its sku_key (see sku-key.ts): two products carrying one code
 * are two SKUs, within one supplier (CONTRACT §10: every statement names the supplier whose catalog it
 * writes). Every write takes the caller's EntityManager so that it joins the caller's transaction.
 */
import { Injectable } from '@nestjs/common';
import { DataSource, type EntityManager } from 'typeorm';
import type { PoolClient } from 'pg';
import { copyField, copyIn, takesCopyFromStdin } from '../database/copy-in.js';
import { DatabaseEndpoint } from '../database/database-endpoint.js';
import { runPrepared } from '../database/prepared-statements.js';
import { select, toSkuRow, type Db } from './catalog.records.js';
import type { FieldChange, SkuRow } from './sku-diff.js';

/**
 * Writable columns of catalog_skus besides sku_code and `listed`, with their SQL types (sku_key is
 * generated from product_id and sku_code).
 */
const SKU_COLUMNS: ReadonlyArray<readonly [Exclude<keyof SkuRow, 'sku_key' | 'sku_code' | 'listed'>, string]> = [
  ['upstream_sku_id', 'bigint'],
  ['product_id', 'bigint'],
  ['product_slug', 'text'],
  ['product_title', 'jsonb'],
  ['product_description', 'jsonb'],
  ['category_id', 'bigint'],
  ['spec_values', 'jsonb'],
  ['cost_price', 'numeric'],
  ['sale_price', 'numeric'],
  ['original_price', 'numeric'],
  ['member_price', 'numeric'],
  ['stock_status', 'text'],
  ['stock_quantity', 'integer'],
  ['sku_active', 'boolean'],
  ['product_active', 'boolean'],
  ['fulfillment_type', 'text'],
  ['manual_form_schema', 'jsonb'],
];
const COLS = SKU_COLUMNS.map(([c]) => c);
/** The columns an upsert may change: product_id is part of the key. */
const UPDATE_COLS = COLS.filter((c) => c !== 'product_id');
/** The columns that come from the SKU's product: sent once per product, not once per SKU. */
const PRODUCT_COLUMNS: ReadonlySet<string> = new Set([
  'product_slug',
  'product_title',
  'product_description',
  'category_id',
  'product_active',
  'fulfillment_type',
  'manual_form_schema',
]);
const SKU_DEFS = ['sku_code text', ...SKU_COLUMNS.filter(([c]) => !PRODUCT_COLUMNS.has(c)).map(([c, t]) => `${c} ${t}`)].join(', ');
const PRODUCT_DEFS = ['product_id bigint', ...SKU_COLUMNS.filter(([c]) => PRODUCT_COLUMNS.has(c)).map(([c, t]) => `${c} ${t}`)].join(', ');

/** Sets the transaction's commit not to wait for the WAL flush (used as a column of a CTE). */
const ASYNC_COMMIT =
  // The catalog is a copy of the upstream's: a write lost in a crash is made again by the next sync.
  "set_config('synchronous_commit', 'off', true) AS async_commit";

/** A SkuRow as JSON from alias `a` (money as text, so that no digit is lost on the way). */
function rowJson(a: string): string {
  const fields = SKU_COLUMNS.map(([c, t]) => `'${c}', ${a}.${c}${t === 'numeric' ? '::text' : ''}`);
  return `json_build_object('sku_key', ${a}.sku_key, 'sku_code', ${a}.sku_code, ${fields.join(', ')}, 'listed', ${a}.listed)`;
}

/**
 * The first look at a page: (product_id, fingerprint) per product. Marks every product seen by the run
 * and answers those whose fingerprint differs from the one stored (or has none): only they are mapped,
 * priced and compared in full.
 */
const CHECK_PRODUCTS_SQL = `
WITH input AS (SELECT * FROM unnest($1::bigint[], $3::text[]) AS t(product_id, fingerprint)),
seen AS (
  INSERT INTO catalog_sync_seen (run_id, product_id)
  SELECT $2::text, product_id FROM input WHERE $2::text IS NOT NULL
  ON CONFLICT DO NOTHING
)
SELECT i.product_id::text AS product_id FROM input i
  LEFT JOIN catalog_product_fingerprints f ON f.supplier = $4::text AND f.product_id = i.product_id
 WHERE f.fingerprint IS DISTINCT FROM i.fingerprint`;

/**
 * SKU rows in one statement ($1: the SKUs' own fields, $5: their products' fields, once per product;
 * a row seen live is listed when its product is active, as skuRowsFromProduct maps it):
 * insert the new (their creation recorded on the row: run $3, source $6), update the changed (only when a column differs:
 * `IS DISTINCT FROM`, so that `updated_at` moves only when a field does), and return the old row of
 * each write. Nothing is written when the pricing version moved since the sale prices were computed
 * ($4): the caller reprices and retries. `old` is what the statement's snapshot holds: right only once
 * no one else is writing these SKUs, i.e. after LOCK_SKU_CODES_SQL in an earlier statement of the
 * transaction.
 */
const UPSERT_SKUS_SQL = `
WITH input AS (
  SELECT * FROM json_to_recordset($1::json) AS k(${SKU_DEFS})
    JOIN json_to_recordset($5::json) AS p(${PRODUCT_DEFS}) USING (product_id)
),
ver AS (SELECT version FROM catalog_pricing_state WHERE id = 1 FOR SHARE),
ok AS (SELECT coalesce((SELECT version FROM ver) = $4::bigint, false) AS fresh, ${ASYNC_COMMIT}),
old AS (SELECT x.* FROM input i JOIN catalog_skus x ON x.supplier = $7::text AND x.product_id = i.product_id AND x.sku_code = i.sku_code),
up AS (
  INSERT INTO catalog_skus AS s (supplier, sku_code, ${COLS.join(', ')}, listed, created_at, updated_at, created_run_id, created_source)
  SELECT $7::text, i.sku_code, ${COLS.map((c) => `i.${c}`).join(', ')}, i.product_active, $2::timestamptz, $2::timestamptz,
    $3::text, $6::text
    FROM input i WHERE (SELECT fresh FROM ok)
  ON CONFLICT (supplier, product_id, sku_code) DO UPDATE SET ${UPDATE_COLS.map((c) => `${c} = EXCLUDED.${c}`).join(', ')}, listed
    = EXCLUDED.listed, updated_at = EXCLUDED.updated_at
  WHERE (${UPDATE_COLS.map((c) => `s.${c}`).join(', ')}, s.listed) IS DISTINCT FROM
    (${UPDATE_COLS.map((c) => `EXCLUDED.${c}`).join(', ')}, EXCLUDED.listed)
  RETURNING s.sku_key
)
SELECT 'changed' AS what, up.sku_key, CASE WHEN o.sku_key IS NULL THEN NULL ELSE ${rowJson('o')} END AS old, NULL::text AS version
  FROM up LEFT JOIN old o ON o.sku_key = up.sku_key
UNION ALL
SELECT 'stale_pricing', NULL, NULL, (SELECT version FROM ver)::text FROM ok WHERE NOT fresh`;

/**
 * Records the fingerprints of products written in full, and marks every one of them seen by run $2
 * (when given). Returns the products whose fingerprint was not kept.
 * No fingerprint is kept for a product that still has listed SKUs it no longer lists (to be confirmed
 * and unlisted after a complete pass): it is looked at in full again. So a product with a fingerprint
 * has no listed SKU outside its fingerprint's codes.
 */
const WRITE_FINGERPRINTS_SQL = `
WITH given AS (SELECT * FROM json_to_recordset($1::json) AS t(product_id bigint, fingerprint text, sku_codes text[])),
input AS (
  SELECT g.product_id, g.fingerprint, g.sku_codes,
         NOT EXISTS (SELECT 1 FROM catalog_skus s
                      WHERE s.supplier = $4::text AND s.product_id = g.product_id AND s.listed AND NOT (s.sku_code =
                        ANY(g.sku_codes))) AS keep
    FROM given g
),
seen AS (
  INSERT INTO catalog_sync_seen (run_id, product_id)
  SELECT $2::text, product_id FROM input WHERE $2::text IS NOT NULL
  ON CONFLICT DO NOTHING
),
dropped AS (
  DELETE FROM catalog_product_fingerprints f USING input i WHERE f.supplier = $4::text AND f.product_id = i.product_id AND NOT i.keep
),
kept AS (
  INSERT INTO catalog_product_fingerprints AS f (supplier, product_id, fingerprint, sku_codes, updated_at)
  SELECT $4::text, product_id, fingerprint, sku_codes, $3 FROM input WHERE keep
  ON CONFLICT (supplier, product_id) DO UPDATE SET fingerprint = EXCLUDED.fingerprint, sku_codes = EXCLUDED.sku_codes, updated_at
    = EXCLUDED.updated_at
  WHERE (f.fingerprint, f.sku_codes) IS DISTINCT FROM (EXCLUDED.fingerprint, EXCLUDED.sku_codes)
)
SELECT product_id::text AS product_id FROM input WHERE NOT keep`;

/** Namespace (first key) of the SKUs' advisory locks (by sku_key); the migrator's lock is a one-key lock, another space. */
const SKU_CODE_LOCKS = 7_244_102;
/** Namespace of the one lock over every SKU: shared by a write that locks its SKUs, exclusive for one with too many. */
const ALL_SKU_CODES_LOCK = 7_244_103;
/**
 * Above this many SKUs a write takes ALL_SKU_CODES_LOCK exclusively instead of a lock per SKU: the
 * server's lock table is shared and bounded (max_locks_per_transaction × max_connections, ~6,400 by
 * default), and a page batch of a catalog with many SKUs a product could otherwise fill it.
 */
const MAX_CODE_LOCKS = 2000;

/**
 * The locks a catalog write takes before it reads or writes a SKU row, in the one order every catalog
 * write takes them (so that none waits for another in a circle): the pricing version FOR SHARE (a
 * reprice holds it exclusively while it rewrites sale prices), then ALL_SKU_CODES_LOCK (shared; or
 * exclusive, and nothing more, for a write of more than MAX_CODE_LOCKS SKUs), then a
 * transaction-scoped advisory lock per SKU of supplier $3 ($1's keys, and those product $2 lists now, when given) in the
 * order of their hashes, then rows (the statements that follow). Returns the version held.
 * Why: in READ COMMITTED, UPSERT_SKUS_SQL reads `old` with its statement's snapshot. A SKU that a
 * concurrent writer inserted but has not committed is not in it, and ON CONFLICT, once that writer
 * committed, judges the committed row: the same product's second write was then recorded as `created`
 * again. Taken by a statement of their own, the locks start the next statement's snapshot after every
 * competing writer of those SKUs committed. Two keys with one hash only wait for each other (hashes,
 * not keys, are sorted).
 * Each step is an InitPlan of the next (a MATERIALIZED CTE read in a WHERE clause), which runs it first.
 */
function lockSkuCodesSql(asyncCommit: boolean): string {
  return `
WITH ver AS MATERIALIZED (SELECT version FROM catalog_pricing_state WHERE id = 1 FOR SHARE),
keys AS MATERIALIZED (
  SELECT DISTINCT hashtext($3::text || '/' || sku_key) AS key
    FROM (SELECT unnest($1::text[]) AS sku_key
          UNION ALL SELECT s.sku_key FROM catalog_skus s WHERE s.supplier = $3::text AND s.product_id = $2::bigint AND s.listed) skus
   WHERE (SELECT count(*) FROM ver) >= 0),
mode AS MATERIALIZED (SELECT count(*) > ${MAX_CODE_LOCKS} AS exclusive FROM keys),
whole AS MATERIALIZED (
  SELECT CASE WHEN m.exclusive THEN pg_advisory_xact_lock(${ALL_SKU_CODES_LOCK}, 0) ELSE
    pg_advisory_xact_lock_shared(${ALL_SKU_CODES_LOCK}, 0) END AS held, m.exclusive
    FROM mode m)
SELECT v.version::text AS version, date_trunc('milliseconds', transaction_timestamp()) AS now${asyncCommit ? `, ${ASYNC_COMMIT}` : ''},
       (SELECT count(pg_advisory_xact_lock(${SKU_CODE_LOCKS}, k.key))::int
          FROM (SELECT key FROM keys ORDER BY 1) k
         WHERE NOT (SELECT exclusive FROM whole)) AS locked
  FROM ver v`;
}
const LOCK_SKU_CODES_SQL = lockSkuCodesSql(false);
/** The same locks for insertNewSkus, whose transaction then commits asynchronously (as UPSERT_SKUS_SQL's). */
const LOCK_NEW_SKU_CODES_SQL = lockSkuCodesSql(true);
/** catalog_skus's columns in the order insertNewSkus sends them: the product's, then the SKU's own. */
const COPY_PRODUCT_COLUMNS = ['product_id', ...COLS.filter((c) => PRODUCT_COLUMNS.has(c))] as const satisfies ReadonlyArray<keyof SkuRow>;
const COPY_SKU_COLUMNS = COLS.filter((c) => c !== 'product_id' && !PRODUCT_COLUMNS.has(c));
const COPY_SKUS_SQL =
  `COPY catalog_skus (supplier, ${COPY_PRODUCT_COLUMNS.join(', ')}, sku_code, ` +
  `${COPY_SKU_COLUMNS.join(', ')}, listed, created_at, updated_at, created_run_id, created_source) ` +
  `FROM STDIN`;

export interface FingerprintInput {
  productId: number;
  fingerprint: string;
  /** The sku_codes the product lists. */
  skuCodes: string[];
}

export interface UpsertOutcome {
  /** Rows written (by sku_key), with the row before (null: inserted). */
  written: Array<{ skuKey: string; old: SkuRow | null }>;
  /** Set when nothing was written because the pricing version moved: the current version. */
  stalePricing: number | null;
}

export interface HistoryInput {
  skuKey: string;
  skuCode: string;
  change: FieldChange;
}

@Injectable()
export class SkuWriteRepository {
  constructor(
    private readonly dataSource: DataSource,
    private readonly endpoint: DatabaseEndpoint,
  ) {}

  private copyable: Promise<boolean> | null = null;

  /** Whether new rows can be sent with COPY: a PostgreSQL server, not PGlite (see copy-in.ts). Asked once. */
  canCopy(): Promise<boolean> {
    this.copyable ??=
      this.endpoint.kind === 'pglite'
        ? Promise.resolve(false)
        : takesCopyFromStdin(this.dataSource).catch((e: unknown) => {
            this.copyable = null; // asked again next time
            throw e;
          });
    return this.copyable;
  }

  /** A hot statement as a named prepared statement (see runPrepared). */
  private prepared<T>(em: Db, key: string, text: string, params: unknown[]): Promise<T[]> {
    return runPrepared<T>(this.dataSource, em as Partial<EntityManager>, { key, text }, params);
  }

  /**
   * First look at products seen live, by fingerprint: marks them seen by run `seenBy` (when given) and
   * returns the ids of those that must be looked at in full.
   */
  async checkProducts(
    em: Db,
    supplier: string,
    items: Array<{ productId: number; fingerprint: string }>,
    seenBy: string | null,
  ): Promise<Set<number>> {
    if (items.length === 0) return new Set();
    const unique = new Map(items.map((i) => [i.productId, i]));
    const ids: number[] = [];
    const fingerprints: string[] = [];
    for (const i of unique.values()) {
      ids.push(i.productId);
      fingerprints.push(i.fingerprint);
    }
    // Arrays, not a JSON document: the prepared statement's generic plan estimates `unnest` of a
    // parameter at a few rows and looks each product up by key, where json_to_recordset (estimated at
    // 100 rows) would have it scan every stored fingerprint for every page, a cost that grows with the
    // catalog.
    const rows = await this.prepared<{ product_id: string }>(em, 'check_products', CHECK_PRODUCTS_SQL, [
      ids,
      seenBy,
      fingerprints,
      supplier,
    ]);
    return new Set(rows.map((r) => Number(r.product_id)));
  }

  /**
   * Fingerprints of products written in full; marks them seen by run `seenBy` (when given). Returns
   * the products whose fingerprint was not kept.
   */
  async writeFingerprints(
    em: Db,
    supplier: string,
    items: FingerprintInput[],
    opts: { seenBy: string | null; now: Date },
  ): Promise<number[]> {
    if (items.length === 0) return [];
    const unique = new Map(items.map((i) => [i.productId, i]));
    const rows = await this.prepared<{ product_id: string }>(em, 'write_fingerprints', WRITE_FINGERPRINTS_SQL, [
      JSON.stringify([...unique.values()].map((i) => ({ product_id: i.productId, fingerprint: i.fingerprint, sku_codes: i.skuCodes }))),
      opts.seenBy,
      opts.now,
      supplier,
    ]);
    return rows.map((r) => Number(r.product_id));
  }

  /**
   * Takes the locks of LOCK_SKU_CODES_SQL in the caller's transaction: the pricing version, then the
   * SKUs `keys` and those product `listedOf` lists now (to be unlisted). A catalog write takes them
   * before its first statement that reads or writes SKU rows. Returns the pricing version held.
   */
  async lockSkuCodes(
    em: Db,
    supplier: string,
    keys: string[],
    opts: { listedOf?: number | null } = {},
  ): Promise<{ version: number; now: Date }> {
    const [row] = await this.prepared<{ version: string; now: Date }>(em, 'lock_sku_codes', LOCK_SKU_CODES_SQL, [
      keys,
      opts.listedOf ?? null,
      supplier,
    ]);
    return { version: Number(row?.version), now: row.now };
  }

  /**
   * The time a catalog write stamps its rows with (`updated_at`, history, notifications): its
   * transaction's start on the database's clock, never later than its commit, which the fence of
   * `changed_since` relies on (see CatalogReadRepository.listSkus); to the millisecond, as the API
   * shows it (a cursor taken from the API then leaves no row of its own millisecond behind it).
   * lockSkuCodes returns it too.
   */
  async transactionNow(em: Db): Promise<Date> {
    const [row] = await this.prepared<{ now: Date }>(
      em,
      'transaction_now',
      "SELECT date_trunc('milliseconds', transaction_timestamp()) AS now",
      [],
    );
    return row.now;
  }

  /**
   * Upserts rows (distinct SKUs) seen live, guarded by the pricing version they were priced
   * with. `runId`: the run their history rows belong to. The caller holds their SKUs' locks
   * (lockSkuCodes, an earlier statement of its transaction): see LOCK_SKU_CODES_SQL.
   */
  async upsertSkus(
    em: Db,
    rows: SkuRow[],
    opts: { supplier: string; now: Date; runId: string | null; pricingVersion: number; source: string },
  ): Promise<UpsertOutcome> {
    const out: UpsertOutcome = { written: [], stalePricing: null };
    if (rows.length === 0) return out;
    const skus: Array<Record<string, unknown>> = [];
    const products = new Map<number, Record<string, unknown>>();
    for (const r of rows) {
      skus.push({
        sku_code: r.sku_code,
        upstream_sku_id: r.upstream_sku_id,
        product_id: r.product_id,
        spec_values: r.spec_values,
        cost_price: r.cost_price,
        sale_price: r.sale_price,
        original_price: r.original_price,
        member_price: r.member_price,
        stock_status: r.stock_status,
        stock_quantity: r.stock_quantity,
        sku_active: r.sku_active,
      });
      if (!products.has(r.product_id)) {
        products.set(r.product_id, {
          product_id: r.product_id,
          product_slug: r.product_slug,
          product_title: r.product_title,
          product_description: r.product_description,
          category_id: r.category_id,
          product_active: r.product_active,
          fulfillment_type: r.fulfillment_type,
          manual_form_schema: r.manual_form_schema,
        });
      }
    }
    const result = await this.prepared<{
      what: string;
      sku_key: string | null;
      old: Record<string, unknown> | null;
      version: string | null;
    }>(em, 'upsert_skus', UPSERT_SKUS_SQL, [
      JSON.stringify(skus),
      opts.now,
      opts.runId,
      opts.pricingVersion,
      JSON.stringify([...products.values()]),
      opts.source,
      opts.supplier,
    ]);
    for (const r of result) {
      if (r.what === 'changed') out.written.push({ skuKey: r.sku_key!, old: r.old ? toSkuRow(r.old) : null });
      else if (r.what === 'stale_pricing') out.stalePricing = Number(r.version);
    }
    return out;
  }

  /**
   * Inserts rows (distinct SKUs) believed new, their creation recorded on the row, by COPY: what
   * UPSERT_SKUS_SQL does for new rows, at a fraction of the server's work (a first sync). Guarded by
   * the pricing version as the upsert is. A SKU already stored fails the statement (unique
   * violation, SQLSTATE 23505) and with it the caller's transaction: the caller writes the rows again
   * with upsertSkus, which sorts out the changes. Only on a PostgreSQL server (canCopy), in a
   * transaction. Takes the locks of LOCK_SKU_CODES_SQL for its SKUs first (in the statement that holds
   * the pricing version), so that a COPY and an upsert of one SKU wait for each other.
   */
  async insertNewSkus(
    em: EntityManager,
    rows: SkuRow[],
    opts: { supplier: string; now: Date; runId: string | null; pricingVersion: number; source: string },
  ): Promise<UpsertOutcome> {
    const out: UpsertOutcome = { written: [], stalePricing: null };
    if (rows.length === 0) return out;
    const runner = em.queryRunner;
    if (!runner || !(await this.canCopy())) throw new Error('insertNewSkus needs a transaction on a PostgreSQL server');
    const [state] = await this.prepared<{ version: string }>(em, 'lock_new_sku_codes', LOCK_NEW_SKU_CODES_SQL, [
      rows.map((r) => r.sku_key),
      null,
      opts.supplier,
    ]);
    const version = Number(state?.version);
    if (version !== opts.pricingVersion) return { ...out, stalePricing: version };
    // A product's columns are formatted once for all its SKUs (a product's rows are consecutive).
    const tail = `\t${copyField(opts.now)}\t${copyField(opts.now)}\t${copyField(opts.runId)}\t${copyField(opts.source)}\n`;
    const supplier = copyField(opts.supplier) + '\t';
    let skus = '';
    let product: SkuRow | null = null;
    let productText = '';
    for (const r of rows) {
      if (product === null || r.product_id !== product.product_id) {
        product = r;
        productText = COPY_PRODUCT_COLUMNS.map((c) => copyField(r[c])).join('\t');
      }
      const code = copyField(r.sku_code);
      skus += supplier + productText + '\t' + code;
      for (const c of COPY_SKU_COLUMNS) skus += '\t' + copyField(r[c]);
      skus += '\t' + copyField(r.listed) + tail;
      out.written.push({ skuKey: r.sku_key, old: null });
    }
    const client = (await runner.connect()) as PoolClient;
    await copyIn(client, COPY_SKUS_SQL, skus);
    return out;
  }

  /**
   * Unlists the listed SKUs of a product (all of them, or those not in `keep`). Returns their rows
   * as they were before.
   */
  async unlistProductSkus(em: Db, supplier: string, productId: number, opts: { now: Date; keep?: string[] }): Promise<SkuRow[]> {
    const rows = await select<{ row: Record<string, unknown> }>(
      em,
      `WITH u AS (
         UPDATE catalog_skus s SET listed = false, updated_at = $2
          WHERE s.supplier = $4 AND s.product_id = $1 AND s.listed AND ($3::text[] IS NULL OR NOT (s.sku_code = ANY($3::text[])))
          RETURNING ${rowJson('s')} AS row),
       -- Looked at in full the next time it is seen (e.g. relisted with the very same data).
       f AS (DELETE FROM catalog_product_fingerprints WHERE supplier = $4 AND product_id = $1 AND EXISTS (SELECT 1 FROM u))
       SELECT row FROM u`,
      [productId, opts.now, opts.keep ?? null, supplier],
    );
    return rows.map((r) => ({ ...toSkuRow(r.row), listed: true }));
  }

  /**
   * The locks of a write of every SKU (a supplier's whole catalog unlisted): the pricing version FOR
   * SHARE, then ALL_SKU_CODES_LOCK exclusively (every other catalog write waits). Returns the stamp.
   */
  async lockAllSkus(em: Db): Promise<Date> {
    const [row] = await select<{ now: Date }>(
      em,
      `WITH ver AS MATERIALIZED (SELECT version FROM catalog_pricing_state WHERE id = 1 FOR SHARE)
       SELECT date_trunc('milliseconds', transaction_timestamp()) AS now, pg_advisory_xact_lock(${ALL_SKU_CODES_LOCK}, 0) AS held
         FROM ver`,
    );
    return row.now;
  }

  /** Unlists every listed SKU of a supplier and drops its fingerprints. Returns the rows as they were. */
  async unlistSupplierSkus(em: Db, supplier: string, now: Date): Promise<SkuRow[]> {
    const rows = await select<{ row: Record<string, unknown> }>(
      em,
      `WITH u AS (
         UPDATE catalog_skus s SET listed = false, updated_at = $2 WHERE s.supplier = $1 AND s.listed
          RETURNING ${rowJson('s')} AS row),
       f AS (DELETE FROM catalog_product_fingerprints WHERE supplier = $1)
       SELECT row FROM u`,
      [supplier, now],
    );
    return rows.map((r) => ({ ...toSkuRow(r.row), listed: true }));
  }

  /** Sets new sale prices, only where different. Returns the SKUs written, as `<supplier>/<sku_key>`. */
  async setSalePrices(em: Db, prices: Array<{ supplier: string; sku_key: string; sale_price: string }>, now: Date): Promise<string[]> {
    if (prices.length === 0) return [];
    const rows = await select<{ id: string }>(
      em,
      `WITH u AS (
         UPDATE catalog_skus s SET sale_price = v.sale_price, updated_at = $2
           FROM json_to_recordset($1::json) AS v(supplier text, sku_key text, sale_price numeric)
          WHERE s.supplier = v.supplier AND s.sku_key = v.sku_key AND s.sale_price IS DISTINCT FROM v.sale_price
          RETURNING s.supplier || '/' || s.sku_key AS id)
       SELECT id FROM u`,
      [JSON.stringify(prices), now],
    );
    return rows.map((r) => r.id);
  }

  /** A batch of SKUs (every supplier's) in (supplier, sku_key) order after `after`, for repricing. */
  async skuBatch(em: Db, after: { supplier: string; skuKey: string }, limit: number): Promise<Array<SkuRow & { supplier: string }>> {
    const rows = await select<{ supplier: string; row: Record<string, unknown> }>(
      em,
      `SELECT s.supplier, ${rowJson('s')} AS row FROM catalog_skus s WHERE (s.supplier, s.sku_key) > ($1::text, $2::text)
        ORDER BY s.supplier, s.sku_key LIMIT $3`,
      [after.supplier, after.skuKey, limit],
    );
    return rows.map((r) => ({ ...toSkuRow(r.row), supplier: r.supplier }));
  }

  async appendHistory(
    em: Db,
    entries: HistoryInput[],
    opts: { supplier: string; runId: string | null; source: string; now: Date },
  ): Promise<void> {
    if (entries.length === 0) return;
    const payload = entries.map((e) => ({
      sku_key: e.skuKey,
      sku_code: e.skuCode,
      field: e.change.field,
      kind: e.change.kind,
      old_value: e.change.old ?? null,
      new_value: e.change.new ?? null,
    }));
    await em.query(
      `INSERT INTO catalog_sku_changes (supplier, sku_key, sku_code, field, kind, old_value, new_value, run_id, source, changed_at)
       SELECT $5, sku_key, sku_code, field, kind, old_value, new_value, $2, $3, $4
         FROM json_to_recordset($1::json) AS t(sku_key text, sku_code text, field text, kind text, old_value jsonb, new_value jsonb)`,
      [JSON.stringify(payload), opts.runId, opts.source, opts.now, opts.supplier],
    );
  }
}
