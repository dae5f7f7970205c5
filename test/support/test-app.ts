/**
 * End-to-end harness: the sandbox upstream as a real HTTP server on port 0, a fresh migrated
 * database, and the relay listening on port 0, talked to over real HTTP.
 */
import { Writable } from 'node:stream';
import axios, { type AxiosInstance } from 'axios';
import { createRelayApp, type RelayApp } from '../../src/app.factory.js';
import type { Clock } from '../../src/common/clock.js';
import { loadConfig, type AppConfig } from '../../src/config/app-config.js';
import { createPino, JsonLogger } from '../../src/ops/json-logger.js';
import { SandboxServer, type SandboxOptions } from '../../src/sandbox/sandbox.server.js';
import { serviceOn } from './shared-pglite.js';
import { openTestDatabase, type TestDatabase } from './test-database.js';

export const TEST_TOKEN = 'test-internal-token';
/** base64 of 32 bytes: 0x01 … 0x20. */
export const TEST_PAYLOAD_KEY = Buffer.from(Array.from({ length: 32 }, (_, i) => i + 1)).toString('base64');

export type StartSandboxOptions = SandboxOptions;

/** The environment of an upstream that nothing answers (a test without a sandbox whose service must not start the built-in one). */
export const UNREACHABLE_UPSTREAM: Readonly<Record<string, string>> = {
  UPSTREAM_BASE_URL: 'http://127.0.0.1:9/api/v1/upstream',
  UPSTREAM_API_KEY: 'k',
  UPSTREAM_API_SECRET: 's',
};

export async function startSandbox(options: StartSandboxOptions = {}): Promise<SandboxServer> {
  const sandbox = new SandboxServer({ allowPrivateCallbackUrls: true, ...options });
  await sandbox.start(0, '127.0.0.1');
  return sandbox;
}

/** The environment of a test instance pointed at a sandbox; `env` overrides any of it. */
export function testEnv(sandbox: SandboxServer | null, env: Record<string, string> = {}): Record<string, string> {
  return {
    NODE_ENV: 'test',
    PORT: '0',
    HOST: '127.0.0.1',
    LOG_LEVEL: 'silent',
    ...(sandbox
      ? { UPSTREAM_BASE_URL: sandbox.baseUrl, UPSTREAM_API_KEY: 'sandbox-api-key', UPSTREAM_API_SECRET: 'sandbox-api-secret' }
      : {}),
    INTERNAL_API_TOKEN: TEST_TOKEN,
    PAYLOAD_ENCRYPTION_KEY: TEST_PAYLOAD_KEY,
    SYNC_CRON: 'off',
    SYNC_ON_START: 'false',
    DB_MIGRATE_ON_START: 'false',
    // Tests that are not about the request budget run without it (the dujiao-next profile turns it on),
    // and read the product for each order's price guard; those about them set these themselves.
    UPSTREAM_RATE_LIMIT: 'off',
    ORDER_PRICE_FRESH_S: '0',
    ...env,
  };
}

/**
 * JSON log lines written by one or more instances, in the order they were written. Several instances
 * of one test share one: Nest's `Logger` writes through the logger of the application created last,
 * whichever instance the line comes from.
 */
export class LogCapture {
  private text = '';
  readonly stream = new Writable({
    write: (chunk: Buffer, _encoding, done) => {
      this.text += chunk.toString('utf8');
      done();
    },
  });

  /** Everything written so far, as written. */
  output(): string {
    return this.text;
  }

  lines(): Array<Record<string, unknown>> {
    return this.text
      .split('\n')
      .filter(Boolean)
      .map((l) => JSON.parse(l) as Record<string, unknown>);
  }
}

export interface TestApp {
  relay: RelayApp;
  config: AppConfig;
  url: string;
  /** axios bound to the relay with its internal token; never throws on an HTTP status. */
  http: AxiosInstance;
  /** The service's JSON log lines so far (started with `logs`; at its LOG_LEVEL), else none. */
  logLines(): Array<Record<string, unknown>>;
  /** The same, as written (e.g. to search the whole output for a secret). */
  logOutput(): string;
  close(): Promise<void>;
}

export interface StartTestAppOptions {
  /** Captures the service's JSON log lines: true in a capture of its own, or in one shared with other instances. */
  logs?: boolean | LogCapture;
  /** false: no background work (poller, inbox, sync schedule, webhook delivery): the test drives it. */
  workers?: boolean;
  /** The service's clock (e.g. a TestClock the test moves); default the wall clock. */
  clock?: Clock;
  /** Without a sandbox and UPSTREAM_BASE_URL: how many built-in sandboxes in all (createRelayApp's `sandboxes`). */
  sandboxes?: number;
}

export async function startTestApp(
  db: TestDatabase,
  sandbox: SandboxServer | null,
  env: Record<string, string> = {},
  options: StartTestAppOptions = {},
): Promise<TestApp> {
  const config = loadConfig({ ...testEnv(sandbox, env), DATABASE_URL: db.url });
  // without background work (no poller, no scheduled syncs, no webhook delivery): a test drives it
  if (options.workers === false) config.workers = false;
  const capture = options.logs instanceof LogCapture ? options.logs : options.logs ? new LogCapture() : null;
  const pino = capture ? createPino(config.logLevel, capture.stream) : null;
  const stopped = serviceOn(db.url);
  let relay: RelayApp;
  try {
    relay = await createRelayApp(config, {
      endpoint: db.endpoint,
      clock: options.clock,
      sandboxes: options.sandboxes,
      ...(pino ? { logger: new JsonLogger(pino), pino } : { logger: false }),
    });
  } catch (e) {
    stopped();
    throw e;
  }
  const http = axios.create({
    baseURL: relay.url,
    headers: { authorization: `Bearer ${config.internalApiToken}` },
    validateStatus: () => true,
    timeout: 30_000,
  });
  return {
    relay,
    config,
    url: relay.url,
    http,
    logLines: () => capture?.lines() ?? [],
    logOutput: () => capture?.output() ?? '',
    close: () => relay.close().finally(stopped),
  };
}

export { openTestDatabase };
export type { TestDatabase };
