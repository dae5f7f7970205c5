/**
 * The sweep of attempts left `submitting` keeps its pace while the poller is busy: CONTRACT §5 gives
 * 2 × UPSTREAM_TIMEOUT_MS for such an attempt to become `submit_unknown`, and a pass of polls against
 * an upstream that answers slowly (but within the timeout) may take many seconds. The sweep therefore
 * runs on its own timer, never only at the start of a pass, where it would wait behind the slow reads.
 */
import type { SandboxServer } from '../src/sandbox/sandbox.server.js';
import { OrderRepository } from '../src/orders/order.repository.js';
import { seedCatalog, sleep } from './support/child-app.js';
import { openTestDatabase, startSandbox, startTestApp, type TestApp, type TestDatabase } from './support/test-app.js';
import { reserveOrder } from './support/reserved-order.js';

const TIMEOUT_MS = 1000;

describe('order poller: the sweep of stale attempts is not held up by slow polls', () => {
  let db: TestDatabase;
  let sandbox: SandboxServer;
  let app: TestApp;
  beforeAll(async () => {
    db = await openTestDatabase();
    // orders stay `paid`: every one of them is polled again and again
    sandbox = await startSandbox({ catalog: { products: 2 }, timetable: { paidMs: 50, fulfillingMs: 3_600_000, deliveredMs: 3_600_000, completedMs: 3_600_000 } });
    sandbox.catalog.addProduct({ skus: [{ skuCode: 'X-SLOW', price: '1.00' }] });
    app = await startTestApp(db, sandbox, { UPSTREAM_TIMEOUT_MS: String(TIMEOUT_MS), ORDER_POLL_BASE_MS: '50', ORDER_POLL_MAX_MS: '100' });
    await seedCatalog(app.http);
  });
  afterAll(async () => {
    await app?.close();
    await sandbox?.stop();
    await db?.close();
  });

  it('an attempt whose sender died becomes submit_unknown within 2 × UPSTREAM_TIMEOUT_MS while a pass of slow reads runs', async () => {
    for (let i = 0; i < 60; i++) {
      const r = await app.http.post('/internal/orders', { shop_order_no: `SLOW-${i}`, sku_code: 'X-SLOW', quantity: 1 });
      expect(r.status).toBe(201);
    }
    // reads answer within the timeout, slowly: a pass over 60 due orders, 8 at a time, takes ~7 s
    sandbox.faults.set({ rules: [{ operation: 'getOrder', kind: 'delay', delayMs: 900 }] });
    await sleep(1500);
    // an attempt in flight whose sender "died", its lease ending in 100 ms
    const created = await reserveOrder(app.relay.app.get(OrderRepository), 'CRASHED-1', 100);
    const t0 = Date.now();
    let status = 'submitting';
    while (status === 'submitting' && Date.now() - t0 < 30_000) {
      await sleep(25);
      status = (await db.query<{ status: string }>('SELECT status FROM orders WHERE id = $1', [created.order.id]))[0].status;
    }
    expect(status).toBe('submit_unknown');
    expect(Date.now() - t0).toBeLessThanOrEqual(2 * TIMEOUT_MS);
  });
});
