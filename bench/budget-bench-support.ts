/**
 * The processes and helpers that bench/budget.bench.ts and bench/suppliers-sync.bench.ts share: the
 * compiled relay (`src/` built with SWC, run as `node main.js`), the sandbox child of
 * bench/budget-bench-sandbox.ts driven over IPC, fresh databases, the full sync's start and end, and
 * Dujiao-Next's limiter scaled in time.
 */
import { execFileSync, fork, spawn, type ChildProcess } from 'node:child_process';
import { closeSync, cpSync, mkdirSync, mkdtempSync, openSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import { EmbeddedPostgres } from '../src/database/embedded-postgres.js';
import type { SandboxStats } from '../src/sandbox/sandbox.types.js';
import { SERVICE_PROCESS_ENV } from './run-all.js';

export const ROOT = fileURLToPath(new URL('../', import.meta.url));
export const TOKEN = 'bench-token';
export const KEY = 'sandbox-api-key';
export const SECRET = 'sandbox-api-secret';
/** The relays' PAYLOAD_ENCRYPTION_KEY. */
export const PAYLOAD_KEY = Buffer.alloc(32, 7);

const args = process.argv.slice(2);
/** The value of the command-line option `--name`, or `def` when it is absent or has no value. */
export const arg = (name: string, def: string): string => {
  const i = args.indexOf(`--${name}`);
  return i >= 0 && args[i + 1] && !args[i + 1].startsWith('--') ? args[i + 1] : def;
};
export const hasFlag = (name: string): boolean => args.includes(`--${name}`);

export const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
export const fmt = (x: number | null | undefined, d = 1) => (x === null || x === undefined || !Number.isFinite(x) ? '-' : x.toFixed(d));
export const log = (line = '') => process.stdout.write(`${line}\n`);

/** Dujiao-Next's limiter (router.go upstreamAPIRule: 60 requests per 60 s, a 30 s block), scaled ×1/`scale` in time. */
export function scaledLimit(scale: number): { requests: number; windowMs: number; blockMs: number } {
  return { requests: 60, windowMs: 60_000 / scale, blockMs: 30_000 / scale };
}

export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const { port } = s.address() as { port: number };
      s.close(() => resolve(port));
    });
  });
}

/** Compiles src/ to JavaScript (the project's SWC settings) into `buildDir`, with the migrations beside it; returns main.js. */
export function buildRelay(buildDir: string): string {
  rmSync(buildDir, { recursive: true, force: true });
  mkdirSync(buildDir, { recursive: true });
  execFileSync(
    join(ROOT, 'node_modules/.bin/swc'),
    ['src', '-d', join(buildDir, 'dist'), '--strip-leading-paths', '--config-file', '.swcrc', '-q'],
    { cwd: ROOT, stdio: 'inherit' },
  );
  cpSync(join(ROOT, 'migrations'), join(buildDir, 'migrations'), { recursive: true });
  writeFileSync(join(buildDir, 'package.json'), '{"type":"module","private":true}\n');
  return join(buildDir, 'dist/main.js');
}

/** What bench/budget-bench-sandbox.ts reads from BUDGET_BENCH_SANDBOX. */
export interface SandboxSettings {
  products: number;
  orderProducts: number;
  rateLimit: { requests: number; windowMs: number; blockMs: number };
  callbackRetryDelaysMs: number[];
}

/** The sandbox child of bench/budget-bench-sandbox.ts, driven over IPC by id. */
export class Sandbox {
  private nextId = 1;
  private readonly waiting = new Map<number, (m: Record<string, unknown>) => void>();
  private logFrom = 0;
  /** Every limiter entry read so far: [epoch ms, key, operation, admitted]. */
  readonly log: Array<[number, string, string, boolean]> = [];

  private constructor(
    private readonly proc: ChildProcess,
    readonly baseUrl: string,
    readonly skuCodes: string[],
    readonly products: number,
  ) {
    proc.on('message', (m: Record<string, unknown>) => {
      const done = this.waiting.get(m.id as number);
      if (done) {
        this.waiting.delete(m.id as number);
        done(m);
      }
    });
  }

  static async start(settings: SandboxSettings): Promise<Sandbox> {
    const proc = fork(fileURLToPath(new URL('./budget-bench-sandbox.ts', import.meta.url)), [], {
      execArgv: ['--no-warnings', '--import', '@swc-node/register/esm-register'],
      env: { ...process.env, BUDGET_BENCH_SANDBOX: JSON.stringify(settings) },
      stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
    });
    const hello = await new Promise<Record<string, unknown>>((resolve, reject) => {
      proc.once('error', reject);
      proc.once('exit', (code) => reject(new Error(`the sandbox exited (${code})`)));
      proc.once('message', (m: Record<string, unknown>) => resolve(m));
    });
    proc.removeAllListeners('exit');
    return new Sandbox(proc, hello.baseUrl as string, hello.skuCodes as string[], hello.products as number);
  }

  private async ask<T>(msg: Record<string, unknown>): Promise<T> {
    const id = this.nextId++;
    const answer = await new Promise<Record<string, unknown>>((resolve) => {
      this.waiting.set(id, resolve);
      this.proc.send({ id, ...msg });
    });
    if (typeof answer.error === 'string') throw new Error(answer.error);
    return answer as T;
  }

  get pid(): number {
    return this.proc.pid!;
  }

  async stats(): Promise<SandboxStats> {
    return (await this.ask<{ stats: SandboxStats }>({ cmd: 'stats' })).stats;
  }

  /** Reads the limiter's new entries into `log`. */
  async readLog(): Promise<void> {
    const r = await this.ask<{ entries: Array<[number, string, string, boolean]>; next: number }>({ cmd: 'log', from: this.logFrom });
    this.log.push(...r.entries);
    this.logFrom = r.next;
  }

  /**
   * The product reads received from index `from` ([epoch ms, 'product', path]), and every order
   * ([created epoch ms, product id, downstream_order_no]).
   */
  async requests(
    from = 0,
  ): Promise<{ requests: Array<[number, string, string]>; next: number; orders: Array<[number, number, string | null]> }> {
    return this.ask({ cmd: 'requests', from });
  }

  /** Creation time (epoch ms) of each upstream order by its downstream_order_no. */
  async orderCreations(): Promise<Map<string, number>> {
    const r = await this.ask<{ orders: Array<[string | null, number]> }>({ cmd: 'orders' });
    return new Map(r.orders.filter((o): o is [string, number] => o[0] !== null));
  }

  stop(): Promise<void> {
    return new Promise((resolve) => {
      if (this.proc.exitCode !== null) return resolve();
      this.proc.once('exit', () => resolve());
      this.proc.send({ cmd: 'stop' });
    });
  }
}

/** The 429s a sandbox answered, over all keys. */
export const rateLimitedTotal = (s: SandboxStats) => Object.values(s.rateLimited).reduce((x, y) => x + y, 0);

export interface Json {
  status: number;
  data: Record<string, unknown>;
}

export interface RelayOptions {
  databaseUrl: string;
  upstreamUrl: string;
  syncOnStart: boolean;
  /** CALLBACK_PUBLIC_URL set to the relay's own `/callbacks/upstream`. */
  callbacks: boolean;
  /** The bench's own variables (the profile, the limiter, its scaled timings). */
  env: Record<string, string>;
  /** The prefix of the relay's DATA_DIR, made under the system's temporary directory. */
  dataDirPrefix: string;
}

/** A relay process (`node main.js`, the compiled service), its log written to a file. */
export class Relay {
  private constructor(
    readonly name: string,
    readonly url: string,
    private readonly proc: ChildProcess,
    readonly logFile: string,
    private readonly dataDir: string,
  ) {}

  static async start(name: string, mainJs: string, opts: RelayOptions): Promise<Relay> {
    const port = await freePort();
    const url = `http://127.0.0.1:${port}`;
    const dataDir = mkdtempSync(join(tmpdir(), opts.dataDirPrefix));
    const logFile = join(dataDir, 'relay.log');
    const out = openSync(logFile, 'a');
    const { NODE_OPTIONS: _o, ...inherited } = process.env;
    const proc = spawn(process.execPath, ['--no-warnings', mainJs], {
      cwd: ROOT,
      env: {
        ...inherited,
        ...SERVICE_PROCESS_ENV,
        ...opts.env,
        NODE_ENV: 'test',
        PORT: String(port),
        HOST: '127.0.0.1',
        LOG_LEVEL: 'warn',
        DATABASE_URL: opts.databaseUrl,
        DB_MIGRATE_ON_START: 'true',
        UPSTREAM_BASE_URL: opts.upstreamUrl,
        UPSTREAM_API_KEY: KEY,
        UPSTREAM_API_SECRET: SECRET,
        INTERNAL_API_TOKEN: TOKEN,
        PAYLOAD_ENCRYPTION_KEY: PAYLOAD_KEY.toString('base64'),
        SYNC_CRON: 'off',
        SYNC_ON_START: String(opts.syncOnStart),
        DATA_DIR: dataDir,
        ...(opts.callbacks ? { CALLBACK_PUBLIC_URL: `${url}/callbacks/upstream` } : {}),
      },
      stdio: ['ignore', out, out],
    });
    closeSync(out);
    const relay = new Relay(name, url, proc, logFile, dataDir);
    const deadline = Date.now() + 120_000;
    while (
      !(await relay.get('/health').then(
        (r) => r.status === 200,
        () => false,
      ))
    ) {
      if (proc.exitCode !== null)
        throw new Error(`relay ${name} exited (${proc.exitCode}); its log: ${logFile}\n${readFileSync(logFile, 'utf8').slice(-3000)}`);
      if (Date.now() > deadline) throw new Error(`relay ${name} did not start; its log: ${logFile}`);
      await sleep(200);
    }
    return relay;
  }

  async request(method: string, path: string, body?: unknown): Promise<Json> {
    const r = await fetch(`${this.url}${path}`, {
      method,
      headers: { authorization: `Bearer ${TOKEN}`, ...(body !== undefined ? { 'content-type': 'application/json' } : {}) },
      body: body === undefined ? undefined : JSON.stringify(body),
      signal: AbortSignal.timeout(60_000),
    });
    const text = await r.text();
    let data: Record<string, unknown>;
    try {
      data = text ? (JSON.parse(text) as Record<string, unknown>) : {};
    } catch {
      data = { text };
    }
    return { status: r.status, data };
  }

  get(path: string): Promise<Json> {
    return this.request('GET', path);
  }

  post(path: string, body: unknown = {}): Promise<Json> {
    return this.request('POST', path, body);
  }

  /** Warnings and errors the relay logged (pino levels 40, 50, 60), the most frequent messages first. */
  logSummary(): string {
    let text: string;
    try {
      text = readFileSync(this.logFile, 'utf8');
    } catch {
      return 'no log';
    }
    const counts = new Map<string, number>();
    let warn = 0;
    let error = 0;
    for (const line of text.split('\n')) {
      if (!line.startsWith('{')) continue;
      try {
        const j = JSON.parse(line) as { level?: number; msg?: string };
        if ((j.level ?? 0) >= 50) error++;
        else if ((j.level ?? 0) >= 40) warn++;
        else continue;
        const msg = String(j.msg ?? '')
          .replace(/[0-9a-f-]{8,}|\d+/gi, '#')
          .slice(0, 110);
        counts.set(msg, (counts.get(msg) ?? 0) + 1);
      } catch {
        // not a JSON line
      }
    }
    const top = [...counts.entries()].sort((a, b) => b[1] - a[1]).slice(0, 3);
    return `${warn} warnings, ${error} errors${top.length ? `: ${top.map(([m, n]) => `${n} × "${m}"`).join('; ')}` : ''}`;
  }

  async stop(): Promise<void> {
    if (this.proc.exitCode === null && this.proc.signalCode === null) {
      await new Promise<void>((resolve) => {
        this.proc.once('exit', () => resolve());
        this.proc.kill('SIGTERM');
      });
    }
    rmSync(this.dataDir, { recursive: true, force: true });
  }
}

export interface Database {
  /** What the relays get as DATABASE_URL. */
  url: string;
  describe: string;
  drop(): Promise<void>;
}

/** One embedded PGlite database held by this process and served over its socket (relays reach it by its postgres:// URL). */
export async function servedPglite(): Promise<Database> {
  const embedded = await EmbeddedPostgres.start({ path: 'memory' });
  return { url: embedded.url, describe: 'one PGlite served over its socket from the bench process', drop: () => embedded.stop() };
}

/** A fresh PostgreSQL database `<prefix>_<epoch ms>` on the server at `serverUrl`, dropped (WITH FORCE) by `drop`. */
export async function freshPostgres(serverUrl: string, prefix: string): Promise<Database> {
  const name = `${prefix}_${Date.now()}`;
  const admin = new pg.Client({ connectionString: serverUrl });
  await admin.connect();
  await admin.query(`CREATE DATABASE "${name}"`);
  await admin.end();
  const u = new URL(serverUrl);
  u.pathname = `/${name}`;
  return {
    url: u.toString(),
    describe: `PostgreSQL database ${name}`,
    drop: async () => {
      const a = new pg.Client({ connectionString: serverUrl });
      await a.connect();
      await a.query(`DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`);
      await a.end();
    },
  };
}

export interface SyncRun {
  run_id: string;
  status: string;
  started_at: string;
  finished_at: string | null;
  pages_total: number | null;
  pages_done: number | null;
  products_seen: number | null;
  error: string | null;
  budget_wait_ms?: number;
}

/** Polls the run `runId` (null: the latest run) until it is no longer `running`; throws after `timeoutMs`. */
export async function syncDone(relay: Relay, runId: string | null, timeoutMs = Infinity): Promise<SyncRun> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    let run: SyncRun | undefined;
    if (runId) run = (await relay.get(`/internal/catalog/sync-runs/${runId}`)).data.run as SyncRun | undefined;
    else run = ((await relay.get('/internal/catalog/sync-runs')).data.items as SyncRun[] | undefined)?.[0];
    if (run && run.status !== 'running') return run;
    if (Date.now() > deadline) throw new Error(`the sync ${runId ?? ''} did not finish in ${timeoutMs / 1000} s`);
    await sleep(250);
  }
}

/** A run's duration by the relay's own times (NaN while it has not finished). */
export const runSeconds = (r: SyncRun) => (r.finished_at ? (Date.parse(r.finished_at) - Date.parse(r.started_at)) / 1000 : NaN);
