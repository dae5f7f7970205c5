/**
 * SQL of the local catalog: SKUs (multi-row, diff-guarded upserts), product fingerprints, categories,
 * the change history, sku_code conflicts, the per-run "seen" set and the catalog currency. Every write takes the caller's
 * EntityManager so that it joins the caller's transaction. Rows leave as plain objects; money stays a
 * string (`numeric::text`).
 */
import { Injectable } from '@nestjs/common';
import { DataSource, type EntityManager } from 'typeorm';
import type { PoolClient } from 'pg';
import { copyField, copyIn, takesCopyFromStdin } from '../database/copy-in.js';
import { DatabaseEndpoint } from '../database/database-endpoint.js';
import { runPrepared } from '../database/prepared-statements.js';
import type { UpstreamCategory } from '../upstream/upstream.types.js';
import type { ChangeKind, FieldChange, SkuRow } from './sku-diff.js';

type Db = Pick<EntityManager, 'query'>;

/** Writable columns of catalog_skus besides the key and `listed`, with their SQL types. */
const SKU_COLUMNS: ReadonlyArray<readonly [Exclude<keyof SkuRow, 'sku_code' | 'listed'>, string]> = [
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
  return `json_build_object('sku_code', ${a}.sku_code, ${fields.join(', ')}, 'listed', ${a}.listed)`;
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
  LEFT JOIN catalog_product_fingerprints f ON f.product_id = i.product_id
 WHERE f.fingerprint IS DISTINCT FROM i.fingerprint`;

/**
 * SKU rows in one statement ($1: the SKUs' own fields, $5: their products' fields, once per product):
 * insert the new (their creation recorded on the row: run $3, source $6), update the changed (only when a column differs:
 * `IS DISTINCT FROM`, so that `updated_at` moves only when a field does), and return the old row of
 * each write and every sku_code another live product already owns (never overwritten). Nothing is
 * written when the pricing version moved since the sale prices were computed ($4): the caller reprices
 * and retries. `old` is what the statement's snapshot holds: right only once no one else is writing
 * these codes, i.e. after LOCK_SKU_CODES_SQL in an earlier statement of the transaction.
 */
const UPSERT_SKUS_SQL = `
WITH input AS (
  SELECT * FROM json_to_recordset($1::json) AS k(${SKU_DEFS})
    JOIN json_to_recordset($5::json) AS p(${PRODUCT_DEFS}) USING (product_id)
),
ver AS (SELECT version FROM catalog_pricing_state WHERE id = 1 FOR SHARE),
ok AS (SELECT coalesce((SELECT version FROM ver) = $4::bigint, false) AS fresh, ${ASYNC_COMMIT}),
old AS (SELECT s.* FROM input i CROSS JOIN LATERAL (SELECT * FROM catalog_skus x WHERE x.sku_code = i.sku_code LIMIT 1) s),
up AS (
  INSERT INTO catalog_skus AS s (sku_code, ${COLS.join(', ')}, listed, created_at, updated_at, created_run_id, created_source)
  SELECT i.sku_code, ${COLS.map((c) => `i.${c}`).join(', ')}, true, $2::timestamptz, $2::timestamptz, $3::text, $6::text
    FROM input i WHERE (SELECT fresh FROM ok)
  ON CONFLICT (sku_code) DO UPDATE SET ${COLS.map((c) => `${c} = EXCLUDED.${c}`).join(', ')}, listed = true, updated_at = EXCLUDED.updated_at
  WHERE (s.product_id = EXCLUDED.product_id OR NOT s.listed)
    AND (${COLS.map((c) => `s.${c}`).join(', ')}, s.listed) IS DISTINCT FROM (${COLS.map((c) => `EXCLUDED.${c}`).join(', ')}, true)
  RETURNING s.sku_code
)
SELECT 'changed' AS what, up.sku_code, CASE WHEN o.sku_code IS NULL THEN NULL ELSE ${rowJson('o')} END AS old, NULL::text AS owner
  FROM up LEFT JOIN old o ON o.sku_code = up.sku_code
UNION ALL
SELECT 'conflict', i.sku_code, NULL, o.product_id::text
  FROM input i JOIN old o ON o.sku_code = i.sku_code
 WHERE (SELECT fresh FROM ok) AND o.product_id <> i.product_id AND o.listed
UNION ALL
SELECT 'stale_pricing', NULL, NULL, (SELECT version FROM ver)::text FROM ok WHERE NOT fresh`;

/**
 * Records the fingerprints of products written in full, and marks every one of them seen by run $2
 * (when given). Returns the products whose fingerprint was not kept.
 * No fingerprint is kept for a product that claims a code another product owns (a conflict), nor for
 * one that still has listed SKUs it no longer lists (to be confirmed and unlisted after a complete
 * pass): both are looked at in full again. So a product with a fingerprint has no listed SKU outside
 * its fingerprint's codes.
 */
const WRITE_FINGERPRINTS_SQL = `
WITH given AS (SELECT * FROM json_to_recordset($1::json) AS t(product_id bigint, fingerprint text, sku_codes text[], keep boolean)),
input AS (
  SELECT g.product_id, g.fingerprint, g.sku_codes,
         g.keep AND NOT EXISTS (SELECT 1 FROM catalog_skus s
                                 WHERE s.product_id = g.product_id AND s.listed AND NOT (s.sku_code = ANY(g.sku_codes))) AS keep
    FROM given g
),
seen AS (
  INSERT INTO catalog_sync_seen (run_id, product_id)
  SELECT $2::text, product_id FROM input WHERE $2::text IS NOT NULL
  ON CONFLICT DO NOTHING
),
dropped AS (
  DELETE FROM catalog_product_fingerprints f USING input i WHERE f.product_id = i.product_id AND NOT i.keep
),
kept AS (
  INSERT INTO catalog_product_fingerprints AS f (product_id, fingerprint, sku_codes, updated_at)
  SELECT product_id, fingerprint, sku_codes, $3 FROM input WHERE keep
  ON CONFLICT (product_id) DO UPDATE SET fingerprint = EXCLUDED.fingerprint, sku_codes = EXCLUDED.sku_codes, updated_at = EXCLUDED.updated_at
  WHERE (f.fingerprint, f.sku_codes) IS DISTINCT FROM (EXCLUDED.fingerprint, EXCLUDED.sku_codes)
)
SELECT product_id::text AS product_id FROM input WHERE NOT keep`;

/** Namespace (first key) of the sku_codes' advisory locks; the migrator's lock is a one-key lock, another space. */
const SKU_CODE_LOCKS = 7_244_102;
/** Namespace of the one lock over every sku_code: shared by a write that locks its codes, exclusive for one with too many. */
const ALL_SKU_CODES_LOCK = 7_244_103;
/**
 * Above this many codes a write takes ALL_SKU_CODES_LOCK exclusively instead of a lock per code: the
 * server's lock table is shared and bounded (max_locks_per_transaction × max_connections, ~6,400 by
 * default), and a page batch of a catalog with many SKUs a product could otherwise fill it.
 */
const MAX_CODE_LOCKS = 2000;

/**
 * The locks a catalog write takes before it reads or writes a SKU row, in the one order every catalog
 * write takes them (so that none waits for another in a circle): the pricing version FOR SHARE (a
 * reprice holds it exclusively while it rewrites sale prices), then ALL_SKU_CODES_LOCK (shared; or
 * exclusive, and nothing more, for a write of more than MAX_CODE_LOCKS codes), then a
 * transaction-scoped advisory lock per sku_code ($1, and those product $2 lists now, when given) in the
 * order of their keys, then rows (the statements that follow). Returns the version held.
 * Why: in READ COMMITTED, UPSERT_SKUS_SQL reads `old` with its statement's snapshot. A code that a
 * concurrent writer inserted but has not committed is not in it, and ON CONFLICT, once that writer
 * committed, judges the committed row: another product's claim was then reported neither as a change
 * nor as a conflict, and the same product's second write as `created` again. Taken by a statement of
 * their own, the locks start the next statement's snapshot after every competing writer of those codes
 * committed. Two codes with one key only wait for each other (keys, not codes, are sorted).
 * Each step is an InitPlan of the next (a MATERIALIZED CTE read in a WHERE clause), which runs it first.
 */
function lockSkuCodesSql(asyncCommit: boolean): string {
  return `
WITH ver AS MATERIALIZED (SELECT version FROM catalog_pricing_state WHERE id = 1 FOR SHARE),
keys AS MATERIALIZED (
  SELECT DISTINCT hashtext(code) AS key
    FROM (SELECT unnest($1::text[]) AS code
          UNION ALL SELECT s.sku_code FROM catalog_skus s WHERE s.product_id = $2::bigint AND s.listed) codes
   WHERE (SELECT count(*) FROM ver) >= 0),
mode AS MATERIALIZED (SELECT count(*) > ${MAX_CODE_LOCKS} AS exclusive FROM keys),
whole AS MATERIALIZED (
  SELECT CASE WHEN m.exclusive THEN pg_advisory_xact_lock(${ALL_SKU_CODES_LOCK}, 0) ELSE pg_advisory_xact_lock_shared(${ALL_SKU_CODES_LOCK}, 0) END AS held, m.exclusive
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
const COPY_SKUS_SQL = `COPY catalog_skus (${COPY_PRODUCT_COLUMNS.join(', ')}, sku_code, ${COPY_SKU_COLUMNS.join(', ')}, listed, created_at, updated_at, created_run_id, created_source) FROM STDIN`;

/**
 * The fence of catalog writes (changed_since, a full pass's start read): the earliest start of the
 * service's transactions still open (its connections, by their application_name: not a backup's or a
 * vacuum's), or the statement's own time, to the millisecond. A write stamps its rows with its
 * transaction's start, so a write stamped before the fence had committed (or ended) when this
 * statement looked at pg_stat_activity.
 *
 * It must be read by a statement of its own, BEFORE the statement that reads the rows, and the two
 * must not share a snapshot (no REPEATABLE READ transaction around them; autocommit statements, as
 * CatalogRepository.writesFence runs it, each take their own). Read in the rows' statement, the fence
 * came after that statement's snapshot: a write that committed in between was neither in the snapshot
 * nor open any more, the fence moved past its stamp, and a follower's cursor skipped its rows for good
 * (test/catalog-changes-fence.e2e-spec.ts). Read first, every write the fence no longer counts as open has
 * committed before the later statement's snapshot, which therefore sees it.
 */
const WRITES_FENCE_SQL = `SELECT date_trunc('milliseconds', LEAST(statement_timestamp(), (SELECT min(a.xact_start) FROM pg_stat_activity a
  WHERE a.datname = current_database() AND a.pid <> pg_backend_pid() AND a.application_name = current_setting('application_name')))) AS fence`;

/** The columns of a SKU for reading (API, orders). */
const SKU_SELECT = `s.sku_code, s.upstream_sku_id::text AS upstream_sku_id, s.product_id::text AS product_id, s.product_slug,
  s.product_title, s.product_description, s.category_id::text AS category_id, s.spec_values,
  s.cost_price::text AS cost_price, s.sale_price::text AS sale_price, s.original_price::text AS original_price,
  s.member_price::text AS member_price, s.stock_status, s.stock_quantity, s.sku_active, s.product_active,
  s.fulfillment_type, s.manual_form_schema, s.listed, s.available, s.created_at, s.updated_at`;

/** A SKU's columns with the currency (relay_state key $2) and its product's stored fingerprint. */
const SKU_WITH_CURRENCY = `${SKU_SELECT},
  (SELECT value->>'currency' FROM relay_state WHERE key = $2) AS relay_currency,
  (SELECT f.fingerprint FROM catalog_product_fingerprints f WHERE f.product_id = s.product_id) AS relay_fingerprint`;

const FIND_SKU_WITH_CURRENCY_SQL = `SELECT ${SKU_WITH_CURRENCY} FROM catalog_skus s WHERE s.sku_code = $1`;

/**
 * An order's first read, in one statement (one round trip less for every order placed): the SKU as
 * FIND_SKU_WITH_CURRENCY_SQL reads it (its columns null when there is no such code) and whether the
 * order's `shop_order_no` is already recorded (a replay: the orders module then reads the order).
 */
const FIND_SKU_FOR_ORDER_SQL = `SELECT ${SKU_WITH_CURRENCY},
  EXISTS (SELECT 1 FROM orders o WHERE o.shop_order_no = $3) AS relay_order_recorded
  FROM (SELECT 1) AS one LEFT JOIN catalog_skus s ON s.sku_code = $1`;

/** A SKU as an order reads it. */
export interface FoundSku {
  sku: StoredSku;
  currency: string | null;
  productFingerprint: string | null;
}

function toFoundSku(row: Record<string, unknown>): FoundSku {
  return { sku: toStoredSku(row), currency: (row.relay_currency as string | null) ?? null, productFingerprint: (row.relay_fingerprint as string | null) ?? null };
}

export interface StoredSku extends SkuRow {
  available: boolean;
  created_at: Date;
  updated_at: Date;
}

export interface FingerprintInput {
  productId: number;
  fingerprint: string;
  /** The sku_codes the product lists. */
  skuCodes: string[];
  /** False: the product claims a code another product owns; no fingerprint is kept. */
  keep: boolean;
}

export interface UpsertOutcome {
  /** Rows written, with the row before (null: inserted). */
  written: Array<{ skuCode: string; old: SkuRow | null }>;
  /** sku_codes claimed by this input but owned by another listed product. */
  conflicts: Array<{ skuCode: string; ownerProductId: number }>;
  /** Set when nothing was written because the pricing version moved: the current version. */
  stalePricing: number | null;
}

export interface ConflictInput {
  skuCode: string;
  ownerProductId: number;
  claimantProductId: number;
  claimantSkuId: number | null;
}

export interface HistoryInput {
  skuCode: string;
  change: FieldChange;
}

export interface StoredCategory {
  id: number;
  parent_id: number;
  slug: string;
  name: Record<string, string>;
  icon: string;
  sort_order: number;
  listed: boolean;
  updated_at: Date;
}

export interface SkuListFilter {
  categoryId?: number;
  listed?: boolean;
  available?: boolean;
  changedSince?: Date;
  /**
   * With changedSince: the rows after (changedSince, afterSkuCode) in the order (updated_at,
   * sku_code) instead of those with updated_at after changedSince (keyset following).
   */
  afterSkuCode?: string;
  offset: number;
  limit: number;
}

export interface StoredChange {
  /** Null for the `created` entry read from the SKU row. */
  id: string | null;
  sku_code: string;
  field: string;
  kind: ChangeKind;
  old_value: unknown;
  new_value: unknown;
  run_id: string | null;
  source: string;
  changed_at: Date;
}

/** The fingerprints stored at a full pass's start (CatalogRepository.fingerprintIndex). */
export interface FingerprintIndex {
  fingerprints: Map<number, string>;
  /** Every write the read did not see is stamped at or after it. */
  fence: Date;
}

export interface StoredConflict {
  id: string;
  sku_code: string;
  owner_product_id: string;
  claimant_product_id: string;
  claimant_sku_id: string | null;
  run_id: string | null;
  occurrences: number;
  first_seen_at: Date;
  last_seen_at: Date;
}

const CURRENCY_KEY = 'catalog.currency';

function toSkuRow(raw: Record<string, unknown>): SkuRow {
  return {
    ...(raw as unknown as SkuRow),
    upstream_sku_id: Number(raw.upstream_sku_id),
    product_id: Number(raw.product_id),
    category_id: Number(raw.category_id),
  };
}

function toStoredSku(raw: Record<string, unknown>): StoredSku {
  return { ...toSkuRow(raw), available: Boolean(raw.available), created_at: raw.created_at as Date, updated_at: raw.updated_at as Date };
}

/** Rows of a query whose top-level command is a SELECT (UPDATE … RETURNING goes through a CTE). */
async function select<T>(db: Db, sql: string, params: unknown[] = []): Promise<T[]> {
  return (await db.query(sql, params)) as T[];
}

@Injectable()
export class CatalogRepository {
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

  private db(em?: Db): Db {
    return em ?? this.dataSource.manager;
  }

  /** A hot statement as a named prepared statement (see runPrepared). */
  private prepared<T>(em: Db, key: string, text: string, params: unknown[]): Promise<T[]> {
    return runPrepared<T>(this.dataSource, em as Partial<EntityManager>, { key, text }, params);
  }

  // ---------------------------------------------------------------------------------- SKU writes

  /**
   * First look at products seen live, by fingerprint: marks them seen by run `seenBy` (when given) and
   * returns the ids of those that must be looked at in full.
   */
  async checkProducts(em: Db, items: Array<{ productId: number; fingerprint: string }>, seenBy: string | null): Promise<Set<number>> {
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
    // 100 rows) had it scan every stored fingerprint for every page (measured on PostgreSQL, 20,000
    // fingerprints, 50 products: 0.43 ms instead of 2.3 ms a page, and no longer growing with the catalog).
    const rows = await this.prepared<{ product_id: string }>(em, 'check_products', CHECK_PRODUCTS_SQL, [ids, seenBy, fingerprints]);
    return new Set(rows.map((r) => Number(r.product_id)));
  }

  /**
   * Fingerprints of products written in full; marks them seen by run `seenBy` (when given). Returns
   * the products whose fingerprint was not kept.
   */
  async writeFingerprints(em: Db, items: FingerprintInput[], opts: { seenBy: string | null; now: Date }): Promise<number[]> {
    if (items.length === 0) return [];
    const unique = new Map(items.map((i) => [i.productId, i]));
    const rows = await this.prepared<{ product_id: string }>(em, 'write_fingerprints', WRITE_FINGERPRINTS_SQL, [
      JSON.stringify([...unique.values()].map((i) => ({ product_id: i.productId, fingerprint: i.fingerprint, sku_codes: i.skuCodes, keep: i.keep }))),
      opts.seenBy,
      opts.now,
    ]);
    return rows.map((r) => Number(r.product_id));
  }

  /**
   * Takes the locks of LOCK_SKU_CODES_SQL in the caller's transaction: the pricing version, then
   * `codes` and the codes product `listedOf` lists now (to be unlisted). A catalog write takes them
   * before its first statement that reads or writes SKU rows. Returns the pricing version held.
   */
  async lockSkuCodes(em: Db, codes: string[], opts: { listedOf?: number | null } = {}): Promise<{ version: number; now: Date }> {
    const [row] = await this.prepared<{ version: string; now: Date }>(em, 'lock_sku_codes', LOCK_SKU_CODES_SQL, [codes, opts.listedOf ?? null]);
    return { version: Number(row?.version), now: row.now };
  }

  /**
   * The time a catalog write stamps its rows with (`updated_at`, history, notifications): its
   * transaction's start on the database's clock, never later than its commit, which the fence of
   * `changed_since` relies on (see listSkus); to the millisecond, as the API shows it (a cursor taken
   * from the API then leaves no row of its own millisecond behind it). lockSkuCodes returns it too.
   */
  async transactionNow(em: Db): Promise<Date> {
    const [row] = await this.prepared<{ now: Date }>(em, 'transaction_now', "SELECT date_trunc('milliseconds', transaction_timestamp()) AS now", []);
    return row.now;
  }

  /**
   * Upserts rows (distinct sku_codes) seen live, guarded by the pricing version they were priced
   * with. `runId`: the run their history rows belong to. The caller holds their codes' locks
   * (lockSkuCodes, an earlier statement of its transaction): see LOCK_SKU_CODES_SQL.
   */
  async upsertSkus(
    em: Db,
    rows: SkuRow[],
    opts: { now: Date; runId: string | null; pricingVersion: number; source: string },
  ): Promise<UpsertOutcome> {
    const out: UpsertOutcome = { written: [], conflicts: [], stalePricing: null };
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
    const result = await this.prepared<{ what: string; sku_code: string | null; old: Record<string, unknown> | null; owner: string | null }>(
      em,
      'upsert_skus',
      UPSERT_SKUS_SQL,
      [JSON.stringify(skus), opts.now, opts.runId, opts.pricingVersion, JSON.stringify([...products.values()]), opts.source],
    );
    for (const r of result) {
      if (r.what === 'changed') out.written.push({ skuCode: r.sku_code!, old: r.old ? toSkuRow(r.old) : null });
      else if (r.what === 'conflict') out.conflicts.push({ skuCode: r.sku_code!, ownerProductId: Number(r.owner) });
      else if (r.what === 'stale_pricing') out.stalePricing = Number(r.owner);
    }
    return out;
  }

  /**
   * Inserts rows (distinct sku_codes) believed new, their creation recorded on the row, by COPY: what
   * UPSERT_SKUS_SQL does for new rows, at a fraction of the server's work (a first sync). Guarded by
   * the pricing version as the upsert is. A sku_code already stored fails the statement (unique
   * violation, SQLSTATE 23505) and with it the caller's transaction: the caller writes the rows again
   * with upsertSkus, which sorts out changes and conflicts. Only on a PostgreSQL server (canCopy), in a
   * transaction. Takes the locks of LOCK_SKU_CODES_SQL for its codes first (in the statement that holds
   * the pricing version), so that a COPY and an upsert of one code wait for each other.
   */
  async insertNewSkus(em: EntityManager, rows: SkuRow[], opts: { now: Date; runId: string | null; pricingVersion: number; source: string }): Promise<UpsertOutcome> {
    const out: UpsertOutcome = { written: [], conflicts: [], stalePricing: null };
    if (rows.length === 0) return out;
    const runner = em.queryRunner;
    if (!runner || !(await this.canCopy())) throw new Error('insertNewSkus needs a transaction on a PostgreSQL server');
    const [state] = await this.prepared<{ version: string }>(em, 'lock_new_sku_codes', LOCK_NEW_SKU_CODES_SQL, [rows.map((r) => r.sku_code), null]);
    const version = Number(state?.version);
    if (version !== opts.pricingVersion) return { ...out, stalePricing: version };
    // A product's columns are formatted once for all its SKUs (a product's rows are consecutive).
    const tail = `\t${copyField(true)}\t${copyField(opts.now)}\t${copyField(opts.now)}\t${copyField(opts.runId)}\t${copyField(opts.source)}\n`;
    let skus = '';
    let product: SkuRow | null = null;
    let productText = '';
    for (const r of rows) {
      if (product === null || r.product_id !== product.product_id) {
        product = r;
        productText = COPY_PRODUCT_COLUMNS.map((c) => copyField(r[c])).join('\t');
      }
      const code = copyField(r.sku_code);
      skus += productText + '\t' + code;
      for (const c of COPY_SKU_COLUMNS) skus += '\t' + copyField(r[c]);
      skus += tail;
      out.written.push({ skuCode: r.sku_code, old: null });
    }
    const client = (await runner.connect()) as PoolClient;
    await copyIn(client, COPY_SKUS_SQL, skus);
    return out;
  }

  /**
   * Unlists the listed SKUs of a product (all of them, or those not in `keep`). Returns their rows
   * as they were before.
   */
  async unlistProductSkus(em: Db, productId: number, opts: { now: Date; keep?: string[] }): Promise<SkuRow[]> {
    const rows = await select<{ row: Record<string, unknown> }>(
      em,
      `WITH u AS (
         UPDATE catalog_skus s SET listed = false, updated_at = $2
          WHERE s.product_id = $1 AND s.listed AND ($3::text[] IS NULL OR NOT (s.sku_code = ANY($3::text[])))
          RETURNING ${rowJson('s')} AS row),
       -- Looked at in full the next time it is seen (e.g. relisted with the very same data).
       f AS (DELETE FROM catalog_product_fingerprints WHERE product_id = $1 AND EXISTS (SELECT 1 FROM u))
       SELECT row FROM u`,
      [productId, opts.now, opts.keep ?? null],
    );
    return rows.map((r) => ({ ...toSkuRow(r.row), listed: true }));
  }

  /** Sets new sale prices, only where different. Returns the sku_codes written. */
  async setSalePrices(em: Db, prices: Array<{ sku_code: string; sale_price: string }>, now: Date): Promise<string[]> {
    if (prices.length === 0) return [];
    const rows = await select<{ sku_code: string }>(
      em,
      `WITH u AS (
         UPDATE catalog_skus s SET sale_price = v.sale_price, updated_at = $2
           FROM json_to_recordset($1::json) AS v(sku_code text, sale_price numeric)
          WHERE s.sku_code = v.sku_code AND s.sale_price IS DISTINCT FROM v.sale_price
          RETURNING s.sku_code)
       SELECT sku_code FROM u`,
      [JSON.stringify(prices), now],
    );
    return rows.map((r) => r.sku_code);
  }

  /** A batch of SKUs in sku_code order after `afterCode`, for repricing. */
  async skuBatch(em: Db, afterCode: string, limit: number): Promise<SkuRow[]> {
    const rows = await select<{ row: Record<string, unknown> }>(
      em,
      `SELECT ${rowJson('s')} AS row FROM catalog_skus s WHERE s.sku_code > $1 ORDER BY s.sku_code LIMIT $2`,
      [afterCode, limit],
    );
    return rows.map((r) => toSkuRow(r.row));
  }

  async appendHistory(em: Db, entries: HistoryInput[], opts: { runId: string | null; source: string; now: Date }): Promise<void> {
    if (entries.length === 0) return;
    const payload = entries.map((e) => ({
      sku_code: e.skuCode,
      field: e.change.field,
      kind: e.change.kind,
      old_value: e.change.old ?? null,
      new_value: e.change.new ?? null,
    }));
    await em.query(
      `INSERT INTO catalog_sku_changes (sku_code, field, kind, old_value, new_value, run_id, source, changed_at)
       SELECT sku_code, field, kind, old_value, new_value, $2, $3, $4
         FROM json_to_recordset($1::json) AS t(sku_code text, field text, kind text, old_value jsonb, new_value jsonb)`,
      [JSON.stringify(payload), opts.runId, opts.source, opts.now],
    );
  }

  async recordConflicts(em: Db, conflicts: ConflictInput[], opts: { runId: string | null; now: Date }): Promise<void> {
    if (conflicts.length === 0) return;
    const unique = new Map<string, ConflictInput>();
    for (const c of conflicts) unique.set(`${c.skuCode}\u0000${c.ownerProductId}\u0000${c.claimantProductId}`, c);
    const payload = [...unique.values()].map((c) => ({
      sku_code: c.skuCode,
      owner_product_id: c.ownerProductId,
      claimant_product_id: c.claimantProductId,
      claimant_sku_id: c.claimantSkuId,
    }));
    await em.query(
      `INSERT INTO catalog_sku_conflicts AS c (sku_code, owner_product_id, claimant_product_id, claimant_sku_id, run_id, first_seen_at, last_seen_at)
       SELECT sku_code, owner_product_id, claimant_product_id, claimant_sku_id, $2, $3, $3
         FROM json_to_recordset($1::json) AS t(sku_code text, owner_product_id bigint, claimant_product_id bigint, claimant_sku_id bigint)
       ON CONFLICT (sku_code, owner_product_id, claimant_product_id) DO UPDATE
         SET occurrences = c.occurrences + 1, last_seen_at = EXCLUDED.last_seen_at, run_id = EXCLUDED.run_id,
             claimant_sku_id = EXCLUDED.claimant_sku_id`,
      [JSON.stringify(payload), opts.runId, opts.now],
    );
  }

  // ------------------------------------------------------------------------------ delisting

  /**
   * Products with a listed SKU that existed before the run started, and that the run did not see or
   * that have no fingerprint (they claim another product's code, or still have SKUs they no longer
   * list: see WRITE_FINGERPRINTS_SQL). In id order after `afterId`. (A SKU created during the run was
   * seen live by then.)
   */
  async unseenProducts(runId: string, runStartedAt: Date, afterId: number, limit: number): Promise<number[]> {
    const rows = await select<{ product_id: string }>(
      this.db(),
      `SELECT product_id FROM (
         SELECT s.product_id FROM catalog_skus s WHERE s.listed AND s.product_id > $2 AND s.created_at < $4
         EXCEPT
         SELECT x.product_id FROM catalog_sync_seen x JOIN catalog_product_fingerprints f ON f.product_id = x.product_id
          WHERE x.run_id = $1 AND x.product_id > $2
       ) c ORDER BY product_id LIMIT $3`,
      [runId, afterId, limit, runStartedAt],
    );
    return rows.map((r) => Number(r.product_id));
  }

  /** Products that claimed a sku_code in this run whose owner is no longer listed (the code moved). */
  async claimantsOfFreedCodes(runId: string): Promise<number[]> {
    const rows = await select<{ id: string }>(
      this.db(),
      `SELECT DISTINCT c.claimant_product_id::text AS id FROM catalog_sku_conflicts c
         JOIN catalog_skus s ON s.sku_code = c.sku_code
        WHERE c.run_id = $1 AND NOT s.listed AND s.product_id = c.owner_product_id`,
      [runId],
    );
    return rows.map((r) => Number(r.id));
  }

  /**
   * Every stored fingerprint by product (a full pass compares its pages with them in memory: some 60
   * bytes a product), or null when there are more than `limit` products; with the fence of that read:
   * every catalog write it does not see is stamped at or after it (a write stamps its rows with its
   * transaction's start; the fence is the earliest start of the service's transactions open at the
   * read, or the read's own time, as for changed_since), so productsWrittenSince(fence) finds them.
   */
  async fingerprintIndex(limit: number): Promise<FingerprintIndex | null> {
    // The fence first, in a statement of its own (see WRITES_FENCE_SQL): the fingerprints' statement,
    // later, sees every write the fence does not count as open.
    const fence = await this.writesFence();
    const rows = await select<{ id: string; fp: string }>(
      this.db(),
      'SELECT product_id::text AS id, fingerprint AS fp FROM catalog_product_fingerprints LIMIT $1',
      [limit + 1],
    );
    if (rows.length > limit) return null;
    const fingerprints = new Map<number, string>();
    for (const r of rows) fingerprints.set(Number(r.id), r.fp);
    return { fingerprints, fence };
  }

  /**
   * The fence of catalog writes now (WRITES_FENCE_SQL), to be read before, and apart from, the
   * statement it fences: an autocommit statement on a pooled connection, never the caller's
   * transaction.
   */
  private async writesFence(): Promise<Date> {
    const [{ fence }] = await select<{ fence: Date }>(this.dataSource.manager, WRITES_FENCE_SQL);
    return fence;
  }

  /**
   * For a full pass that keeps what it sees in memory (see `unseenProducts`), read at its start: the
   * products with a listed SKU and no fingerprint (they claim another product's code, or still have
   * SKUs they no longer list: see WRITE_FINGERPRINTS_SQL).
   */
  async unfingerprintedProducts(): Promise<number[]> {
    const rows = await select<{ id: string }>(
      this.db(),
      `SELECT DISTINCT s.product_id::text AS id FROM catalog_skus s
        WHERE s.listed AND NOT EXISTS (SELECT 1 FROM catalog_product_fingerprints f WHERE f.product_id = s.product_id)`,
    );
    return rows.map((r) => Number(r.id));
  }

  /**
   * Of these products, with the fingerprints a pass found stored at its start, those whose stored
   * fingerprint is no longer that one: dropped (e.g. an order's fresh read unlisted the product) or
   * written anew since.
   */
  async fingerprintsMoved(expected: Map<number, string>): Promise<number[]> {
    if (expected.size === 0) return [];
    const rows = await select<{ id: string }>(
      this.db(),
      `SELECT k.id::text AS id FROM unnest($1::bigint[], $2::text[]) AS k(id, fp)
        WHERE NOT EXISTS (SELECT 1 FROM catalog_product_fingerprints f WHERE f.product_id = k.id AND f.fingerprint = k.fp)`,
      [[...expected.keys()], [...expected.values()]],
    );
    return rows.map((r) => Number(r.id));
  }

  /**
   * The products written since `since`: a SKU row of theirs changed (an unlisting included) or their
   * fingerprint written anew. By index, a few rows when little changed.
   */
  async productsWrittenSince(since: Date): Promise<number[]> {
    const rows = await select<{ id: string }>(
      this.db(),
      `SELECT s.product_id::text AS id FROM catalog_skus s WHERE s.updated_at >= $1
        UNION SELECT f.product_id::text FROM catalog_product_fingerprints f WHERE f.updated_at >= $1`,
      [since],
    );
    return rows.map((r) => Number(r.id));
  }

  /** The products fingerprinted anew since `since` (a fingerprint's updated_at moves whenever it is written anew). */
  async fingerprintedSince(since: Date): Promise<number[]> {
    const rows = await select<{ id: string }>(this.db(), 'SELECT product_id::text AS id FROM catalog_product_fingerprints WHERE updated_at >= $1', [since]);
    return rows.map((r) => Number(r.id));
  }

  async clearSeen(runId: string): Promise<void> {
    await this.db().query('DELETE FROM catalog_sync_seen WHERE run_id = $1', [runId]);
  }

  /** Drops what runs that are no longer running left behind. */
  async clearOrphanSeen(): Promise<void> {
    await this.db().query(
      `DELETE FROM catalog_sync_seen x WHERE NOT EXISTS
         (SELECT 1 FROM catalog_sync_runs r WHERE r.run_id = x.run_id AND r.status = 'running')`,
    );
  }

  async countSeen(runId: string): Promise<number> {
    const [r] = await select<{ n: number }>(this.db(), 'SELECT count(*)::int AS n FROM catalog_sync_seen WHERE run_id = $1', [runId]);
    return r.n;
  }

  // ---------------------------------------------------------------------------- categories

  /**
   * Upserts the upstream's categories (diff-guarded) and unlists the local ones it no longer has.
   * `reparented`: categories whose parent the stored SKUs were not priced with: existing ones that moved
   * under another parent, and new children that SKUs already point at (stored by an order's fresh read,
   * or a category the upstream did not list before), priced without their parent until now. A parent's
   * pricing rule applies to its children, so their SKUs may need new sale prices.
   *
   * The tree is part of what prices are made with: every process caches it beside the rules, under the
   * pricing version (PricingContextService). So a change of the tree (a category new here, or one
   * under another parent) moves the version on in the same transaction, which first takes the version
   * row (as a rule change does): no price write made with the old tree commits after the change, and
   * every other process reloads the tree at its next price write instead of pricing a new child
   * category's SKUs without its parent's rule.
   */
  async syncCategories(em: Db, categories: UpstreamCategory[], now: Date): Promise<{ changed: number; unlisted: number; reparented: number }> {
    await em.query('SELECT version FROM catalog_pricing_state WHERE id = 1 FOR UPDATE');
    const payload = categories.map((c) => ({
      id: c.id,
      parent_id: c.parent_id,
      slug: c.slug,
      name: c.name,
      icon: c.icon ?? '',
      sort_order: c.sort_order,
    }));
    const [r] = await select<{ changed: number; unlisted: number; reparented: number }>(
      em,
      `WITH input AS (SELECT * FROM json_to_recordset($1::json) AS t(id bigint, parent_id bigint, slug text, name jsonb, icon text, sort_order integer)),
       moved AS (
         SELECT count(*)::int AS n FROM input i
          WHERE EXISTS (SELECT 1 FROM catalog_categories c WHERE c.id = i.id AND c.parent_id <> i.parent_id)
             OR (i.parent_id <> 0 AND NOT EXISTS (SELECT 1 FROM catalog_categories c WHERE c.id = i.id)
                 AND EXISTS (SELECT 1 FROM catalog_skus s WHERE s.category_id = i.id))),
       tree AS (
         SELECT count(*)::int AS n FROM input i
          WHERE NOT EXISTS (SELECT 1 FROM catalog_categories c WHERE c.id = i.id AND c.parent_id = i.parent_id)),
       bump AS (
         UPDATE catalog_pricing_state SET version = version + 1, updated_at = now()
          WHERE id = 1 AND (SELECT n FROM tree) > 0
          RETURNING 1),
       up AS (
         INSERT INTO catalog_categories AS c (id, parent_id, slug, name, icon, sort_order, listed, created_at, updated_at)
         SELECT id, parent_id, slug, name, coalesce(icon, ''), sort_order, true, $2, $2 FROM input
         ON CONFLICT (id) DO UPDATE SET parent_id = EXCLUDED.parent_id, slug = EXCLUDED.slug, name = EXCLUDED.name,
           icon = EXCLUDED.icon, sort_order = EXCLUDED.sort_order, listed = true, updated_at = EXCLUDED.updated_at
         WHERE (c.parent_id, c.slug, c.name, c.icon, c.sort_order, c.listed)
               IS DISTINCT FROM (EXCLUDED.parent_id, EXCLUDED.slug, EXCLUDED.name, EXCLUDED.icon, EXCLUDED.sort_order, true)
         RETURNING 1),
       gone AS (
         UPDATE catalog_categories c SET listed = false, updated_at = $2
          WHERE c.listed AND NOT EXISTS (SELECT 1 FROM input i WHERE i.id = c.id)
          RETURNING 1)
       SELECT (SELECT count(*) FROM up)::int AS changed, (SELECT count(*) FROM gone)::int AS unlisted, (SELECT n FROM moved) AS reparented`,
      [JSON.stringify(payload), now],
    );
    return r;
  }

  async categories(em?: Db): Promise<StoredCategory[]> {
    const rows = await select<Record<string, unknown>>(
      this.db(em),
      `SELECT id::text AS id, parent_id::text AS parent_id, slug, name, icon, sort_order, listed, updated_at
         FROM catalog_categories ORDER BY sort_order DESC, id`,
    );
    return rows.map((r) => ({ ...(r as unknown as StoredCategory), id: Number(r.id), parent_id: Number(r.parent_id) }));
  }

  // --------------------------------------------------------------------------------- reading

  async findSku(skuCode: string): Promise<StoredSku | null> {
    const rows = await select<Record<string, unknown>>(this.db(), `SELECT ${SKU_SELECT} FROM catalog_skus s WHERE s.sku_code = $1`, [skuCode]);
    return rows.length ? toStoredSku(rows[0]) : null;
  }

  /** A SKU with the currency and its product's fingerprint, in one prepared statement (orders, the SKU API). */
  async findSkuWithCurrency(skuCode: string): Promise<FoundSku | null> {
    const rows = await this.prepared<Record<string, unknown>>(this.dataSource.manager, 'find_sku_with_currency', FIND_SKU_WITH_CURRENCY_SQL, [skuCode, CURRENCY_KEY]);
    return rows.length ? toFoundSku(rows[0]) : null;
  }

  /** The SKU with the currency and its product's fingerprint, and whether `shopOrderNo` is a recorded order. */
  async findSkuForOrder(skuCode: string, shopOrderNo: string): Promise<{ found: FoundSku | null; orderRecorded: boolean }> {
    const [row] = await this.prepared<Record<string, unknown>>(this.dataSource.manager, 'find_sku_for_order', FIND_SKU_FOR_ORDER_SQL, [skuCode, CURRENCY_KEY, shopOrderNo]);
    return { found: row.sku_code === null ? null : toFoundSku(row), orderRecorded: row.relay_order_recorded === true };
  }

  async listSkus(f: SkuListFilter): Promise<{ items: StoredSku[]; total: number }> {
    const where: string[] = [];
    const params: unknown[] = [];
    const p = (v: unknown) => {
      params.push(v);
      return `$${params.length}`;
    };
    if (f.categoryId !== undefined) {
      const id = p(f.categoryId);
      where.push(`(s.category_id = ${id} OR s.category_id IN (SELECT c.id FROM catalog_categories c WHERE c.parent_id = ${id}))`);
    }
    if (f.listed !== undefined) where.push(`s.listed = ${p(f.listed)}`);
    if (f.available !== undefined) where.push(`s.available = ${p(f.available)}`);
    if (f.changedSince !== undefined) {
      // Only what every transaction that began before it has settled: a write stamps its rows with its
      // transaction's start (transactionNow) and may commit after a later one, so a client that moved
      // its cursor to the newest updated_at it saw would never get the earlier-stamped rows. Rows
      // stamped since the oldest open transaction of the service (its connections, by their
      // application_name: not a backup's or a vacuum's) began show once it ended. Both to the
      // millisecond: an open transaction's rows are stamped at or after the fence's millisecond.
      // The fence is read first, by a statement of its own; the count and the rows, later statements,
      // see every write stamped before it (see WRITES_FENCE_SQL).
      const fence = await this.writesFence();
      // Keyset: after (changedSince, afterSkuCode) in the list's order, which the index
      // catalog_skus_updated (updated_at, sku_code) serves. Both stamps are to the millisecond, as
      // the API shows them, so a row's updated_at given back equals it exactly.
      if (f.afterSkuCode !== undefined) where.push(`(s.updated_at, s.sku_code) > (${p(f.changedSince)}::timestamptz, ${p(f.afterSkuCode)}::text)`);
      else where.push(`s.updated_at > ${p(f.changedSince)}`);
      where.push(`s.updated_at < ${p(fence)}::timestamptz`);
    }
    const clause = where.length ? `WHERE ${where.join(' AND ')}` : '';
    const order = f.changedSince !== undefined ? 's.updated_at, s.sku_code' : 's.sku_code';
    const [{ n }] = await select<{ n: number }>(this.db(), `SELECT count(*)::int AS n FROM catalog_skus s ${clause}`, params);
    const rows = await select<Record<string, unknown>>(
      this.db(),
      `SELECT ${SKU_SELECT} FROM catalog_skus s ${clause} ORDER BY ${order} LIMIT ${p(f.limit)} OFFSET ${p(f.offset)}`,
      params,
    );
    return { items: rows.map(toStoredSku), total: n };
  }

  /**
   * A SKU's history, newest first: its rows in catalog_sku_changes, then (the oldest entry) its
   * `created` entry, read from the SKU row itself (id null) for SKUs created since migration
   * 20261122008000; older SKUs have theirs as a history row.
   */
  async skuChanges(skuCode: string, offset: number, limit: number): Promise<{ items: StoredChange[]; total: number }> {
    const [{ n }] = await select<{ n: number }>(
      this.db(),
      `SELECT (SELECT count(*)::int FROM catalog_sku_changes WHERE sku_code = $1)
            + (SELECT count(*)::int FROM catalog_skus WHERE sku_code = $1 AND created_source IS NOT NULL) AS n`,
      [skuCode],
    );
    const items = await select<StoredChange & { seq: string }>(
      this.db(),
      `SELECT * FROM (
         SELECT c.id AS seq, c.id::text AS id, c.sku_code, c.field, c.kind, c.old_value, c.new_value, c.run_id, c.source, c.changed_at
           FROM catalog_sku_changes c WHERE c.sku_code = $1
         UNION ALL
         SELECT 0, NULL, s.sku_code, 'created', 'created', NULL, NULL, s.created_run_id, s.created_source, s.created_at
           FROM catalog_skus s WHERE s.sku_code = $1 AND s.created_source IS NOT NULL
       ) h ORDER BY h.seq DESC LIMIT $2 OFFSET $3`,
      [skuCode, limit, offset],
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

  // -------------------------------------------------------------------------------- currency

  async currency(em?: Db): Promise<string | null> {
    const rows = await select<{ currency: string | null }>(
      this.db(em),
      `SELECT value->>'currency' AS currency FROM relay_state WHERE key = $1`,
      [CURRENCY_KEY],
    );
    return rows[0]?.currency ?? null;
  }

  async setCurrency(currency: string): Promise<void> {
    await this.db().query(
      `INSERT INTO relay_state AS r (key, value, updated_at) VALUES ($1, $2::jsonb, now())
       ON CONFLICT (key) DO UPDATE SET value = EXCLUDED.value, updated_at = now() WHERE r.value IS DISTINCT FROM EXCLUDED.value`,
      [CURRENCY_KEY, JSON.stringify({ currency })],
    );
  }
}
