/**
 * `npm run bench:media`: what mirroring product images costs a sync. A sandbox upstream of
 * BENCH_PRODUCTS (5,000) products with one image each (half of them show it again in their content:
 * the same URL, one download), served by the sandbox itself on loopback; the relay on PostgreSQL
 * (BENCH_DATABASE_URL, default postgres://postgres@127.0.0.1:5432/test: a fresh database per run, dropped
 * at the end). Both run in this process (the sandbox's image answers take CPU from the relay's).
 *
 * Measured in the same run, each on its own fresh database:
 *   - a first full sync with MEDIA_MIRROR=false (the floor) and with mirroring on: time, and the ratio;
 *   - the media pass's own time, the images fetched and their bytes;
 *   - the database's growth over each first sync (pg_database_size), and the difference;
 *   - a re-sync with no change, mirroring on: images fetched (target 0) and time ÷ the first sync's floor.
 * Last line: BENCH_SUMMARY (see bench/run-all.ts).
 */
import pg from 'pg';
import { createRelayApp, type RelayApp } from '../src/app.factory.js';
import { CatalogSyncService } from '../src/catalog/catalog-sync.service.js';
import { loadConfig } from '../src/config/app-config.js';
import { SandboxServer } from '../src/sandbox/sandbox.server.js';
import { printBenchSummary, type BenchRow } from './run-all.js';

const PRODUCTS = Number(process.env.BENCH_PRODUCTS ?? 5_000);
const SERVER_URL = process.env.BENCH_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test';
const MB = 1024 * 1024;

function withDatabase(url: string, name: string): string {
  const u = new URL(url);
  u.pathname = `/${name}`;
  return u.toString();
}

async function admin<T>(fn: (c: pg.Client) => Promise<T>): Promise<T> {
  const c = new pg.Client({ connectionString: SERVER_URL });
  await c.connect();
  try {
    return await fn(c);
  } finally {
    await c.end();
  }
}

const databaseSize = (db: string) =>
  admin(async (c) => Number((await c.query<{ n: string }>('SELECT pg_database_size($1)::text AS n', [db])).rows[0].n));

interface SyncFigures {
  ms: number;
  imagesFetched: number;
  imageBytes: number;
  mediaMs: number;
  status: string;
}

async function startRelay(sandbox: SandboxServer, db: string, mirror: boolean): Promise<RelayApp> {
  const config = loadConfig({
    NODE_ENV: 'test',
    PORT: '0',
    HOST: '127.0.0.1',
    LOG_LEVEL: 'silent',
    DATABASE_URL: withDatabase(SERVER_URL, db),
    DB_MIGRATE_ON_START: 'true',
    UPSTREAM_BASE_URL: sandbox.baseUrl,
    UPSTREAM_API_KEY: sandbox.config.apiKey,
    UPSTREAM_API_SECRET: sandbox.config.apiSecret,
    INTERNAL_API_TOKEN: 'bench-token',
    PAYLOAD_ENCRYPTION_KEY: Buffer.alloc(32, 7).toString('base64'),
    SYNC_CRON: 'off',
    SYNC_ON_START: 'false',
    UPSTREAM_RATE_LIMIT: 'off',
    RETENTION_DAYS: 'off',
    MEDIA_MIRROR: String(mirror),
  });
  return createRelayApp(config, { logger: false });
}

async function sync(relay: RelayApp): Promise<SyncFigures> {
  const started = performance.now();
  const run = await relay.app.get(CatalogSyncService).runSync({ mode: 'full' });
  const ms = performance.now() - started;
  return { ms, imagesFetched: run.images_fetched, imageBytes: Number(run.image_bytes), mediaMs: run.media_ms, status: run.status };
}

/** A first sync on a fresh database, then (`resync`) one with no change. */
async function measure(sandbox: SandboxServer, mirror: boolean, resync: boolean) {
  const db = `relay_media_bench_${process.pid}_${mirror ? 'on' : 'off'}`;
  await admin((c) => c.query(`CREATE DATABASE "${db}"`));
  try {
    const relay = await startRelay(sandbox, db, mirror);
    try {
      const before = await databaseSize(db);
      sandbox.media.resetStats();
      const first = await sync(relay);
      const growth = (await databaseSize(db)) - before;
      const imageRequests = sandbox.media.stats.requests;
      sandbox.media.resetStats();
      const again = resync ? await sync(relay) : null;
      return { first, growth, imageRequests, again, againRequests: sandbox.media.stats.requests };
    } finally {
      await relay.close();
    }
  } finally {
    await admin((c) => c.query(`DROP DATABASE IF EXISTS "${db}" WITH (FORCE)`));
  }
}

async function main(): Promise<void> {
  const sandbox = new SandboxServer({ catalog: { products: PRODUCTS, seed: 7 }, allowPrivateCallbackUrls: true });
  await sandbox.start(0, '127.0.0.1');
  try {
    console.log(`media bench: ${PRODUCTS} products, one image each, PostgreSQL ${new URL(SERVER_URL).host}`);
    const off = await measure(sandbox, false, false);
    console.log(`mirroring off: first sync ${(off.first.ms / 1000).toFixed(2)} s, database +${(off.growth / MB).toFixed(1)} MB`);
    const on = await measure(sandbox, true, true);
    const ratio = on.first.ms / off.first.ms;
    console.log(
      `mirroring on: first sync ${(on.first.ms / 1000).toFixed(2)} s (${ratio.toFixed(2)}× mirroring off), media pass ` +
        `${(on.first.mediaMs / 1000).toFixed(2)} s, ` +
        (`${on.first.imagesFetched} images fetched (${(on.first.imageBytes / MB).toFixed(1)} MB; ${on.imageRequests} ` +
          `requests), database +${(on.growth / MB).toFixed(1)} MB`),
    );
    console.log(
      `re-sync, no change: ${on.again!.imagesFetched} images fetched (${on.againRequests} requests), ${(on.again!.ms / 1000).toFixed(2)} s`,
    );
    const rows: Array<Omit<BenchRow, 'bench'>> = [
      { figure: `first sync of ${PRODUCTS} products, mirroring off`, value: Number((off.first.ms / 1000).toFixed(2)), unit: 's' },
      {
        figure: `first sync of ${PRODUCTS} products with one image each, mirroring on`,
        value: Number((on.first.ms / 1000).toFixed(2)),
        unit: 's',
      },
      { figure: 'first sync, mirroring on ÷ off', value: Number(ratio.toFixed(2)), unit: '×' },
      {
        figure: 'media pass of the first sync',
        value: Number((on.first.mediaMs / 1000).toFixed(2)),
        unit: 's',
        note: `${on.first.imagesFetched} images, ${(on.first.imageBytes / MB).toFixed(1)} MB`,
      },
      { figure: 'database growth over the first sync, mirroring off', value: Number((off.growth / MB).toFixed(1)), unit: 'MB' },
      { figure: 'database growth over the first sync, mirroring on', value: Number((on.growth / MB).toFixed(1)), unit: 'MB' },
      { figure: 're-sync with no change: images fetched', value: on.again!.imagesFetched, unit: 'images', target: '0' },
      {
        figure: 're-sync with no change ÷ first sync with mirroring off',
        value: Number((on.again!.ms / off.first.ms).toFixed(2)),
        unit: '×',
      },
    ];
    if (off.first.status !== 'succeeded' || on.first.status !== 'succeeded')
      console.log(`a sync did not succeed: off ${off.first.status}, on ${on.first.status}`);
    printBenchSummary('media', rows);
  } finally {
    await sandbox.stop();
  }
}

await main();
