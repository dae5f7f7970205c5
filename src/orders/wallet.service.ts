/** The upstream wallet as ping reports it (`GET /internal/wallet`); the balance gauge follows it. */
import { Injectable } from '@nestjs/common';
import { AppError } from '../common/app-error.js';
import { Clock } from '../common/clock.js';
import { Metrics } from '../ops/metrics.js';
import { UpstreamClient } from '../upstream/upstream.client.js';
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
    private readonly clock: Clock,
    private readonly metrics: Metrics,
    private readonly upstream: UpstreamClient,
  ) {}

  async wallet(): Promise<WalletResponse> {
    try {
      const ping = await this.upstream.ping();
      const balance = Number(ping.balance);
      if (Number.isFinite(balance)) this.metrics.walletBalance.set({ currency: ping.currency }, balance);
      return { ok: true, balance: ping.balance, currency: ping.currency, member_level: ping.member_level ?? null, checked_at: this.clock.now().toISOString() };
    } catch (e) {
      throw new AppError('upstream_unavailable', 503, `the upstream wallet could not be read: ${(e as Error).message}`);
    }
  }
}
