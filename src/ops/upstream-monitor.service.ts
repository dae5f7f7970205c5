/**
 * The periodic upstream ping of every enabled supplier (when `config.workers` is on): every
 * PING_INTERVAL_MS, one `POST /ping` per supplier, with that supplier's own client under its own
 * request budget. Each result — reachable, refusing our credentials (`auth_failed`, HTTP 401/403) or
 * down, the latency, the wallet — is kept in memory for `/health`, stored in `relay_state`
 * (`upstream_ping:<supplier>`) for the replicas without workers, fed to the `relay_upstream_up` and
 * `relay_wallet_balance` gauges (label `supplier`), and checked against WALLET_LOW_BALANCE
 * (AlertService: an alert when below, cleared when back at or above it). A refusal of our
 * credentials raises `upstream_auth_failed` (AlertService, once an hour per supplier while it lasts).
 * `/health` never waits for an upstream: it shows the last results.
 *
 * No supplier's ping waits for another's: a tick starts each supplier's ping and does not wait for
 * it, and a supplier whose ping is still in flight (a server that hangs until the timeout) is left
 * out of the next tick instead of holding it.
 *
 * Under a supplier's request budget a ping costs a request: the periodic ping and `pingSoon` take the
 * lowest class (`reconcile`), and the periodic ping is skipped while the last one found the supplier
 * up and another upstream request to it succeeded within PING_INTERVAL_MS (that answer proves it
 * reachable), for at most PING_SKIP_MAX_MS in a row, so that the wallet is still read now and then.
 * `pingNow()` for a caller (GET /internal/wallet) is never skipped.
 */
import { Injectable, Logger, type OnApplicationBootstrap, type OnModuleDestroy } from '@nestjs/common';
import { Clock } from '../common/clock.js';
import { WakeLoop } from '../common/wake-loop.js';
import type { BudgetClass } from '../budget/request-budget.js';
import { AppConfig } from '../config/app-config.js';
import { SupplierRegistry, type SupplierRuntime } from '../suppliers/supplier-registry.service.js';
import { UpstreamDefinitiveError, isUpstreamError } from '../upstream/upstream.errors.js';
import type { UpstreamMemberLevel } from '../upstream/upstream.types.js';
import { AlertService } from './alert.service.js';
import { Metrics } from './metrics.service.js';
import { OpsStateRepository } from './ops-state.repository.js';
import { failedPingStatus, type PingStatus } from './supplier-health.js';

export const PING_INTERVAL_MS = 30_000;
/** The shortest time between two pings asked for by `pingSoon()`. */
export const PING_SOON_MIN_MS = 5_000;
export { pingStateKey } from './ops-state.repository.js';
/** The longest time the periodic ping is skipped in a row while other requests succeed. */
export const PING_SKIP_MAX_MS = 10 * PING_INTERVAL_MS;

export interface WalletSnapshot {
  balance: string;
  currency: string;
  member_level: UpstreamMemberLevel | null;
  checked_at: string;
}

export interface UpstreamSnapshot {
  status: PingStatus;
  checked_at: string;
  latency_ms: number;
  /** Why the last ping failed (a class and a reason, never a secret). */
  error: string | null;
  /** The HTTP status of a refusal of the last ping (401/403: our credentials were refused). */
  http_status?: number | null;
  /** From the last successful ping. */
  wallet: WalletSnapshot | null;
}

/** One supplier's pings in this process. */
interface SupplierPings {
  last: UpstreamSnapshot | null;
  inflight: Promise<UpstreamSnapshot> | null;
  soonTimer: NodeJS.Timeout | null;
  lastPingAtMs: number;
}

@Injectable()
export class UpstreamMonitor implements OnApplicationBootstrap, OnModuleDestroy {
  private readonly logger = new Logger('upstream');
  private readonly pings = new Map<string, SupplierPings>();
  /** The periodic ping: a round every PING_INTERVAL_MS (WakeLoop); a round starts pings and waits for none. */
  private readonly loop = new WakeLoop<void>(
    async () => {
      try {
        this.tick();
      } catch (e) {
        this.logger.error({ msg: `the periodic ping's round failed: ${(e as Error).message}` });
      }
    },
    () => PING_INTERVAL_MS,
  );
  private stopped = false;

  constructor(
    private readonly config: AppConfig,
    private readonly clock: Clock,
    private readonly suppliers: SupplierRegistry,
    private readonly metrics: Metrics,
    private readonly alerts: AlertService,
    private readonly state: OpsStateRepository,
  ) {}

  onApplicationBootstrap(): void {
    if (!this.config.workers) return;
    this.loop.start(0);
  }

  async onModuleDestroy(): Promise<void> {
    this.stopped = true;
    await this.loop.stop();
    const inflight: Array<Promise<unknown>> = [];
    for (const p of this.pings.values()) {
      if (p.soonTimer) clearTimeout(p.soonTimer);
      p.soonTimer = null;
      if (p.inflight) inflight.push(p.inflight.catch(() => undefined));
    }
    // A ping in flight ends within its upstream's timeout; do not hold the shutdown for it long.
    if (inflight.length > 0) await Promise.race([Promise.all(inflight), new Promise((r) => setTimeout(r, 2000).unref())]);
  }

  private pingsOf(supplier: string): SupplierPings {
    let p = this.pings.get(supplier);
    if (!p) {
      p = { last: null, inflight: null, soonTimer: null, lastPingAtMs: 0 };
      this.pings.set(supplier, p);
    }
    return p;
  }

  /**
   * One round of the periodic ping: starts the ping of each enabled supplier that has none in flight
   * and is not skipped (see the header), without waiting for any. Returns the suppliers it started.
   */
  tick(): string[] {
    const started: string[] = [];
    for (const runtime of this.suppliers.enabled()) {
      const name = runtime.config.name;
      if (this.pingsOf(name).inflight || this.skipped(runtime)) continue;
      started.push(name);
      void this.pingNow(name, 'reconcile').catch(() => undefined);
    }
    return started;
  }

  /** Whether a ping of this supplier is in flight in this process. */
  pinging(supplier: string): boolean {
    return this.pings.get(supplier)?.inflight != null;
  }

  /** The last result of this process for a supplier (default: the `UPSTREAM_*` one), if any. */
  current(supplier: string = this.suppliers.envName): UpstreamSnapshot | null {
    return this.pings.get(supplier)?.last ?? null;
  }

  /** The last result of this process, else the last one any replica stored; null when none. */
  async latest(supplier: string = this.suppliers.envName): Promise<UpstreamSnapshot | null> {
    return this.current(supplier) ?? this.state.readPing<UpstreamSnapshot>(supplier);
  }

  /** Every supplier's last result: this process's, else the stored one (one read for all). */
  async latestAll(): Promise<Map<string, UpstreamSnapshot>> {
    const all = new Map<string, UpstreamSnapshot>();
    const names = this.suppliers.list().map((s) => s.config.name);
    const missing = names.filter((n) => !this.current(n));
    const stored = missing.length > 0 ? await this.state.readPings<UpstreamSnapshot>(missing) : new Map<string, UpstreamSnapshot>();
    for (const n of names) {
      const s = this.current(n) ?? stored.get(n);
      if (s) all.set(n, s);
    }
    return all;
  }

  /**
   * A ping of a supplier soon (default: the `UPSTREAM_*` one), after something spent from its wallet
   * (an accepted order), so that a low balance (WALLET_LOW_BALANCE) is seen at once; coalesced to at
   * most one every PING_SOON_MIN_MS per supplier whatever the order rate, and under its request budget
   * to one a window. Without WALLET_LOW_BALANCE there is no balance to watch: the periodic ping reads
   * the wallet.
   */
  pingSoon(supplier: string = this.suppliers.envName): void {
    const runtime = this.suppliers.find(supplier);
    if (this.stopped || !runtime || this.config.walletLowBalance === null) return;
    const p = this.pingsOf(supplier);
    if (p.soonTimer) return;
    const spacing = Math.max(PING_SOON_MIN_MS, runtime.budget.rule?.windowMs ?? 0);
    const wait = Math.max(0, p.lastPingAtMs + spacing - this.clock.nowMs());
    p.soonTimer = setTimeout(() => {
      p.soonTimer = null;
      void this.pingNow(supplier, 'reconcile').catch(() => undefined);
    }, wait);
    p.soonTimer.unref();
  }

  /**
   * The periodic ping of one supplier (default: the `UPSTREAM_*` one), at the lowest budget class;
   * skipped (see the header) while another request proved it reachable. Returns whether it pinged.
   */
  async periodicPing(supplier: string = this.suppliers.envName): Promise<boolean> {
    if (this.skipped(this.suppliers.get(supplier))) return false;
    await this.pingNow(supplier, 'reconcile');
    return true;
  }

  /** Whether the periodic ping of a supplier is skipped now: it was up and another request to it succeeded lately. */
  private skipped(runtime: SupplierRuntime): boolean {
    const p = this.pingsOf(runtime.config.name);
    if (!runtime.budget.enabled || p.last?.status !== 'up') return false;
    const now = this.clock.nowMs();
    const other = runtime.budget.lastSuccessAt(['ping']);
    return other !== null && now - other < PING_INTERVAL_MS && now - p.lastPingAtMs < PING_SKIP_MAX_MS;
  }

  /**
   * Pings a supplier now (default: the `UPSTREAM_*` one; one ping at a time per supplier and process)
   * and records the result; 404 `supplier_not_found` for an unknown one. `priority`: the budget class
   * of the ping (default `poll`; the monitor's own pings take `reconcile`).
   */
  pingNow(supplier: string = this.suppliers.envName, priority: BudgetClass = 'poll'): Promise<UpstreamSnapshot> {
    const runtime = this.suppliers.get(supplier);
    const p = this.pingsOf(supplier);
    p.inflight ??= this.doPing(runtime, p, priority).finally(() => {
      p.inflight = null;
    });
    return p.inflight;
  }

  private async doPing(runtime: SupplierRuntime, p: SupplierPings, priority: BudgetClass): Promise<UpstreamSnapshot> {
    const supplier = runtime.config.name;
    const started = this.clock.nowMs();
    p.lastPingAtMs = started;
    const t0 = performance.now();
    let snapshot: UpstreamSnapshot;
    try {
      const pong = await runtime.client.ping(undefined, { priority });
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
      const httpStatus = e instanceof UpstreamDefinitiveError ? e.httpStatus : null;
      snapshot = {
        status: failedPingStatus(httpStatus),
        checked_at: new Date(started).toISOString(),
        latency_ms: Math.round(performance.now() - t0),
        error: describe(e),
        http_status: httpStatus,
        wallet: p.last?.wallet ?? null,
      };
    }
    const was = p.last?.status;
    p.last = snapshot;
    this.metrics.upstreamUp.set({ supplier }, snapshot.status === 'up' ? 1 : 0);
    if (snapshot.status === 'auth_failed' && was !== 'auth_failed')
      this.logger.warn({ supplier, msg: `supplier ${supplier} refuses our credentials: ${snapshot.error}`, error: snapshot.error });
    else if (snapshot.status === 'down' && was !== 'down')
      this.logger.warn({ supplier, msg: `supplier ${supplier} unreachable: ${snapshot.error}`, error: snapshot.error });
    if (snapshot.status === 'up' && was !== undefined && was !== 'up')
      this.logger.log({ supplier, msg: `supplier ${supplier} reachable again` });
    if (this.stopped) return snapshot;
    try {
      await this.state.storePing(supplier, snapshot, this.clock.now());
      if (snapshot.status === 'up' && snapshot.wallet)
        await this.alerts.checkSupplierWallet(supplier, snapshot.wallet.balance, snapshot.wallet.currency);
      if (snapshot.status === 'auth_failed')
        await this.alerts.upstreamAuthFailed({ supplier, error: snapshot.error, httpStatus: snapshot.http_status ?? null });
    } catch (e) {
      this.logger.warn({ supplier, msg: `could not record the ping of supplier ${supplier}: ${(e as Error).message}` });
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
