/**
 * Start-up time (`npm run bench:startup`, also part of `npm run bench`): from spawning the
 * production start, `node dist/main.js`, with no configuration (embedded PGlite under ./data, the
 * in-process sandbox upstream, a first catalog sync) to the first `GET /health` answering 200 with
 * `ok: true`; polled every 10 ms. Figures, each the median of `--runs N` or BENCH_RUNS (default 3):
 *   - build: `npm run build`;
 *   - PGlite, fresh data directory (initdb + every migration), and the same plus the build before it
 *     (what `npm start` does);
 *   - PGlite, second start on the existing data directory;
 *   - PostgreSQL (BENCH_PG_URL, default postgres://postgres@127.0.0.1:5432/postgres): a fresh database
 *     (every migration), then a second start on it; skipped when no server answers;
 *   - the floor: a bare Node HTTP server answering /health, spawned the same way; each start is also
 *     given as a ratio to it.
 * Last line: BENCH_SUMMARY (see bench/run-all.ts).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import http from 'node:http';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import { printBenchSummary, SERVICE_PROCESS_ENV, type BenchRow } from './run-all.js';

const ROOT = fileURLToPath(new URL('../', import.meta.url));
const args = process.argv.slice(2);
const runsArg = args.indexOf('--runs') >= 0 ? Number(args[args.indexOf('--runs') + 1]) : NaN;
const RUNS = Math.max(1, Math.floor(runsArg || Number(process.env.BENCH_RUNS ?? 3) || 3));
const PG_URL = process.env.BENCH_PG_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';
const HEALTH_TIMEOUT_MS = 180_000;

const median = (xs: number[]): number => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
};
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** A port p with p + 1 free too (the in-process sandbox listens on PORT + 1). */
async function freePortPair(): Promise<number> {
  for (;;) {
    const p = await new Promise<number>((resolve, reject) => {
      const s = createServer();
      s.once('error', reject);
      s.listen(0, '127.0.0.1', () => {
        const { port } = s.address() as { port: number };
        s.close(() => resolve(port));
      });
    });
    if (p >= 65535) continue;
    const nextFree = await new Promise<boolean>((resolve) => {
      const s = createServer();
      s.once('error', () => resolve(false));
      s.listen(p + 1, '127.0.0.1', () => s.close(() => resolve(true)));
    });
    if (nextFree) return p;
  }
}

function healthOnce(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const req = http.get({ host: '127.0.0.1', port, path: '/health', timeout: 2000 }, (res) => {
      let body = '';
      res.on('data', (c: Buffer) => (body += c.toString()));
      res.on('end', () => {
        try {
          resolve(res.statusCode === 200 && (JSON.parse(body) as { ok?: boolean }).ok === true);
        } catch {
          resolve(false);
        }
      });
    });
    req.on('error', () => resolve(false));
    req.on('timeout', () => req.destroy());
  });
}

interface Started {
  child: ChildProcess;
  ms: number;
}

/** Spawns `argv` and measures the time to a healthy /health on `port`. */
async function timeToHealthy(argv: string[], port: number, cwd: string, env: Record<string, string>): Promise<Started> {
  const t0 = performance.now();
  const child = spawn(process.execPath, argv, {
    cwd,
    env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  child.stdout!.on('data', (c: Buffer) => (out = (out + c.toString()).slice(-4000)));
  child.stderr!.on('data', (c: Buffer) => (out = (out + c.toString()).slice(-4000)));
  let exited = false;
  child.on('exit', () => (exited = true));
  while (!(await healthOnce(port))) {
    if (exited) throw new Error(`the process exited before it was healthy:\n${out}`);
    if (performance.now() - t0 > HEALTH_TIMEOUT_MS) {
      child.kill('SIGKILL');
      throw new Error(`not healthy after ${HEALTH_TIMEOUT_MS} ms:\n${out}`);
    }
    await sleep(10);
  }
  return { child, ms: performance.now() - t0 };
}

async function stop(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const done = new Promise((r) => child.once('exit', r));
  child.kill('SIGTERM');
  const timer = setTimeout(() => child.kill('SIGKILL'), 30_000);
  await done;
  clearTimeout(timer);
}

function run(cmd: string, argv: string[]): Promise<number> {
  const t0 = performance.now();
  return new Promise((resolve, reject) => {
    const child = spawn(cmd, argv, { cwd: ROOT, stdio: ['ignore', 'ignore', 'inherit'] });
    child.on('exit', (code) =>
      code === 0 ? resolve(performance.now() - t0) : reject(new Error(`${cmd} ${argv.join(' ')} exited ${code}`)),
    );
  });
}

const MAIN = ['--no-warnings', join(ROOT, 'dist/main.js')];

async function startRelay(cwd: string, extraEnv: Record<string, string> = {}): Promise<Started> {
  const port = await freePortPair();
  return timeToHealthy(MAIN, port, cwd, { ...SERVICE_PROCESS_ENV, PORT: String(port), HOST: '127.0.0.1', ...extraEnv });
}

async function floorOnce(): Promise<number> {
  const port = await freePortPair();
  const code =
    `require('node:http').createServer((q, s) => { s.setHeader('content-type', 'application/json'); ` +
    `s.end('{"ok":true}'); }).listen(${port}, '127.0.0.1')`;
  const { child, ms } = await timeToHealthy(['-e', code], port, ROOT, {});
  await stop(child);
  return ms;
}

async function pgAvailable(): Promise<boolean> {
  const c = new pg.Client({ connectionString: PG_URL, connectionTimeoutMillis: 2000 });
  try {
    await c.connect();
    await c.end();
    return true;
  } catch {
    return false;
  }
}

async function pgAdmin(sql: string): Promise<void> {
  const c = new pg.Client({ connectionString: PG_URL });
  await c.connect();
  try {
    await c.query(sql);
  } finally {
    await c.end();
  }
}

function withDb(url: string, name: string): string {
  const u = new URL(url);
  u.pathname = `/${name}`;
  return u.toString();
}

async function main(): Promise<void> {
  const log = (s: string) => process.stdout.write(`${s}\n`);
  log(`startup benchmark: ${RUNS} run(s) of each figure, median reported`);

  const build: number[] = [];
  for (let i = 0; i < RUNS; i++) build.push(await run('npm', ['run', '--silent', 'build']));
  log(`build: ${build.map((ms) => (ms / 1000).toFixed(2)).join(', ')} s`);

  const floor: number[] = [];
  for (let i = 0; i < RUNS; i++) floor.push(await floorOnce());
  log(`floor (bare node http server): ${floor.map((ms) => ms.toFixed(0)).join(', ')} ms`);

  const fresh: number[] = [];
  const again: number[] = [];
  const withBuild: number[] = [];
  for (let i = 0; i < RUNS; i++) {
    const dir = mkdtempSync(join(tmpdir(), 'relay-bench-startup-'));
    try {
      const first = await startRelay(dir);
      fresh.push(first.ms);
      await stop(first.child);
      const second = await startRelay(dir);
      again.push(second.ms);
      await stop(second.child);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
    // What `npm start` does on a fresh checkout: build, then start.
    const dir2 = mkdtempSync(join(tmpdir(), 'relay-bench-startup-'));
    try {
      const t0 = performance.now();
      await run('npm', ['run', '--silent', 'build']);
      const started = await startRelay(dir2);
      withBuild.push(performance.now() - t0);
      await stop(started.child);
    } finally {
      rmSync(dir2, { recursive: true, force: true });
    }
    log(
      `PGlite run ${i + 1}: fresh ${(fresh[i] / 1000).toFixed(2)} s, second start ${(again[i] / 1000).toFixed(2)} s, ` +
        `build + fresh ${(withBuild[i] / 1000).toFixed(2)} s`,
    );
  }

  const pgFresh: number[] = [];
  const pgAgain: number[] = [];
  const havePg = await pgAvailable();
  if (havePg) {
    for (let i = 0; i < RUNS; i++) {
      const name = `relay_bench_startup_${process.pid}_${i}`;
      await pgAdmin(`DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`);
      await pgAdmin(`CREATE DATABASE "${name}"`);
      const dir = mkdtempSync(join(tmpdir(), 'relay-bench-startup-'));
      try {
        const env = { DATABASE_URL: withDb(PG_URL, name) };
        const first = await startRelay(dir, env);
        pgFresh.push(first.ms);
        await stop(first.child);
        const second = await startRelay(dir, env);
        pgAgain.push(second.ms);
        await stop(second.child);
      } finally {
        rmSync(dir, { recursive: true, force: true });
        await pgAdmin(`DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`);
      }
      log(`PostgreSQL run ${i + 1}: fresh database ${(pgFresh[i] / 1000).toFixed(2)} s, second start ${(pgAgain[i] / 1000).toFixed(2)} s`);
    }
  } else {
    log(`PostgreSQL: no server at ${PG_URL.replace(/\/\/[^@]*@/, '//…@')}, skipped`);
  }

  const f = median(floor);
  const sec = (ms: number[]) => (ms.length ? median(ms) / 1000 : null);
  const ratio = (ms: number[]) => (ms.length ? median(ms) / f : null);
  const noPg = havePg ? undefined : 'no PostgreSQL server';
  const rows: Array<Omit<BenchRow, 'bench'>> = [
    { figure: 'npm run build', value: sec(build), unit: 's' },
    { figure: 'floor: bare node http server to first 200', value: f / 1000, unit: 's' },
    { figure: 'PGlite fresh data dir: start to healthy /health', value: sec(fresh), unit: 's', target: '≤ 10 s' },
    { figure: 'PGlite fresh data dir ÷ floor', value: ratio(fresh), unit: '×' },
    { figure: 'PGlite fresh, build included (npm start)', value: sec(withBuild), unit: 's', target: '≤ 15 s' },
    { figure: 'PGlite existing data dir: start to healthy', value: sec(again), unit: 's', target: '≤ 3 s' },
    { figure: 'PGlite existing data dir ÷ floor', value: ratio(again), unit: '×' },
    { figure: 'PostgreSQL fresh database: start to healthy', value: sec(pgFresh), unit: 's', target: '≤ 3 s', note: noPg },
    { figure: 'PostgreSQL migrated database: start to healthy', value: sec(pgAgain), unit: 's', target: '≤ 3 s', note: noPg },
    { figure: 'PostgreSQL migrated database ÷ floor', value: ratio(pgAgain), unit: '×', note: noPg },
  ];
  printBenchSummary('startup', rows);
}

main().catch((e: unknown) => {
  process.stderr.write(`${(e as Error)?.stack ?? String(e)}\n`);
  process.exit(1);
});
