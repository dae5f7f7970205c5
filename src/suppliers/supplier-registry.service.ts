/**
 * The suppliers of this process at run time (CONTRACT §10): for each, its configuration, its own
 * request budget (its key's, shared with the other replicas through the ledger) and its own upstream
 * client (budgeted, over an HTTP adapter with its own sockets). Nothing is shared between two
 * suppliers: no queue head, no lock, no timer, so a blocked or failing one never slows another.
 *
 *   registry.get('main').client.getOrder(id)   // the supplier's budgeted upstream port
 *   registry.get(name).budget.blockedUntil()   // its key's block
 *   registry.find(name)                        // undefined when unknown (get: 404 supplier_not_found)
 *   await registry.reload()                    // after a change through the API, or another replica's
 *
 * The env supplier (the `UPSTREAM_*` variables) exists from construction; its row is written at
 * start. The stored ones are loaded at start and again every RELOAD_MS (another replica may have
 * added, changed or disabled one), and at once by the process that changed them. A supplier whose
 * credentials change gets a new runtime; the old one is closed at shutdown (calls in flight on it end
 * as they would).
 */
import { Injectable, Logger, type OnApplicationShutdown, type OnModuleInit } from '@nestjs/common';
import { UpstreamBudgetRepository } from '../budget/upstream-budget.repository.js';
import { UpstreamBudgetService } from '../budget/upstream-budget.service.js';
import { AppError } from '../common/app-error.js';
import { Clock } from '../common/clock.js';
import { WakeLoop } from '../common/wake-loop.js';
import { AppConfig } from '../config/app-config.js';
import { Metrics } from '../ops/metrics.service.js';
import { BudgetedUpstreamClient } from '../upstream/budgeted-upstream.client.js';
import { UpstreamHttpClient } from '../upstream/upstream-http.adapter.js';
import type { UpstreamClient } from '../upstream/upstream.client.js';
import { budgetSettings, envSupplier, supplierSettings } from './supplier-config.js';
import { SupplierRepository, type StoredSupplier } from './supplier.repository.js';
import type { SupplierConfig } from './supplier.types.js';

/** One supplier's parts at run time. */
export interface SupplierRuntime {
  readonly config: SupplierConfig;
  /** Its upstream port under its own budget. */
  readonly client: UpstreamClient;
  readonly budget: UpstreamBudgetService;
  /** The adapter under `client` (its sockets). */
  readonly http: UpstreamHttpClient;
}

/** How often the stored suppliers are read again (another replica's changes). */
export const RELOAD_MS = 15_000;

@Injectable()
export class SupplierRegistry implements OnModuleInit, OnApplicationShutdown {
  private readonly logger = new Logger('suppliers');
  private readonly runtimes = new Map<string, SupplierRuntime>();
  /** Runtimes replaced by a change: closed at shutdown, not while a call may be in flight on them. */
  private readonly retired: SupplierRuntime[] = [];
  private readonly loop = new WakeLoop(
    () => this.prepare().catch((e: unknown) => this.logger.warn(`could not read the suppliers: ${(e as Error).message}`)),
    () => RELOAD_MS,
  );
  readonly envName: string;
  /** The start's one-time work (reseal, the env supplier's row) is done. */
  private prepared = false;

  constructor(
    private readonly config: AppConfig,
    private readonly clock: Clock,
    private readonly metrics: Metrics,
    private readonly budgetRepo: UpstreamBudgetRepository,
    private readonly repo: SupplierRepository,
  ) {
    const env = envSupplier(config);
    this.envName = env.name;
    this.runtimes.set(env.name, this.open(env));
  }

  /**
   * At start: the stored secrets moved to the first key, the env supplier's row written, the stored
   * suppliers read. A database not migrated yet (DB_MIGRATE_ON_START=false, /health/ready names the
   * pending migrations) or out of reach does not stop the start: the env supplier serves, and the
   * reload loop tries again.
   */
  async onModuleInit(): Promise<void> {
    await this.prepare().catch((e: unknown) => this.logger.warn(`could not read the suppliers yet: ${(e as Error).message}`));
    if (this.config.workers) this.loop.start(RELOAD_MS);
  }

  /** Once: reseal, write the env supplier; then, each time, read the stored suppliers. */
  private async prepare(): Promise<void> {
    if (!this.prepared) {
      // Secrets sealed under an older PAYLOAD_ENCRYPTION_KEY move to the first one.
      const moved = await this.repo.resealAll();
      if (moved > 0) this.logger.log(`${moved} supplier secret(s) sealed again with the first PAYLOAD_ENCRYPTION_KEY`);
      const env = this.env.config;
      await this.repo.writeEnvSupplier({
        name: env.name,
        baseUrl: env.baseUrl,
        apiKey: env.apiKey,
        profile: env.profile,
        settings: env.settings,
      });
      this.prepared = true;
    }
    await this.reload();
  }

  async onApplicationShutdown(): Promise<void> {
    await this.loop.stop();
    const all = [...this.runtimes.values(), ...this.retired];
    this.runtimes.clear();
    this.retired.length = 0;
    await Promise.all(all.map((r) => this.close(r)));
  }

  /** The `UPSTREAM_*` supplier. */
  get env(): SupplierRuntime {
    return this.runtimes.get(this.envName)!;
  }

  find(name: string): SupplierRuntime | undefined {
    return this.runtimes.get(name);
  }

  /** The supplier of that name; 404 `supplier_not_found` when there is none. */
  get(name: string): SupplierRuntime {
    const found = this.runtimes.get(name);
    if (!found) throw supplierNotFound(name);
    return found;
  }

  /** The supplier of that name, reading the stored ones again when this process does not know it yet. */
  async resolve(name: string): Promise<SupplierRuntime> {
    if (!this.runtimes.has(name)) await this.reload();
    return this.get(name);
  }

  /** Every supplier, the env supplier first, then by name. */
  list(): SupplierRuntime[] {
    const others = [...this.runtimes.values()].filter((r) => r.config.name !== this.envName);
    others.sort((a, b) => a.config.name.localeCompare(b.config.name));
    return [this.env, ...others];
  }

  /** The enabled suppliers (those that sync and take new orders). */
  enabled(): SupplierRuntime[] {
    return this.list().filter((r) => r.config.enabled);
  }

  /**
   * A stored supplier's configuration, its settings resolved from its profile and what the operator
   * set (the service-wide defaults for the rest).
   */
  configOf(stored: StoredSupplier & { apiSecret: string }): SupplierConfig {
    return {
      name: stored.name,
      baseUrl: stored.baseUrl,
      apiKey: stored.apiKey,
      apiSecret: stored.apiSecret,
      callbackSecret: stored.apiSecret,
      profile: stored.profile,
      settings: supplierSettings(stored.profile, stored.settings, {
        timeoutMs: this.config.upstream.timeoutMs,
        blockMs: this.config.budget.blockMs,
        syncMode: this.config.sync.mode,
      }),
      enabled: stored.enabled,
      managedByEnv: false,
    };
  }

  /** Reads the stored suppliers again: new ones added, changed ones replaced, deleted ones removed. */
  async reload(): Promise<void> {
    const stored = await this.repo.list();
    const seen = new Set<string>([this.envName]);
    for (const s of stored) {
      if (s.managedByEnv || s.name === this.envName || s.apiSecret === null) continue;
      seen.add(s.name);
      const next = this.configOf({ ...s, apiSecret: s.apiSecret });
      const current = this.runtimes.get(s.name);
      if (current && sameParts(current.config, next)) {
        if (current.config.enabled !== next.enabled) this.runtimes.set(s.name, { ...current, config: next });
        continue;
      }
      if (current) this.retired.push(current);
      this.runtimes.set(s.name, this.open(next));
    }
    for (const [name, runtime] of this.runtimes) {
      if (seen.has(name)) continue;
      this.runtimes.delete(name);
      this.retired.push(runtime);
    }
  }

  /**
   * A runtime for a supplier that is not registered (the ping of a candidate before it is saved); the
   * caller closes it with `close`.
   */
  open(supplier: SupplierConfig): SupplierRuntime {
    const { settings } = supplier;
    const name = supplier.name;
    const http = new UpstreamHttpClient({
      baseUrl: supplier.baseUrl,
      apiKey: supplier.apiKey,
      apiSecret: supplier.apiSecret,
      headerPrefix: settings.headerPrefix,
      signatureTemplate: settings.signatureTemplate,
      timeoutMs: settings.timeoutMs,
      onCall: (e) => {
        this.metrics.upstreamCalls.inc({ operation: e.operation, outcome: e.outcome, supplier: name });
        this.metrics.upstreamLatency.observe({ operation: e.operation, supplier: name }, e.durationMs / 1000);
      },
    });
    // an alarm series is there from the supplier's start (0), not only from its first count
    this.metrics.overcharges.inc({ supplier: name }, 0);
    const budget = new UpstreamBudgetService(budgetSettings(supplier, this.config.budget), this.clock, this.budgetRepo, this.metrics);
    return { config: supplier, client: new BudgetedUpstreamClient(http, budget), budget, http };
  }

  async close(runtime: SupplierRuntime): Promise<void> {
    await runtime.budget.close();
    runtime.http.close();
  }
}

/** Whether two configurations need the same runtime (only `enabled` differs, or nothing). */
function sameParts(a: SupplierConfig, b: SupplierConfig): boolean {
  return JSON.stringify({ ...a, enabled: true }) === JSON.stringify({ ...b, enabled: true });
}

export function supplierNotFound(name: string): AppError {
  return new AppError('supplier_not_found', `no supplier named "${name}"`, { supplier: name });
}
