/**
 * `npm run bench`: runs every benchmark, `bench/*.bench.ts`, one after the other, each as a child
 * process (`node --import @swc-node/register/esm-register bench/<name>.bench.ts`, in the repository
 * root), shows its output as it runs, then prints one table of all their figures.
 * `npm run bench -- startup sync` runs only the benchmarks whose file name contains one of the words;
 * options reach the benchmarks through the environment (e.g. `BENCH_RUNS=1 npm run bench`), which
 * every child inherits.
 *
 * The convention every benchmark follows, so that this table can collect it:
 *   - it prints whatever it likes while it runs;
 *   - its LAST line on stdout is
 *       BENCH_SUMMARY {"bench":"<name>","rows":[<row>, …]}
 *     where a row is {"bench":"<name>","figure":"<what was measured>","value":<number or null>,
 *     "unit":"s|ms|ops/s|×|…","target":"<the goal, optional, e.g. ≤ 3 s>","note":"<optional>"};
 *     `value` null means "not measured" (say why in `note`, e.g. no PostgreSQL server);
 *   - it exits 0 when it ran, whatever the figures (a missed target is a finding, not a crash).
 * `printBenchSummary(bench, rows)` below writes that line; import it (this file runs nothing when
 * imported) or write the line yourself.
 */
import { spawn } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { fileURLToPath, pathToFileURL } from 'node:url';

export const SUMMARY_PREFIX = 'BENCH_SUMMARY ';

/** CPU time (user + system) of a process so far, in ms (Linux `/proc`; 0 when it cannot be read). */
export function procCpuMs(pid: number | string): number {
  try {
    const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ');
    return ((Number(fields[11]) + Number(fields[12])) * 1000) / 100;
  } catch {
    return 0;
  }
}

/**
 * CPU time so far (ms) of the named processes, of every PostgreSQL process on this machine (the server
 * the bench uses: none does anything for PGlite, which runs inside the service) as `postgres`, and of
 * this process as `load`. Two snapshots' difference is what each spent in between.
 */
export function cpuSnapshot(pids: Record<string, number>): Record<string, number> {
  let postgres = 0;
  for (const d of readdirSync('/proc')) {
    if (!/^[0-9]+$/.test(d)) continue;
    try {
      if (readFileSync(`/proc/${d}/comm`, 'utf8').startsWith('postgres')) postgres += procCpuMs(d);
    } catch {
      // the process ended meanwhile
    }
  }
  const self = process.cpuUsage();
  const out: Record<string, number> = {};
  for (const [name, pid] of Object.entries(pids)) out[name] = procCpuMs(pid);
  return { ...out, postgres, load: (self.user + self.system) / 1000 };
}

/**
 * CPU time so far (ms) of the PostgreSQL backends serving `database` (their process title names it): the
 * part of `postgres` that is the service's own work when other databases of the server are busy too.
 */
export function databaseBackendsCpuMs(database: string): number {
  let ms = 0;
  for (const d of readdirSync('/proc')) {
    if (!/^[0-9]+$/.test(d)) continue;
    try {
      if (!readFileSync(`/proc/${d}/comm`, 'utf8').startsWith('postgres')) continue;
      if (readFileSync(`/proc/${d}/cmdline`, 'utf8').includes(` ${database} `)) ms += procCpuMs(d);
    } catch {
      // the process ended meanwhile
    }
  }
  return ms;
}

/** The middle item of `items` ordered by `key` (the upper one of an even count): a run that happened. */
export function medianBy<T>(items: T[], key: (item: T) => number): T {
  return [...items].sort((a, b) => key(a) - key(b))[Math.floor(items.length / 2)];
}

export interface BenchRow {
  bench: string;
  figure: string;
  value: number | null;
  unit: string;
  target?: string;
  note?: string;
}

export interface BenchSummary {
  bench: string;
  rows: BenchRow[];
}

/** Writes the summary line; call it last. */
export function printBenchSummary(bench: string, rows: Array<Omit<BenchRow, 'bench'> & { bench?: string }>): void {
  const summary: BenchSummary = { bench, rows: rows.map((r) => ({ ...r, bench: r.bench ?? bench })) };
  process.stdout.write(`${SUMMARY_PREFIX}${JSON.stringify(summary)}\n`);
}

/** The summary in a benchmark's output: its last BENCH_SUMMARY line; null when there is none. */
export function parseBenchSummary(output: string): BenchSummary | null {
  const lines = output.split('\n').filter((l) => l.startsWith(SUMMARY_PREFIX));
  const last = lines.at(-1);
  if (!last) return null;
  try {
    const s = JSON.parse(last.slice(SUMMARY_PREFIX.length)) as BenchSummary;
    return Array.isArray(s.rows) ? s : null;
  } catch {
    return null;
  }
}

function formatValue(v: number | null): string {
  if (v === null || !Number.isFinite(v)) return '—';
  const abs = Math.abs(v);
  return abs >= 100 ? v.toFixed(0) : abs >= 10 ? v.toFixed(1) : v.toFixed(2);
}

/** One plain-text table of every row. */
export function formatTable(rows: BenchRow[]): string {
  const head = ['bench', 'figure', 'value', 'unit', 'target', 'note'];
  const body = rows.map((r) => [r.bench, r.figure, formatValue(r.value), r.unit, r.target ?? '', r.note ?? '']);
  const widths = head.map((h, i) => Math.max(h.length, ...body.map((b) => b[i].length)));
  const line = (cells: string[]) =>
    cells
      .map((c, i) => (i === 2 ? c.padStart(widths[i]) : c.padEnd(widths[i])))
      .join('  ')
      .trimEnd();
  return [line(head), widths.map((w) => '-'.repeat(w)).join('  '), ...body.map(line)].join('\n');
}

const ROOT = fileURLToPath(new URL('../', import.meta.url));

function runBench(file: string): Promise<{ code: number | null; output: string }> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, ['--no-warnings', '--import', '@swc-node/register/esm-register', `bench/${file}`], {
      cwd: ROOT,
      env: process.env,
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    let output = '';
    child.stdout.on('data', (chunk: Buffer) => {
      const text = chunk.toString('utf8');
      output += text;
      process.stdout.write(text);
    });
    child.on('exit', (code) => resolve({ code, output }));
  });
}

async function main(): Promise<void> {
  const filters = process.argv.slice(2).filter((a) => !a.startsWith('-'));
  const files = readdirSync(`${ROOT}bench`)
    .filter((f) => f.endsWith('.bench.ts'))
    .filter((f) => filters.length === 0 || filters.some((w) => f.includes(w)))
    .sort();
  if (files.length === 0) {
    process.stderr.write(`no benchmark matches ${filters.join(' ')}\n`);
    process.exit(2);
  }
  const rows: BenchRow[] = [];
  const failed: string[] = [];
  for (const file of files) {
    const name = file.replace(/\.bench\.ts$/, '');
    process.stdout.write(`\n=== ${name} (bench/${file})\n`);
    const started = performance.now();
    const { code, output } = await runBench(file);
    const summary = parseBenchSummary(output);
    const seconds = ((performance.now() - started) / 1000).toFixed(0);
    if (code !== 0 || !summary) {
      failed.push(`${name} (exit ${code}${summary ? '' : ', no BENCH_SUMMARY line'})`);
      rows.push({ bench: name, figure: 'did not complete', value: null, unit: '', note: `exit ${code}` });
    } else {
      rows.push(...summary.rows);
    }
    process.stdout.write(`=== ${name} done in ${seconds} s\n`);
  }
  process.stdout.write(`\n${formatTable(rows)}\n`);
  if (failed.length) {
    process.stdout.write(`\nfailed: ${failed.join(', ')}\n`);
    process.exit(1);
  }
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  main().catch((e: unknown) => {
    process.stderr.write(`${(e as Error)?.stack ?? String(e)}\n`);
    process.exit(1);
  });
}

/**
 * The environment the service runs with in production (the Docker image; README's production start on
 * Linux): glibc's malloc limited to 2 arenas. Benchmarks start the service (or the relay under
 * measurement) with it.
 */
export const SERVICE_PROCESS_ENV: Record<string, string> = { MALLOC_ARENA_MAX: '2' };
