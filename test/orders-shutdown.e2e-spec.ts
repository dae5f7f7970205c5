/**
 * Shutting down while the poller waits on an upstream read: the read ends at once (it is only a
 * read), the poll lease is given back for the next replica, and the service does not wait for the
 * upstream's answer or its own timeout.
 */
import type { SandboxServer } from '../src/sandbox/sandbox.server.js';
import type { SandboxRequestEvent } from '../src/sandbox/sandbox.types.js';
import { seedCatalog, waitFor } from './support/child-app.js';
import { openTestDatabase, startSandbox, startTestApp, type TestApp, type TestDatabase } from './support/test-app.js';

describe('orders: shutdown during a poll', () => {
  let db: TestDatabase;
  let sandbox: SandboxServer;
  let app: TestApp | null = null;

  beforeAll(async () => {
    db = await openTestDatabase();
    // orders stay pending: every poll reads them again
    sandbox = await startSandbox({ catalog: { products: 2 }, timetable: { paidMs: 600_000, fulfillingMs: 600_000, deliveredMs: 600_000, completedMs: null } });
    sandbox.catalog.addProduct({ skus: [{ skuCode: 'SD-1', price: '1.00' }] });
  });
  afterAll(async () => {
    await app?.close();
    await sandbox?.stop();
    await db?.close();
  });

  it('ends the read in flight and gives the lease back', async () => {
    app = await startTestApp(db, sandbox, { ORDER_POLL_BASE_MS: '50', ORDER_POLL_MAX_MS: '100', UPSTREAM_TIMEOUT_MS: '60000' });
    await seedCatalog(app.http);
    const placed = await app.http.post('/internal/orders', { shop_order_no: 'SD-ORDER', sku_code: 'SD-1', quantity: 1 });
    expect(placed.status).toBe(201);

    let pollsSeen = 0;
    sandbox.events.on('request', (e: SandboxRequestEvent) => {
      if (e.operation === 'getOrder' && e.phase === 'received') pollsSeen++;
    });
    sandbox.faults.set({ rules: [{ operation: 'getOrder', kind: 'hang_before' }] }); // never answers
    await waitFor(
      async () => pollsSeen,
      (n) => n > 0,
      'a poll reaching the upstream',
    );
    const [{ leased }] = await db.query<{ leased: boolean }>("SELECT poll_lease_until IS NOT NULL AS leased FROM orders WHERE shop_order_no = 'SD-ORDER'");
    expect(leased).toBe(true);

    const started = Date.now();
    await app.close();
    app = null;
    expect(Date.now() - started).toBeLessThan(10_000); // the read would hang until the 60 s timeout
    const [after] = await db.query<{ leased: boolean; status: string }>("SELECT poll_lease_until IS NOT NULL AS leased, status FROM orders WHERE shop_order_no = 'SD-ORDER'");
    expect(after).toEqual({ leased: false, status: expect.any(String) });
    sandbox.faults.reset();
    sandbox.events.removeAllListeners('request');
  });
});
