/**
 * `node --no-warnings --import @swc-node/register/esm-register bench/suppliers-sync.bench.ts`: a full
 * sync of each of two suppliers beside the other (CONTRACT §10), each under its own Dujiao-Next limiter
 * scaled in time as bench/budget.bench.ts scales it (60 requests per 60 s becomes 60 per 6 s with
 * `--scale 10`), against the same sync alone.
 *
 * Processes: two sandbox upstreams (bench/budget-bench-sandbox.ts, profile `dujiao-next`, its limiter
 * on, the same seeded catalog), and the relay (`src/` compiled to JavaScript, `node main.js`) with the
 * first as its `UPSTREAM_*` supplier and the second stored in its `suppliers` table with the same
 * budget settings (written before the relay starts, its secret sealed as the API seals it).
 *
 * Each sync's lower bound is its own budget's: pages ÷ (N'/W'), N' in any W' being what the relay's
 * rule grants one key (nothing else waits, so a sync may use all of it). Printed per supplier: the
 * full re-sync alone, then both at once, each as duration ÷ its bound (beside ≈ alone: the suppliers
 * share no budget, lock or queue); and 429s received (target 0).
 *
 * Options: `--db pglite|postgres` (default pglite: one embedded database served over its socket from
 * this process, so that the bench can write the supplier row; postgres: a fresh database at
 * BENCH_PG_URL, default postgres://postgres@127.0.0.1:5432/postgres), `--products N` (default 3000),
 * `--scale N` (default 10). BENCH_BUILD_DIR: where `src/` is compiled (default bench/.out/suppliers-build).
 */
import { execFileSync, fork, spawn, type ChildProcess } from 'node:child_process';
import { closeSync, cpSync, mkdirSync, mkdtempSync, openSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { cpus, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import { budgetRule } from '../src/budget/request-budget.js';
import { EmbeddedPostgres } from '../src/database/embedded-postgres.js';
import { encryptPayload } from '../src/orders/payload-crypto.js';
import type { SandboxStats } from '../src/sandbox/sandbox.types.js';
import { printBenchSummary, SERVICE_PROCESS_ENV, type BenchRow } from './run-all.js';

const ROOT = fileURLToPath(new URL('../', import.meta.url));
const BUILD = process.env.BENCH_BUILD_DIR ?? join(ROOT, 'bench/.out/suppliers-build');
const args = process.argv.slice(2);
const arg = (name: string, def: string): string => {
  const i = args.indexOf(`--${name}`);
  return i >= 0 && args[i + 1] && !args[i + 1].startsWith('--') ? args[i + 1] : def;
};
const DB = arg('db', 'pglite') as 'pglite' | 'postgres';
const PRODUCTS = Number(arg('products', '3000'));
const SCALE = Number(arg('scale', '10'));
const PG_URL = process.env.BENCH_PG_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';
const TOKEN = 'bench-token';
const KEY = 'sandbox-api-key';
const SECRET = 'sandbox-api-secret';
const PAYLOAD_KEY = Buffer.alloc(32, 7);
const LIMIT = { requests: 60, windowMs: 60_000 / SCALE, blockMs: 30_000 / SCALE };
const RULE = budgetRule({ requests: LIMIT.requests, windowMs: LIMIT.windowMs }, 0.5);
const BUDGET_PER_S = (RULE.limit / RULE.windowMs) * 1000;
const COMMAND =
  `node --no-warnings --import @swc-node/register/esm-register bench/suppliers-sync.bench.ts --db ${DB} ` +
  `--products ${PRODUCTS} --scale ${SCALE}`;

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const fmt = (x: number, d = 2) => (Number.isFinite(x) ? x.toFixed(d) : '-');
const log = (line = '') => process.stdout.write(`${line}\n`);

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const { port } = s.address() as { port: number };
      s.close(() => resolve(port));
    });
  });
}

/** A sandbox child of bench/budget-bench-sandbox.ts (its IPC: `stats` and `stop` used here). */
async function startSandbox(): Promise<{ baseUrl: string; stats(): Promise<SandboxStats>; stop(): Promise<void> }> {
  const proc = fork(fileURLToPath(new URL('./budget-bench-sandbox.ts', import.meta.url)), [], {
    execArgv: ['--no-warnings', '--import', '@swc-node/register/esm-register'],
    env: {
      ...process.env,
      BUDGET_BENCH_SANDBOX: JSON.stringify({ products: PRODUCTS, orderProducts: 0, rateLimit: LIMIT, callbackRetryDelaysMs: [] }),
    },
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
  const hello = await new Promise<Record<string, unknown>>((resolve, reject) => {
    proc.once('error', reject);
    proc.once('exit', (code) => reject(new Error(`the sandbox exited (${code})`)));
    proc.once('message', (m: Record<string, unknown>) => resolve(m));
  });
  proc.removeAllListeners('exit');
  let id = 0;
  return {
    baseUrl: hello.baseUrl as string,
    stats: () =>
      new Promise((resolve) => {
        const mine = ++id;
        const on = (m: { id: number; stats: SandboxStats }) => {
          if (m.id !== mine) return;
          proc.off('message', on);
          resolve(m.stats);
        };
        proc.on('message', on);
        proc.send({ id: mine, cmd: 'stats' });
      }),
    stop: () =>
      new Promise((resolve) => {
        if (proc.exitCode !== null) return resolve();
        proc.once('exit', () => resolve());
        proc.send({ cmd: 'stop' });
      }),
  };
}

function buildRelay(): string {
  rmSync(BUILD, { recursive: true, force: true });
  mkdirSync(BUILD, { recursive: true });
  execFileSync(
    join(ROOT, 'node_modules/.bin/swc'),
    ['src', '-d', join(BUILD, 'dist'), '--strip-leading-paths', '--config-file', '.swcrc', '-q'],
    { cwd: ROOT, stdio: 'inherit' },
  );
  cpSync(join(ROOT, 'migrations'), join(BUILD, 'migrations'), { recursive: true });
  writeFileSync(join(BUILD, 'package.json'), '{"type":"module","private":true}\n');
  return join(BUILD, 'dist/main.js');
}

interface Relay {
  url: string;
  call(method: string, path: string, body?: unknown): Promise<Record<string, unknown>>;
  stop(): Promise<void>;
}

async function startRelay(mainJs: string, databaseUrl: string, upstreamUrl: string): Promise<Relay> {
  const port = await freePort();
  const url = `http://127.0.0.1:${port}`;
  const dataDir = mkdtempSync(join(tmpdir(), 'relay-bench-suppliers-'));
  const logFile = join(dataDir, 'relay.log');
  const out = openSync(logFile, 'a');
  const { NODE_OPTIONS: _o, ...inherited } = process.env;
  const proc: ChildProcess = spawn(process.execPath, ['--no-warnings', mainJs], {
    cwd: ROOT,
    env: {
      ...inherited,
      ...SERVICE_PROCESS_ENV,
      NODE_ENV: 'test',
      PORT: String(port),
      HOST: '127.0.0.1',
      LOG_LEVEL: 'warn',
      DATABASE_URL: databaseUrl,
      DB_MIGRATE_ON_START: 'true',
      UPSTREAM_PROFILE: 'dujiao-next',
      UPSTREAM_BASE_URL: upstreamUrl,
      UPSTREAM_API_KEY: KEY,
      UPSTREAM_API_SECRET: SECRET,
      UPSTREAM_RATE_LIMIT: `${LIMIT.requests}/${LIMIT.windowMs}ms`,
      UPSTREAM_RATE_LIMIT_BLOCK_S: String(LIMIT.blockMs / 1000),
      INTERNAL_API_TOKEN: TOKEN,
      PAYLOAD_ENCRYPTION_KEY: PAYLOAD_KEY.toString('base64'),
      SYNC_CRON: 'off',
      SYNC_ON_START: 'false',
      DATA_DIR: dataDir,
    },
    stdio: ['ignore', out, out],
  });
  closeSync(out);
  const call = async (method: string, path: string, body?: unknown) => {
    const r = await fetch(`${url}${path}`, {
      method,
      headers: { authorization: `Bearer ${TOKEN}`, ...(body !== undefined ? { 'content-type': 'application/json' } : {}) },
      body: body === undefined ? undefined : JSON.stringify(body),
      signal: AbortSignal.timeout(60_000),
    });
    return (await r.json()) as Record<string, unknown>;
  };
  const deadline = Date.now() + 120_000;
  while (
    !(await fetch(`${url}/health`).then(
      (r) => r.ok,
      () => false,
    ))
  ) {
    if (proc.exitCode !== null) throw new Error(`the relay exited (${proc.exitCode}): ${readFileSync(logFile, 'utf8').slice(-3000)}`);
    if (Date.now() > deadline) throw new Error(`the relay did not start; its log: ${logFile}`);
    await sleep(200);
  }
  return {
    url,
    call,
    stop: async () => {
      if (proc.exitCode === null && proc.signalCode === null) {
        await new Promise<void>((resolve) => {
          proc.once('exit', () => resolve());
          proc.kill('SIGTERM');
        });
      }
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
}

async function openDatabase(): Promise<{ url: string; drop(): Promise<void> }> {
  if (DB === 'pglite') {
    const embedded = await EmbeddedPostgres.start({ path: 'memory' });
    return { url: embedded.url, drop: () => embedded.stop() };
  }
  const name = `relay_bench_suppliers_${Date.now()}`;
  const admin = new pg.Client({ connectionString: PG_URL });
  await admin.connect();
  await admin.query(`CREATE DATABASE "${name}"`);
  await admin.end();
  const u = new URL(PG_URL);
  u.pathname = `/${name}`;
  return {
    url: u.toString(),
    drop: async () => {
      const a = new pg.Client({ connectionString: PG_URL });
      await a.connect();
      await a.query(`DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`);
      await a.end();
    },
  };
}

/** Stores the supplier `second` as POST /internal/suppliers would (its secret sealed with the first payload key). */
async function storeSecond(databaseUrl: string, baseUrl: string): Promise<void> {
  const c = new pg.Client({ connectionString: databaseUrl });
  await c.connect();
  const settings = { rateLimit: { requests: LIMIT.requests, windowMs: LIMIT.windowMs }, blockMs: LIMIT.blockMs };
  await c.query(
    `INSERT INTO suppliers (name, base_url, api_key, api_secret_sealed, profile, settings, enabled) VALUES ('second', ` +
      `$1, $2, $3, 'dujiao-next', $4::jsonb, true)`,
    [baseUrl, KEY, encryptPayload(PAYLOAD_KEY, SECRET, 'supplier:second'), JSON.stringify(settings)],
  );
  await c.end();
}

interface Run {
  run_id: string;
  supplier: string;
  status: string;
  started_at: string;
  finished_at: string | null;
  pages_done: number;
}

async function sync(relay: Relay, supplier: string): Promise<string> {
  const r = await relay.call('POST', '/internal/catalog/sync', { mode: 'full', supplier });
  if (typeof r.run_id !== 'string') throw new Error(`the sync of ${supplier} did not start: ${JSON.stringify(r)}`);
  return r.run_id;
}

async function done(relay: Relay, runId: string): Promise<Run> {
  for (;;) {
    const run = (await relay.call('GET', `/internal/catalog/sync-runs/${runId}`)).run as Run;
    if (run.status !== 'running') return run;
    await sleep(200);
  }
}

const seconds = (r: Run) => (Date.parse(r.finished_at ?? '') - Date.parse(r.started_at)) / 1000;
const ratio = (r: Run) => seconds(r) / (r.pages_done / BUDGET_PER_S);
const limitedTotal = (s: SandboxStats) => Object.values(s.rateLimited).reduce((x, y) => x + y, 0);

async function main(): Promise<void> {
  log(
    `two suppliers' full syncs side by side, each under its own limiter scaled ×1/${SCALE}: ${LIMIT.requests} requests ` +
      `per ${LIMIT.windowMs / 1000} s; ` +
      `the relay's rule N' = ${RULE.limit} in any ${RULE.windowMs / 1000} s (${fmt(BUDGET_PER_S)} requests/s a key)`,
  );
  log(`  ${PRODUCTS} products at each; ${DB}; ${cpus().length} CPUs; load average (1 min) ${loadavg()[0].toFixed(2)}`);
  log(`  reproduce: ${COMMAND}`);
  const rows: BenchRow[] = [];
  const mainJs = buildRelay();
  const [a, b] = await Promise.all([startSandbox(), startSandbox()]);
  const db = await openDatabase();
  let relay: Relay | null = null;
  try {
    await (await startRelay(mainJs, db.url, a.baseUrl)).stop(); // migrates the database
    await storeSecond(db.url, b.baseUrl);
    relay = await startRelay(mainJs, db.url, a.baseUrl);
    // first syncs (the rows inserted), one after the other; then each re-sync alone, then both at once
    await done(relay, await sync(relay, 'main'));
    await done(relay, await sync(relay, 'second'));
    await sleep(RULE.windowMs);
    const aloneMain = await done(relay, await sync(relay, 'main'));
    await sleep(RULE.windowMs);
    const aloneSecond = await done(relay, await sync(relay, 'second'));
    await sleep(RULE.windowMs);
    const limitedBefore = [limitedTotal(await a.stats()), limitedTotal(await b.stats())];
    const ids = await Promise.all([sync(relay, 'main'), sync(relay, 'second')]);
    const [besideMain, besideSecond] = await Promise.all(ids.map((id) => done(relay!, id)));
    const limited = [limitedTotal(await a.stats()) - limitedBefore[0], limitedTotal(await b.stats()) - limitedBefore[1]];
    for (const [name, alone, beside, n429] of [
      ['main', aloneMain, besideMain, limited[0]],
      ['second', aloneSecond, besideSecond, limited[1]],
    ] as const) {
      log(
        `  ${name}: alone ${alone.status}, ${alone.pages_done} pages in ${fmt(seconds(alone))} s, ÷ bound ${fmt(ratio(alone))}; ` +
          `beside the other ${beside.status}, ${beside.pages_done} pages in ${fmt(seconds(beside))} s, ÷ bound ` +
          `${fmt(ratio(beside))}; 429s ${n429}`,
      );
      rows.push(
        {
          bench: 'suppliers-sync',
          figure: `${DB}: ${name}'s sync beside the other ÷ its budget's bound`,
          value: ratio(beside),
          unit: '×',
          note: `alone ${fmt(ratio(alone))} ×`,
        },
        { bench: 'suppliers-sync', figure: `${DB}: ${name}'s 429s beside the other`, value: n429, unit: '', target: '0' },
      );
    }
  } finally {
    await relay?.stop();
    await db.drop();
    await Promise.all([a.stop(), b.stop()]);
  }
  printBenchSummary('suppliers-sync', rows);
  process.exit(0);
}

main().catch((e: unknown) => {
  console.error(e);
  process.exit(1);
});
