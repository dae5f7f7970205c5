/**
 * What `/internal/suppliers` shows of a supplier's state (CONTRACT §10: `health`, `wallet`,
 * `last_sync`), read through a port: `SupplierStatusSource`. The one bound here
 * (`BudgetSupplierStatus`) knows each supplier's budget (its limit, use and block, from its own
 * UpstreamBudgetService) and its latest sync run; the upstream's state and the wallet come from the
 * periodic ping per supplier, which this source does not read (null: not known here). A richer source
 * (the upstream monitor's last ping per supplier) replaces it by binding `SupplierStatusSource`.
 */
import { Injectable } from '@nestjs/common';
import { formatRateLimit } from './supplier-input.js';
import type { SupplierRuntime } from './supplier-registry.service.js';
import { SupplierRepository } from './supplier.repository.js';

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

const iso = (v: Date | string): string => new Date(v).toISOString();

@Injectable()
export class BudgetSupplierStatus extends SupplierStatusSource {
  constructor(private readonly repo: SupplierRepository) {
    super();
  }

  async read(supplier: SupplierRuntime): Promise<SupplierStatus> {
    const { budget, config } = supplier;
    const [blockedUntil, usage, run] = await Promise.all([
      budget.enabled ? budget.blockedUntil() : Promise.resolve(budget.localBlockUntil()),
      budget.enabled ? budget.usage() : Promise.resolve(null),
      this.repo.lastSync(config.name),
    ]);
    return {
      health: {
        upstream: blockedUntil ? 'rate_limited' : null,
        budget: {
          limit: config.settings.rateLimit ? formatRateLimit(config.settings.rateLimit) : null,
          used: usage?.used ?? null,
          left: usage?.left ?? null,
          blocked_until: blockedUntil ? blockedUntil.toISOString() : null,
        },
        checked_at: null,
      },
      wallet: { balance: null, currency: null, checked_at: null },
      last_sync: run
        ? {
            run_id: run.run_id,
            mode: run.mode,
            status: run.status,
            started_at: iso(run.started_at),
            finished_at: run.finished_at === null ? null : iso(run.finished_at),
            error: run.error,
          }
        : null,
    };
  }
}
