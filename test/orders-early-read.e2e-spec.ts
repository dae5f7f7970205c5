/**
 * The price guard's fresh `GET /products/{id}` is started beside the local SKU read when the service
 * already knows the SKU's product from an earlier order (OrderRelayService.placeOrReplay). That read
 * is only a head start: its product must be the one the local read names, and its answer (an error
 * included) counts only once the local checks have passed.
 */
import { performance } from 'node:perf_hooks';
import { jest } from '@jest/globals';
import pg from 'pg';
import { CatalogService } from '../src/catalog/catalog.service.js';
import { useAppSuite } from './support/app-suite.js';
import { getOrder, seedCatalog, type OrderView } from './support/child-app.js';
import { waitFor } from './support/wait.js';

describe('orders: the product read started beside the local read', () => {
  const t = useAppSuite({
    sandbox: { catalog: { products: 1 }, timetable: { paidMs: null } },
    prepare: (sandbox) => {
      sandbox.catalog.addProduct({
        skus: [
          { skuCode: 'E-MOVE', price: '5.00' },
          { skuCode: 'E-STAY', price: '5.00' },
        ],
      });
      sandbox.catalog.addProduct({ skus: [{ skuCode: 'E-GONE', price: '5.00' }] });
      sandbox.catalog.addProduct({ skus: [{ skuCode: 'E-DOWN', price: '5.00' }] });
      sandbox.catalog.addProduct({ skus: [{ skuCode: 'E-WITHDRAWN', price: '5.00' }] });
    },
    env: { ORDER_POLL_BASE_MS: '60000', UPSTREAM_TIMEOUT_MS: '2000' },
    seed: true,
  });
  let n = 0;
  const no = (tag: string) => `EARLY-${tag}-${++n}`;
  const place = (shopNo: string, skuCode: string) =>
    t.app.http.post('/internal/orders', { shop_order_no: shopNo, sku_code: skuCode, quantity: 1 });
  const productReads = () => t.sandbox.stats.requests.product;

  it("a SKU moved to another product (synced): its old product's read is unused; the order goes with the new one's sku_id", async () => {
    expect((await place(no('MOVE'), 'E-MOVE')).status).toBe(201); // the service now knows E-MOVE's product
    const before = t.sandbox.catalog.getSku('E-MOVE')!;
    t.sandbox.catalog.removeSku('E-MOVE');
    const moved = t.sandbox.catalog.addProduct({ skus: [{ skuCode: 'E-MOVE', price: '5.00' }] });
    await seedCatalog(t.app.http);
    const reads = productReads();

    const shopNo = no('MOVE');
    const r = await place(shopNo, 'E-MOVE');
    expect(r.status).toBe(201);
    const order = (r.data as { order: OrderView }).order;
    expect(moved.id).not.toBe(before.product.id);
    expect(t.sandbox.order(order.upstream_order_id as number)).toMatchObject({ downstream_order_no: shopNo, sku_id: moved.skus[0].id });
    // the head start (the old product) and the read of the product the local read named
    expect(productReads() - reads).toBe(2);

    // from now on the head start is the new product: one read an order
    const next = productReads();
    expect((await place(no('MOVE'), 'E-MOVE')).status).toBe(201);
    expect(productReads() - next).toBe(1);
  });

  it('a head start that answered long before the local read did (the read waited for a lock) is read again', async () => {
    expect((await place(no('SLOW'), 'E-STAY')).status).toBe(201);
    const reads = productReads();
    // when the head start's answer settled, as the service notes it (performance.now())
    const catalog = t.app.relay.app.get(CatalogService);
    const readProduct = catalog.readProduct.bind(catalog);
    let settledAt: number | null = null;
    const spy = jest.spyOn(catalog, 'readProduct').mockImplementationOnce(async (...args) => {
      const answer = await readProduct(...args);
      settledAt = answer.settledAt;
      return answer;
    });
    const locker = new pg.Client({ connectionString: t.db.url });
    await locker.connect();
    try {
      await locker.query('BEGIN');
      await locker.query('LOCK TABLE catalog_skus IN ACCESS EXCLUSIVE MODE');
      const placing = place(no('SLOW'), 'E-STAY');
      // The head start answers meanwhile; the local read waits for the lock until the answer is older
      // than the service uses (EARLY_READ_MAX_AGE_MS, 250 ms): a wait for that age, the product's own
      // bound, on the clock the service measures it with.
      await waitFor(
        () => settledAt,
        (at) => at !== null && performance.now() - at > 250,
        'the head start answered more than 250 ms ago',
      );
      await locker.query('COMMIT');
      expect((await placing).status).toBe(201);
    } finally {
      spy.mockRestore();
      await locker.end();
    }
    expect(productReads() - reads).toBe(2); // the head start, too old once the checks needed it, and a fresh read
  });

  it('a replay of a number this process recorded makes no product read', async () => {
    const shopNo = no('REPLAY');
    expect((await place(shopNo, 'E-STAY')).status).toBe(201);
    const reads = productReads();
    for (let i = 0; i < 3; i++) {
      const again = await place(shopNo, 'E-STAY');
      expect(again.status).toBe(200);
      expect((again.data as { order: OrderView }).order).toMatchObject({ shop_order_no: shopNo, attempt: 1 });
    }
    expect(productReads() - reads).toBe(0);
  });

  it('a SKU unavailable locally: 409 sku_unavailable even if the read beside it failed; the next request reads nothing', async () => {
    expect((await place(no('GONE'), 'E-GONE')).status).toBe(201);
    t.sandbox.catalog.setStock('E-GONE', 'out_of_stock');
    await seedCatalog(t.app.http);
    t.sandbox.faults.set({ rules: [{ operation: 'product', kind: 'error_before', status: 503 }] });
    const reads = productReads();

    const shopNo = no('GONE');
    const r = await place(shopNo, 'E-GONE');
    expect(r.status).toBe(409);
    expect(r.data).toMatchObject({ ok: false, error_code: 'sku_unavailable' });
    expect(await getOrder(t.app.http, shopNo)).toBeNull();
    expect(productReads() - reads).toBe(1); // the head start, made before the local read said no

    const again = await place(no('GONE'), 'E-GONE');
    expect(again.data).toMatchObject({ ok: false, error_code: 'sku_unavailable' });
    expect(productReads() - reads).toBe(1); // no head start for a SKU last read unavailable
  });

  it('the read beside it finding the product withdrawn: 409 sku_unavailable, the SKU unlisted locally, nothing sent', async () => {
    expect((await place(no('WITHDRAWN'), 'E-WITHDRAWN')).status).toBe(201);
    t.sandbox.catalog.delistProduct(t.sandbox.catalog.getSku('E-WITHDRAWN')!.product.id); // not synced: locally still listed
    const received = t.sandbox.stats.createsReceived;
    const reads = productReads();

    const shopNo = no('WITHDRAWN');
    const r = await place(shopNo, 'E-WITHDRAWN');
    expect(r.status).toBe(409);
    expect(r.data).toMatchObject({ ok: false, error_code: 'sku_unavailable' });
    expect(productReads() - reads).toBe(1); // the head start's 404 was the answer used
    expect(await getOrder(t.app.http, shopNo)).toBeNull();
    expect(t.sandbox.stats.createsReceived).toBe(received);
    expect((await t.app.http.get('/internal/catalog/skus/E-WITHDRAWN')).data).toMatchObject({
      ok: true,
      sku: { listed: false, available: false },
    });
  });

  it('the read beside it failing for an available SKU: 503 upstream_unavailable, nothing recorded, nothing sent', async () => {
    expect((await place(no('DOWN'), 'E-DOWN')).status).toBe(201);
    t.sandbox.faults.set({ rules: [{ operation: 'product', kind: 'error_before', status: 503 }] });
    const received = t.sandbox.stats.createsReceived;
    const reads = productReads();

    const shopNo = no('DOWN');
    const r = await place(shopNo, 'E-DOWN');
    expect(r.status).toBe(503);
    expect(r.data).toMatchObject({ ok: false, error_code: 'upstream_unavailable' });
    expect(await getOrder(t.app.http, shopNo)).toBeNull();
    expect(t.sandbox.stats.createsReceived).toBe(received);
    expect(productReads() - reads).toBe(1); // the head start's answer was the one used, not read again

    t.sandbox.faults.reset();
    expect((await place(shopNo, 'E-DOWN')).status).toBe(201);
  });
});
