/**
 * The periodic upstream ping (when `config.workers` is on): every PING_INTERVAL_MS, one `POST /ping`
 * whose result — reachable or not, latency, the wallet — is kept in memory for `/health`, stored in
 * `relay_state` (`upstream_ping`) for the replicas without workers, fed to the `relay_upstream_up`
 * and `relay_wallet_balance` gauges, and checked against WALLET_LOW_BALANCE (AlertService: an alert
 * when below, cleared when back at or above it).
 * `/health` never waits for the upstream: it shows the last result.
 *
 * Under the upstream request budget (UPSTREAM_RATE_LIMIT) a ping costs a request: the periodic ping
 * and `pingSoon` take the lowest class (`reconcile`), and the periodic ping is skipped while the last
 * one found the upstream up and another upstream request of this process succeeded within
 * PING_INTERVAL_MS (that answer proves it reachable), for at most PING_SKIP_MAX_MS in a row, so that
 * the wallet is still read now and then. `pingNow()` for a caller (GET /internal/wallet) is never skipped.
 */
import { Injectable, Logger, type OnApplicationBootstrap, type OnModuleDestroy } from '@nestjs/common';
import { Clock } from '../common/clock.js';
import type { BudgetClass } from '../budget/request-budget.js';
import { UpstreamBudgetService } from '../budget/upstream-budget.service.js';
import { AppConfig } from '../config/app-config.js';
import { UpstreamClient } from '../upstream/upstream.client.js';
import { UpstreamDefinitiveError, isUpstreamError } from '../upstream/upstream.errors.js';
import type { UpstreamMemberLevel } from '../upstream/upstream.types.js';
import { AlertService } from './alert.service.js';
import { Metrics } from './metrics.service.js';
import { OpsStateRepository } from './ops-state.repository.js';

export const PING_INTERVAL_MS = 30_000;
/** The shortest time between two pings asked for by `pingSoon()`. */
export const PING_SOON_MIN_MS = 5_000;
export { UPSTREAM_PING_STATE_KEY } from './ops-state.repository.js';
/** The longest time the periodic ping is skipped in a row while other requests succeed. */
export const PING_SKIP_MAX_MS = 10 * PING_INTERVAL_MS;

export interface WalletSnapshot {
  balance: string;
  currency: string;
  member_level: UpstreamMemberLevel | null;
  checked_at: string;
}

export interface UpstreamSnapshot {
  status: 'up' | 'down';
  checked_at: string;
  latency_ms: number;
  /** Why the last ping failed (a class and a reason, never a secret). */
  error: string | null;
  /** The HTTP status of a refusal of the last ping (401/403: our credentials were refused). */
  http_status?: number | null;
  /** From the last successful ping. */
  wallet: WalletSnapshot | null;
}

@Injectable()
export class UpstreamMonitor implements OnApplicationBootstrap, OnModuleDestroy {
  private readonly logger = new Logger('upstream');
  private last: UpstreamSnapshot | null = null;
  private inflight: Promise<UpstreamSnapshot> | null = null;
  private timer: NodeJS.Timeout | null = null;
  private soonTimer: NodeJS.Timeout | null = null;
  private lastPingAtMs = 0;
  private stopped = false;

  constructor(
    private readonly config: AppConfig,
    private readonly clock: Clock,
    private readonly upstream: UpstreamClient,
    private readonly metrics: Metrics,
    private readonly alerts: AlertService,
    private readonly state: OpsStateRepository,
    private readonly budget: UpstreamBudgetService,
  ) {}

  onApplicationBootstrap(): void {
    if (!this.config.workers) return;
    this.schedule(0);
  }

  async onModuleDestroy(): Promise<void> {
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
    if (this.soonTimer) clearTimeout(this.soonTimer);
    this.timer = null;
    this.soonTimer = null;
    // A ping in flight ends within the upstream timeout; do not hold the shutdown for it long.
    if (this.inflight) await Promise.race([this.inflight.catch(() => undefined), new Promise((r) => setTimeout(r, 2000).unref())]);
  }

  private schedule(ms: number): void {
    if (this.stopped) return;
    this.timer = setTimeout(() => {
      void this.periodicPing()
        .catch(() => undefined)
        .finally(() => this.schedule(PING_INTERVAL_MS));
    }, ms);
    this.timer.unref();
  }

  /** The last result of this process, if any. */
  current(): UpstreamSnapshot | null {
    return this.last;
  }

  /** The last result of this process, else the last one any replica stored; null when none. */
  async latest(): Promise<UpstreamSnapshot | null> {
    if (this.last) return this.last;
    return this.state.readPing<UpstreamSnapshot>();
  }

  /**
   * A ping soon, after something spent from the wallet (an accepted order), so that a low balance
   * (WALLET_LOW_BALANCE) is seen at once; coalesced to at most one every PING_SOON_MIN_MS whatever the
   * order rate, and under the request budget to one a window. Without WALLET_LOW_BALANCE there is no
   * balance to watch: the periodic ping reads the wallet.
   */
  pingSoon(): void {
    if (this.stopped || this.soonTimer || this.config.walletLowBalance === null) return;
    const spacing = Math.max(PING_SOON_MIN_MS, this.budget.rule?.windowMs ?? 0);
    const wait = Math.max(0, this.lastPingAtMs + spacing - this.clock.nowMs());
    this.soonTimer = setTimeout(() => {
      this.soonTimer = null;
      void this.pingNow('reconcile').catch(() => undefined);
    }, wait);
    this.soonTimer.unref();
  }

  /**
   * The periodic ping, at the lowest budget class; skipped (see the header) while another request
   * proved the upstream reachable. Returns whether it pinged.
   */
  async periodicPing(): Promise<boolean> {
    if (this.budget.enabled && this.last?.status === 'up') {
      const now = this.clock.nowMs();
      const other = this.budget.lastSuccessAt(['ping']);
      if (other !== null && now - other < PING_INTERVAL_MS && now - this.lastPingAtMs < PING_SKIP_MAX_MS) return false;
    }
    await this.pingNow('reconcile');
    return true;
  }

  /**
   * Pings now (one ping at a time per process) and records the result. `priority`: the budget class
   * of the ping (default `poll`; the monitor's own pings take `reconcile`).
   */
  pingNow(priority: BudgetClass = 'poll'): Promise<UpstreamSnapshot> {
    this.inflight ??= this.doPing(priority).finally(() => {
      this.inflight = null;
    });
    return this.inflight;
  }

  private async doPing(priority: BudgetClass): Promise<UpstreamSnapshot> {
    const started = this.clock.nowMs();
    this.lastPingAtMs = started;
    const t0 = performance.now();
    let snapshot: UpstreamSnapshot;
    try {
      const pong = await this.upstream.ping(undefined, { priority });
      snapshot = {
        status: 'up',
        checked_at: new Date(started).toISOString(),
        latency_ms: Math.round(performance.now() - t0),
        error: null,
        wallet: {
          balance: pong.balance,
          currency: pong.currency,
          member_level: pong.member_level ?? null,
          checked_at: new Date(started).toISOString(),
        },
      };
    } catch (e) {
      snapshot = {
        status: 'down',
        checked_at: new Date(started).toISOString(),
        latency_ms: Math.round(performance.now() - t0),
        error: describe(e),
        http_status: e instanceof UpstreamDefinitiveError ? e.httpStatus : null,
        wallet: this.last?.wallet ?? null,
      };
    }
    const wasUp = this.last?.status;
    this.last = snapshot;
    this.metrics.upstreamUp.set(snapshot.status === 'up' ? 1 : 0);
    if (snapshot.status === 'down' && wasUp !== 'down')
      this.logger.warn({ msg: `upstream unreachable: ${snapshot.error}`, error: snapshot.error });
    if (snapshot.status === 'up' && wasUp === 'down') this.logger.log({ msg: 'upstream reachable again' });
    if (this.stopped) return snapshot;
    try {
      await this.state.storePing(snapshot, this.clock.now());
      if (snapshot.status === 'up' && snapshot.wallet) await this.alerts.checkWallet(snapshot.wallet.balance, snapshot.wallet.currency);
    } catch (e) {
      this.logger.warn({ msg: `could not record the upstream ping: ${(e as Error).message}` });
    }
    return snapshot;
  }
}

function describe(e: unknown): string {
  if (e instanceof UpstreamDefinitiveError) return `definitive: ${e.errorCode} (HTTP ${e.httpStatus})`;
  if (isUpstreamError(e)) {
    const reason = (e as { reason?: string }).reason;
    return `${e.failureClass}: ${reason ?? e.message}`;
  }
  return (e as Error)?.message ?? String(e);
}
