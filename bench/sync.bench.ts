/**
 * `npm run bench:sync`: the catalog sync against the sandbox upstream on loopback, 20,000 products
 * (~50,000 SKUs), page size capped at 50, 4 pages in flight, on PostgreSQL (BENCH_DATABASE_URL, default
 * postgres://postgres@127.0.0.1:5432/test: a fresh database is created, and dropped at the end) and on
 * the embedded PGlite (a fresh data directory).
 *
 * Three processes: this one (orchestrates and prints), the sandbox upstream (bench/sync-bench-sandbox.ts),
 * and the relay under measurement (bench/sync-bench-relay.ts), compiled to JavaScript first so that its
 * memory is the service's and not a TypeScript loader's (under the loader the process starts ~170 MB
 * higher). The floor is measured in the relay process in the same run: the same pages fetched and
 * parsed by the same client with the same concurrency, no database work. Printed per database:
 *   - first full sync: time, and time ÷ floor (target ≤ 1.5 on PostgreSQL);
 *   - that sync's lower bound on this machine (LeastFirstSync): the floor's CPU time plus the
 *     database's least work for the same rows, spread over every core; and that bound again with the
 *     relay's own work on each product that needs no database (fingerprint, rows mapped and priced)
 *     measured as a floor pass that does it, in place of the floor's relay CPU time;
 *   - PostgreSQL: the yardstick (bench/sync-bench-relay.ts, minimalSync), three times, each right after
 *     a floor run of its own: the floor's pass storing each batch's SKUs by one COPY into a table of six
 *     columns, durably, nothing else: about the least any durable copy costs here (median ratio shown);
 *   - a re-sync with no upstream change, five times, each right after a floor run of its own: SKU
 *     rows written by all of them (target 0) and the median of re-sync ÷ that floor (target ≤ 1.2);
 *   - peak RSS of the relay process during the syncs (target ≤ 350 MB);
 *   - an incremental run after 100 products changed: time and rows written;
 *   - then a full pass (after a floor run of its own): its time ÷ that floor, and how many pages it
 *     parsed (those whose bytes differ from the previous full pass: the changed products' pages).
 * Each sync also reports the relay's CPU time, and the floor runs theirs.
 *
 * Environment: BENCH_DATABASE_URL, BENCH_TARGETS (postgres,pglite), BENCH_PRODUCTS (20000),
 * BENCH_PAGE_CAP (50), BENCH_CONCURRENCY (4), BENCH_FLOOR_RUNS (3), BENCH_RELAY_NODE_ARGS (node options for
 * the relay process only, e.g. `--cpu-prof --cpu-prof-dir=/tmp/prof`).
 */
import { execFileSync, fork, type ChildProcess } from 'node:child_process';
import { cpSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { cpus, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import { cpuSnapshot, medianBy, printBenchSummary, SERVICE_PROCESS_ENV, type BenchRow } from './run-all.js';

const PRODUCTS = Number(process.env.BENCH_PRODUCTS ?? 20_000);
const PAGE_CAP = Number(process.env.BENCH_PAGE_CAP ?? 50);
const CONCURRENCY = Number(process.env.BENCH_CONCURRENCY ?? 4);
const FLOOR_RUNS = Number(process.env.BENCH_FLOOR_RUNS ?? 3);
const RESYNC_PAIRS = Number(process.env.BENCH_RESYNC_PAIRS ?? 5);
const SERVER_URL = process.env.BENCH_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test';
const TARGETS = (process.env.BENCH_TARGETS ?? 'postgres,pglite').split(',').map((t) => t.trim()) as Array<'postgres' | 'pglite'>;
const ROOT = fileURLToPath(new URL('../', import.meta.url));
const BUILD = join(ROOT, 'node_modules/.cache/upstream-relay-bench');
const MB = 1024 * 1024;

// -------------------------------------------------------------------------------- child processes

/** A child driven over IPC: one request at a time, answered by id. */
class Child {
  private nextId = 1;
  private readonly waiting = new Map<number, (m: Record<string, unknown>) => void>();

  constructor(private readonly child: ChildProcess) {
    child.on('message', (m: Record<string, unknown>) => {
      const done = this.waiting.get(m.id as number);
      if (done) {
        this.waiting.delete(m.id as number);
        done(m);
      }
    });
  }

  static async start(
    script: string,
    execArgv: string[],
    env: Record<string, string>,
  ): Promise<{ child: Child; hello: Record<string, unknown> }> {
    const proc = fork(script, [], { execArgv, env: { ...process.env, ...env }, stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
    const hello = await new Promise<Record<string, unknown>>((resolve, reject) => {
      proc.once('error', reject);
      proc.once('exit', (code) => reject(new Error(`${script} exited (${code})`)));
      proc.once('message', (m: Record<string, unknown>) => resolve(m));
    });
    proc.removeAllListeners('exit');
    return { child: new Child(proc), hello };
  }

  async ask<T extends Record<string, unknown>>(msg: Record<string, unknown>): Promise<T> {
    const id = this.nextId++;
    const answer = await new Promise<Record<string, unknown>>((resolve) => {
      this.waiting.set(id, resolve);
      this.child.send({ id, ...msg });
    });
    if (typeof answer.error === 'string') throw new Error(answer.error);
    return answer as T;
  }

  /** For the sandbox, whose protocol has no ids (see sync-bench-sandbox.ts). */
  askRaw<T>(msg: Record<string, unknown>): Promise<T> {
    return new Promise((resolve) => {
      this.child.once('message', (m: T) => resolve(m));
      this.child.send(msg);
    });
  }

  get pid(): number {
    return this.child.pid!;
  }

  stop(): void {
    this.child.kill('SIGTERM');
  }
}

/** Compiles src/ and the relay helper to JavaScript (the project's SWC settings) under node_modules/.cache. */
function buildRelay(): string {
  rmSync(BUILD, { recursive: true, force: true });
  mkdirSync(BUILD, { recursive: true });
  const swc = join(ROOT, 'node_modules/.bin/swc');
  execFileSync(swc, ['src', '-d', join(BUILD, 'src'), '--strip-leading-paths', '--config-file', '.swcrc', '-q'], {
    cwd: ROOT,
    stdio: 'inherit',
  });
  execFileSync(swc, ['bench/sync-bench-relay.ts', '-o', join(BUILD, 'bench/sync-bench-relay.js'), '--config-file', '.swcrc', '-q'], {
    cwd: ROOT,
    stdio: 'inherit',
  });
  cpSync(join(ROOT, 'migrations'), join(BUILD, 'migrations'), { recursive: true });
  writeFileSync(join(BUILD, 'package.json'), '{"type":"module","private":true}\n');
  return join(BUILD, 'bench/sync-bench-relay.js');
}

// -------------------------------------------------------------------------------------- databases

interface Target {
  name: 'postgres' | 'pglite';
  url: string;
  drop(): Promise<void>;
}

async function openTarget(name: 'postgres' | 'pglite'): Promise<Target> {
  if (name === 'pglite') {
    const dir = mkdtempSync(join(tmpdir(), 'relay-bench-pglite-'));
    return { name, url: `pglite://${dir}`, drop: async () => rmSync(dir, { recursive: true, force: true }) };
  }
  const db = `relay_bench_${Date.now()}_${process.pid}`;
  const admin = new pg.Client({ connectionString: SERVER_URL });
  await admin.connect();
  await admin.query(`CREATE DATABASE "${db}"`);
  await admin.end();
  const u = new URL(SERVER_URL);
  u.pathname = `/${db}`;
  return {
    name,
    url: u.toString(),
    async drop() {
      const a = new pg.Client({ connectionString: SERVER_URL });
      await a.connect();
      await a.query(`DROP DATABASE IF EXISTS "${db}" WITH (FORCE)`);
      await a.end();
    },
  };
}

// ------------------------------------------------------------------------------------------ bench

interface SyncFigures {
  ms: number;
  rssBefore: number;
  peakRss: number;
  peakHeap: number;
  /** CPU time of the relay process. */
  cpuMs: number;
  /** The pass's pages: not parsed (unchanged), parsed with remembered fingerprints, parsed and fingerprinted. */
  pageStats: { unchanged: number; remembered: number; computed: number };
  run: { status: string; error: string | null; skus_created: number; skus_changed: number; products_seen: number };
}

interface Figures {
  target: 'postgres' | 'pglite';
  floorMs: number;
  floorRuns: number[];
  startRss: number;
  first: SyncFigures;
  /** The median pair: the re-sync and the floor run just before it. */
  resync: SyncFigures & { rows: number; history: number; floorMs: number };
  resyncPairs: Array<{ ms: number; floorMs: number }>;
  incremental: SyncFigures & { rows: number };
  /** A full pass after the incremental one, with the floor run just before it. */
  afterChanges: SyncFigures & { floorMs: number };
  /** What the first sync cannot go below on this machine (see leastFirstSync). */
  bound: LeastFirstSync;
  /** PostgreSQL only: the minimal durable copy (bench/sync-bench-relay.ts, minimalSync), median of its pairs. */
  yardstick?: { ms: number; floorMs: number; ratios: number[]; cpu: Record<string, number> };
}

/**
 * A lower bound for a first sync's time, from work measured in the same run: the first sync must do
 * at least the floor's work (the relay fetching and parsing, the sandbox serving: their CPU time in
 * the median floor run) and the database's least work to store what it stores (its CPU time copying
 * the same rows table to table, see bench/sync-bench-relay.ts, leastWrite). Spread perfectly over
 * the machine's cores, that takes (floor CPU + database CPU) ÷ cores, and never less than the floor.
 */
interface LeastFirstSync {
  floorCpuMs: { relay: number; sandbox: number };
  /**
   * The relay's CPU time for the floor plus its own work on every product that needs no database
   * (fingerprint, rows mapped and priced; bench/sync-bench-relay.ts, rowWork), median of the runs.
   */
  rowWorkCpuMs: number;
  /** The bound with that CPU time in place of the floor's relay CPU time. */
  withRowWorkMs: number;
  /** The database's CPU time for its least work (PGlite: the relay process's). */
  dbCpuMs: number;
  dbMs: number;
  cores: number;
  ms: number;
}

const s = (ms: number) => `${(ms / 1000).toFixed(2)} s`;
const mb = (n: number) => `${(n / MB).toFixed(0)} MB`;

async function benchTarget(
  name: 'postgres' | 'pglite',
  relayScript: string,
  sandbox: Child,
  sandboxUrl: string,
  products: number,
): Promise<Figures> {
  const target = await openTarget(name);
  const dataDir = mkdtempSync(join(tmpdir(), 'relay-bench-data-'));
  const { child: relay, hello } = await Child.start(relayScript, (process.env.BENCH_RELAY_NODE_ARGS ?? '').split(' ').filter(Boolean), {
    ...SERVICE_PROCESS_ENV,
    BENCH_RELAY: JSON.stringify({ databaseUrl: target.url, upstreamBaseUrl: sandboxUrl, concurrency: CONCURRENCY, dataDir }),
  });
  const log = (line: string) => process.stdout.write(`  [${name}] ${line}\n`);
  try {
    await relay.ask({ cmd: 'floor' }); // warms the upstream's caches and the relay's JIT
    const pids = { relay: relay.pid, sandbox: sandbox.pid };
    const floorCpu: Array<{ ms: number; relay: number; sandbox: number }> = [];
    for (let i = 0; i < FLOOR_RUNS; i++) {
      const before = cpuSnapshot(pids);
      const f = await relay.ask<{ ms: number; products: number }>({ cmd: 'floor' });
      const after = cpuSnapshot(pids);
      if (f.products !== products) throw new Error(`the floor saw ${f.products} products of ${products}`);
      floorCpu.push({ ms: f.ms, relay: after.relay - before.relay, sandbox: after.sandbox - before.sandbox });
    }
    const floorRuns = floorCpu.map((f) => f.ms);
    const medianFloor = medianBy(floorCpu, (f) => f.ms);
    const floorMs = medianFloor.ms;
    log(
      `floor ${floorRuns.map(s).join(', ')} → ${s(floorMs)}; CPU of that run: relay ${s(medianFloor.relay)}, sandbox ` +
        `${s(medianFloor.sandbox)}`,
    );

    // The floor plus the relay's own work on each product that needs no database, FLOOR_RUNS times.
    const rowWorkCpu: number[] = [];
    for (let i = 0; i < FLOOR_RUNS; i++) {
      const before = cpuSnapshot(pids);
      const w = await relay.ask<{ ms: number; products: number; skus: number }>({ cmd: 'rowWork' });
      rowWorkCpu.push(cpuSnapshot(pids).relay - before.relay);
      if (w.products !== products) throw new Error(`the row work saw ${w.products} products of ${products}`);
    }
    const rowWorkCpuMs = medianBy(rowWorkCpu, (ms) => ms);
    log(
      `floor with the relay's own row work (fingerprints, rows mapped and priced; no database): relay CPU ${rowWorkCpu.map(s).join(', ')}`,
    );

    const sync = async (mode: 'full' | 'incremental') => {
      const r = await relay.ask<SyncFigures & Record<string, unknown>>({ cmd: 'sync', mode });
      if (r.run.status !== 'succeeded') throw new Error(`the ${mode} sync failed: ${r.run.error}`);
      return r;
    };
    const cpuBefore = cpuSnapshot(pids);
    const first = await sync('full');
    const cpuAfter = cpuSnapshot(pids);
    log(`first full sync ${s(first.ms)} (${first.run.skus_created} SKUs created), peak RSS ${mb(first.peakRss)}`);
    log(
      `first full sync, CPU time: ` +
        ['relay', 'postgres', 'sandbox'].map((k) => `${k} ${s(cpuAfter[k] - cpuBefore[k])}`).join(', ') +
        (name === 'pglite' ? ' (PGlite runs in the relay)' : ''),
    );

    // The database's least work for the rows the first sync stored (off the sync's clock).
    await relay.ask({ cmd: 'leastWrite', step: 'prepare' });
    const dbBefore = cpuSnapshot(pids);
    const dbStart = performance.now();
    await relay.ask({ cmd: 'leastWrite', step: 'run' });
    const dbMs = performance.now() - dbStart;
    const dbAfter = cpuSnapshot(pids);
    const copied = (await relay.ask<{ skus: number }>({ cmd: 'leastWrite', step: 'drop' })).skus;
    if (copied !== first.run.skus_created) throw new Error(`the least write copied ${copied} SKUs of ${first.run.skus_created}`);
    const dbKey = name === 'pglite' ? 'relay' : 'postgres';
    const cores = cpus().length;
    const dbCpuMs = dbAfter[dbKey] - dbBefore[dbKey];
    const bound: LeastFirstSync = {
      floorCpuMs: { relay: medianFloor.relay, sandbox: medianFloor.sandbox },
      dbCpuMs,
      dbMs,
      cores,
      ms: Math.max(floorMs, (medianFloor.relay + medianFloor.sandbox + dbCpuMs) / cores),
      rowWorkCpuMs,
      withRowWorkMs: Math.max(floorMs, (Math.max(rowWorkCpuMs, medianFloor.relay) + medianFloor.sandbox + dbCpuMs) / cores),
    };
    log(
      `database's least work for those rows (INSERT … SELECT into empty twins): ${s(dbMs)}, CPU ${s(dbCpuMs)}; ` +
        `a first sync's lower bound on ${cores} cores: ${s(bound.ms)} = ${(bound.ms / floorMs).toFixed(2)} × floor; ` +
        `with the relay's row work: ${s(bound.withRowWorkMs)} = ${(bound.withRowWorkMs / floorMs).toFixed(2)} × floor`,
    );

    // The yardstick (PostgreSQL): the least any durable copy of the catalog costs, each run right
    // after a floor run of its own; the median pair is reported.
    let yardstick: Figures['yardstick'];
    if (name === 'postgres') {
      await relay.ask({ cmd: 'minimalSync', step: 'prepare' });
      const runs: Array<{ ms: number; floorMs: number; cpu: Record<string, number> }> = [];
      for (let i = 0; i < FLOOR_RUNS; i++) {
        const f = await relay.ask<{ ms: number }>({ cmd: 'floor' });
        const before = cpuSnapshot(pids);
        const m = await relay.ask<{ ms: number; products: number }>({ cmd: 'minimalSync' });
        const after = cpuSnapshot(pids);
        if (m.products !== products) throw new Error(`the yardstick saw ${m.products} products of ${products}`);
        runs.push({ ms: m.ms, floorMs: f.ms, cpu: Object.fromEntries(Object.keys(after).map((k) => [k, after[k] - before[k]])) });
      }
      const stored = (await relay.ask<{ skus: number }>({ cmd: 'minimalSync', step: 'drop' })).skus;
      if (stored !== first.run.skus_created) throw new Error(`the yardstick stored ${stored} SKUs of ${first.run.skus_created}`);
      const mid = medianBy(runs, (r) => r.ms / r.floorMs);
      yardstick = { ...mid, ratios: runs.map((r) => r.ms / r.floorMs) };
      log(
        `yardstick (the least durable copy: one COPY of 6 columns a batch, no diff, no history): ` +
          `${runs.map((r) => `${s(r.ms)} / floor ${s(r.floorMs)}`).join(', ')}; ` +
          `CPU of the median run: ${['relay', 'postgres', 'sandbox'].map((k) => `${k} ${s(mid.cpu[k])}`).join(', ')}`,
      );
    }

    await relay.ask({ cmd: 'snapshot' });
    const historyBefore = (await relay.ask<{ n: number }>({ cmd: 'count', table: 'catalog_sku_changes' })).n;
    // Re-syncs, each right after a floor run of its own: this machine's speed drifts by tens of per
    // cent within a minute, so each re-sync is compared with the floor measured next to it, and the
    // median of those ratios reported (rows written: by all of them).
    const pairs: Array<{ floorMs: number; floorCpuMs: number; sync: SyncFigures & Record<string, unknown> }> = [];
    for (let i = 0; i < RESYNC_PAIRS; i++) {
      const f = await relay.ask<{ ms: number; products: number; cpuMs: number }>({ cmd: 'floor' });
      pairs.push({ floorMs: f.ms, floorCpuMs: f.cpuMs, sync: await sync('full') });
    }
    const mid = medianBy(pairs, (p) => p.sync.ms / p.floorMs);
    const resync = {
      ...mid.sync,
      peakRss: Math.max(...pairs.map((p) => p.sync.peakRss)),
      peakHeap: Math.max(...pairs.map((p) => p.sync.peakHeap)),
    };
    const resyncRows = (await relay.ask<{ n: number }>({ cmd: 'rowsWritten' })).n;
    const history = (await relay.ask<{ n: number }>({ cmd: 'count', table: 'catalog_sku_changes' })).n - historyBefore;
    log(
      `re-sync ${pairs.map((p) => `${s(p.sync.ms)} / floor ${s(p.floorMs)}`).join(', ')}; ${resyncRows} SKU rows ` +
        `written, peak RSS ${mb(resync.peakRss)}`,
    );
    log(`relay CPU, re-sync / floor: ${pairs.map((p) => `${Math.round(p.sync.cpuMs)} / ${Math.round(p.floorCpuMs)} ms`).join(', ')}`);

    await sandbox.askRaw({ cmd: 'touch', n: 100 });
    await relay.ask({ cmd: 'snapshot' });
    const inc = await sync('incremental');
    const incRows = (await relay.ask<{ n: number }>({ cmd: 'rowsWritten' })).n;
    log(`incremental ${s(inc.ms)}, ${incRows} SKU rows written`);
    // A full pass after those changes (the incremental run applied them): the pages that hold a
    // changed product came with other bytes than in the last full pass, and are parsed again.
    const afterFloor = await relay.ask<{ ms: number; products: number; cpuMs: number }>({ cmd: 'floor' });
    const afterChanges = await sync('full');
    log(
      `full pass after the 100 changes ${s(afterChanges.ms)} / floor ${s(afterFloor.ms)}; pages not parsed ` +
        `${afterChanges.pageStats.unchanged}, parsed ${afterChanges.pageStats.remembered + afterChanges.pageStats.computed}`,
    );

    return {
      target: name,
      floorMs,
      floorRuns,
      startRss: hello.rss as number,
      first,
      resync: { ...resync, rows: resyncRows, history, floorMs: mid.floorMs },
      resyncPairs: pairs.map((p) => ({ ms: p.sync.ms, floorMs: p.floorMs })),
      incremental: { ...inc, rows: incRows },
      afterChanges: { ...afterChanges, floorMs: afterFloor.ms },
      bound,
      yardstick,
    };
  } finally {
    await relay.ask({ cmd: 'close' }).catch(() => relay.stop());
    await target.drop();
    rmSync(dataDir, { recursive: true, force: true });
  }
}

function report(r: Figures): string {
  const first = r.first.ms / r.floorMs;
  const resync = r.resync.ms / r.resync.floorMs;
  const peak = Math.max(r.first.peakRss, r.resync.peakRss, r.incremental.peakRss, r.afterChanges.peakRss);
  const ok = (b: boolean) => (b ? 'ok' : 'MISSED');
  return [
    r.target === 'postgres' ? 'PostgreSQL' : 'PGlite (embedded, in the relay process)',
    `  floor: fetch + parse, no database   ${s(r.floorMs)}   (runs ${r.floorRuns.map(s).join(', ')})`,
    `  first full sync                     ${s(r.first.ms)}   ÷ floor ${first.toFixed(2)}   target ≤ ` +
      `1.5${r.target === 'pglite' ? ' (PostgreSQL)' : ` ${ok(first <= 1.5)}`}   ${r.first.run.skus_created} SKUs created`,
    `    its lower bound on this machine   ${s(r.bound.ms)}   ÷ floor ${(r.bound.ms / r.floorMs).toFixed(2)}   = (floor ` +
      `CPU: relay ${s(r.bound.floorCpuMs.relay)} + sandbox ${s(r.bound.floorCpuMs.sandbox)}, + the database's least work ` +
      `for those rows ${s(r.bound.dbCpuMs)}) ÷ ${r.bound.cores} cores`,
    `    with the relay's own row work     ${s(r.bound.withRowWorkMs)}   ÷ floor ` +
      `${(r.bound.withRowWorkMs / r.floorMs).toFixed(2)}   = (relay CPU for the floor + fingerprints, rows mapped and ` +
      `priced ${s(r.bound.rowWorkCpuMs)} + sandbox + database's least work) ÷ ${r.bound.cores} cores`,
    ...(r.yardstick
      ? [
          `    the yardstick: least durable copy ${s(r.yardstick.ms)}   ÷ its floor ${s(r.yardstick.floorMs)} = ` +
            `${(r.yardstick.ms / r.yardstick.floorMs).toFixed(2)} (median of ` +
            `${r.yardstick.ratios.map((x) => x.toFixed(2)).join(', ')})   = fetch + parse + one COPY of (sku_code, ids, ` +
            `cost, stock, title) a batch; no sync`,
        ]
      : []),
    `  re-sync, no upstream change         ${s(r.resync.ms)}   ÷ its floor ${s(r.resync.floorMs)} = ${resync.toFixed(2)} ` +
      `(median of ${r.resyncPairs.length})   target ≤ 1.2 ${ok(resync <= 1.2)}`,
    `    each re-sync ÷ the floor run just before it: ${r.resyncPairs.map((p) => (p.ms / p.floorMs).toFixed(2)).join(', ')}`,
    `    SKU rows written                  ${r.resync.rows}   target 0 ${ok(r.resync.rows === 0)}   (history rows ` +
      `${r.resync.history}, changes reported ${r.resync.run.skus_changed})`,
    `  peak RSS during the syncs           ${mb(peak)}   target ≤ 350 MB ${ok(peak <= 350 * MB)}   (at start ` +
      `${mb(r.startRss)}, before the first sync ${mb(r.first.rssBefore)}, peak heap ` +
      `${mb(Math.max(r.first.peakHeap, r.resync.peakHeap))})`,
    `  incremental, 100 products changed   ${s(r.incremental.ms)}   ${r.incremental.run.products_seen} products fetched, ` +
      `${r.incremental.rows} SKU rows written (${r.incremental.run.skus_changed} SKUs changed)`,
    `  full pass after those changes       ${s(r.afterChanges.ms)}   ÷ its floor ${s(r.afterChanges.floorMs)} = ` +
      `${(r.afterChanges.ms / r.afterChanges.floorMs).toFixed(2)}   pages parsed ` +
      `${r.afterChanges.pageStats.remembered + r.afterChanges.pageStats.computed} of ` +
      `${r.afterChanges.pageStats.remembered + r.afterChanges.pageStats.computed + r.afterChanges.pageStats.unchanged}`,
    '',
  ].join('\n');
}

async function main(): Promise<void> {
  process.stdout.write('building the relay (SWC)…\n');
  const relayScript = buildRelay();
  const { child: sandbox, hello } = await Child.start(
    fileURLToPath(new URL('./sync-bench-sandbox.ts', import.meta.url)),
    ['--import', '@swc-node/register/esm-register'],
    {
      BENCH_PRODUCTS: String(PRODUCTS),
      BENCH_PAGE_CAP: String(PAGE_CAP),
    },
  );
  const products = hello.products as number;
  process.stdout.write(
    `sync bench: ${products} products, ${hello.skus} SKUs, page cap ${PAGE_CAP}, concurrency ${CONCURRENCY}; ` +
      `node ${process.version}, ${cpus().length} CPUs, load average ${loadavg()[0].toFixed(2)}\n`,
  );
  const results: Figures[] = [];
  const skipped: Array<{ target: string; why: string }> = [];
  try {
    for (const [i, t] of TARGETS.entries()) {
      if (i > 0) await sandbox.askRaw({ cmd: 'regenerate' });
      try {
        results.push(await benchTarget(t, relayScript, sandbox, hello.baseUrl as string, products));
      } catch (e) {
        // e.g. no PostgreSQL server: the other database is still measured.
        const why = e instanceof Error ? e.message.split('\n')[0] : String(e);
        skipped.push({ target: t, why });
        process.stdout.write(`  [${t}] not measured: ${why}\n`);
      }
    }
  } finally {
    sandbox.stop();
  }
  process.stdout.write(`\n${results.map(report).join('\n')}load average at the end ${loadavg()[0].toFixed(2)}\n`);
  printBenchSummary('sync', summaryRows(results, skipped));
}

/** The rows of `npm run bench`'s table (see bench/run-all.ts). */
function summaryRows(results: Figures[], skipped: Array<{ target: string; why: string }>): Array<Omit<BenchRow, 'bench'>> {
  const rows: Array<Omit<BenchRow, 'bench'>> = [];
  for (const r of results) {
    const db = r.target === 'postgres' ? 'PostgreSQL' : 'PGlite';
    const peak = Math.max(r.first.peakRss, r.resync.peakRss, r.incremental.peakRss, r.afterChanges.peakRss);
    rows.push(
      {
        figure: `${db}: first full sync ÷ floor`,
        value: r.first.ms / r.floorMs,
        unit: '×',
        target: r.target === 'postgres' ? '≤ 1.5' : undefined,
        note: `${s(r.first.ms)} vs floor ${s(r.floorMs)}`,
      },
      {
        figure: `${db}: first full sync's lower bound ÷ floor`,
        value: r.bound.ms / r.floorMs,
        unit: '×',
        note: `(floor CPU + database's least work ${s(r.bound.dbCpuMs)}) ÷ ${r.bound.cores} cores`,
      },
      {
        figure: `${db}: that bound with the relay's own row work ÷ floor`,
        value: r.bound.withRowWorkMs / r.floorMs,
        unit: '×',
        note: `relay CPU for the floor + fingerprints, mapping, pricing ${s(r.bound.rowWorkCpuMs)}`,
      },
      ...(r.yardstick
        ? [
            {
              figure: `${db}: yardstick, the least durable copy ÷ floor`,
              value: r.yardstick.ms / r.yardstick.floorMs,
              unit: '×',
              note: `${s(r.yardstick.ms)} vs floor ${s(r.yardstick.floorMs)}: one COPY of 6 columns a batch`,
            },
          ]
        : []),
      {
        figure: `${db}: re-sync, no change ÷ floor`,
        value: r.resync.ms / r.resync.floorMs,
        unit: '×',
        target: '≤ 1.2',
        note: `${s(r.resync.ms)} vs floor ${s(r.resync.floorMs)}, median of ${r.resyncPairs.length} pairs`,
      },
      { figure: `${db}: re-sync, SKU rows written`, value: r.resync.rows, unit: 'rows', target: '0' },
      {
        figure: `${db}: peak RSS during the syncs`,
        value: peak / MB,
        unit: 'MB',
        target: '≤ 350',
        note: `before the first sync ${mb(r.first.rssBefore)}`,
      },
      {
        figure: `${db}: incremental after 100 products changed`,
        value: r.incremental.ms / 1000,
        unit: 's',
        note: `${r.incremental.rows} SKU rows written`,
      },
      {
        figure: `${db}: full pass after those changes ÷ floor`,
        value: r.afterChanges.ms / r.afterChanges.floorMs,
        unit: '×',
        note:
          `${s(r.afterChanges.ms)} vs floor ${s(r.afterChanges.floorMs)}, ` +
          `${r.afterChanges.pageStats.remembered + r.afterChanges.pageStats.computed} pages parsed`,
      },
    );
  }
  for (const k of skipped) rows.push({ figure: `${k.target}: not measured`, value: null, unit: '', note: k.why });
  return rows;
}

main().then(
  () => process.exit(0),
  (e: unknown) => {
    process.stderr.write(`bench failed: ${(e as Error)?.stack ?? String(e)}\n`);
    process.exit(1);
  },
);
