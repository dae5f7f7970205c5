/**
 * What `/health` reads of the catalog's table for every supplier at once: each one's latest sync run
 * and the end of its latest successful one (CONTRACT §5, §10). One statement, a lateral look-up per
 * supplier.
 */
import { Injectable } from '@nestjs/common';
import { DataSource } from 'typeorm';
import { sqlRows } from './sql.js';

export interface SupplierLastSyncRow {
  supplier: string;
  run_id: string | null;
  mode: string | null;
  status: string | null;
  started_at: Date | string | null;
  finished_at: Date | string | null;
  error: string | null;
  last_success_at: Date | string | null;
}

@Injectable()
export class HealthRepository {
  constructor(private readonly dataSource: DataSource) {}

  /** The latest run of each of these suppliers (its fields null before any run), by supplier. */
  async lastSyncs(suppliers: readonly string[]): Promise<Map<string, SupplierLastSyncRow>> {
    const rows = await sqlRows<SupplierLastSyncRow>(
      this.dataSource,
      `SELECT s.name AS supplier, r.run_id, r.mode, r.status, r.started_at, r.finished_at, r.error,
              (SELECT o.finished_at FROM catalog_sync_runs o
                WHERE o.supplier = s.name AND o.status = 'succeeded' ORDER BY o.started_at DESC LIMIT 1) AS last_success_at
         FROM unnest($1::text[]) AS s(name)
         LEFT JOIN LATERAL (
           SELECT run_id, mode, status, started_at, finished_at, error FROM catalog_sync_runs r
            WHERE r.supplier = s.name ORDER BY r.started_at DESC LIMIT 1) r ON true`,
      [suppliers],
    );
    return new Map(rows.map((r) => [r.supplier, r]));
  }
}
