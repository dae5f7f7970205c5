/**
 * `node --no-warnings --import @swc-node/register/esm-register bench/suppliers-budget.bench.ts` (or
 * `npm run bench -- suppliers`): two suppliers, each under its own Dujiao-Next limiter (60 per 60 s,
 * a 30 s block, scaled by `--scale`, default 3: 60 per 20 s, a 10 s block) on its own key, and a burst
 * of orders split between them (CONTRACT §10: each supplier has its own request budget; a blocked or
 * busy one never slows another). Figures: orders a (scaled) minute placed upstream against the sum of
 * both budgets ÷ the upstream requests an order costs, each supplier's own rate against its own budget,
 * and the 429s (target 0).
 *
 * The relay runs in this process on an embedded database (PGlite, `--db postgres` with BENCH_PG_URL
 * for a server), the two sandboxes (profile `dujiao-next`, limiter on) beside it; the figures are
 * counts and rates of requests, which the CPU they share does not decide at the default scale (at a
 * scale of 10 or more this one process's CPU, not the budgets, paces the orders on a busy machine). The second
 * supplier is stored as `POST /internal/suppliers` stores one, and its order products are written in
 * the local catalog as its own (read with its client through the catalog's write path).
 *
 * Options: `--orders N` (the burst, default 120, split evenly), `--scale N` (default 3),
 * `--queue-wait-ms N` (ORDER_QUEUE_WAIT_MS; default 10 scaled windows: the burst's orders wait for
 * their budget in their requests; a shorter wait answers most of them 202 `queued`, and the queue,
 * which sends one order at a time per supplier, then paces them), `--db pglite|postgres`.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import axios from 'axios';
import { createRelayApp } from '../src/app.factory.js';
import { budgetRule } from '../src/budget/request-budget.js';
import { CatalogWriter } from '../src/catalog/catalog-writer.service.js';
import { loadConfig } from '../src/config/app-config.js';
import { SandboxServer } from '../src/sandbox/sandbox.server.js';
import { SupplierRegistry } from '../src/suppliers/supplier-registry.service.js';
import { SupplierRepository } from '../src/suppliers/supplier.repository.js';
import { printBenchSummary } from './run-all.js';

const args = process.argv.slice(2);
const arg = (name: string, def: string): string => {
  const i = args.indexOf(`--${name}`);
  return i >= 0 && args[i + 1] ? args[i + 1] : def;
};
const SCALE = Number(arg('scale', '3'));
const ORDERS = Number(arg('orders', '120'));
const DB = arg('db', 'pglite');
/**
 * How long a new order waits for its supplier's budget before it is queued (default: 10 windows, so
 * that the burst waits in its requests).
 */
const QUEUE_WAIT_MS = Number(arg('queue-wait-ms', String(Math.round((10 * 60_000) / SCALE))));
const LIMIT = { requests: 60, windowMs: 60_000 / SCALE, blockMs: 30_000 / SCALE };
const RULE = budgetRule({ requests: LIMIT.requests, windowMs: LIMIT.windowMs }, 0.5);
/** The requests a (scaled) minute one supplier's budget grants at most. */
const BUDGET_PER_MIN = (RULE.limit / RULE.windowMs) * (60_000 / SCALE);
const TOKEN = 'bench-token';
const PRODUCTS = 5;
const log = (line = '') => process.stdout.write(`${line}\n`);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.listen(0, '127.0.0.1', () => {
      const a = s.address();
      s.close(() => (typeof a === 'object' && a ? resolve(a.port) : reject(new Error('no port'))));
    });
  });
}

/** A sandbox with its own key, `PRODUCTS` auto products `<tag>-<i>` after `firstIds` generated ones. */
async function startSandbox(tag: string, generated: number): Promise<{ sandbox: SandboxServer; skus: string[]; ids: number[] }> {
  const sandbox = new SandboxServer({
    profile: 'dujiao-next',
    apiKey: `${tag}-api-key`,
    apiSecret: `${tag}-api-secret`,
    catalog: { products: generated, seed: 1 },
    allowPrivateCallbackUrls: true,
    wallet: { balance: '100000000.00' },
    rateLimit: LIMIT,
    callbackRetryDelaysMs: [100, 200, 400, 800].map((ms) => ms / (SCALE / 10)),
    timetable: { paidMs: 50, fulfillingMs: 100, deliveredMs: 200, completedMs: null },
  });
  const skus: string[] = [];
  const ids: number[] = [];
  for (let i = 0; i < PRODUCTS; i++) {
    const p = sandbox.catalog.addProduct({ fulfillmentType: 'auto', skus: [{ skuCode: `${tag.toUpperCase()}-${i}`, price: '1.00' }] });
    skus.push(`${tag.toUpperCase()}-${i}`);
    ids.push(p.id);
  }
  await sandbox.start(0, '127.0.0.1');
  return { sandbox, skus, ids };
}

async function main(): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'suppliers-bench-'));
  const a = await startSandbox('main', 10);
  // the second supplier's products come after ids the first one's catalog has (product ids are each supplier's own)
  const b = await startSandbox('second', 40);
  const port = await freePort();
  const config = loadConfig({
    NODE_ENV: 'development',
    PORT: String(port),
    HOST: '127.0.0.1',
    LOG_LEVEL: 'error',
    DATA_DIR: dir,
    ...(DB === 'postgres' ? { DATABASE_URL: process.env.BENCH_PG_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres' } : {}),
    INTERNAL_API_TOKEN: TOKEN,
    PAYLOAD_ENCRYPTION_KEY: Buffer.alloc(32, 7).toString('base64'),
    UPSTREAM_BASE_URL: a.sandbox.baseUrl,
    UPSTREAM_API_KEY: 'main-api-key',
    UPSTREAM_API_SECRET: 'main-api-secret',
    UPSTREAM_PROFILE: 'dujiao-next',
    UPSTREAM_RATE_LIMIT: `${LIMIT.requests}/${LIMIT.windowMs}ms`,
    UPSTREAM_RATE_LIMIT_BLOCK_S: String(LIMIT.blockMs / 1000),
    CALLBACK_PUBLIC_URL: `http://127.0.0.1:${port}/callbacks/upstream`,
    SYNC_CRON: 'off',
    SYNC_ON_START: 'false',
    ORDER_QUEUE_WAIT_MS: String(QUEUE_WAIT_MS),
    ORDER_PRICE_FRESH_S: String(Math.max(1, Math.round(30 / SCALE))),
    ORDER_POLL_BASE_MS: String(Math.round(60_000 / SCALE)),
    ORDER_POLL_MAX_MS: String(Math.round(600_000 / SCALE)),
  });
  const relay = await createRelayApp(config, { logger: false });
  const http = axios.create({ baseURL: relay.url, headers: { authorization: `Bearer ${TOKEN}` }, validateStatus: () => true });
  try {
    // the second supplier, under its own limiter and budget
    const added = await relay.app.get(SupplierRepository).insert({
      name: 'second',
      baseUrl: b.sandbox.baseUrl,
      apiKey: 'second-api-key',
      apiSecret: 'second-api-secret',
      profile: 'dujiao-next',
      settings: { rateLimit: { requests: LIMIT.requests, windowMs: LIMIT.windowMs }, blockMs: LIMIT.blockMs },
      enabled: true,
    });
    if (!added) throw new Error('a supplier named "second" exists in this database already: give the bench an empty one');
    const registry = relay.app.get(SupplierRegistry);
    await registry.reload();
    // the catalogs: the env supplier's by a sync, the second's order products through the write path
    const runId = ((await http.post('/internal/catalog/sync', { mode: 'full' })).data as { run_id: string }).run_id;
    while (((await http.get(`/internal/catalog/sync-runs/${runId}`)).data as { run?: { status: string } }).run?.status === 'running')
      await sleep(100);
    for (const id of b.ids) {
      const product = await registry.get('second').client.getProduct(id);
      await relay.app.get(CatalogWriter).applyFreshProduct(product, { supplier: 'second', runId: null, source: 'refresh' });
    }
    await sleep(LIMIT.windowMs * 1.2); // both keys' windows start empty
    for (const s of [a.sandbox, b.sandbox]) s.resetStats();

    // the burst: ORDERS at once, every other one at the second supplier
    const started = performance.now();
    const answers = await Promise.all(
      Array.from({ length: ORDERS }, (_, i) => {
        const at = i % 2 === 0 ? a : b;
        const supplier = i % 2 === 0 ? 'main' : 'second';
        return http.post('/internal/orders', { shop_order_no: `B-${i}`, supplier, sku_code: at.skus[i % PRODUCTS], quantity: 1 });
      }),
    );
    const half = ORDERS / 2;
    const doneAt: Record<string, number> = {};
    while (Object.keys(doneAt).length < 2) {
      for (const [name, s] of [
        ['main', a.sandbox],
        ['second', b.sandbox],
      ] as const)
        if (doneAt[name] === undefined && s.stats.createsExecuted >= half) doneAt[name] = performance.now() - started;
      if (performance.now() - started > 600_000) throw new Error('the burst did not finish in 10 minutes');
      await sleep(20);
    }
    await sleep(LIMIT.windowMs); // the delivering callbacks and any last reads
    const minutes = (ms: number) => ms / (60_000 / SCALE);
    const elapsed = Math.max(doneAt.main, doneAt.second);
    const requests = a.sandbox.stats.totalRequests + b.sandbox.stats.totalRequests;
    const perOrder = requests / ORDERS;
    const rate = ORDERS / minutes(elapsed);
    const bound = (2 * BUDGET_PER_MIN) / perOrder;
    const limited = [a.sandbox, b.sandbox].reduce((n, s) => n + Object.values(s.stats.rateLimited).reduce((x, y) => x + y, 0), 0);
    const statuses = answers.reduce<Record<number, number>>((m, r) => ((m[r.status] = (m[r.status] ?? 0) + 1), m), {});
    log(
      `two suppliers, each ${LIMIT.requests}/${LIMIT.windowMs} ms on its own key (scale ${SCALE}), a burst of ${ORDERS} ` +
        `orders split evenly (${DB})`,
    );
    log(`  answers: ${JSON.stringify(statuses)}`);
    log(`  upstream requests per order: ${perOrder.toFixed(2)} (${requests} requests)`);
    for (const [name, s] of [
      ['main', a.sandbox],
      ['second', b.sandbox],
    ] as const) {
      const own = half / minutes(doneAt[name]);
      const ownBound = BUDGET_PER_MIN / (s.stats.totalRequests / half);
      log(
        `  ${name}: ${half} placed in ${(doneAt[name] / 1000).toFixed(2)} s: ${own.toFixed(1)} orders/min against its ` +
          `budget's ${ownBound.toFixed(1)} (${((own / ownBound) * 100).toFixed(1)} %)`,
      );
    }
    log(
      `  both: ${rate.toFixed(1)} orders/min against (2 × ${BUDGET_PER_MIN.toFixed(1)} requests/min) ÷ ` +
        `${perOrder.toFixed(2)} = ${bound.toFixed(1)} (${((rate / bound) * 100).toFixed(1)} %)`,
    );
    log(`  429s: ${limited} (target 0)`);
    printBenchSummary('suppliers-budget', [
      {
        figure: 'orders/min, two suppliers, vs the sum of budgets ÷ requests per order',
        value: rate / bound,
        unit: 'ratio',
        target: '≈ 1',
      },
      { figure: '429s, two suppliers', value: limited, unit: 'count', target: '0' },
    ]);
  } finally {
    await relay.close();
    await a.sandbox.stop();
    await b.sandbox.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}

await main();
