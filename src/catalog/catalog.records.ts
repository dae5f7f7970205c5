/**
 * The local catalog's records as its repositories return them (plain objects; money stays a string,
 * `numeric::text`), named from the generated row types (src/database/rows.generated.ts), their row
 * mappers, and what the catalog's repositories share: the query helper, the currency's key and the
 * fence of catalog writes.
 */
import type { DataSource, EntityManager } from 'typeorm';
import type { CatalogCategoriesRow, CatalogSkuChangesRow, CatalogSkuConflictsRow, CatalogSkusRow } from '../database/rows.generated.js';
import type { ChangeKind, SkuRow } from './sku-diff.js';

/** What a catalog statement runs on: the caller's EntityManager (its transaction) or the data source's. */
export type Db = Pick<EntityManager, 'query'>;

/** A stored SKU: its upstream columns (SkuRow), whether it can be ordered, and its times. */
export interface StoredSku extends SkuRow, Pick<CatalogSkusRow, 'created_at' | 'updated_at'> {
  /** The supplier whose catalog holds it (CONTRACT §10). */
  supplier: string;
  available: boolean;
}

/** A row of `catalog_categories`, its ids as numbers (category.repository.ts). */
export interface StoredCategory extends Pick<CatalogCategoriesRow, 'slug' | 'icon' | 'sort_order' | 'listed' | 'updated_at'> {
  supplier: string;
  id: number;
  parent_id: number;
  name: Record<string, string>;
}

/** A row of `catalog_sku_changes`, or the `created` entry read from the SKU's row. */
export interface StoredChange extends Pick<
  CatalogSkuChangesRow,
  'sku_code' | 'field' | 'old_value' | 'new_value' | 'run_id' | 'source' | 'changed_at'
> {
  supplier: string;
  /** Null for the `created` entry read from the SKU row. */
  id: string | null;
  sku_key: string;
  kind: ChangeKind;
}

/** A row of `catalog_sku_conflicts` (ids as text, as the driver gives a bigint). */
export type StoredConflict = Pick<
  CatalogSkuConflictsRow,
  | 'id'
  | 'sku_code'
  | 'owner_product_id'
  | 'claimant_product_id'
  | 'claimant_sku_id'
  | 'run_id'
  | 'occurrences'
  | 'first_seen_at'
  | 'last_seen_at'
>;

/**
 * The prefix of relay_state's keys of the catalog currency (each supplier's, from its ping): a
 * supplier's key is `<prefix>:<supplier>` (currencyKey); statements that read a SKU's take the prefix
 * and join its supplier.
 */
export const CURRENCY_KEY = 'catalog.currency';

export function currencyKey(supplier: string): string {
  return `${CURRENCY_KEY}:${supplier}`;
}

export function toSkuRow(raw: Record<string, unknown>): SkuRow {
  return {
    ...(raw as unknown as SkuRow),
    upstream_sku_id: Number(raw.upstream_sku_id),
    product_id: Number(raw.product_id),
    category_id: Number(raw.category_id),
  };
}

export function toStoredSku(raw: Record<string, unknown>): StoredSku {
  return {
    ...toSkuRow(raw),
    supplier: raw.supplier as string,
    available: Boolean(raw.available),
    created_at: raw.created_at as Date,
    updated_at: raw.updated_at as Date,
  };
}

/** Rows of a query whose top-level command is a SELECT (UPDATE … RETURNING goes through a CTE). */
export async function select<T>(db: Db, sql: string, params: unknown[] = []): Promise<T[]> {
  return (await db.query(sql, params)) as T[];
}

/**
 * The fence of catalog writes (changed_since, a full pass's start read): the earliest start of the
 * service's transactions still open (its connections, by their application_name: not a backup's or a
 * vacuum's), or the statement's own time, to the millisecond. A write stamps its rows with its
 * transaction's start, so a write stamped before the fence had committed (or ended) when this
 * statement looked at pg_stat_activity.
 *
 * It must be read by a statement of its own, BEFORE the statement that reads the rows, and the two
 * must not share a snapshot (no REPEATABLE READ transaction around them; autocommit statements, as
 * writesFence runs it, each take their own). Read in the rows' statement, the fence
 * came after that statement's snapshot: a write that committed in between was neither in the snapshot
 * nor open any more, the fence moved past its stamp, and a follower's cursor skipped its rows for good
 * (test/catalog-changes-fence.e2e-spec.ts). Read first, every write the fence no longer counts as open has
 * committed before the later statement's snapshot, which therefore sees it.
 */
const WRITES_FENCE_SQL = `SELECT date_trunc('milliseconds', LEAST(statement_timestamp(), (SELECT min(a.xact_start) FROM pg_stat_activity a
  WHERE a.datname = current_database() AND a.pid <> pg_backend_pid() AND a.application_name =
    current_setting('application_name')))) AS fence`;

/**
 * The fence of catalog writes now (WRITES_FENCE_SQL), to be read before, and apart from, the
 * statement it fences: an autocommit statement on a pooled connection, never the caller's
 * transaction.
 */
export async function writesFence(dataSource: DataSource): Promise<Date> {
  const [{ fence }] = await select<{ fence: Date }>(dataSource.manager, WRITES_FENCE_SQL);
  return fence;
}
