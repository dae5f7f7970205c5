/**
 * Polling at several suppliers (CONTRACT §10: a blocked supplier never slows another): with callbacks
 * off, orders are followed by the poller alone; while the second supplier's key is blocked (its 429
 * with a long Retry-After), the reads of its orders fail at once instead of waiting through the block
 * in the poller's pass, and an order at the env supplier is polled to delivery meanwhile.
 */
import { CatalogWriter } from '../src/catalog/catalog-writer.service.js';
import { SupplierRegistry } from '../src/suppliers/supplier-registry.service.js';
import { useAppSuite } from './support/app-suite.js';
import { getOrder, waitForOrder, type OrderView } from './support/child-app.js';
import { waitFor } from './support/wait.js';

describe('polling at several suppliers', () => {
  const t = useAppSuite({
    sandbox: { catalog: { products: 2 }, timetable: { paidMs: 30, fulfillingMs: 60, deliveredMs: 100, completedMs: null } },
    prepare: (s) => s.catalog.addProduct({ skus: [{ skuCode: 'POLL-MAIN', price: '2.00' }] }),
    env: { ORDER_POLL_BASE_MS: '50', ORDER_POLL_MAX_MS: '200', UPSTREAM_TIMEOUT_MS: '2000' },
    seed: true,
    // the second supplier's orders stop at paid: the poller keeps reading them
    suppliers: {
      second: {
        sandbox: { catalog: { products: 5 }, timetable: { paidMs: 30, fulfillingMs: null, deliveredMs: null, completedMs: null } },
      },
    },
  });

  it("delivers an order at the env supplier by polling while the second supplier's key is blocked", async () => {
    const second = t.supplier('second');
    // product 6 of the second supplier (the env supplier's catalog has 1 to 3), stored as its own
    const p = second.catalog.addProduct({ skus: [{ skuCode: 'POLL-SECOND', price: '3.00' }] });
    const product = await t.app.relay.app.get(SupplierRegistry).get('second').client.getProduct(p.id);
    await t.app.relay.app.get(CatalogWriter).applyFreshProduct(product, { supplier: 'second', runId: null, source: 'refresh' });

    const slow = await t.app.http.post('/internal/orders', { shop_order_no: 'PS-1', sku_code: 'POLL-SECOND', quantity: 1 });
    expect((slow.data as { order: OrderView }).order.supplier).toBe('second');
    await waitForOrder(t.app.http, 'PS-1', (o) => o.status === 'paid');
    // its key is blocked for a minute from its next read on
    second.faults.set({ rules: [{ kind: 'rate_limit', operation: 'getOrder', retryAfterS: 60 }] });
    await waitFor(
      () => second.stats.faultsApplied,
      (n) => n >= 1,
      "a 429 on the second supplier's poll",
    );
    const placed = await t.app.http.post('/internal/orders', { shop_order_no: 'PM-1', sku_code: 'POLL-MAIN', quantity: 1 });
    expect(placed.status).toBe(201);
    await waitForOrder(t.app.http, 'PM-1', (o) => o.status === 'delivered' && o.items.length > 0);
    // the blocked supplier was not read again during its block, and its order is still followed
    expect(second.stats.faultsApplied).toBe(1);
    expect((await getOrder(t.app.http, 'PS-1'))?.status).toBe('paid');
  });
});
