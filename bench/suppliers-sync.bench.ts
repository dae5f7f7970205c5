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
import { cpus, loadavg } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { budgetRule } from '../src/budget/request-budget.js';
import { encryptPayload } from '../src/orders/payload-crypto.js';
import {
  arg,
  buildRelay,
  fmt,
  freshPostgres,
  KEY,
  log,
  PAYLOAD_KEY,
  rateLimitedTotal,
  Relay,
  ROOT,
  runSeconds,
  Sandbox,
  scaledLimit,
  SECRET,
  servedPglite,
  sleep,
  syncDone,
  type SyncRun,
} from './budget-bench-support.js';
import { printBenchSummary, type BenchRow } from './run-all.js';

const BUILD = process.env.BENCH_BUILD_DIR ?? join(ROOT, 'bench/.out/suppliers-build');
const DB = arg('db', 'pglite') as 'pglite' | 'postgres';
const PRODUCTS = Number(arg('products', '3000'));
const SCALE = Number(arg('scale', '10'));
const PG_URL = process.env.BENCH_PG_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';
const LIMIT = scaledLimit(SCALE);
const RULE = budgetRule({ requests: LIMIT.requests, windowMs: LIMIT.windowMs }, 0.5);
const BUDGET_PER_S = (RULE.limit / RULE.windowMs) * 1000;
const COMMAND =
  `node --no-warnings --import @swc-node/register/esm-register bench/suppliers-sync.bench.ts --db ${DB} ` +
  `--products ${PRODUCTS} --scale ${SCALE}`;

/** A sandbox child of bench/budget-bench-sandbox.ts: the seeded catalog only, its limiter on. */
const startSandbox = () => Sandbox.start({ products: PRODUCTS, orderProducts: 0, rateLimit: LIMIT, callbackRetryDelaysMs: [] });

/** The relay with `upstreamUrl` as its `UPSTREAM_*` supplier, under the scaled limiter. */
const startRelay = (mainJs: string, databaseUrl: string, upstreamUrl: string) =>
  Relay.start('suppliers', mainJs, {
    databaseUrl,
    upstreamUrl,
    syncOnStart: false,
    callbacks: false,
    env: {
      UPSTREAM_PROFILE: 'dujiao-next',
      UPSTREAM_RATE_LIMIT: `${LIMIT.requests}/${LIMIT.windowMs}ms`,
      UPSTREAM_RATE_LIMIT_BLOCK_S: String(LIMIT.blockMs / 1000),
    },
    dataDirPrefix: 'relay-bench-suppliers-',
  });

const openDatabase = () => (DB === 'pglite' ? servedPglite() : freshPostgres(PG_URL, 'relay_bench_suppliers'));

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

async function sync(relay: Relay, supplier: string): Promise<string> {
  const r = (await relay.post('/internal/catalog/sync', { mode: 'full', supplier })).data;
  if (typeof r.run_id !== 'string') throw new Error(`the sync of ${supplier} did not start: ${JSON.stringify(r)}`);
  return r.run_id;
}

const ratio = (r: SyncRun) => runSeconds(r) / (Number(r.pages_done) / BUDGET_PER_S);

async function main(): Promise<void> {
  log(
    `two suppliers' full syncs side by side, each under its own limiter scaled ×1/${SCALE}: ${LIMIT.requests} requests ` +
      `per ${LIMIT.windowMs / 1000} s; ` +
      `the relay's rule N' = ${RULE.limit} in any ${RULE.windowMs / 1000} s (${fmt(BUDGET_PER_S, 2)} requests/s a key)`,
  );
  log(`  ${PRODUCTS} products at each; ${DB}; ${cpus().length} CPUs; load average (1 min) ${loadavg()[0].toFixed(2)}`);
  log(`  reproduce: ${COMMAND}`);
  const rows: BenchRow[] = [];
  const mainJs = buildRelay(BUILD);
  const [a, b] = await Promise.all([startSandbox(), startSandbox()]);
  const db = await openDatabase();
  let relay: Relay | null = null;
  try {
    await (await startRelay(mainJs, db.url, a.baseUrl)).stop(); // migrates the database
    await storeSecond(db.url, b.baseUrl);
    relay = await startRelay(mainJs, db.url, a.baseUrl);
    // first syncs (the rows inserted), one after the other; then each re-sync alone, then both at once
    await syncDone(relay, await sync(relay, 'main'));
    await syncDone(relay, await sync(relay, 'second'));
    await sleep(RULE.windowMs);
    const aloneMain = await syncDone(relay, await sync(relay, 'main'));
    await sleep(RULE.windowMs);
    const aloneSecond = await syncDone(relay, await sync(relay, 'second'));
    await sleep(RULE.windowMs);
    const limitedBefore = [rateLimitedTotal(await a.stats()), rateLimitedTotal(await b.stats())];
    const ids = await Promise.all([sync(relay, 'main'), sync(relay, 'second')]);
    const [besideMain, besideSecond] = await Promise.all(ids.map((id) => syncDone(relay!, id)));
    const limited = [rateLimitedTotal(await a.stats()) - limitedBefore[0], rateLimitedTotal(await b.stats()) - limitedBefore[1]];
    for (const [name, alone, beside, n429] of [
      ['main', aloneMain, besideMain, limited[0]],
      ['second', aloneSecond, besideSecond, limited[1]],
    ] as const) {
      log(
        `  ${name}: alone ${alone.status}, ${alone.pages_done} pages in ${fmt(runSeconds(alone), 2)} s, ÷ bound ${fmt(ratio(alone), 2)}; ` +
          `beside the other ${beside.status}, ${beside.pages_done} pages in ${fmt(runSeconds(beside), 2)} s, ÷ bound ` +
          `${fmt(ratio(beside), 2)}; 429s ${n429}`,
      );
      rows.push(
        {
          bench: 'suppliers-sync',
          figure: `${DB}: ${name}'s sync beside the other ÷ its budget's bound`,
          value: ratio(beside),
          unit: '×',
          note: `alone ${fmt(ratio(alone), 2)} ×`,
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
