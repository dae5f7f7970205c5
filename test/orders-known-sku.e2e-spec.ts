/**
 * An order of a SKU that an order of this process read available lately is checked on that read,
 * without reading the SKU again (OrderRelayService.placeOrReplay, CatalogService.knownSku): its
 * reservation writes only if the SKU row, its product's stored fingerprint and the currency are still
 * as read (SKU_UNCHANGED_SQL). Whatever else happens — a check refusing on the remembered read, the
 * SKU moved meanwhile, the number recorded by another instance — the order goes the usual way on the
 * SKU as read now: a refusal, a price ceiling and a replay's answer always rest on what the database
 * holds (CONTRACT §5), and nothing is recorded or sent on the remembered read alone.
 */
import pg from 'pg';
import { CatalogService } from '../src/catalog/catalog.service.js';
import { useAppSuite } from './support/app-suite.js';
import { getOrder, seedCatalog, type OrderView } from './support/child-app.js';

describe('orders: the SKU as an earlier order read it', () => {
  const t = useAppSuite({
    sandbox: { catalog: { products: 1 }, timetable: { paidMs: null } },
    prepare: (sandbox) => {
      for (const skuCode of ['K-SAME', 'K-REPRICED', 'K-LOWER', 'K-HIGHER', 'K-UNLISTED', 'K-REPLICA', 'K-CURRENCY']) sandbox.catalog.addProduct({ skus: [{ skuCode, price: '10.00' }] });
    },
    env: { PRICE_MARKUP_PERCENT: '10', PRICE_MARKUP_FIXED: '0', PRICE_ROUNDING: '0.01', ORDER_POLL_BASE_MS: '60000', UPSTREAM_TIMEOUT_MS: '2000' },
    instances: 2,
    seed: true,
  });
  let n = 0;
  const no = (tag: string) => `KNOWN-${tag}-${++n}`;
  const place = (shopNo: string, skuCode: string, quantity = 1, app = t.app) => app.http.post('/internal/orders', { shop_order_no: shopNo, sku_code: skuCode, quantity });
  const reads = () => ({ ...t.app.relay.app.get(CatalogService).orderSkuReads });
  const creates = () => t.sandbox.stats.createsReceived;
  const upstreamOrders = (shopNo: string) => t.sandbox.orders().filter((o) => o.downstream_order_no === shopNo);
  const setSkuMarkup = async (skuCode: string, percent: string) => {
    const r = await t.app.http.put('/internal/pricing/rules', { rules: [{ scope: 'sku', sku_code: skuCode, markup_percent: percent, markup_fixed: '0' }] });
    expect(r.status).toBe(200);
  };

  afterEach(async () => {
    // back to the defaults of the environment
    expect((await t.app.http.put('/internal/pricing/rules', { rules: [] })).status).toBe(200);
  });

  it('a second order of a SKU makes no SKU read: the first read stands in for it, one product read, placed', async () => {
    const first = reads();
    expect((await place(no('SAME'), 'K-SAME')).status).toBe(201);
    expect(reads().database - first.database).toBe(1);

    const before = reads();
    const productReads = t.sandbox.stats.requests.product;
    const shopNo = no('SAME');
    const r = await place(shopNo, 'K-SAME');
    expect(r.status).toBe(201);
    expect((r.data as { order: OrderView }).order).toMatchObject({ shop_order_no: shopNo, status: 'pending_payment', attempt: 1 });
    expect(reads()).toEqual({ database: before.database, memory: before.memory + 1 });
    expect(t.sandbox.stats.requests.product - productReads).toBe(1);
    expect(upstreamOrders(shopNo)).toHaveLength(1);
  });

  it('repriced since (11.00 → 10.00), the product unchanged upstream: the reservation sees the SKU moved, the order is checked again on the SKU read now and placed', async () => {
    expect((await place(no('REPRICED'), 'K-REPRICED')).status).toBe(201); // remembered: sale price 11.00
    await setSkuMarkup('K-REPRICED', '0');
    const before = reads();
    const productReads = t.sandbox.stats.requests.product;

    const shopNo = no('REPRICED');
    expect((await place(shopNo, 'K-REPRICED')).status).toBe(201);
    expect(reads()).toEqual({ database: before.database + 1, memory: before.memory + 1 });
    expect(t.sandbox.stats.requests.product - productReads).toBe(1);
    expect(upstreamOrders(shopNo)).toHaveLength(1);
  });

  it('repriced lower since (sale price 11.00 → 10.10) and the upstream now asks 10.50: refused 409 price_changed with the ceiling read now, nothing recorded, nothing sent', async () => {
    expect((await place(no('LOWER'), 'K-LOWER')).status).toBe(201); // remembered: sale price 11.00
    await setSkuMarkup('K-LOWER', '1'); // 10.10 now
    t.sandbox.catalog.setPrice('K-LOWER', '10.50'); // within the remembered 11.00, above 10.10
    const sent = creates();
    const before = reads();

    const shopNo = no('LOWER');
    const r = await place(shopNo, 'K-LOWER');
    expect(r.status).toBe(409);
    expect(r.data).toMatchObject({ ok: false, error_code: 'price_changed', unit_cost: '10.50', max_unit_cost: '10.10' });
    expect(await getOrder(t.app.http, shopNo)).toBeNull();
    expect(creates()).toBe(sent);
    // checked on the remembered read, which the reservation found moved; then read and checked again
    expect(reads()).toEqual({ database: before.database + 1, memory: before.memory + 1 });
  });

  it('repriced higher since (11.00 → 12.00) and the upstream now asks 11.50: the remembered ceiling refuses, the SKU read now allows it: placed at 11.50', async () => {
    expect((await place(no('HIGHER'), 'K-HIGHER')).status).toBe(201);
    await setSkuMarkup('K-HIGHER', '20');
    t.sandbox.catalog.setPrice('K-HIGHER', '11.50');
    const productReads = t.sandbox.stats.requests.product;

    const shopNo = no('HIGHER');
    const r = await place(shopNo, 'K-HIGHER');
    expect(r.status).toBe(201);
    expect((r.data as { order: OrderView }).order).toMatchObject({ shop_order_no: shopNo, amount: '11.50' });
    expect(upstreamOrders(shopNo)).toHaveLength(1);
    // the read made for the remembered checks answered the second checks too
    expect(t.sandbox.stats.requests.product - productReads).toBe(1);
  });

  it('out of stock locally since (synced) while the upstream sells it again as before: 409 sku_unavailable on the local state, nothing sent', async () => {
    expect((await place(no('UNLISTED'), 'K-UNLISTED')).status).toBe(201);
    t.sandbox.catalog.setStock('K-UNLISTED', 'out_of_stock');
    await seedCatalog(t.app.http);
    // as it was when the first order read it (not synced: locally still out of stock): the fresh read
    // matches the remembered one, and only the reservation's check of the SKU row sees the change
    t.sandbox.catalog.setStock('K-UNLISTED', 'unlimited');
    const sent = creates();

    const shopNo = no('UNLISTED');
    const r = await place(shopNo, 'K-UNLISTED');
    expect(r.status).toBe(409);
    expect(r.data).toMatchObject({ ok: false, error_code: 'sku_unavailable' });
    expect(await getOrder(t.app.http, shopNo)).toBeNull();
    expect(creates()).toBe(sent);
  });

  it('a number another instance recorded: the same body answers its order (200), another body 409; one upstream order', async () => {
    expect((await place(no('REPLICA'), 'K-REPLICA')).status).toBe(201); // this instance remembers K-REPLICA
    const shopNo = no('REPLICA');
    const placed = await place(shopNo, 'K-REPLICA', 1, t.apps[1]);
    expect(placed.status).toBe(201);
    const order = (placed.data as { order: OrderView }).order;

    const again = await place(shopNo, 'K-REPLICA');
    expect(again.status).toBe(200);
    expect((again.data as { order: OrderView }).order).toMatchObject({ shop_order_no: shopNo, upstream_order_id: order.upstream_order_id, attempt: 1 });
    const other = await place(shopNo, 'K-REPLICA', 2);
    expect(other.status).toBe(409);
    expect(other.data).toMatchObject({ ok: false, error_code: 'idempotency_conflict' });
    expect(upstreamOrders(shopNo)).toHaveLength(1);
  });

  it('the currency changed since (the upstream ping): the reservation sees it, the SKU is read again, placed once', async () => {
    expect((await place(no('CURRENCY'), 'K-CURRENCY')).status).toBe(201);
    const db = new pg.Client({ connectionString: t.db.url });
    await db.connect();
    const [{ value }] = (await db.query<{ value: { currency: string } }>("SELECT value FROM relay_state WHERE key = 'catalog.currency'")).rows;
    try {
      expect(value.currency).not.toBe('EUR');
      await db.query("UPDATE relay_state SET value = jsonb_set(value, '{currency}', '\"EUR\"') WHERE key = 'catalog.currency'");
      const before = reads();
      const shopNo = no('CURRENCY');
      expect((await place(shopNo, 'K-CURRENCY')).status).toBe(201);
      expect(reads()).toEqual({ database: before.database + 1, memory: before.memory + 1 });
      expect(upstreamOrders(shopNo)).toHaveLength(1);
      // read now with its currency: the next order is checked on that read
      expect((await place(no('CURRENCY'), 'K-CURRENCY')).status).toBe(201);
      expect(reads()).toEqual({ database: before.database + 1, memory: before.memory + 2 });
    } finally {
      await db.query("UPDATE relay_state SET value = $1 WHERE key = 'catalog.currency'", [value]);
      await db.end();
    }
  });
});
