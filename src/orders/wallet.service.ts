/**
 * A supplier's upstream wallet as its ping reports it (`GET /internal/wallet?supplier=`, default the
 * `UPSTREAM_*` supplier; 404 `supplier_not_found`). The ping goes through the upstream monitor, which
 * keeps the balance gauge, the health snapshot and the low-balance alert.
 */
import { Injectable } from '@nestjs/common';
import { AppError } from '../common/app-error.js';
import { UpstreamMonitor } from '../ops/upstream-monitor.service.js';
import { SupplierRegistry } from '../suppliers/supplier-registry.service.js';
import type { UpstreamMemberLevel } from '../upstream/upstream.types.js';

export interface WalletResponse {
  ok: true;
  balance: string;
  currency: string;
  member_level: UpstreamMemberLevel | null;
  checked_at: string;
}

@Injectable()
export class WalletService {
  constructor(
    private readonly monitor: UpstreamMonitor,
    private readonly suppliers: SupplierRegistry,
  ) {}

  async wallet(supplier?: string): Promise<WalletResponse> {
    const name = supplier === undefined ? this.suppliers.envName : (await this.suppliers.resolve(supplier)).config.name;
    const snapshot = await this.monitor.pingNow(name);
    if (snapshot.http_status === 401 || snapshot.http_status === 403) {
      // the upstream refused our credentials (a wrong secret, a disabled API user): as orders answer it
      throw new AppError('upstream_auth_failed', `the upstream refused our credentials: ${snapshot.error ?? 'no answer'}`);
    }
    if (snapshot.status !== 'up' || !snapshot.wallet) {
      throw new AppError('upstream_unavailable', `the upstream wallet could not be read: ${snapshot.error ?? 'no answer'}`);
    }
    const w = snapshot.wallet;
    return { ok: true, balance: w.balance, currency: w.currency, member_level: w.member_level, checked_at: w.checked_at };
  }
}
