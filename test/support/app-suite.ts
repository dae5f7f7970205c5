/**
 * The usual life of an end-to-end describe block: a fresh database, a sandbox upstream and the
 * service on them (one instance, or several sharing the database as replicas), opened before its
 * tests; the sandbox's faults reset after each test; everything closed after the last one, the
 * service first. Call it at the top of the block; its fields are there once the block's tests run.
 */
import type { SandboxServer } from '../../src/sandbox/sandbox.server.js';
import { seedCatalog } from './child-app.js';
import { addTestSupplier, type TestSupplierOptions } from './suppliers.js';
import { openTestDatabase, startSandbox, startTestApp, type StartSandboxOptions, type TestApp, type TestDatabase } from './test-app.js';

export interface AppSuite {
  readonly db: TestDatabase;
  readonly sandbox: SandboxServer;
  /** The first instance. */
  readonly app: TestApp;
  /** Every instance, in the order they were asked for. */
  readonly apps: readonly TestApp[];
  /** The sandbox of a supplier added with `suppliers` (the env supplier's is `sandbox`). */
  supplier(name: string): SandboxServer;
}

export interface AppSuiteOptions {
  sandbox?: StartSandboxOptions;
  /** Runs on the sandbox before the service starts (e.g. adds the products the tests order). */
  prepare?: (sandbox: SandboxServer) => void;
  /** The service's environment over testEnv's (a function: worked out before the service starts, e.g. a free port). */
  env?: Record<string, string> | (() => Promise<Record<string, string>>);
  /** Instances on the one database (default 1). */
  instances?: number;
  /** Syncs the catalog through the first instance once the service runs. */
  seed?: boolean;
  /** Captures the service's JSON log lines (TestApp.logLines). */
  logs?: boolean;
  /** false: no background work (poller, inbox, sync schedule): the tests drive it themselves. */
  workers?: boolean;
  /**
   * More suppliers, each with a sandbox of its own (test/support/suppliers.ts), added once the
   * instances run and before `seed`; the env supplier stays `UPSTREAM_NAME` (default `main`).
   */
  suppliers?: Record<string, TestSupplierOptions>;
}

export function useAppSuite(options: AppSuiteOptions = {}): AppSuite {
  let db: TestDatabase | undefined;
  let sandbox: SandboxServer | undefined;
  let apps: TestApp[] = [];
  const others = new Map<string, SandboxServer>();
  const opened = <T>(value: T | undefined, what: string): T => {
    if (value === undefined) throw new Error(`the suite's ${what} is not open (used outside its describe block's tests?)`);
    return value;
  };

  beforeAll(async () => {
    db = await openTestDatabase();
    sandbox = await startSandbox(options.sandbox);
    options.prepare?.(sandbox);
    const env = typeof options.env === 'function' ? await options.env() : options.env;
    apps = await Promise.all(
      Array.from({ length: options.instances ?? 1 }, () =>
        startTestApp(db!, sandbox!, env, { logs: options.logs, workers: options.workers }),
      ),
    );
    for (const [name, supplier] of Object.entries(options.suppliers ?? {})) others.set(name, await addTestSupplier(apps, name, supplier));
    if (options.seed) await seedCatalog(apps[0].http);
    // Opening is setup, not what a test checks: beyond Jest's 60 s for a loaded machine (CI runs both
    // database passes side by side on two cores), where a first migration or a seeding sync waits for CPU.
  }, 120_000);
  afterEach(() => {
    sandbox?.faults.reset();
    for (const other of others.values()) other.faults.reset();
  });
  afterAll(async () => {
    for (const app of apps) await app.close();
    await sandbox?.stop();
    for (const other of others.values()) await other.stop();
    await db?.close();
    // (closing is the same: an instance's shutdown lets its work in flight end, on a loaded machine too)
  }, 120_000);

  return {
    get db() {
      return opened(db, 'database');
    },
    get sandbox() {
      return opened(sandbox, 'sandbox');
    },
    get app() {
      return opened(apps[0], 'service');
    },
    get apps() {
      return apps;
    },
    supplier(name: string) {
      return opened(others.get(name), `supplier "${name}"`);
    },
  };
}
