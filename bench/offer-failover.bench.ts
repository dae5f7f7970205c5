/**
 * `node --no-warnings --import @swc-node/register/esm-register bench/offer-failover.bench.ts` (or
 * `npm run bench -- offer-failover`): an order through an offer whose first source refuses the create
 * (`insufficient_stock`) and is placed at the second, against a direct order at the second supplier:
 * the time from the request to its answer (placed), p50 and p99 over BENCH_ORDERS orders each (default
 * 200), one at a time, and the upstream requests each failed-over order spent. In-process relay on a
 * test database (PGlite, or TEST_DATABASE_URL), two sandboxes with the same seeded catalog.
 */
import { performance } from 'node:perf_hooks';
import { seedCatalog, waitFor } from '../test/support/child-app.js';
import { registerTestSupplier, supplierCredentials } from '../test/support/suppliers.js';
import { openTestDatabase, startSandbox, startTestApp } from '../test/support/test-app.js';
import { printBenchSummary } from './run-all.js';

const ORDERS = Number(process.env.BENCH_ORDERS ?? 200);

const pct = (xs: number[], p: number) => {
  const s = [...xs].sort((a, b) => a - b);
  return Math.round(s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))] * 100) / 100;
};

async function main(): Promise<void> {
  const db = await openTestDatabase();
  const first = await startSandbox({ catalog: { products: 3 } });
  const second = await startSandbox({ ...supplierCredentials('second'), catalog: { products: 3 } });
  const app = await startTestApp(db, first, {});
  try {
    await registerTestSupplier([app], 'second', second);
    await seedCatalog(app.http);
    const started = await app.http.post('/internal/catalog/sync', { mode: 'full', supplier: 'second' });
    const runId = (started.data as { run_id: string }).run_id;
    await waitFor(
      async () => ((await app.http.get(`/internal/catalog/sync-runs/${runId}`)).data as { run: { status: string } }).run.status,
      (s) => s !== 'running',
      'the second sync',
      60_000,
    );
    const product = first.catalog.listedProducts().find((p) => p.fulfillment_type !== 'manual')!;
    const sku = product.skus.find((s) => s.stock_status !== 'out_of_stock')!;
    first.catalog.setStock(sku.sku_code, 'in_stock', 1_000_000);
    second.catalog.setStock(sku.sku_code, 'in_stock', 1_000_000);
    const key = `${product.id}:${sku.sku_code}`;
    const sources = [
      { supplier: 'main', sku_key: key },
      { supplier: 'second', sku_key: key },
    ];
    await app.http.put('/internal/offers/BENCH', { routing: 'priority', sources });
    first.faults.set({ rules: [{ kind: 'coded_error', operation: 'createOrder', status: 409, errorCode: 'insufficient_stock' }] });
    const direct: number[] = [];
    const failover: number[] = [];
    // the order path's requests: the price guard's product reads and the creates (not the poller's reads)
    const spent = () =>
      first.stats.requests.product + first.stats.requests.createOrder + second.stats.requests.product + second.stats.requests.createOrder;
    const before = spent();
    for (let i = 0; i < ORDERS; i++) {
      let t0 = performance.now();
      const a = await app.http.post('/internal/orders', { shop_order_no: `BF-${i}`, offer: 'BENCH', quantity: 1 });
      failover.push(performance.now() - t0);
      if (a.status !== 201 || (a.data as { order: { supplier: string } }).order.supplier !== 'second')
        throw new Error(`failover ${a.status}`);
      t0 = performance.now();
      const b = await app.http.post('/internal/orders', { shop_order_no: `BD-${i}`, sku_code: key, supplier: 'second', quantity: 1 });
      direct.push(performance.now() - t0);
      if (b.status !== 201) throw new Error(`direct ${b.status}`);
    }
    // the direct orders spent a product read and a create each at the second
    const perFailover = (spent() - before - 2 * ORDERS) / ORDERS;
    console.log({
      failover: { p50: pct(failover, 50), p99: pct(failover, 99) },
      direct: { p50: pct(direct, 50), p99: pct(direct, 99) },
      perFailover,
    });
    printBenchSummary('offer-failover', [
      { bench: 'offer-failover', figure: 'failed-over order, p50', value: pct(failover, 50), unit: 'ms' },
      { bench: 'offer-failover', figure: 'failed-over order, p99', value: pct(failover, 99), unit: 'ms' },
      { bench: 'offer-failover', figure: 'direct order at the second, p50', value: pct(direct, 50), unit: 'ms' },
      { bench: 'offer-failover', figure: 'direct order at the second, p99', value: pct(direct, 99), unit: 'ms' },
      { bench: 'offer-failover', figure: 'upstream requests per failed-over order', value: perFailover, unit: 'requests' },
    ]);
  } finally {
    await app.close();
    await first.stop();
    await second.stop();
    await db.close();
  }
}

await main();
