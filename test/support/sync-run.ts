/** A catalog sync run as the internal API shows it (`GET /internal/catalog/sync-runs/{run_id}`). */
export interface SyncRunView {
  run_id: string;
  mode: string;
  planned_mode: string;
  trigger: string;
  fallback: string | null;
  status: string;
  started_at: string;
  updated_after: string | null;
  pages_total: number;
  pages_done: number;
  products_seen: number;
  skus_seen: number;
  skus_created: number;
  skus_changed: number;
  skus_delisted: number;
  skus_relisted: number;
  changes: Record<string, number>;
  conflicts: number;
  confirmed_live: number;
  unconfirmed: number;
  note: string | null;
  error: string | null;
}
