/**
 * The relay under measurement for `npm run bench:sync`: compiled JavaScript in a process of its own
 * (as `node dist/main.js` runs in production: no TypeScript loader in its memory), driven over IPC by
 * bench/sync.bench.ts. Every figure is taken here, in this one process: the floor (the same pages
 * fetched and parsed by the same client, no database work) and the syncs.
 *   ← {id, cmd:'floor'}              → {id, ms, products, cpuMs}
 *   ← {id, cmd:'rowWork'}            → {id, ms, products, skus, cpuMs}   the floor plus the relay's own work on each product (below)
 *   ← {id, cmd:'sync', mode}         → {id, ms, run, rssBefore, peakRss, peakHeap, cpuMs, pageStats}
 *   ← {id, cmd:'snapshot'}           → {id}             row versions of catalog_skus, kept in the database
 *   ← {id, cmd:'rowsWritten'}        → {id, n}          SKU rows written since the snapshot
 *   ← {id, cmd:'count', table}       → {id, n}
 *   ← {id, cmd:'leastWrite', step}   → {id, skus?}      prepare | run | drop (skus: rows copied): the database's least work (below)
 * ← {id, cmd:'minimalSync', step}  → {id, ms, products, cpuMs} or {id, skus}   prepare | run | drop:
 * the yardstick (below), PostgreSQL only
 *   ← {id, cmd:'close'}              → {id}, then exits
 */
import pg from 'pg';
import { DataSource } from 'typeorm';
import { createRelayApp } from '../src/app.factory.js';
import { CatalogSyncService } from '../src/catalog/catalog-sync.service.js';
import { PricingContextService } from '../src/catalog/pricing-context.service.js';
import { DEFAULT_RETRY_POLICY, fetchAllPages, type FetchedPage } from '../src/catalog/product-pager.js';
import { productFingerprint, skuRowsFromProduct } from '../src/catalog/sku-diff.js';
import { loadConfig } from '../src/config/app-config.js';
import { copyField, copyIn } from '../src/database/copy-in.js';
import { UpstreamClient } from '../src/upstream/upstream.client.js';

interface RelaySettings {
  databaseUrl: string;
  upstreamBaseUrl: string;
  concurrency: number;
  dataDir: string;
}

const settings = JSON.parse(process.env.BENCH_RELAY ?? '{}') as RelaySettings;
const config = loadConfig({
  NODE_ENV: 'bench',
  PORT: '0',
  HOST: '127.0.0.1',
  LOG_LEVEL: 'silent',
  DATA_DIR: settings.dataDir,
  DATABASE_URL: settings.databaseUrl,
  UPSTREAM_BASE_URL: settings.upstreamBaseUrl,
  UPSTREAM_API_KEY: 'sandbox-api-key',
  UPSTREAM_API_SECRET: 'sandbox-api-secret',
  INTERNAL_API_TOKEN: 'bench-token',
  PAYLOAD_ENCRYPTION_KEY: Buffer.alloc(32, 7).toString('base64'),
  SYNC_CRON: 'off',
  SYNC_ON_START: 'false',
  SYNC_CONCURRENCY: String(settings.concurrency),
  SYNC_PAGE_SIZE: '100',
});
const relay = await createRelayApp(config, { logger: false });
const upstream = relay.app.get(UpstreamClient);
const sync = relay.app.get(CatalogSyncService);
const ds = relay.app.get(DataSource);
const pricing = relay.app.get(PricingContextService);

/** CPU time of this process since `from` (ms): its JavaScript, and the embedded database's when it is PGlite. */
function cpuMs(from: NodeJS.CpuUsage): number {
  const d = process.cpuUsage(from);
  return (d.user + d.system) / 1000;
}

/** A full pass of the listing with the sync's client and paging, each page handed to `onPage`; its time and CPU. */
async function pass(
  onPage: (page: FetchedPage) => Promise<void>,
  writes: { writeConcurrency?: number; writeBatch?: number } = {},
): Promise<{ ms: number; products: number; cpuMs: number }> {
  const t = performance.now();
  const cpu = process.cpuUsage();
  const r = await fetchAllPages({
    fetchPage: (q) => upstream.listProducts(q),
    requestedPageSize: config.sync.pageSize,
    concurrency: config.sync.concurrency,
    retry: DEFAULT_RETRY_POLICY,
    onPage,
    ...writes,
  });
  return { ms: performance.now() - t, products: r.products, cpuMs: cpuMs(cpu) };
}

async function floor(): Promise<Record<string, unknown>> {
  return { ...(await pass(async () => undefined)) };
}

/**
 * The floor plus the part of a first sync's own work that needs no database: each product's
 * fingerprint, and its SKUs mapped to rows and priced by the current rules, as the writer does them
 * (not the COPY text, the statements, the writes). Its CPU time above the floor's is a lower bound for
 * what the relay must add to the floor's CPU in a first sync.
 */
async function rowWork(): Promise<Record<string, unknown>> {
  const ctx = await pricing.current();
  let skus = 0;
  let kept = 0;
  const r = await pass(async (page) => {
    for (const p of page.items) {
      kept += productFingerprint(p).length;
      skus += skuRowsFromProduct(p, ctx.price).rows.length;
    }
  });
  return { ...r, skus, kept };
}

async function timedSync(mode: 'full' | 'incremental'): Promise<Record<string, unknown>> {
  const rssBefore = process.memoryUsage.rss();
  let peakRss = rssBefore;
  let peakHeap = process.memoryUsage().heapUsed;
  // The resident size every 25 ms, the heap's statistics every 100 ms: each reading costs ~0.1 ms of
  // the sync's own time (read every 10 ms, the resident size took 1.5 % of a first sync in a profile).
  // A peak shorter than 25 ms could go unseen.
  let tick = 0;
  const sampler = setInterval(() => {
    peakRss = Math.max(peakRss, process.memoryUsage.rss());
    if (++tick % 4 === 0) peakHeap = Math.max(peakHeap, process.memoryUsage().heapUsed);
  }, 25);
  try {
    const t = performance.now();
    const cpu = process.cpuUsage();
    const run = await (await sync.start({ mode, trigger: 'cli' })).done;
    const ms = performance.now() - t;
    const m = process.memoryUsage();
    peakRss = Math.max(peakRss, m.rss);
    peakHeap = Math.max(peakHeap, m.heapUsed);
    return { ms, run, rssBefore, peakRss, peakHeap, cpuMs: cpuMs(cpu), pageStats: { ...sync.pageFingerprints.stats } };
  } finally {
    clearInterval(sampler);
  }
}

/**
 * The database's least work for what a first sync stores: the same SKU rows (their creation recorded on
 * the row, no history row: migration 20261122008000) and the products' fingerprints, copied by `INSERT
 * … SELECT` from the tables the sync filled into empty twins of them (same columns, indexes and
 * defaults), in one transaction committed as the sync commits (synchronous_commit off). No parameters
 * to decode, no statement per page, no diff, no returned rows: a lower bound for the database's share
 * of a first sync. `prepare` and `drop` stay off the clock.
 */
async function leastWrite(step: string): Promise<Record<string, unknown>> {
  const tables = ['catalog_skus', 'catalog_product_fingerprints'];
  if (step === 'prepare') {
    for (const t of tables) await ds.query(`CREATE TABLE bench_least_${t} (LIKE ${t} INCLUDING ALL)`);
    return {};
  }
  if (step === 'drop') {
    const [{ n }] = (await ds.query('SELECT count(*)::int AS n FROM bench_least_catalog_skus')) as Array<{ n: number }>;
    for (const t of tables) await ds.query(`DROP TABLE IF EXISTS bench_least_${t}`);
    return { skus: n };
  }
  const [{ cols }] = (await ds.query(
    "SELECT string_agg(column_name, ', ' ORDER BY ordinal_position) AS cols FROM information_schema.columns WHERE " +
      "table_name = 'catalog_skus' AND is_generated = 'NEVER'",
  )) as Array<{ cols: string }>;
  await ds.transaction(async (em) => {
    await em.query("SELECT set_config('synchronous_commit', 'off', true)");
    await em.query(`INSERT INTO bench_least_catalog_skus (${cols}) SELECT ${cols} FROM catalog_skus`);
    await em.query('INSERT INTO bench_least_catalog_product_fingerprints SELECT * FROM catalog_product_fingerprints');
  });
  return {};
}

/**
 * A yardstick, not a sync (PostgreSQL only): about the least any durable copy of the catalog can cost
 * on this machine. The floor's pass (same client, paging and concurrency; pages written 2 at a time,
 * up to 4 waiting pages in one write, as the sync does), and for each write one `COPY` of its SKUs
 * into a table of six columns (sku_code primary key, product and SKU ids, cost, stock, the product's
 * title) on a plain `pg` connection, each COPY its own durably committed transaction. No categories,
 * fingerprints, pricing, diff, history, run rows, locks, other texts or indexes: it keeps none of the
 * issue's promises; it shows how far above the floor merely storing the catalog is. `prepare` and
 * `drop` stay off the clock.
 */
let minimalPool: pg.Pool | undefined;
async function minimalSync(step: string): Promise<Record<string, unknown>> {
  if (step === 'prepare') {
    minimalPool = new pg.Pool({ connectionString: settings.databaseUrl, max: 2 });
    await minimalPool.query(
      `CREATE TABLE bench_minimal_skus (sku_code text PRIMARY KEY, product_id bigint NOT NULL, upstream_sku_id bigint NOT NULL,
         cost_price numeric NOT NULL, stock_quantity integer NOT NULL, title jsonb NOT NULL)`,
    );
    return {};
  }
  const db = minimalPool!;
  if (step === 'drop') {
    const { rows } = await db.query<{ n: number }>('SELECT count(*)::int AS n FROM bench_minimal_skus');
    await db.query('DROP TABLE bench_minimal_skus');
    await db.end();
    minimalPool = undefined;
    return { skus: rows[0].n };
  }
  await db.query('TRUNCATE bench_minimal_skus');
  return pass(
    async (page) => {
      let data = '';
      for (const p of page.items) {
        const title = copyField(p.title);
        for (const k of p.skus)
          data += `${copyField(k.sku_code)}\t${p.id}\t${k.id}\t${copyField(k.price_amount)}\t${k.stock_quantity ?? 0}\t${title}\n`;
      }
      const client = await db.connect();
      try {
        await copyIn(client, 'COPY bench_minimal_skus FROM STDIN', data);
      } finally {
        client.release();
      }
    },
    { writeConcurrency: 2, writeBatch: 4 },
  );
}

async function handle(m: {
  id: number;
  cmd: string;
  mode?: 'full' | 'incremental';
  table?: string;
  step?: string;
}): Promise<Record<string, unknown>> {
  switch (m.cmd) {
    case 'floor':
      return floor();
    case 'rowWork':
      return rowWork();
    case 'sync':
      return timedSync(m.mode ?? 'full');
    case 'leastWrite':
      return leastWrite(m.step ?? 'run');
    case 'minimalSync':
      return minimalSync(m.step ?? 'run');
    case 'snapshot':
      await ds.query('DROP TABLE IF EXISTS bench_snapshot');
      await ds.query('CREATE TABLE bench_snapshot AS SELECT sku_code, xmin::text AS x FROM catalog_skus');
      return {};
    case 'rowsWritten': {
      const [r] = (await ds.query(
        `SELECT count(*)::int AS n FROM catalog_skus s LEFT JOIN bench_snapshot b ON b.sku_code = s.sku_code
          WHERE b.x IS DISTINCT FROM s.xmin::text`,
      )) as Array<{ n: number }>;
      return { n: r.n };
    }
    case 'count': {
      if (!/^[a-z_]+$/.test(m.table ?? '')) throw new Error('bad table');
      const [r] = (await ds.query(`SELECT count(*)::int AS n FROM ${m.table}`)) as Array<{ n: number }>;
      return { n: r.n };
    }
    case 'close':
      await ds.query('DROP TABLE IF EXISTS bench_snapshot');
      await relay.close();
      return {};
    default:
      throw new Error(`unknown command ${m.cmd}`);
  }
}

process.on('message', (m: { id: number; cmd: string }) => {
  handle(m).then(
    (answer) => {
      process.send!({ id: m.id, ...answer });
      if (m.cmd === 'close') setImmediate(() => process.exit(0));
    },
    (e: unknown) => process.send!({ id: m.id, error: (e as Error)?.stack ?? String(e) }),
  );
});
process.send!({ type: 'ready', rss: process.memoryUsage.rss() });
