/**
 * What `/internal/suppliers` shows of a supplier's state (CONTRACT §10: `health`, `wallet`,
 * `last_sync`), read through a port: `SupplierStatusSource`, bound by the SuppliersModule to the
 * operations' `MonitorSupplierStatus` (src/ops: the periodic ping per supplier, its budget, its last
 * sync run), so that the suppliers module does not depend on how health is worked out.
 */
import type { SupplierRuntime } from './supplier-registry.service.js';

export interface SupplierBudgetStatus {
  /** `<requests>/<window>`, or null when the budget is off. */
  limit: string | null;
  used: number | null;
  left: number | null;
  blocked_until: string | null;
}

export interface SupplierStatus {
  health: {
    /** `up`, `down`, `auth_failed`, `rate_limited`; null when not known. */
    upstream: string | null;
    budget: SupplierBudgetStatus | null;
    /** When `upstream` was seen; null when not known. */
    checked_at: string | null;
  };
  wallet: { balance: string | null; currency: string | null; checked_at: string | null };
  last_sync: {
    run_id: string;
    mode: string;
    status: string;
    started_at: string;
    finished_at: string | null;
    error: string | null;
  } | null;
}

/** The port: a supplier's state now. */
export abstract class SupplierStatusSource {
  abstract read(supplier: SupplierRuntime): Promise<SupplierStatus>;
}
