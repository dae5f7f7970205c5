/**
 * Shutting down while the poller or the callback processor waits on an upstream read: the read ends
 * at once (it is only a read), the poll lease or the claimed callback is given back for the next start
 * or replica, and the service does not wait for the upstream's answer or its own timeout.
 */
import type { SandboxServer } from '../src/sandbox/sandbox.server.js';
import type { SandboxRequestEvent } from '../src/sandbox/sandbox.types.js';
import { callbackHeaders, seedCatalog, waitFor } from './support/child-app.js';
import { openTestDatabase, startSandbox, startTestApp, type TestApp, type TestDatabase } from './support/test-app.js';
import { settlesWithin } from './support/wait.js';

/** UPSTREAM_TIMEOUT_MS of the instances under test: a hung read ends by itself only after it. */
const TIMEOUT_MS = 60_000;
/** How long a shutdown may take before the test calls it waiting: far beyond a shutdown's own work, well short of TIMEOUT_MS. */
const CLOSE_RACE_MS = 20_000;

describe('orders: shutdown during a poll', () => {
  let db: TestDatabase;
  let sandbox: SandboxServer;
  let app: TestApp | null = null;

  beforeAll(async () => {
    db = await openTestDatabase();
    // orders stay pending: every poll reads them again
    sandbox = await startSandbox({
      catalog: { products: 2 },
      timetable: { paidMs: 600_000, fulfillingMs: 600_000, deliveredMs: 600_000, completedMs: null },
    });
    sandbox.catalog.addProduct({ skus: [{ skuCode: 'SD-1', price: '1.00' }] });
  });
  afterEach(() => {
    sandbox.faults.reset();
    sandbox.events.removeAllListeners('request');
  });
  afterAll(async () => {
    await app?.close();
    await sandbox?.stop();
    await db?.close();
  });

  it('ends the read in flight and gives the lease back', async () => {
    app = await startTestApp(db, sandbox, { ORDER_POLL_BASE_MS: '50', ORDER_POLL_MAX_MS: '100', UPSTREAM_TIMEOUT_MS: String(TIMEOUT_MS) });
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
    const [{ leased }] = await db.query<{ leased: boolean }>(
      "SELECT poll_lease_until IS NOT NULL AS leased FROM orders WHERE shop_order_no = 'SD-ORDER'",
    );
    expect(leased).toBe(true);

    // the upstream never answers and the read's own timeout is a minute: a close that waited for the
    // read would still be waiting when the race ends
    await settlesWithin(app.close(), CLOSE_RACE_MS, 'the shutdown, while a read hangs');
    app = null;
    const [after] = await db.query<{ leased: boolean; status: string }>(
      "SELECT poll_lease_until IS NOT NULL AS leased, status FROM orders WHERE shop_order_no = 'SD-ORDER'",
    );
    expect(after).toEqual({ leased: false, status: expect.any(String) });
  });

  it("ends a callback's read in flight and gives the callback back, to be applied after the restart", async () => {
    // polls far apart: the callback processor is the one reading
    const env = { ORDER_POLL_BASE_MS: '600000', ORDER_POLL_MAX_MS: '600000', UPSTREAM_TIMEOUT_MS: String(TIMEOUT_MS) };
    app = await startTestApp(db, sandbox, env);
    await seedCatalog(app.http);
    const placed = await app.http.post('/internal/orders', { shop_order_no: 'SD-CALLBACK', sku_code: 'SD-1', quantity: 1 });
    expect(placed.status).toBe(201);
    const upstreamId = (placed.data as { order: { upstream_order_id: number } }).order.upstream_order_id;
    // a delivering state without its fulfillment: its callback is read at once (under
    // CALLBACK_TRUST=verified every other claim here would be applied with no read)
    sandbox.setOrderStatus(upstreamId, 'delivered');

    let readsSeen = 0;
    sandbox.events.on('request', (e: SandboxRequestEvent) => {
      if (e.operation === 'getOrder' && e.phase === 'received') readsSeen++;
    });
    sandbox.faults.set({ rules: [{ operation: 'getOrder', kind: 'hang_before' }] });
    const body = JSON.stringify({
      event: 'order.fulfilled',
      order_id: upstreamId,
      status: 'delivered',
      timestamp: Math.floor(Date.now() / 1000),
    });
    const cb = await app.http.post('/callbacks/upstream', body, { headers: callbackHeaders(body), transformRequest: [(d: unknown) => d] });
    expect(cb.status).toBe(200);
    await waitFor(
      async () => readsSeen,
      (n) => n > 0,
      "the callback's read reaching the upstream",
    );

    // the upstream never answers and the read's own timeout is a minute: a close that waited for the
    // read would still be waiting when the race ends
    await settlesWithin(app.close(), CLOSE_RACE_MS, 'the shutdown, while a read hangs');
    app = null;
    const inbox = async () =>
      db.query<{ state: string; tries: number }>('SELECT state, tries FROM callback_inbox WHERE upstream_order_id = $1', [upstreamId]);
    expect(await inbox()).toEqual([{ state: 'pending', tries: 0 }]); // not read_failed: nothing was learnt
    const [{ status }] = await db.query<{ status: string }>("SELECT status FROM orders WHERE shop_order_no = 'SD-CALLBACK'");
    expect(status).toBe('pending_payment');

    sandbox.faults.reset();
    app = await startTestApp(db, sandbox, env);
    await waitFor(inbox, (rows) => rows[0]?.state === 'applied', 'the callback applied after the restart');
    const [again] = await db.query<{ status: string }>("SELECT status FROM orders WHERE shop_order_no = 'SD-CALLBACK'");
    expect(again.status).toBe('delivered');
  });
});
