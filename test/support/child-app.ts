/**
 * The service as a child process (`src/main.ts` compiled for the run, see `nodeEntry`), for tests
 * that start it from nothing, read its log, or kill it with SIGKILL and start it again
 * (`startRelayChild`: on a test database against a sandbox); and small helpers shared by the orders
 * and callbacks end-to-end tests (catalog seeding, waiting, signed callbacks).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import axios, { type AxiosInstance } from 'axios';
import type { SandboxServer } from '../../src/sandbox/sandbox.server.js';
import { DEFAULT_SIGNATURE_TEMPLATE, signedHeaders } from '../../src/signing/signing.js';
import { serviceOn } from './shared-pglite.js';
import { CACHE_DIR } from './test-env.js';
import { TEST_TOKEN, testEnv } from './test-app.js';
import { sleep, waitFor } from './wait.js';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const SWC_LOADER = pathToFileURL(`${ROOT}test/support/swc-register.mjs`).href;
const BUILD = `${CACHE_DIR}build/src/`;

/** How a node process runs a module of `src/`: its options, the file, and the environment it needs. */
export interface NodeEntry {
  nodeArgs: string[];
  file: string;
  /** The file as a URL, for `import()` from a script. */
  url: string;
  env: Record<string, string>;
}

/**
 * A module of `src/` (`'main'`, `'cli/relay'`, `'database/data-dir-lock'`) for a child process: the
 * JavaScript `npm test` compiled once for the run (test/support/global-setup.mjs), as production runs
 * it; without that build (a test file run outside `npm test`'s global setup), the TypeScript through
 * the SWC loader, which compiles every module in each process.
 */
export function nodeEntry(module: string): NodeEntry {
  const compiled = `${BUILD}${module}.js`;
  if (existsSync(compiled)) return { nodeArgs: ['--no-warnings'], file: compiled, url: pathToFileURL(compiled).href, env: {} };
  const source = `${ROOT}src/${module}.ts`;
  return {
    nodeArgs: ['--no-warnings', '--import', SWC_LOADER],
    file: source,
    url: pathToFileURL(source).href,
    env: { SWC_NODE_PROJECT: `${ROOT}tsconfig.json` },
  };
}

export interface ChildApp {
  process: ChildProcess;
  /** Everything the process wrote to stdout and stderr so far. */
  output(): string;
  /** Resolves with the first log line (parsed JSON), already written or still to come, for which `match` is true. */
  waitForLog(match: (line: Record<string, unknown>) => boolean, timeoutMs?: number): Promise<Record<string, unknown>>;
  /** Resolves with the exit code. */
  exited: Promise<number | null>;
  kill(signal?: NodeJS.Signals): Promise<number | null>;
}

export interface StartChildOptions {
  env: Record<string, string>;
  /** Working directory (default: the repository root). */
  cwd?: string;
  /** Replace the environment entirely instead of extending this process's (PATH is kept). */
  cleanEnv?: boolean;
}

export function startChildApp(options: StartChildOptions): ChildApp {
  const base: Record<string, string | undefined> = options.cleanEnv
    ? { PATH: process.env.PATH, HOME: process.env.HOME }
    : { ...process.env };
  delete base.NODE_OPTIONS; // Jest's --experimental-vm-modules is not for the child
  const main = nodeEntry('main');
  const child = spawn(process.execPath, [...main.nodeArgs, main.file], {
    cwd: options.cwd ?? ROOT,
    env: { ...base, ...main.env, ...options.env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  const waiters: Array<{ match: (l: Record<string, unknown>) => boolean; resolve: (l: Record<string, unknown>) => void }> = [];
  let pending = '';
  const seen: Record<string, unknown>[] = [];
  const onData = (chunk: Buffer) => {
    const text = chunk.toString('utf8');
    out += text;
    pending += text;
    const lines = pending.split('\n');
    pending = lines.pop() ?? '';
    for (const line of lines) {
      let parsed: Record<string, unknown>;
      try {
        parsed = JSON.parse(line) as Record<string, unknown>;
      } catch {
        parsed = { msg: line };
      }
      seen.push(parsed);
      for (const w of [...waiters]) {
        if (w.match(parsed)) {
          waiters.splice(waiters.indexOf(w), 1);
          w.resolve(parsed);
        }
      }
    }
  };
  child.stdout!.on('data', onData);
  child.stderr!.on('data', onData);
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
  if (options.env.DATABASE_URL) void exited.then(serviceOn(options.env.DATABASE_URL));
  return {
    process: child,
    output: () => out,
    exited,
    waitForLog(match, timeoutMs = 60_000) {
      const earlier = seen.find(match);
      if (earlier) return Promise.resolve(earlier);
      return new Promise((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error(`timed out waiting for a log line; output so far:\n${out}`)), timeoutMs);
        const entry = {
          match,
          resolve: (l: Record<string, unknown>) => {
            clearTimeout(timer);
            resolve(l);
          },
        };
        waiters.push(entry);
        void exited.then((code) => {
          if (waiters.includes(entry)) {
            clearTimeout(timer);
            reject(new Error(`process exited (${code}) before the log line; output:\n${out}`));
          }
        });
      });
    },
    async kill(signal = 'SIGTERM') {
      if (child.exitCode === null && child.signalCode === null) child.kill(signal);
      return exited;
    },
  };
}

// ------------------------------------------------------------- the relay against a test database

/**
 * A free TCP port on 127.0.0.1 (for a listener whose URL must be known before it starts). Taken below
 * the kernel's ephemeral range: a port the kernel hands out for `listen(0)` is also one it may give the
 * next outgoing connection (a pool's, another test worker's) before the child binds it
 * (EADDRINUSE seen in CI); below the range only another freePort can take it, and picks are random.
 */
export async function freePort(): Promise<number> {
  const low = ephemeralLow();
  for (let i = 0; i < 50 && low > 10_000; i++) {
    const port = 10_000 + Math.floor(Math.random() * (low - 10_000));
    if (await canListen(port)) return port;
  }
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const { port } = s.address() as { port: number };
      s.close(() => resolve(port));
    });
  });
}

/** The lowest port of the kernel's ephemeral range (Linux; 32768 where it cannot be read). */
function ephemeralLow(): number {
  try {
    const low = Number(readFileSync('/proc/sys/net/ipv4/ip_local_port_range', 'utf8').trim().split(/\s+/)[0]);
    return Number.isInteger(low) && low > 0 ? low : 32768;
  } catch {
    return 32768;
  }
}

function canListen(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const s = createServer();
    s.once('error', () => resolve(false));
    s.listen(port, '127.0.0.1', () => s.close(() => resolve(true)));
  });
}

export interface RelayChild extends ChildApp {
  url: string;
  port: number;
  /** axios bound to the child with the internal token; never throws on an HTTP status. */
  http: AxiosInstance;
}

export interface RelayChildOptions {
  /** DATABASE_URL of the (already migrated) test database. */
  databaseUrl: string;
  sandbox: SandboxServer | null;
  /** Default: a free port. Give a restarted instance the same one (callbacks reach it). */
  port?: number;
  env?: Record<string, string>;
}

/** The relay as a child process on a test database and a sandbox, started and answering /health. */
export async function startRelayChild(options: RelayChildOptions): Promise<RelayChild> {
  const port = options.port ?? (await freePort());
  const dataDir = mkdtempSync(join(tmpdir(), 'relay-child-'));
  const child = startChildApp({
    env: {
      ...testEnv(options.sandbox, { LOG_LEVEL: 'info', ...options.env }),
      DATABASE_URL: options.databaseUrl,
      PORT: String(port),
      HOST: '127.0.0.1',
      DATA_DIR: dataDir,
    },
  });
  void child.exited.then(() => rmSync(dataDir, { recursive: true, force: true }));
  const url = `http://127.0.0.1:${port}`;
  try {
    await child.waitForLog((l) => typeof l.msg === 'string' && l.msg.startsWith('upstream-relay listening'));
  } catch (e) {
    await child.kill('SIGKILL');
    throw e;
  }
  const http = axios.create({
    baseURL: url,
    headers: { authorization: `Bearer ${TEST_TOKEN}` },
    validateStatus: () => true,
    timeout: 30_000,
  });
  return { ...child, url, port, http };
}

// ------------------------------------------------------- helpers of the orders and callbacks tests

export { sleep, waitFor };

/** Runs a full catalog sync through the internal API and waits for it to succeed. */
export async function seedCatalog(http: AxiosInstance): Promise<void> {
  const started = await http.post('/internal/catalog/sync', { mode: 'full' });
  if (started.status !== 202) throw new Error(`catalog sync did not start: ${started.status} ${JSON.stringify(started.data)}`);
  const runId = (started.data as { run_id: string }).run_id;
  const run = await waitFor(
    async () => ((await http.get(`/internal/catalog/sync-runs/${runId}`)).data as { run?: { status: string } }).run,
    (r) => r !== undefined && r.status !== 'running',
    'the catalog sync',
    60_000,
  );
  if (run?.status !== 'succeeded') throw new Error(`catalog sync failed: ${JSON.stringify(run)}`);
}

export interface OrderView {
  shop_order_no: string;
  status: string;
  attempt: number;
  downstream_order_no: string;
  upstream_order_id: number | null;
  items: string[];
  refund_state: string;
  refundable_amount: string | null;
  error_code: string | null;
  [k: string]: unknown;
}

export async function getOrder(http: AxiosInstance, shopOrderNo: string): Promise<OrderView | null> {
  const r = await http.get(`/internal/orders/${shopOrderNo}`);
  return r.status === 200 ? (r.data as { order: OrderView }).order : null;
}

export function waitForOrder(
  http: AxiosInstance,
  shopOrderNo: string,
  done: (o: OrderView) => boolean,
  timeoutMs = 20_000,
): Promise<OrderView> {
  return waitFor(
    () => getOrder(http, shopOrderNo),
    (o) => o !== null && done(o),
    `order ${shopOrderNo}`,
    timeoutMs,
  ) as Promise<OrderView>;
}

export interface CallbackSigning {
  headerPrefix?: string;
  apiKey?: string;
  secret?: string;
  /** The path signed over. Default '/callbacks/upstream'. */
  path?: string;
  template?: string;
  timestamp?: number;
}

/** Headers of a callback signed as the upstream signs them (CONTRACT §4). */
export function callbackHeaders(body: string, s: CallbackSigning = {}): Record<string, string> {
  return {
    'content-type': 'application/json',
    ...signedHeaders(s.headerPrefix ?? 'Service', s.secret ?? 'sandbox-api-secret', s.template ?? DEFAULT_SIGNATURE_TEMPLATE, {
      apiKey: s.apiKey ?? 'sandbox-api-key',
      timestamp: s.timestamp ?? Math.floor(Date.now() / 1000),
      method: 'POST',
      path: s.path ?? '/callbacks/upstream',
      body,
    }),
  };
}
