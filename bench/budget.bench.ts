/**
 * `npm run bench:budget`: the upstream request budget (UPSTREAM_RATE_LIMIT) against the sandbox with
 * Dujiao-Next's limiter, scaled in time with the same ratios: 60 requests per 60 s, a 30 s block,
 * becomes 60 per 6 s, a 3 s block (`--scale 10`, the default). Every duration of the relay that
 * paces against the budget is scaled alike (ORDER_QUEUE_WAIT_MS, ORDER_PRICE_FRESH_S, the poll's
 * backoff, the block, the sandbox's callback retries); the order load too (20 orders a minute becomes
 * 20 per 6 s). Request counts, 429s and shares do not depend on the scale; latencies and durations
 * are in scaled time (multiply by the scale for the real upstream's).
 *
 * Processes, as in production: this one (the load and the figures), the sandbox upstream
 * (bench/budget-bench-sandbox.ts, profile `dujiao-next`: header prefix, page size capped at 50, paid in
 * the create, callbacks signed over Dujiao-Next's path; auto orders delivered ~200 ms after the create)
 * and the relay (`src/` compiled to JavaScript, `node main.js`, profile `dujiao-next`, callbacks to
 * its own `/callbacks/upstream` when on). The relay's orders buy `--products` auto products round-robin.
 * Figures, for each database (`--db`):
 *  1. upstream requests per delivered order (the sandbox's `stats.requests`, every operation, over a
 *     run of orders at 20 per window, a rate the budget carries, until all are delivered), callbacks
 *     on (target ≤ 2.0) and off, by operation;
 *  2. a full sync of the catalog (5,000 products: 100 pages of 50) beside a steady 20 orders per window
 *     and a burst of 50: 429s (target 0), orders placed as a share of what the budget allows (target
 *     ≥ 95 %, the definition is printed with it), order latency POST → `delivered` with the sync
 *     against the same load without it (the floor, measured first in the same run), the sync's
 *     duration against the budget's lower bound for it, orders answered 202 `queued`;
 *  3. two replicas on one database (PGlite: one embedded database served over its socket from this
 *     process; PostgreSQL: one database) sending orders and syncing: the most requests the sandbox
 *     admitted in any interval of the window's length, against the limit, and 429s.
 *
 * Figure 1 also counts the product reads by product (the sandbox's request log); BENCH_TRACE=1 prints
 * each POST (with its answer), product read and create in time, to see which orders read and why.
 *
 * Options: `--db pglite|postgres|both` (default pglite; postgres is skipped when no server answers at
 * BENCH_PG_URL, default postgres://postgres@127.0.0.1:5432/postgres), `--figure 1,2,3` (default all),
 * `--quick` (a short run: smaller catalog and loads), `--products N` (products the orders buy,
 * default 5), `--scale N` (default 10). BENCH_BUILD_DIR: where `src/` is compiled (default
 * node_modules/.cache/upstream-relay-bench-budget); set it, e.g. to bench/.out/build (git and eslint
 * ignore it), when several checkouts share node_modules. It must lie inside the checkout, so that the
 * build finds node_modules.
 */
import { cpus, loadavg } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { budgetRule } from '../src/budget/request-budget.js';
import type { SandboxStats } from '../src/sandbox/sandbox.types.js';
import {
  arg,
  buildRelay,
  fmt,
  freshPostgres,
  hasFlag,
  KEY,
  log,
  rateLimitedTotal,
  Relay,
  ROOT,
  runSeconds,
  Sandbox,
  scaledLimit,
  servedPglite,
  sleep,
  syncDone,
  type Database,
  type Json,
  type SyncRun,
} from './budget-bench-support.js';
import { printBenchSummary, type BenchRow } from './run-all.js';

const BUILD = process.env.BENCH_BUILD_DIR ?? join(ROOT, 'node_modules/.cache/upstream-relay-bench-budget');
const QUICK = hasFlag('quick');
const DB = arg('db', 'pglite');
const FIGURES = new Set(
  arg('figure', '1,2,3')
    .split(',')
    .map((f) => f.trim()),
);
const ORDER_PRODUCTS = Number(arg('products', '5'));
const SCALE = Number(arg('scale', '10'));
const PG_URL = process.env.BENCH_PG_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';

const LIMIT = scaledLimit(SCALE);
const SYNC_SHARE = 0.5;
const RULE = budgetRule({ requests: LIMIT.requests, windowMs: LIMIT.windowMs }, SYNC_SHARE);
/** N'/W': the requests a second the relay's budget grants at most (its safety margin included). */
const BUDGET_PER_S = (RULE.limit / RULE.windowMs) * 1000;

// The loads. 20 orders a minute is 20 per (scaled) window; the burst comes one window in.
const CATALOG_PRODUCTS = QUICK ? 1000 : 5000;
const FIG1_ORDERS = QUICK ? 20 : 60;
const STEADY_PER_WINDOW = 20;
const STEADY_WINDOWS = QUICK ? 2 : 6;
const BURST = QUICK ? 20 : 50;
const ORDER_INTERVAL_MS = LIMIT.windowMs / STEADY_PER_WINDOW;
const BURST_AT_MS = LIMIT.windowMs;
const PHASE_TIMEOUT_MS = 300_000;

const pct = (x: number | null) => (x === null || !Number.isFinite(x) ? '-' : `${(x * 100).toFixed(1)} %`);

/** The relay's environment for the scaled limiter (the sandbox's timings are set in budget-bench-sandbox.ts). */
function scaledEnv(): Record<string, string> {
  return {
    UPSTREAM_PROFILE: 'dujiao-next',
    UPSTREAM_RATE_LIMIT: `${LIMIT.requests}/${LIMIT.windowMs}ms`,
    UPSTREAM_RATE_LIMIT_BLOCK_S: String(LIMIT.blockMs / 1000),
    SYNC_BUDGET_SHARE: String(SYNC_SHARE),
    ORDER_QUEUE_WAIT_MS: String(5000 / SCALE),
    ORDER_PRICE_FRESH_S: String(Math.max(1, Math.round(30 / SCALE))),
    ORDER_POLL_BASE_MS: String(5000 / SCALE),
    ORDER_POLL_MAX_MS: String(600_000 / SCALE),
    SUBMIT_UNKNOWN_RECHECK_S: String(Math.max(1, Math.round(60 / SCALE))),
  };
}

// --------------------------------------------------------------------------------------- processes

/** The sandbox with `products` products, ORDER_PRODUCTS of them the orders' (see budget-bench-sandbox.ts). */
function startSandbox(products: number): Promise<Sandbox> {
  return Sandbox.start({
    products: products - ORDER_PRODUCTS,
    orderProducts: ORDER_PRODUCTS,
    rateLimit: LIMIT,
    callbackRetryDelaysMs: [30_000, 60_000, 120_000, 300_000].map((ms) => ms / SCALE),
  });
}

function startRelay(
  name: string,
  mainJs: string,
  opts: { databaseUrl: string; sandbox: Sandbox; callbacks: boolean; syncOnStart: boolean },
): Promise<Relay> {
  return Relay.start(name, mainJs, {
    databaseUrl: opts.databaseUrl,
    upstreamUrl: opts.sandbox.baseUrl,
    callbacks: opts.callbacks,
    syncOnStart: opts.syncOnStart,
    env: scaledEnv(),
    dataDirPrefix: 'relay-bench-budget-',
  });
}

// --------------------------------------------------------------------------------------- databases

/**
 * A fresh database. `shared`: one that two relay processes can both use (PGlite: an embedded database
 * held by this process and served over its socket; the relays reach it by its postgres:// URL).
 */
async function openDatabase(kind: 'pglite' | 'postgres', shared: boolean): Promise<Database> {
  if (kind === 'pglite') {
    if (!shared) return { url: 'pglite://memory', describe: 'PGlite (in the relay)', drop: async () => {} };
    return servedPglite();
  }
  return freshPostgres(PG_URL, 'relay_bench_budget');
}

async function postgresAnswers(): Promise<boolean> {
  const c = new pg.Client({ connectionString: PG_URL, connectionTimeoutMillis: 3000 });
  try {
    await c.connect();
    await c.end();
    return true;
  } catch {
    return false;
  }
}

// --------------------------------------------------------------------------------------------- load

interface Placed {
  shopNo: string;
  burst: boolean;
  postedAt: number;
  answeredAt: number;
  httpStatus: number;
  /** The order's status in the answer ('' when none). */
  status: string;
  /** When the relay recorded it `delivered` (its event), epoch ms; null when it was not. */
  deliveredAt: number | null;
}

async function placeOrder(relay: Relay, shopNo: string, sku: string, burst: boolean): Promise<Placed> {
  const postedAt = Date.now();
  const r = await relay
    .post('/internal/orders', { shop_order_no: shopNo, sku_code: sku, quantity: 1 })
    .catch((e: unknown) => ({ status: 0, data: { error: String(e) } }) as Json);
  const order = r.data.order as { status?: string } | undefined;
  return {
    shopNo,
    burst,
    postedAt,
    answeredAt: Date.now(),
    httpStatus: r.status,
    status: order?.status ?? String(r.data.error_code ?? ''),
    deliveredAt: null,
  };
}

/**
 * `steady` orders one every ORDER_INTERVAL_MS from now, and `burst` more all at once BURST_AT_MS in
 * (0: none), spread round-robin over the relays and the products. Resolves when every POST answered.
 */
async function runLoad(relays: Relay[], skus: string[], tag: string, steady: number, burst: number): Promise<Placed[]> {
  const t0 = Date.now();
  const jobs: Array<Promise<Placed>> = [];
  const at = (ms: number, job: () => Promise<Placed>) =>
    jobs.push(
      new Promise<Placed>((resolve, reject) => {
        setTimeout(() => job().then(resolve, reject), Math.max(0, t0 + ms - Date.now()));
      }),
    );
  for (let i = 0; i < steady; i++)
    at(i * ORDER_INTERVAL_MS, () => placeOrder(relays[i % relays.length], `${tag}-s${i}`, skus[i % skus.length], false));
  for (let j = 0; j < burst; j++) at(BURST_AT_MS, () => placeOrder(relays[j % relays.length], `${tag}-b${j}`, skus[j % skus.length], true));
  return Promise.all(jobs);
}

const accepted = (p: Placed) => p.httpStatus === 200 || p.httpStatus === 201 || p.httpStatus === 202;

/** Waits until every accepted order is `delivered` (counted through `relay`, which sees them all). */
async function waitDelivered(relay: Relay, placed: Placed[], deliveredBefore: number): Promise<number> {
  const want = deliveredBefore + placed.filter(accepted).length;
  const deadline = Date.now() + PHASE_TIMEOUT_MS;
  let n = deliveredBefore;
  while (Date.now() < deadline) {
    n = await deliveredCount(relay);
    if (n >= want) break;
    await sleep(250);
  }
  return n - deliveredBefore;
}

async function deliveredCount(relay: Relay): Promise<number> {
  const r = await relay.get('/internal/orders?status=delivered&page_size=1');
  return Number(r.data.total ?? 0);
}

/** Sets each order's `deliveredAt` from its events (the relay's time of the change to `delivered`). */
async function readDeliveries(relay: Relay, placed: Placed[]): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: 4 }, async () => {
      while (next < placed.length) {
        const p = placed[next++];
        const r = await relay.get(`/internal/orders/${encodeURIComponent(p.shopNo)}/events`);
        const ev = ((r.data.events ?? []) as Array<{ to: string | null; at: string }>).find((e) => e.to === 'delivered');
        p.deliveredAt = ev ? Date.parse(ev.at) : null;
      }
    }),
  );
}

/** Starts a full sync (or finds the running one) and returns its id. */
async function startSync(relay: Relay): Promise<string> {
  const r = await relay.post('/internal/catalog/sync', { mode: 'full' });
  const id = (r.data.run_id ?? (r.data as { details?: { run_id?: string } }).details?.run_id) as string | undefined;
  if (!id) throw new Error(`the sync did not start: ${r.status} ${JSON.stringify(r.data)}`);
  return id;
}

// ------------------------------------------------------------------------------------------ figures

function quantile(xs: number[], q: number): number | null {
  if (xs.length === 0) return null;
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor(q * s.length))];
}

function latencies(placed: Placed[]): { p50: number | null; p99: number | null; n: number } {
  const xs = placed.filter((p) => p.deliveredAt !== null).map((p) => (p.deliveredAt! - p.postedAt) / 1000);
  return { p50: quantile(xs, 0.5), p99: quantile(xs, 0.99), n: xs.length };
}

function statsDiff(
  a: SandboxStats,
  b: SandboxStats,
): { requests: Record<string, number>; total: number; rateLimited: number; blocks: number } {
  const requests: Record<string, number> = {};
  for (const k of Object.keys(b.requests)) {
    const d = b.requests[k as keyof SandboxStats['requests']] - (a.requests[k as keyof SandboxStats['requests']] ?? 0);
    if (d) requests[k] = d;
  }
  return {
    requests,
    total: b.totalRequests - a.totalRequests,
    rateLimited: rateLimitedTotal(b) - rateLimitedTotal(a),
    blocks: b.rateLimitBlocks - a.rateLimitBlocks,
  };
}

/** The product reads by product, and (BENCH_TRACE=1) each product's reads and creates in time. */
function productReadsLine(
  r: { requests: Array<[number, string, string]>; orders: Array<[number, number, string | null]> },
  placed: Placed[],
): string {
  const t0 = placed[0]?.postedAt ?? 0;
  const reads = new Map<string, number>();
  for (const [, , path] of r.requests) {
    const id = path.split('/').pop()!;
    reads.set(id, (reads.get(id) ?? 0) + 1);
  }
  const line = `product reads by product id: ${[...reads.entries()].map(([id, n]) => `${id} × ${n}`).join(', ') || 'none'}`;
  if (process.env.BENCH_TRACE !== '1') return line;
  const events = [
    ...r.requests.map(([t, , path]) => [t, `read   product ${path.split('/').pop()}`] as const),
    ...r.orders.filter((o) => o[0] >= t0).map(([t, id, dno]) => [t, `create product ${id} ${dno ?? ''}`] as const),
    ...placed.map(
      (p) =>
        [
          p.postedAt,
          `POST   ${p.shopNo} (answered ${p.httpStatus} ${p.status} after ${fmt((p.answeredAt - p.postedAt) / 1000, 3)} s)`,
        ] as const,
    ),
  ].sort((a, b) => a[0] - b[0]);
  return `${line}\n${events.map(([t, what]) => `      ${fmt((t - t0) / 1000, 3)} s ${what}`).join('\n')}`;
}

const byOp = (requests: Record<string, number>, per: number) =>
  Object.entries(requests)
    .sort((x, y) => y[1] - x[1])
    .map(([op, n]) => `${op} ${(n / per).toFixed(2)}`)
    .join(', ');

/** The most entries whose times lie within one interval of `lengthMs` (closed: t_last − t_first ≤ lengthMs). */
function maxInInterval(times: number[], lengthMs: number): number {
  const t = [...times].sort((a, b) => a - b);
  let best = 0;
  for (let i = 0, j = 0; j < t.length; j++) {
    while (t[j] - t[i] > lengthMs) i++;
    best = Math.max(best, j - i + 1);
  }
  return best;
}

/**
 * The most requests the budget's rule (at most N' grants in any closed interval of W') can grant in
 * [from, to], given the admitted requests before `from`: every request granted as early as the rule
 * allows (which is the most there can be).
 */
function mostGrants(admitted: number[], from: number, to: number): number {
  const grants = admitted.filter((t) => t < from && t >= from - RULE.windowMs).sort((a, b) => a - b);
  let t = from;
  let n = 0;
  let lo = 0;
  while (t <= to) {
    while (lo < grants.length && grants[lo] < t - RULE.windowMs) lo++;
    if (grants.length - lo < RULE.limit) {
      grants.push(t);
      n++;
    } else {
      t = grants[grants.length - RULE.limit] + RULE.windowMs + 1;
    }
  }
  return n;
}

interface PlacedShare {
  fromMs: number;
  toMs: number;
  creates: number;
  others: number;
  most: number;
  share: number | null;
}

/**
 * Orders placed as a share of what the budget allowed them, over D = from the burst's POSTs to the
 * creation of the burst's last order (orders waited for the budget all through D):
 *   allowed creates = most(D) − others(D), share = creates(D) ÷ allowed creates,
 * where most(D) is the most requests the relay's rule (N' in any W') grants in D given those admitted
 * before D, others(D) the admitted requests in D that are not creates (the sync's pages, the price
 * reads, the orders' confirming reads and polls, pings) and creates(D) the creates admitted in D.
 * Counted from the sandbox's limiter log (arrival times).
 */
function placedShare(sandbox: Sandbox, placed: Placed[], created: Map<string, number>): PlacedShare | null {
  const burst = placed.filter((p) => p.burst);
  if (burst.length === 0) return null;
  const fromMs = Math.min(...burst.map((p) => p.postedAt));
  const ends = burst.map((p) => created.get(p.shopNo)).filter((t): t is number => t !== undefined);
  if (ends.length === 0) return null;
  const toMs = Math.max(...ends);
  const admitted = sandbox.log.filter((e) => e[3] && e[1] === KEY);
  const inD = admitted.filter((e) => e[0] >= fromMs && e[0] <= toMs);
  const creates = inD.filter((e) => e[2] === 'createOrder').length;
  const others = inD.length - creates;
  const most = mostGrants(
    admitted.map((e) => e[0]),
    fromMs,
    toMs,
  );
  const allowed = most - others;
  return { fromMs, toMs, creates, others, most, share: allowed > 0 ? creates / allowed : null };
}

// ------------------------------------------------------------------------------------------- phases

const summary: BenchRow[] = [];
const cmd = (kind: string, figure?: number) => {
  const options = [
    figure !== undefined ? ` --figure ${figure}` : '',
    ` --db ${kind}`,
    QUICK ? ' --quick' : '',
    ORDER_PRODUCTS !== 5 ? ` --products ${ORDER_PRODUCTS}` : '',
    SCALE !== 10 ? ` --scale ${SCALE}` : '',
  ];
  return `npm run bench:budget --${options.join('')}`;
};

/** Figure 1: requests per delivered order, callbacks on and off. */
async function figureRequestsPerOrder(kind: 'pglite' | 'postgres', mainJs: string, tag: string): Promise<void> {
  const name = kind === 'postgres' ? 'PostgreSQL' : 'PGlite';
  log(
    `\n[${kind}] 1. upstream requests per delivered order: ${FIG1_ORDERS} orders, ${STEADY_PER_WINDOW} per ` +
      `${LIMIT.windowMs / 1000} s window, over ${ORDER_PRODUCTS} products`,
  );
  log(`  reproduce: ${cmd(kind, 1)}`);
  const sandbox = await startSandbox(50);
  try {
    for (const callbacks of [true, false]) {
      const db = await openDatabase(kind, false);
      const relay = await startRelay(`fig1-${callbacks ? 'on' : 'off'}`, mainJs, {
        databaseUrl: db.url,
        sandbox,
        callbacks,
        syncOnStart: true,
      });
      try {
        await syncDone(relay, null, PHASE_TIMEOUT_MS);
        await sleep(RULE.windowMs);
        const before = await sandbox.stats();
        const requestsFrom = (await sandbox.requests()).next;
        const placed = await runLoad([relay], sandbox.skuCodes, `${tag}-f1${callbacks ? 'on' : 'off'}`, FIG1_ORDERS, 0);
        const delivered = await waitDelivered(relay, placed, 0);
        await sleep(1000); // requests that follow the last delivery
        const d = statsDiff(before, await sandbox.stats());
        const perOrder = delivered ? d.total / delivered : NaN;
        const label = callbacks ? 'callbacks on ' : 'callbacks off';
        log(
          `  ${label}: ${d.total} requests for ${delivered} delivered orders (of ${placed.length}) = ${fmt(perOrder, 2)} ` +
            `per order${callbacks ? ` (target ≤ 2.0: ${perOrder <= 2.0 ? 'met' : 'NOT met'})` : ''}; 429s ${d.rateLimited}`,
        );
        log(`    by operation, per delivered order: ${byOp(d.requests, delivered || 1)}`);
        const answered = new Map<string, number>();
        for (const p of placed) answered.set(`${p.httpStatus} ${p.status}`, (answered.get(`${p.httpStatus} ${p.status}`) ?? 0) + 1);
        log(`    answers: ${[...answered.entries()].map(([k, n]) => `${n} × ${k}`).join(', ')}`);
        log(`    ${productReadsLine(await sandbox.requests(requestsFrom), placed)}`);
        if (callbacks) {
          // A price read serves a product for ORDER_PRICE_FRESH_S, and a create charged the checked cost
          // serves its SKU as long: when one SKU's orders come closer than that, only its first reads.
          const fresh = Number(scaledEnv().ORDER_PRICE_FRESH_S);
          const rate = STEADY_PER_WINDOW / (LIMIT.windowMs / 1000);
          const gap = ORDER_PRODUCTS / rate;
          log(
            `    the price reads: a read serves a product, a create charged the checked cost its SKU, for ` +
              `ORDER_PRICE_FRESH_S = ${fresh} s; at ${fmt(rate, 2)} orders/s over ${ORDER_PRODUCTS} products one SKU's ` +
              `orders come ${fmt(gap, 2)} s apart, ` +
              (gap <= fresh
                ? `within it: the first order of each reads, ${ORDER_PRODUCTS} ÷ ${placed.length} = ` +
                  `${fmt(ORDER_PRODUCTS / placed.length, 2)} an order, as long as an order's create is answered within ` +
                  `${fmt(fresh - gap, 2)} s of its POST (the relay's own time is not scaled: a stall past that makes the next ` +
                  'order of its SKU read, as the guard must)'
                : 'beyond it: every order reads'),
          );
        }
        log(`    relay log: ${relay.logSummary()}`);
        summary.push({
          bench: 'budget',
          figure: `${name}: upstream requests per delivered order, ${label.trim()}`,
          value: perOrder,
          unit: 'requests',
          ...(callbacks ? { target: '≤ 2.0' } : {}),
          note: byOp(d.requests, delivered || 1),
        });
      } finally {
        await relay.stop();
        await db.drop();
      }
      await sleep(RULE.windowMs); // the next relay starts with an empty window
    }
  } finally {
    await sandbox.stop();
  }
}

interface PhaseResult {
  placed: Placed[];
  delivered: number;
  diff: ReturnType<typeof statsDiff>;
  share: PlacedShare | null;
  seconds: number;
  run: SyncRun | null;
  syncPages: number;
  /** While the sync ran: requests admitted, and the most the relay's rule grants then (see mostGrants). */
  duringSync: { admitted: number; most: number } | null;
  maxWindow: number;
  maxBudgetWindow: number;
}

/** One load (steady + burst) on `relays`, with a full sync started at once when `sync`. */
async function phase(sandbox: Sandbox, relays: Relay[], tag: string, sync: boolean): Promise<PhaseResult> {
  const deliveredBefore = await deliveredCount(relays[0]);
  await sandbox.readLog();
  const logFrom = sandbox.log.length;
  const before = await sandbox.stats();
  const t0 = Date.now();
  let runId: string | null = null;
  if (sync) {
    // every replica is asked; one runs it, the others answer 409 with the running run's id
    const ids = await Promise.all(relays.map((r) => startSync(r)));
    runId = ids[0];
  }
  const placed = await runLoad(relays, sandbox.skuCodes, tag, STEADY_PER_WINDOW * STEADY_WINDOWS, BURST);
  const delivered = await waitDelivered(relays[0], placed, deliveredBefore);
  const run = runId ? await syncDone(relays[0], runId, PHASE_TIMEOUT_MS) : null;
  const seconds = (Date.now() - t0) / 1000;
  await sleep(500);
  const diff = statsDiff(before, await sandbox.stats());
  await sandbox.readLog();
  await readDeliveries(relays[0], placed);
  const share = placedShare(sandbox, placed, await sandbox.orderCreations());
  const entries = sandbox.log.slice(logFrom).filter((e) => e[1] === KEY);
  const admittedTimes = entries.filter((e) => e[3]).map((e) => e[0]);
  let syncPages = 0;
  let duringSync: PhaseResult['duringSync'] = null;
  if (run?.finished_at) {
    const s = Date.parse(run.started_at);
    const f = Date.parse(run.finished_at);
    syncPages = entries.filter((e) => e[3] && e[2] === 'products' && e[0] >= s - 50 && e[0] <= f + 50).length;
    const keyAdmitted = sandbox.log.filter((e) => e[3] && e[1] === KEY).map((e) => e[0]);
    duringSync = { admitted: keyAdmitted.filter((t) => t >= s && t <= f).length, most: mostGrants(keyAdmitted, s, f) };
  }
  return {
    placed,
    delivered,
    diff,
    share,
    seconds,
    run,
    syncPages,
    duringSync,
    maxWindow: maxInInterval(admittedTimes, LIMIT.windowMs),
    maxBudgetWindow: maxInInterval(admittedTimes, RULE.windowMs),
  };
}

function printPhase(label: string, r: PhaseResult): void {
  const all = latencies(r.placed);
  const steady = latencies(r.placed.filter((p) => !p.burst));
  const burst = latencies(r.placed.filter((p) => p.burst));
  const queued = r.placed.filter((p) => p.httpStatus === 202 && p.status === 'queued').length;
  const answered = new Map<string, number>();
  for (const p of r.placed) answered.set(`${p.httpStatus} ${p.status}`, (answered.get(`${p.httpStatus} ${p.status}`) ?? 0) + 1);
  log(
    `  ${label}: ${r.placed.length} orders, ${r.delivered} delivered, in ${fmt(r.seconds)} s; answers: ` +
      `${[...answered.entries()].map(([k, n]) => `${n} × ${k}`).join(', ')}`,
  );
  log(`    202 queued: ${queued}; 429s received: ${r.diff.rateLimited} (blocks ${r.diff.blocks})`);
  log(
    `    latency POST → delivered (s): all p50 ${fmt(all.p50, 2)} p99 ${fmt(all.p99, 2)} (n ${all.n}); steady p50 ` +
      `${fmt(steady.p50, 2)} p99 ${fmt(steady.p99, 2)}; burst p50 ${fmt(burst.p50, 2)} p99 ${fmt(burst.p99, 2)}`,
  );
  log(`    requests: ${r.diff.total}; per delivered order ${byOp(r.diff.requests, r.delivered || 1)}`);
  if (r.share) {
    const s = r.share;
    log(
      `    orders placed ÷ what the budget allowed: ${pct(s.share)} = creates ${s.creates} ÷ (most ${s.most} − others ` +
        `${s.others}) over D = ${fmt((s.toMs - s.fromMs) / 1000, 2)} s (the burst's POSTs → its last create)`,
    );
  }
  log(
    `    most admitted in any ${LIMIT.windowMs / 1000} s: ${r.maxWindow} (limit ${LIMIT.requests}); in any ` +
      `${RULE.windowMs / 1000} s: ${r.maxBudgetWindow} (the budget's N' ${RULE.limit}, held on grant times; these are ` +
      `arrival times at the sandbox)`,
  );
}

/** Figure 2: a full sync beside the steady load and a burst, against the same load without it. */
async function figureSyncBesideOrders(kind: 'pglite' | 'postgres', mainJs: string, tag: string, sandbox: Sandbox): Promise<void> {
  const name = kind === 'postgres' ? 'PostgreSQL' : 'PGlite';
  log(
    `\n[${kind}] 2. a full sync of ${sandbox.products} products beside ${STEADY_PER_WINDOW} orders per ` +
      `${LIMIT.windowMs / 1000} s for ${STEADY_WINDOWS} windows and a burst of ${BURST} one window in`,
  );
  log(`  reproduce: ${cmd(kind, 2)}`);
  const db = await openDatabase(kind, false);
  const relay = await startRelay('fig2', mainJs, { databaseUrl: db.url, sandbox, callbacks: true, syncOnStart: true });
  try {
    const first = await syncDone(relay, null, PHASE_TIMEOUT_MS);
    const firstPages = first.pages_done ?? first.pages_total ?? 0;
    const aloneBound = firstPages / BUDGET_PER_S;
    log(
      `  first sync, alone (fresh database): ${first.status}, ${firstPages} pages in ${fmt(runSeconds(first), 2)} s; its ` +
        `bound alone, pages ÷ (N'/W') = ${firstPages} ÷ ${fmt(BUDGET_PER_S, 2)}/s = ${fmt(aloneBound, 2)} s: ratio ` +
        `${fmt(runSeconds(first) / aloneBound, 2)}`,
    );
    await sleep(RULE.windowMs);
    const floor = await phase(sandbox, [relay], `${tag}-f2floor`, false);
    printPhase('without the sync (floor)', floor);
    await sleep(RULE.windowMs);
    const withSync = await phase(sandbox, [relay], `${tag}-f2sync`, true);
    printPhase('with the sync', withSync);
    const run = withSync.run!;
    const pages = run.pages_done ?? run.pages_total ?? 0;
    const bound = pages / (SYNC_SHARE * BUDGET_PER_S);
    const syncS = runSeconds(run);
    log(
      `    the sync: ${run.status}${run.error ? ` (${run.error})` : ''}, ${pages} pages (${withSync.syncPages} listing ` +
        `requests seen) in ${fmt(syncS, 2)} ` +
        's' +
        (run.budget_wait_ms !== undefined
          ? `, waited for the budget ${fmt(Number(run.budget_wait_ms) / 1000, 1)} s (summed over its requests)`
          : ''),
    );
    log(
      `    its lower bound, pages ÷ (SYNC_BUDGET_SHARE × N'/W') = ${pages} ÷ (${SYNC_SHARE} × ` +
        `${RULE.limit}/${RULE.windowMs / 1000} s) = ${fmt(bound, 2)} s: duration ÷ bound ${fmt(syncS / bound, 2)} ` +
        (`(with the whole budget, pages ÷ (N'/W') = ${fmt(pages / BUDGET_PER_S, 2)} s: ` +
          `${fmt(syncS / (pages / BUDGET_PER_S), 2)}); its pages took ${pct(withSync.syncPages / (BUDGET_PER_S * syncS))} ` +
          `of the budget while it ran`),
    );
    if (withSync.duringSync) {
      const u = withSync.duringSync;
      log(
        `    while it ran the budget was used at ${pct(u.admitted / u.most)} (${u.admitted} requests admitted of the ` +
          `most the rule grants then, ${u.most}); the sync's pages ${withSync.syncPages}, the rest the orders' and pings`,
      );
    }
    const lf = latencies(floor.placed);
    const ls = latencies(withSync.placed);
    log(
      `    latency with the sync ÷ without: p50 ${fmt((ls.p50 ?? NaN) / (lf.p50 ?? NaN), 2)}, p99 ` +
        `${fmt((ls.p99 ?? NaN) / (lf.p99 ?? NaN), 2)}`,
    );
    log(
      `    definition: D runs from the burst's POSTs to the creation of its last order (orders waited for the budget all ` +
        `through it); most = the most requests the relay's rule (N' = ${RULE.limit} in any ${RULE.windowMs / 1000} s) ` +
        `grants in D given the requests before D; others = admitted requests in D that are not creates (sync pages, price ` +
        `and order reads, pings); share = creates ÷ (most − others)`,
    );
    log(`    relay log: ${relay.logSummary()}`);
    const queued = (r: PhaseResult) => r.placed.filter((p) => p.httpStatus === 202 && p.status === 'queued').length;
    summary.push(
      {
        bench: 'budget',
        figure: `${name}: sync beside orders, 429s received`,
        value: withSync.diff.rateLimited,
        unit: '',
        target: '0',
        note: `floor run: ${floor.diff.rateLimited}`,
      },
      {
        bench: 'budget',
        figure: `${name}: orders placed ÷ what the budget allowed, with the sync`,
        value: withSync.share?.share === null || withSync.share === null ? null : withSync.share.share * 100,
        unit: '%',
        target: '≥ 95',
        note: `floor run ${pct(floor.share?.share ?? null)}`,
      },
      {
        bench: 'budget',
        figure: `${name}: order latency p50 with the sync`,
        value: ls.p50,
        unit: 's (scaled)',
        note: `without ${fmt(lf.p50, 2)} s`,
      },
      {
        bench: 'budget',
        figure: `${name}: order latency p99 with the sync`,
        value: ls.p99,
        unit: 's (scaled)',
        note: `without ${fmt(lf.p99, 2)} s`,
      },
      {
        bench: 'budget',
        figure: `${name}: sync duration ÷ pages ÷ (share × N'/W')`,
        value: syncS / bound,
        unit: '×',
        note: `${fmt(syncS, 1)} s for ${pages} pages`,
      },
      {
        bench: 'budget',
        figure: `${name}: orders answered 202 queued`,
        value: queued(withSync),
        unit: 'orders',
        note: `of ${withSync.placed.length}; floor run ${queued(floor)}`,
      },
    );
  } finally {
    await relay.stop();
    await db.drop();
  }
}

/** Figure 3: two replicas on one database, sending orders and syncing. */
async function figureReplicas(kind: 'pglite' | 'postgres', mainJs: string, tag: string, sandbox: Sandbox): Promise<void> {
  const name = kind === 'postgres' ? 'PostgreSQL' : 'PGlite';
  const db = await openDatabase(kind, true);
  log(`\n[${kind}] 3. two replicas on ${db.describe}, one API key: the same load spread over both, a full sync asked of both`);
  log(`  reproduce: ${cmd(kind, 3)}`);
  const a = await startRelay('fig3-a', mainJs, { databaseUrl: db.url, sandbox, callbacks: true, syncOnStart: true });
  let b: Relay | null = null;
  try {
    await syncDone(a, null, PHASE_TIMEOUT_MS);
    b = await startRelay('fig3-b', mainJs, { databaseUrl: db.url, sandbox, callbacks: true, syncOnStart: false });
    await sleep(RULE.windowMs);
    const r = await phase(sandbox, [a, b], `${tag}-f3`, true);
    printPhase('both replicas', r);
    log(`    the sync: ${r.run?.status}, ${fmt(r.run ? runSeconds(r.run) : NaN, 2)} s`);
    log(
      `    combined: most requests admitted in any ${LIMIT.windowMs / 1000} s interval ${r.maxWindow} (limit ` +
        `${LIMIT.requests}: ${r.maxWindow <= LIMIT.requests ? 'met' : 'NOT met'}); 429s ${r.diff.rateLimited}`,
    );
    log(`    relay logs: a ${a.logSummary()}; b ${b.logSummary()}`);
    summary.push(
      {
        bench: 'budget',
        figure: `${name}: two replicas, most admitted in any ${LIMIT.windowMs / 1000} s`,
        value: r.maxWindow,
        unit: 'requests',
        target: `≤ ${LIMIT.requests}`,
      },
      { bench: 'budget', figure: `${name}: two replicas, 429s received`, value: r.diff.rateLimited, unit: '', target: '0' },
    );
  } finally {
    await b?.stop();
    await a.stop();
    await db.drop();
  }
}

async function run(kind: 'pglite' | 'postgres', mainJs: string): Promise<void> {
  if (kind === 'postgres' && !(await postgresAnswers())) {
    log(`\n[postgres] skipped: no server at ${PG_URL}`);
    summary.push({ bench: 'budget', figure: 'PostgreSQL', value: null, unit: '', note: `no server at ${PG_URL}` });
    return;
  }
  // shop_order_no is sent upstream as downstream_order_no, which the sandbox deduplicates: unique per run
  const tag = `${kind === 'postgres' ? 'pg' : 'pgl'}${Date.now().toString(36)}`;
  if (FIGURES.has('1')) await figureRequestsPerOrder(kind, mainJs, tag);
  if (FIGURES.has('2') || FIGURES.has('3')) {
    const sandbox = await startSandbox(CATALOG_PRODUCTS);
    try {
      if (FIGURES.has('2')) await figureSyncBesideOrders(kind, mainJs, tag, sandbox);
      if (FIGURES.has('2') && FIGURES.has('3')) await sleep(RULE.windowMs);
      if (FIGURES.has('3')) await figureReplicas(kind, mainJs, tag, sandbox);
    } finally {
      await sandbox.stop();
    }
  }
}

async function main(): Promise<void> {
  const started = Date.now();
  log(
    `upstream request budget, Dujiao-Next's limiter scaled ×1/${SCALE}: ${LIMIT.requests} requests per ` +
      `${LIMIT.windowMs / 1000} s, block ${LIMIT.blockMs / 1000} s (real: 60 per 60 s, block 30 s)`,
  );
  log(
    `  the relay's rule: N' = ${RULE.limit} in any W' = ${RULE.windowMs / 1000} s (${fmt(BUDGET_PER_S, 2)} requests/s), ` +
      `paced classes ${fmt(RULE.spacingMs, 0)} ms apart, the sync's share ${SYNC_SHARE} (${RULE.syncShareLimit} a window ` +
      `while orders wait)`,
  );
  log(
    `  relay environment: ${Object.entries(scaledEnv())
      .map(([k, v]) => `${k}=${v}`)
      .join(' ')}`,
  );
  log(
    `  ${cpus().length} CPUs: ${cpus()[0]?.model ?? 'unknown model'}; node ${process.version}; load average (1 min) ` +
      `${loadavg()[0].toFixed(2)}${QUICK ? '; --quick' : ''}`,
  );
  log(`  reproduce everything: ${cmd(DB)}`);
  const mainJs = buildRelay(BUILD);
  if (DB === 'pglite' || DB === 'both') await run('pglite', mainJs);
  if (DB === 'postgres' || DB === 'both') await run('postgres', mainJs);
  log(`\nbench:budget took ${fmt((Date.now() - started) / 1000, 0)} s; load average (1 min) at the end ${loadavg()[0].toFixed(2)}`);
  printBenchSummary('budget', summary);
  process.exit(0);
}

main().catch((e: unknown) => {
  console.error(e);
  process.exit(1);
});
