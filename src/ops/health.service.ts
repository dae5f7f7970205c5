/**
 * What `/health`, `/health/live` and `/health/ready` answer (CONTRACT §5, §10):
 * - health: the database (a `SELECT 1`); for every supplier (`suppliers`) its upstream as its last
 *   ping saw it (never a call to the upstream; `auth_failed` when it refused our credentials,
 *   `rate_limited` while its key is blocked), its request budget, its last sync run and its wallet;
 *   the top-level `upstream` is the worst of the enabled suppliers' (the rules in supplier-health.ts),
 *   and `budget`, `last_sync` and `wallet` are the `UPSTREAM_*` supplier's; the number of `queued`
 *   orders; the reconciliation's backlog (due reads not made yet, and how long the oldest has been
 *   due); 503 only when the database is down;
 * - live: the process answers;
 * - ready: the database answers and every migration of this build is applied, and the process is
 *   not shutting down; 503 otherwise.
 *
 * Timing: a call runs its checks at once and waits for them no longer than HEALTH_DEADLINE_MS in all
 * (a probe's timeout is typically a few seconds); a check that has not answered by then is reported
 * as unknown (`last_sync: null`, `queued: null`, `migrations: null`), never waited for; a budget
 * block not read in time is reported as none.
 *
 * The database's verdict tells "down" from "did not answer in time":
 * - `down` (503): the database refused or failed (connection refused, authentication, terminated, an
 *   error of the `SELECT 1`);
 * - up but `database_detail: 'busy'` (200): no answer in time while the check was waiting for one of
 *   the pool's connections, all in use by the service's own work (or pg-pool gave up waiting for one).
 *   Under load that is the common case, and restarting the instance would only lose its work;
 * - up but `database_detail: 'slow'` (200): the check had its connection (or was opening one) and the
 *   database did not answer in time: an embedded database busy with another transaction (it runs one
 *   at a time), an overloaded server. A server that neither answers nor refuses (packets dropped by a
 *   partition) looks the same from here and is reported so too, not as down: the service cannot tell
 *   it apart cheaply, and a restart would not mend it. Once a check has failed, a later one that does
 *   not answer on a connection is down as well (a new connection hanging after a refused one), until
 *   one answers.
 * A readiness check that cannot read the migrations in time while the database is busy or slow uses
 * what it read last (migrations change by a deploy or an operator, not under load), so that a
 * saturated pool does not take every replica out of rotation at once; before any read it is not ready.
 *
 * At most one of each check is in flight: calls made while one runs share it (a burst of probes on a
 * saturated pool adds one waiter per check, not one per call), and a check still running after a
 * call's deadline goes on and ends on its own; a `SELECT 1` unanswered after HEALTH_PROBE_ABANDON_MS
 * has its connection closed and the next call starts afresh.
 */
import { Injectable, type BeforeApplicationShutdown, type OnModuleDestroy } from '@nestjs/common';
import type { Pool, PoolClient } from 'pg';
import { DataSource } from 'typeorm';
import type { KeyCapacity } from '../budget/key-capacity.js';
import { Clock } from '../common/clock.js';
import { AppConfig, type RateLimitSetting } from '../config/app-config.js';
import { SchemaMigrationsRepository } from '../database/schema-migrations.repository.js';
import { OrderReads } from '../orders/order-reads.repository.js';
import { ReconciliationRepository } from '../reconciliation/reconciliation.repository.js';
import { SupplierRegistry, type SupplierRuntime } from '../suppliers/supplier-registry.service.js';
import { HealthRepository, type SupplierLastSyncRow } from './health.repository.js';
import { Metrics } from './metrics.service.js';
import { backlogAgeSeconds, supplierUpstreamState, worstIndex, type UpstreamState } from './supplier-health.js';
import { UpstreamMonitor, type UpstreamSnapshot } from './upstream-monitor.service.js';

/** The longest a `/health` or `/health/ready` call waits for the database, all its checks together. */
export const HEALTH_DEADLINE_MS = 3_000;

/**
 * A `SELECT 1` still unanswered this long is given up: its connection is closed (which frees its
 * place in the pool) and the next call starts a new probe, so that one lost connection (a server
 * gone without a word) cannot keep every later answer on it.
 */
export const HEALTH_PROBE_ABANDON_MS = 30_000;

/** pg-pool's error when a connection did not come free within its `connectionTimeoutMillis`. */
const POOL_WAIT_TIMEOUT = 'timeout exceeded when trying to connect';

export interface LastSync {
  run_id: string | null;
  mode: string | null;
  status: string | null;
  started_at: string | null;
  finished_at: string | null;
  error: string | null;
  /** The end of the latest run that succeeded. */
  last_success_at: string | null;
}

/** The upstream's request budget of this API key (UPSTREAM_RATE_LIMIT), shared by every replica. */
export interface BudgetHealth {
  /** The limit as configured, `<requests>/<window>` (`60/60s`); null when the budget is off. */
  limit: string | null;
  /**
   * Requests granted in the window ending now, and how many more the budget grants in it. Null:
   * UpstreamBudgetService reports no count of its window's grants (and none is kept while it is off).
   */
  used: number | null;
  left: number | null;
  /** The end of the key's block after a 429 (every replica waits for it); null when not blocked. */
  blocked_until: string | null;
  /** What the key carries at the current mix (budget/key-capacity.ts); null when the budget is off or the database did not tell in time. */
  capacity: CapacityHealth | null;
}

/** What the key carries, from the grants of the window ending now (every replica's). */
export interface CapacityHealth {
  /** Requests the budget grants a minute (its limit less the safety margin). */
  requests_per_minute: number;
  /**
   * Requests a placed order costs at the current mix (creates, delivering reads, price reads, polls
   * over creates); null without an order in the window.
   */
  requests_per_order: number | null;
  /**
   * Orders a minute the window leaves room for at that cost, besides the sync and reconciliation of
   * now; null when the cost is not known.
   */
  orders_per_minute: number | null;
  reconcile: {
    /** Reconciliation's requests (re-reads of finished orders and of ordered products, the periodic ping) in the window ending now. */
    last_window: number;
    /** The most it takes of any window (RECONCILE_BUDGET_SHARE), and a minute. */
    limit_per_window: number;
    limit_per_minute: number;
    /** Finished orders a day whose every scheduled read (RECONCILE_AFTER) fits in that share; null when the schedule is off. */
    orders_per_day_full_schedule: number | null;
    /** Scheduled reads due and not made yet; null when the database did not tell in time. */
    due: number | null;
  };
}

/** Why a database reported `up` did not answer in time (absent when it answered). */
export type DatabaseDetail = 'busy' | 'slow';

export interface WalletHealth {
  balance: string;
  currency: string;
  checked_at: string;
}

/** One supplier in `/health` (`suppliers.<name>`). */
export interface SupplierHealth {
  enabled: boolean;
  /** Its upstream as its last ping saw it, or `rate_limited` while its key is blocked (supplier-health.ts). */
  upstream: UpstreamState;
  checked_at: string | null;
  latency_ms: number | null;
  /** Why its last ping failed (never a secret). */
  error: string | null;
  budget: BudgetHealth;
  last_sync: LastSync | null;
  wallet?: WalletHealth;
}

export interface HealthBody {
  ok: boolean;
  status: 'ok' | 'unavailable';
  database: 'up' | 'down';
  database_detail?: DatabaseDetail;
  /** The worst of the enabled suppliers' upstreams, and which one it is. */
  upstream: {
    status: UpstreamState;
    checked_at: string | null;
    latency_ms: number | null;
    error: string | null;
    supplier: string | null;
  };
  /** The `UPSTREAM_*` supplier's. */
  last_sync: LastSync | null;
  wallet?: WalletHealth;
  budget: BudgetHealth;
  /** Orders accepted and waiting for the budget (`queued`); null when the database did not tell in time. */
  queued: number | null;
  suppliers: Record<string, SupplierHealth>;
  /** Scheduled reconciliation reads due and not made yet, and how long the oldest has been due; null when not told in time. */
  reconciliation: { backlog: number | null; oldest_due_s: number | null };
}

/** The reconciliation's backlog as /health and the metrics read it (ReconciliationRepository.backlog). */
type Backlog = Array<{ supplier: string; due: number; oldestDueAt: Date }>;

function toCapacityHealth(c: KeyCapacity, due: number | null): CapacityHealth {
  return {
    requests_per_minute: c.requestsPerMinute,
    requests_per_order: c.requestsPerOrder,
    orders_per_minute: c.ordersPerMinute,
    reconcile: {
      last_window: c.reconcile.lastWindow,
      limit_per_window: c.reconcile.limitPerWindow,
      limit_per_minute: c.reconcile.limitPerMinute,
      orders_per_day_full_schedule: c.reconcile.ordersPerDayFullSchedule,
      due,
    },
  };
}

/** `60/60s`, `20/2s`, `100/1500ms`: a configured limit as UPSTREAM_RATE_LIMIT spells it. */
export function formatRateLimit(limit: RateLimitSetting): string {
  return limit.windowMs % 1000 === 0 ? `${limit.requests}/${limit.windowMs / 1000}s` : `${limit.requests}/${limit.windowMs}ms`;
}

export interface ReadyBody {
  ok: boolean;
  database: 'up' | 'down';
  database_detail?: DatabaseDetail;
  migrations: { pending: string[] } | null;
  shutting_down: boolean;
}

/** The database as one call saw it. */
export type DatabaseVerdict = { database: 'up'; detail?: DatabaseDetail } | { database: 'down' };

class Timeout extends Error {}

/** One call's deadline, shared by all its checks. */
class Deadline {
  private readonly timer: NodeJS.Timeout;
  private readonly expired: Promise<never>;

  constructor(ms: number) {
    let expire!: () => void;
    this.expired = new Promise<never>((_, reject) => {
      expire = () => reject(new Timeout(`no answer within ${ms} ms`));
    });
    this.expired.catch(() => undefined); // only the races below look at it
    this.timer = setTimeout(expire, ms);
    this.timer.unref();
  }

  /** `p`'s outcome, or a Timeout once the deadline has passed. */
  race<T>(p: Promise<T>): Promise<T> {
    return Promise.race([p, this.expired]);
  }

  clear(): void {
    clearTimeout(this.timer);
  }
}

/** Where the database probe in flight is: waiting for a pooled connection, opening one, or querying. */
type ProbePhase = 'pool' | 'connect' | 'query';

interface Probe {
  phase: ProbePhase;
  startedAt: number;
  done: Promise<void>;
  /** Closes the probe's connection (its query fails), when it holds one. */
  abandon(): void;
}

const isoOrNull = (v: unknown): string | null => (v == null ? null : new Date(v as string).toISOString());
const strOrNull = (v: unknown): string | null => (v == null ? null : String(v));

@Injectable()
export class HealthService implements OnModuleDestroy, BeforeApplicationShutdown {
  private shuttingDown = false;
  private probe: Probe | null = null;
  /** The last probe that ended failed (refused, failed): a later one that does not answer is down too. */
  private lastProbeFailed = false;
  private readonly inFlight = new Map<string, Promise<unknown>>();
  /** The pending migrations as last read (see the readiness note above). */
  private lastPending: string[] | null = null;

  constructor(
    private readonly dataSource: DataSource,
    private readonly monitor: UpstreamMonitor,
    private readonly suppliers: SupplierRegistry,
    private readonly config: AppConfig,
    private readonly clock: Clock,
    private readonly migrations: SchemaMigrationsRepository,
    private readonly orderReads: OrderReads,
    private readonly reconciliation: ReconciliationRepository,
    private readonly repo: HealthRepository,
    private readonly metrics: Metrics,
  ) {
    metrics.onScrape(() => this.refreshBacklogMetrics());
  }

  /** From now on the instance reports itself not ready (RelayApp.close calls it first thing). */
  beginShutdown(): void {
    this.shuttingDown = true;
  }

  onModuleDestroy(): void {
    this.beginShutdown();
  }

  beforeApplicationShutdown(): void {
    this.beginShutdown();
  }

  /** The database's verdict within `deadline` (see the note at the top). */
  private async checkDatabase(deadline: Deadline): Promise<DatabaseVerdict> {
    if (this.probe && Date.now() - this.probe.startedAt > HEALTH_PROBE_ABANDON_MS) {
      this.probe.abandon();
      this.probe = null;
    }
    const probe = (this.probe ??= this.startProbe());
    try {
      await deadline.race(probe.done);
      return { database: 'up' };
    } catch (e) {
      if (e instanceof Timeout) {
        if (probe.phase === 'pool') return { database: 'up', detail: 'busy' };
        // No answer on a connection: slow, unless the database failed the last check and has not
        // answered since (a new connection hanging after a refused one is the same outage).
        return this.lastProbeFailed ? { database: 'down' } : { database: 'up', detail: 'slow' };
      }
      // pg-pool's own limit on the wait for a connection (longer than the deadline; met by a call that
      // joined a probe started earlier): every connection was in use.
      if ((e as Error)?.message === POOL_WAIT_TIMEOUT) return { database: 'up', detail: 'busy' };
      return { database: 'down' };
    }
  }

  async health(): Promise<HealthBody> {
    const deadline = new Deadline(HEALTH_DEADLINE_MS);
    try {
      const runtimes = this.suppliers.list();
      const names = runtimes.map((r) => r.config.name);
      const [db, pings, lastSyncs, queued, backlog, budgets] = await Promise.all([
        this.checkDatabase(deadline),
        this.within(deadline, 'pings', () => this.monitor.latestAll()),
        this.within(deadline, 'lastSyncs', () => this.repo.lastSyncs(names)),
        this.within(deadline, 'queued', () => this.orderReads.countQueued()),
        this.within(deadline, 'backlog', () => this.reconciliation.backlog(this.clock.now())),
        Promise.all(runtimes.map((r) => this.budgetHealth(deadline, r))),
      ]);
      const up = db.database === 'up';
      const suppliers: Record<string, SupplierHealth> = {};
      runtimes.forEach((r, i) => {
        const name = r.config.name;
        // without the database, only what this process saw itself
        const ping = this.monitor.current(name) ?? (up ? (pings?.get(name) ?? null) : null);
        const budget = budgets[i];
        const due = up && backlog ? (backlog.find((b) => b.supplier === name)?.due ?? 0) : null;
        if (budget.capacity) budget.capacity.reconcile.due = due;
        suppliers[name] = toSupplierHealth(r, ping, budget, up && lastSyncs ? toLastSync(lastSyncs.get(name)) : null);
      });
      const env = suppliers[this.suppliers.envName];
      // The worst of the enabled suppliers (the env supplier's when none is enabled).
      const counted = runtimes.filter((r) => r.config.enabled).map((r) => r.config.name);
      const candidates = counted.length > 0 ? counted : [this.suppliers.envName];
      const worst = candidates[worstIndex(candidates.map((n) => suppliers[n].upstream))];
      const w = suppliers[worst];
      const oldest = up && backlog && backlog.length > 0 ? new Date(Math.min(...backlog.map((b) => b.oldestDueAt.getTime()))) : null;
      const body: HealthBody = {
        ok: up,
        status: up ? 'ok' : 'unavailable',
        database: db.database,
        ...(db.database === 'up' && db.detail ? { database_detail: db.detail } : {}),
        upstream: { status: w.upstream, checked_at: w.checked_at, latency_ms: w.latency_ms, error: w.error, supplier: worst },
        last_sync: env.last_sync,
        budget: env.budget,
        queued: up ? queued : null,
        suppliers,
        reconciliation: {
          backlog: up && backlog ? backlog.reduce((n, b) => n + b.due, 0) : null,
          oldest_due_s: backlogAgeSeconds(oldest, this.clock.now()),
        },
      };
      if (env.wallet) body.wallet = env.wallet;
      return body;
    } finally {
      deadline.clear();
    }
  }

  /**
   * One supplier as `/health` shows it (`suppliers.<name>`), within the same deadline: its last ping
   * (this process's, else the stored one), its budget and its last sync run. For the suppliers API
   * (MonitorSupplierStatus).
   */
  async supplierHealth(runtime: SupplierRuntime): Promise<SupplierHealth> {
    const deadline = new Deadline(HEALTH_DEADLINE_MS);
    try {
      const name = runtime.config.name;
      const [ping, lastSyncs, budget] = await Promise.all([
        this.within(deadline, `ping:${name}`, () => this.monitor.latest(name)),
        this.within(deadline, `lastSync:${name}`, () => this.repo.lastSyncs([name])),
        this.budgetHealth(deadline, runtime),
      ]);
      return toSupplierHealth(runtime, ping, budget, lastSyncs ? toLastSync(lastSyncs.get(name)) : null);
    } finally {
      deadline.clear();
    }
  }

  /** A supplier's request budget as /health shows it (its key's, every replica's); `capacity.reconcile.due` is set by the caller. */
  private async budgetHealth(deadline: Deadline, runtime: SupplierRuntime): Promise<BudgetHealth> {
    const { budget } = runtime;
    const name = runtime.config.name;
    const [blockedUntil, usage, capacity] = await Promise.all([
      // with the budget off, the block this process met (no database read)
      budget.enabled
        ? this.within(deadline, `blockedUntil:${name}`, () => budget.blockedUntil())
        : Promise.resolve(budget.localBlockUntil()),
      budget.enabled ? this.within(deadline, `budgetUsage:${name}`, () => budget.usage()) : Promise.resolve(null),
      budget.enabled
        ? this.within(deadline, `budgetCapacity:${name}`, () => budget.capacity(this.config.reconcile.afterMs?.length ?? null))
        : Promise.resolve(null),
    ]);
    const limit = runtime.config.settings.rateLimit;
    return {
      limit: limit ? formatRateLimit(limit) : null,
      used: usage?.used ?? null,
      left: usage?.left ?? null,
      blocked_until: blockedUntil ? blockedUntil.toISOString() : null,
      capacity: capacity ? toCapacityHealth(capacity, null) : null,
    };
  }

  /**
   * Refreshes the reconciliation's backlog gauges (run on a metrics scrape): every supplier's series,
   * 0 for one without a due read.
   */
  async refreshBacklogMetrics(): Promise<void> {
    const now = this.clock.now();
    const backlog: Backlog = await this.reconciliation.backlog(now);
    const metrics = this.metrics;
    const names = new Set([...this.suppliers.list().map((r) => r.config.name), ...backlog.map((b) => b.supplier)]);
    for (const supplier of names) {
      const b = backlog.find((x) => x.supplier === supplier);
      metrics.reconcileBacklog.set({ supplier }, b?.due ?? 0);
      metrics.reconcileBacklogAge.set({ supplier }, b ? (backlogAgeSeconds(b.oldestDueAt, now) ?? 0) : 0);
    }
  }

  async ready(): Promise<ReadyBody> {
    const deadline = new Deadline(HEALTH_DEADLINE_MS);
    try {
      let late = false;
      const [db, read] = await Promise.all([
        this.checkDatabase(deadline),
        deadline.race(this.shared('migrations', () => this.migrations.pending())).then(
          (pending) => (this.lastPending = pending),
          (e: unknown) => {
            late = e instanceof Timeout || (e as Error)?.message === POOL_WAIT_TIMEOUT;
            return null;
          },
        ),
      ]);
      const detail = db.database === 'up' ? db.detail : undefined;
      // Busy or slow: the migrations as last read, when this read did not come in time.
      const pending = db.database === 'down' ? null : (read ?? (late && detail ? this.lastPending : null));
      return {
        ok: db.database === 'up' && pending !== null && pending.length === 0 && !this.shuttingDown,
        database: db.database,
        ...(detail ? { database_detail: detail } : {}),
        migrations: pending === null ? null : { pending },
        shutting_down: this.shuttingDown,
      };
    } finally {
      deadline.clear();
    }
  }

  /**
   * A `SELECT 1` on a pooled connection, noting where it waits (see DatabaseVerdict). It stays here,
   * not in a repository: it reads no data, it measures the database and the pool themselves (which
   * phase it waits in, abandoning a connection that does not answer), which is this service's concern.
   */
  private startProbe(): Probe {
    const pool = (this.dataSource.driver as unknown as { master?: Pool }).master;
    let client: PoolClient | null = null;
    let abandoned = false;
    /** Gives the connection back once (dropped by the pool when `failure` is set). */
    const release = (failure?: Error) => {
      const c = client;
      client = null;
      c?.release(failure);
    };
    const probe: Probe = {
      phase: 'pool',
      startedAt: Date.now(),
      done: Promise.resolve(),
      abandon: () => {
        abandoned = true;
        release(new Error(`health check: no answer to SELECT 1 within ${HEALTH_PROBE_ABANDON_MS} ms`));
      },
    };
    probe.done = (async () => {
      if (!pool) {
        probe.phase = 'query';
        await this.dataSource.query('SELECT 1');
        return;
      }
      // pg-pool queues the request when every connection is taken, else opens one or hands an idle one.
      probe.phase = pool.idleCount === 0 && pool.totalCount >= (pool.options.max ?? 10) ? 'pool' : 'connect';
      client = await pool.connect();
      if (abandoned) {
        release();
        return;
      }
      probe.phase = 'query';
      try {
        await client.query('SELECT 1');
        release();
      } catch (e) {
        release(e as Error); // the connection may be broken: the pool drops it
        throw e;
      }
    })();
    const settle = (failed: boolean) => {
      if (this.probe !== probe) return; // abandoned: a newer probe speaks for the database
      this.probe = null;
      this.lastProbeFailed = failed;
    };
    probe.done.then(
      () => settle(false),
      (e: unknown) => {
        // pg-pool gave up waiting for a connection: that says nothing of the database.
        if ((e as Error)?.message === POOL_WAIT_TIMEOUT) settle(this.lastProbeFailed);
        else settle(true);
      },
    );
    return probe;
  }

  /** `run`'s result within `deadline`, else null (an error or no answer in time: unknown). */
  private within<T>(deadline: Deadline, key: string, run: () => Promise<T>): Promise<T | null> {
    return deadline.race(this.shared(key, run)).catch(() => null);
  }

  /** The run of `key` in flight, else a new one: calls made meanwhile share it. */
  private shared<T>(key: string, run: () => Promise<T>): Promise<T> {
    let p = this.inFlight.get(key) as Promise<T> | undefined;
    if (p === undefined) {
      p = run();
      this.inFlight.set(key, p);
      const clear = () => {
        if (this.inFlight.get(key) === p) this.inFlight.delete(key);
      };
      p.then(clear, clear);
    }
    return p;
  }
}

/** A supplier in /health from its last ping (null: none), its budget and its last sync run. */
function toSupplierHealth(
  r: SupplierRuntime,
  ping: UpstreamSnapshot | null,
  budget: BudgetHealth,
  lastSync: LastSync | null,
): SupplierHealth {
  return {
    enabled: r.config.enabled,
    upstream: supplierUpstreamState(ping?.status ?? null, budget.blocked_until !== null),
    checked_at: ping?.checked_at ?? null,
    latency_ms: ping?.latency_ms ?? null,
    error: ping?.error ?? null,
    budget,
    last_sync: lastSync,
    ...(ping?.wallet ? { wallet: walletHealth(ping.wallet) } : {}),
  };
}

/** A supplier's latest sync run as /health shows it; null before any run. */
function toLastSync(r: SupplierLastSyncRow | undefined): LastSync | null {
  if (!r || r.run_id === null) return null;
  return {
    run_id: strOrNull(r.run_id),
    mode: strOrNull(r.mode),
    status: strOrNull(r.status),
    started_at: isoOrNull(r.started_at),
    finished_at: isoOrNull(r.finished_at),
    error: strOrNull(r.error),
    last_success_at: isoOrNull(r.last_success_at),
  };
}

const walletHealth = (w: WalletHealth): WalletHealth => ({ balance: w.balance, currency: w.currency, checked_at: w.checked_at });
