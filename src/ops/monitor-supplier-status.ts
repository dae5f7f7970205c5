/**
 * A supplier's state as `/internal/suppliers` shows it (CONTRACT §10: `health: {upstream, budget,
 * checked_at}`, `wallet`, `last_sync`), from what `/health` knows of it: the upstream monitor's last
 * ping of that supplier (`auth_failed` included), its budget and its last sync run. It has the shape
 * of the suppliers module's status port (`SupplierStatusSource`), which binds to it.
 */
import { Injectable } from '@nestjs/common';
import type { SupplierRuntime } from '../suppliers/supplier-registry.service.js';
import type { SupplierStatus, SupplierStatusSource } from '../suppliers/supplier-status.source.js';
import { HealthService } from './health.service.js';

@Injectable()
export class MonitorSupplierStatus implements SupplierStatusSource {
  constructor(private readonly health: HealthService) {}

  async read(supplier: SupplierRuntime): Promise<SupplierStatus> {
    const h = await this.health.supplierHealth(supplier);
    const run = h.last_sync;
    return {
      health: {
        upstream: h.upstream === 'unknown' ? null : h.upstream,
        budget: { limit: h.budget.limit, used: h.budget.used, left: h.budget.left, blocked_until: h.budget.blocked_until },
        checked_at: h.checked_at,
      },
      wallet: { balance: h.wallet?.balance ?? null, currency: h.wallet?.currency ?? null, checked_at: h.wallet?.checked_at ?? null },
      last_sync:
        run && run.run_id && run.started_at
          ? {
              run_id: run.run_id,
              mode: run.mode ?? '',
              status: run.status ?? '',
              started_at: run.started_at,
              finished_at: run.finished_at,
              error: run.error,
            }
          : null,
    };
  }
}
