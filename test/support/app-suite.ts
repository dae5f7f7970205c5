/**
 * The usual life of an end-to-end describe block: a fresh database, a sandbox upstream and the
 * service on them (one instance, or several sharing the database as replicas), opened before its
 * tests; the sandbox's faults reset after each test; everything closed after the last one, the
 * service first. Call it at the top of the block; its fields are there once the block's tests run.
 * Hooks the block declares before the call run before the suite opens (e.g. a shop whose address the
 * service's `env` names), those declared after it close after the suite.
 */
import type { Clock } from '../../src/common/clock.js';
import type { SandboxServer } from '../../src/sandbox/sandbox.server.js';
import { seedCatalog } from './child-app.js';
import { addTestSupplier, type TestSupplierOptions } from './suppliers.js';
import {
  LogCapture,
  openTestDatabase,
  startSandbox,
  startTestApp,
  type StartSandboxOptions,
  type TestApp,
  type TestDatabase,
} from './test-app.js';

export interface AppSuite {
  readonly db: TestDatabase;
  readonly sandbox: SandboxServer;
  /** The first instance. */
  readonly app: TestApp;
  /** Every instance, in the order they were asked for. */
  readonly apps: readonly TestApp[];
  /** The sandbox of a supplier added with `suppliers` (the env supplier's is `sandbox`). */
  supplier(name: string): SandboxServer;
  /** The log lines of every instance, in one place (with `logs`; instances a test starts itself may write there too). */
  readonly logs: LogCapture;
}

/** What one instance of several has of its own, over the suite's. */
export interface AppSuiteInstance {
  /** Over the suite's `env`. */
  env?: Record<string, string>;
  /** Instead of the suite's `clock`. */
  clock?: Clock;
}

export interface AppSuiteOptions {
  /** false: no sandbox; the service's upstream is what `env` says (none: the service's built-in sandbox). */
  sandbox?: StartSandboxOptions | false;
  /** Runs on the sandbox before the service starts (e.g. adds the products the tests order). */
  prepare?: (sandbox: SandboxServer) => void;
  /** The service's environment over testEnv's (a function: worked out before the service starts, e.g. a free port). */
  env?: Record<string, string> | (() => Record<string, string> | Promise<Record<string, string>>);
  /** Instances on the one database: how many (default 1), or each with settings of its own. */
  instances?: number | readonly AppSuiteInstance[];
  /** Syncs the catalog through the first instance once the service runs. */
  seed?: boolean;
  /** Captures the JSON log lines of the instances, all in one LogCapture (TestApp.logLines, AppSuite.logs). */
  logs?: boolean;
  /** The service's clock (e.g. a TestClock the test moves); default the wall clock. */
  clock?: Clock;
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
  const logs = options.logs ? new LogCapture() : undefined;
  const opened = <T>(value: T | undefined, what: string): T => {
    if (value === undefined) throw new Error(`the suite's ${what} is not open (used outside its describe block's tests?)`);
    return value;
  };
  const instances: readonly AppSuiteInstance[] =
    typeof options.instances === 'object' ? options.instances : Array.from({ length: options.instances ?? 1 }, () => ({}));

  beforeAll(async () => {
    db = await openTestDatabase();
    if (options.sandbox !== false) {
      sandbox = await startSandbox(options.sandbox);
      options.prepare?.(sandbox);
    }
    const env = typeof options.env === 'function' ? await options.env() : options.env;
    apps = await Promise.all(
      instances.map((instance) =>
        startTestApp(
          db!,
          sandbox ?? null,
          { ...env, ...instance.env },
          { logs, workers: options.workers, clock: instance.clock ?? options.clock },
        ),
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
      if (options.sandbox === false) throw new Error('the suite has no sandbox (sandbox: false)');
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
    get logs() {
      if (!logs) throw new Error('the suite captures no logs (logs: true)');
      return logs;
    },
  };
}
