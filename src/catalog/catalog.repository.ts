/**
 * The local catalog's sync state, as the sync's passes read and keep it: the per-run "seen" set, the
 * stored product fingerprints a full pass compares its pages with (and the fence of that read), the
 * reads that find the products to confirm delisted, the ordered products an incremental run re-reads,
 * and the catalog currency the sync's ping sets. Each of a supplier's catalog: every read names it.
 * The SKU writes are SkuWriteRepository's, the reads for the API CatalogReadRepository's, the
 * categories CategoryRepository's.
 */
import { Injectable } from '@nestjs/common';
import { DataSource } from 'typeorm';
import { currencyKey, select, writesFence, type Db } from './catalog.records.js';

/** The fingerprints stored at a full pass's start (CatalogRepository.fingerprintIndex). */
export interface FingerprintIndex {
  fingerprints: Map<number, string>;
  /** Every write the read did not see is stamped at or after it. */
  fence: Date;
}

@Injectable()
export class CatalogRepository {
  constructor(private readonly dataSource: DataSource) {}

  private db(em?: Db): Db {
    return em ?? this.dataSource.manager;
  }

  // ------------------------------------------------------------------------------ delisting

  /**
   * Products with a listed SKU that existed before the run started, and that the run did not see or
   * that have no fingerprint (they still have SKUs they no longer list: see WRITE_FINGERPRINTS_SQL in
   * sku-write.repository.ts). In id order after `afterId`. (A SKU
   * created during the run was seen live by then.)
   */
  async unseenProducts(supplier: string, runId: string, runStartedAt: Date, afterId: number, limit: number): Promise<number[]> {
    const rows = await select<{ product_id: string }>(
      this.db(),
      `SELECT product_id FROM (
         SELECT s.product_id FROM catalog_skus s WHERE s.supplier = $5 AND s.listed AND s.product_id > $2 AND s.created_at < $4
         EXCEPT
         SELECT x.product_id FROM catalog_sync_seen x JOIN catalog_product_fingerprints f ON f.supplier = $5 AND f.product_id = x.product_id
          WHERE x.run_id = $1 AND x.product_id > $2
       ) c ORDER BY product_id LIMIT $3`,
      [runId, afterId, limit, runStartedAt, supplier],
    );
    return rows.map((r) => Number(r.product_id));
  }

  /**
   * Every stored fingerprint by product (a full pass compares its pages with them in memory: some 60
   * bytes a product), or null when there are more than `limit` products; with the fence of that read:
   * every catalog write it does not see is stamped at or after it (a write stamps its rows with its
   * transaction's start; the fence is the earliest start of the service's transactions open at the
   * read, or the read's own time, as for changed_since), so productsWrittenSince(fence) finds them.
   */
  async fingerprintIndex(supplier: string, limit: number): Promise<FingerprintIndex | null> {
    // The fence first, in a statement of its own (see WRITES_FENCE_SQL in catalog.records.ts): the
    // fingerprints' statement, later, sees every write the fence does not count as open.
    const fence = await writesFence(this.dataSource);
    const rows = await select<{ id: string; fp: string }>(
      this.db(),
      'SELECT product_id::text AS id, fingerprint AS fp FROM catalog_product_fingerprints WHERE supplier = $2 LIMIT $1',
      [limit + 1, supplier],
    );
    if (rows.length > limit) return null;
    const fingerprints = new Map<number, string>();
    for (const r of rows) fingerprints.set(Number(r.id), r.fp);
    return { fingerprints, fence };
  }

  /**
   * For a full pass that keeps what it sees in memory (see `unseenProducts`), read at its start: the
   * products with a listed SKU and no fingerprint (they still have SKUs they no longer list, or were
   * unlisted: see WRITE_FINGERPRINTS_SQL in sku-write.repository.ts).
   */
  async unfingerprintedProducts(supplier: string): Promise<number[]> {
    const rows = await select<{ id: string }>(
      this.db(),
      `SELECT DISTINCT s.product_id::text AS id FROM catalog_skus s
        WHERE s.supplier = $1 AND s.listed
          AND NOT EXISTS (SELECT 1 FROM catalog_product_fingerprints f WHERE f.supplier = $1 AND f.product_id = s.product_id)`,
      [supplier],
    );
    return rows.map((r) => Number(r.id));
  }

  /**
   * Of these products, with the fingerprints a pass found stored at its start, those whose stored
   * fingerprint is no longer that one: dropped (e.g. an order's fresh read unlisted the product) or
   * written anew since.
   */
  async fingerprintsMoved(supplier: string, expected: Map<number, string>): Promise<number[]> {
    if (expected.size === 0) return [];
    const rows = await select<{ id: string }>(
      this.db(),
      `SELECT k.id::text AS id FROM unnest($1::bigint[], $2::text[]) AS k(id, fp)
        WHERE NOT EXISTS (SELECT 1 FROM catalog_product_fingerprints f WHERE f.supplier = $3 AND f.product_id = k.id AND
          f.fingerprint = k.fp)`,
      [[...expected.keys()], [...expected.values()], supplier],
    );
    return rows.map((r) => Number(r.id));
  }

  /**
   * The products written since `since`: a SKU row of theirs changed (an unlisting included) or their
   * fingerprint written anew. By index, a few rows when little changed.
   */
  async productsWrittenSince(supplier: string, since: Date): Promise<number[]> {
    const rows = await select<{ id: string }>(
      this.db(),
      `SELECT s.product_id::text AS id FROM catalog_skus s WHERE s.updated_at >= $1 AND s.supplier = $2
        UNION SELECT f.product_id::text FROM catalog_product_fingerprints f WHERE f.updated_at >= $1 AND f.supplier = $2`,
      [since, supplier],
    );
    return rows.map((r) => Number(r.id));
  }

  /** The products fingerprinted anew since `since` (a fingerprint's updated_at moves whenever it is written anew). */
  async fingerprintedSince(supplier: string, since: Date): Promise<number[]> {
    const rows = await select<{ id: string }>(
      this.db(),
      'SELECT product_id::text AS id FROM catalog_product_fingerprints WHERE updated_at >= $1 AND supplier = $2',
      [since, supplier],
    );
    return rows.map((r) => Number(r.id));
  }

  /** Marks products seen by a run without writing them (products of its listing left out for their shape). */
  async markSeen(runId: string, productIds: number[]): Promise<void> {
    if (productIds.length === 0) return;
    await this.db().query(`INSERT INTO catalog_sync_seen (run_id, product_id) SELECT $1, unnest($2::bigint[]) ON CONFLICT DO NOTHING`, [
      runId,
      productIds,
    ]);
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

  // ---------------------------------------------------------------------- re-reads of ordered products

  /**
   * Up to `limit` products ordered since `since` that still have a listed SKU and that run `runId` has
   * not seen, those read fresh longest ago first: a product's last fresh read is the later of its last
   * order (the price guard read it then) and its last re-read by a sync (catalog_product_rereads).
   */
  async orderedProductsToReread(supplier: string, since: Date, limit: number, runId: string): Promise<number[]> {
    const rows = await select<{ id: string }>(
      this.db(),
      `SELECT o.product_id::text AS id
         FROM orders o
         LEFT JOIN catalog_product_rereads r ON r.supplier = o.supplier AND r.product_id = o.product_id
        WHERE o.created_at >= $1 AND o.product_id IS NOT NULL AND o.supplier = $4
          AND EXISTS (SELECT 1 FROM catalog_skus s WHERE s.supplier = o.supplier AND s.product_id = o.product_id AND s.listed)
          AND NOT EXISTS (SELECT 1 FROM catalog_sync_seen x WHERE x.run_id = $3 AND x.product_id = o.product_id)
        GROUP BY o.product_id, r.read_at
        ORDER BY greatest(max(o.created_at), r.read_at), o.product_id
        LIMIT $2`,
      [since, limit, runId, supplier],
    );
    return rows.map((r) => Number(r.id));
  }

  /** Records a sync's re-read of a product (tried, whatever its answer: the next products go first). */
  async markReread(supplier: string, productId: number, at: Date): Promise<void> {
    await this.db().query(
      `INSERT INTO catalog_product_rereads (supplier, product_id, read_at) VALUES ($3, $1, $2)
       ON CONFLICT (supplier, product_id) DO UPDATE SET read_at = EXCLUDED.read_at`,
      [productId, at, supplier],
    );
  }

  // -------------------------------------------------------------------------------- currency

  /** A supplier's catalog currency (its ping's). */
  async setCurrency(supplier: string, currency: string): Promise<void> {
    await this.db().query(
      `INSERT INTO relay_state AS r (key, value, updated_at) VALUES ($1, $2::jsonb, now())
       ON CONFLICT (key) DO UPDATE SET value = EXCLUDED.value, updated_at = now() WHERE r.value IS DISTINCT FROM EXCLUDED.value`,
      [currencyKey(supplier), JSON.stringify({ currency })],
    );
  }
}
