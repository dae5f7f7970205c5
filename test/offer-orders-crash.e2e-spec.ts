/**
 * An offer order's failover survives a crash (CONTRACT §11): the first source refuses the create, the
 * relay records the refusal and reserves the next source's attempt in one transaction, and is killed
 * (SIGKILL) before the second source's create goes out (its price read hangs). After a restart the
 * reserved attempt is taken up by the queue: the order is placed at the second supplier exactly once,
 * and nothing at the first. With a third source, the second's reserved attempt that the queue sends
 * after the restart is refused too: the queue moves the order on to the third, placed there exactly once.
 */
import type { SandboxServer } from '../src/sandbox/sandbox.server.js';
import { seedCatalog, startRelayChild, waitFor, type RelayChild } from './support/child-app.js';
import { registerTestSupplier, supplierCredentials } from './support/suppliers.js';
import { openTestDatabase, startSandbox, startTestApp, type TestDatabase } from './support/test-app.js';

describe('an offer order killed between the refusal and the next create', () => {
  let db: TestDatabase;
  let main: SandboxServer;
  let second: SandboxServer;
  let third: SandboxServer;
  let child: RelayChild | null = null;
  let key = '';

  beforeAll(async () => {
    db = await openTestDatabase();
    main = await startSandbox();
    second = await startSandbox({ ...supplierCredentials('second') });
    third = await startSandbox({ ...supplierCredentials('third') });
    // set up in-process: the second supplier, both catalogs, the offer
    const app = await startTestApp(db, main, {});
    try {
      await registerTestSupplier([app], 'second', second);
      await registerTestSupplier([app], 'third', third);
      await seedCatalog(app.http);
      for (const supplier of ['second', 'third']) {
        const started = await app.http.post('/internal/catalog/sync', { mode: 'full', supplier });
        const runId = (started.data as { run_id: string }).run_id;
        await waitFor(
          async () => ((await app.http.get(`/internal/catalog/sync-runs/${runId}`)).data as { run: { status: string } }).run.status,
          (s) => s !== 'running',
          `the ${supplier} sync`,
          60_000,
        );
      }
      const product = main.catalog.listedProducts().find((p) => p.fulfillment_type !== 'manual')!;
      key = `${product.id}:${product.skus.find((s) => s.stock_status !== 'out_of_stock')!.sku_code}`;
      const sources = [
        { supplier: 'main', sku_key: key },
        { supplier: 'second', sku_key: key },
      ];
      const put = await app.http.put('/internal/offers/OFF-CRASH', { routing: 'priority', sources });
      expect(put.status).toBeLessThan(300);
      const three = await app.http.put('/internal/offers/OFF-CRASH3', {
        routing: 'priority',
        sources: [...sources, { supplier: 'third', sku_key: key }],
      });
      expect(three.status).toBeLessThan(300);
    } finally {
      await app.close();
    }
  }, 120_000);

  afterAll(async () => {
    await child?.kill('SIGKILL');
    await main?.stop();
    await second?.stop();
    await third?.stop();
    await db?.close();
  });

  it('goes on at the second supplier after the restart, placed there exactly once', async () => {
    // (the hung read is not given up before the kill)
    child = await startRelayChild({ databaseUrl: db.url, sandbox: main, env: { UPSTREAM_TIMEOUT_MS: '60000' } });
    main.faults.set({ rules: [{ kind: 'coded_error', operation: 'createOrder', status: 409, errorCode: 'insufficient_stock', times: 1 }] });
    // the second source's price read never answers: the relay is stuck after the refusal's commit
    second.faults.set({ rules: [{ kind: 'hang_before', operation: 'product' }] });
    const shopNo = 'CRASH-1';
    void child.http.post('/internal/orders', { shop_order_no: shopNo, offer: 'OFF-CRASH', quantity: 1 }).catch(() => undefined);
    const reserved = await waitFor(
      async () =>
        db.query<{ status: string; supplier: string; attempt: number }>(
          'SELECT status, supplier, attempt FROM orders WHERE shop_order_no = $1',
          [shopNo],
        ),
      (rows) => rows.length === 1 && rows[0].attempt === 2,
      'the second attempt reserved',
    );
    expect(reserved[0]).toMatchObject({ status: 'queued', supplier: 'second' });
    await waitFor(
      () => second.stats.totalRequests,
      () => second.orders().length === 0 && main.stats.createsReceived === 1,
      'the refusal',
    );
    await child.kill('SIGKILL');
    child = null;
    expect(second.stats.createsReceived).toBe(0);
    second.faults.reset();

    child = await startRelayChild({ databaseUrl: db.url, sandbox: main });
    const order = await waitFor(
      async () =>
        (await child!.http.get(`/internal/orders/${shopNo}`)).data as { order: { status: string; supplier: string; route: unknown[] } },
      (r) => r.order.status !== 'queued' && r.order.status !== 'submitting',
      'the order placed after the restart',
      60_000,
    );
    expect(order.order).toMatchObject({ supplier: 'second' });
    expect(order.order.route).toEqual([
      expect.objectContaining({ attempt: 1, supplier: 'main', outcome: 'rejected', error_code: 'insufficient_stock' }),
      expect.objectContaining({ attempt: 2, supplier: 'second', outcome: 'accepted' }),
    ]);
    expect(second.orders().map((o) => o.downstream_order_no)).toEqual([`${shopNo}-2`]);
    expect(main.orders().filter((o) => o.downstream_order_no?.startsWith(shopNo))).toEqual([]);
    expect(second.stats.createsReceived).toBe(1);
  }, 120_000);

  it("after the restart the queue sends the second's reserved attempt, refused: the order goes on to the third, placed once", async () => {
    await child?.kill('SIGKILL');
    child = await startRelayChild({ databaseUrl: db.url, sandbox: main, env: { UPSTREAM_TIMEOUT_MS: '60000' } });
    const creates = () => [main.stats.createsReceived, second.stats.createsReceived, third.stats.createsReceived];
    const before = creates();
    main.faults.set({ rules: [{ kind: 'coded_error', operation: 'createOrder', status: 409, errorCode: 'insufficient_stock', times: 1 }] });
    second.faults.set({ rules: [{ kind: 'hang_before', operation: 'product' }] });
    const shopNo = 'CRASH-2';
    void child.http.post('/internal/orders', { shop_order_no: shopNo, offer: 'OFF-CRASH3', quantity: 1 }).catch(() => undefined);
    await waitFor(
      async () =>
        db.query<{ status: string; supplier: string; attempt: number }>(
          'SELECT status, supplier, attempt FROM orders WHERE shop_order_no = $1',
          [shopNo],
        ),
      (rows) => rows.length === 1 && rows[0].attempt === 2 && rows[0].status === 'queued',
      'the second attempt reserved',
    );
    await waitFor(
      () => main.stats.createsReceived,
      (n) => n === before[0] + 1,
      'the refusal at the first',
    );
    await child.kill('SIGKILL');
    child = null;
    // after the restart the second refuses the create the queue sends
    second.faults.set({
      rules: [{ kind: 'coded_error', operation: 'createOrder', status: 409, errorCode: 'insufficient_stock', times: 1 }],
    });
    child = await startRelayChild({ databaseUrl: db.url, sandbox: main });
    const order = await waitFor(
      async () =>
        (await child!.http.get(`/internal/orders/${shopNo}`)).data as {
          order: { status: string; supplier: string; attempt: number; route: unknown[] };
        },
      (r) => r.order.status !== 'queued' && r.order.status !== 'submitting',
      'the order placed after the restart',
      60_000,
    );
    expect(order.order).toMatchObject({ supplier: 'third', attempt: 3 });
    expect(order.order.route).toEqual([
      expect.objectContaining({ attempt: 1, supplier: 'main', outcome: 'rejected', error_code: 'insufficient_stock' }),
      expect.objectContaining({ attempt: 2, supplier: 'second', outcome: 'rejected', error_code: 'insufficient_stock' }),
      expect.objectContaining({ attempt: 3, supplier: 'third', outcome: 'accepted' }),
    ]);
    expect(creates()).toEqual([before[0] + 1, before[1] + 1, before[2] + 1]);
    const held = (s: SandboxServer) =>
      s
        .orders()
        .filter((o) => o.downstream_order_no?.startsWith(shopNo))
        .map((o) => o.downstream_order_no);
    expect([held(main), held(second), held(third)]).toEqual([[], [], [`${shopNo}-3`]]);
  }, 120_000);
});
