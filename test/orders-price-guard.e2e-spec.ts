/**
 * The price guard of `POST /internal/orders` (CONTRACT §5) with a markup (§3): the ceiling of the
 * fresh upstream price is `max_unit_cost`, by default the sale price the SKU had before this read —
 * not its cost. A rise of the cost that stays within the sale price is accepted; one above it is
 * 409 `price_changed` (nothing recorded, nothing sent); an explicit `max_unit_cost` replaces the
 * default, above it or below it.
 */
import { useAppSuite } from './support/app-suite.js';
import { getOrder, type OrderView } from './support/child-app.js';

interface SkuView {
  sku_code: string;
  cost_price: string;
  sale_price: string;
  available: boolean;
}

describe('orders: the price guard with a markup (max_unit_cost defaults to the sale price)', () => {
  const t = useAppSuite({
    sandbox: { catalog: { products: 1 }, timetable: { paidMs: null } },
    prepare: (sandbox) => {
      for (const skuCode of ['G-UNDER', 'G-EQUAL', 'G-OVER', 'G-EXPLICIT', 'G-LOWER'])
        sandbox.catalog.addProduct({ skus: [{ skuCode, price: '10.00' }] });
    },
    env: {
      PRICE_MARKUP_PERCENT: '10',
      PRICE_MARKUP_FIXED: '0',
      PRICE_ROUNDING: '0.01',
      ORDER_POLL_BASE_MS: '50',
      ORDER_POLL_MAX_MS: '200',
      UPSTREAM_TIMEOUT_MS: '2000',
    },
    seed: true,
  });
  let n = 0;
  const no = (tag: string) => `${tag}-${++n}`;

  const place = (body: Record<string, unknown>) => t.app.http.post('/internal/orders', body);
  const sku = async (code: string): Promise<SkuView> => {
    const r = await t.app.http.get(`/internal/catalog/skus/${code}`);
    expect(r.status).toBe(200);
    return (r.data as { sku: SkuView }).sku;
  };
  const upstreamOrders = (shopNo: string) =>
    t.sandbox.orders().filter((o) => o.downstream_order_no === shopNo || o.downstream_order_no?.startsWith(`${shopNo}-`));

  /** A 409 price_changed: the contract's envelope with the fresh price and the ceiling, no order. */
  const expectPriceChanged = (r: { status: number; data: unknown }, unitCost: string, ceiling: string) => {
    expect(r.status).toBe(409);
    expect(r.data).toEqual({
      ok: false,
      error_code: 'price_changed',
      error_message: expect.any(String),
      unit_cost: unitCost,
      max_unit_cost: ceiling,
    });
  };

  it('the synced catalog carries the markup: cost 10.00, sale price 11.00', async () => {
    for (const code of ['G-UNDER', 'G-EQUAL', 'G-OVER', 'G-EXPLICIT', 'G-LOWER']) {
      expect(await sku(code)).toMatchObject({ sku_code: code, cost_price: '10.00', sale_price: '11.00', available: true });
    }
  });

  it('(a) a cost raised above the old cost but not above the local sale price is accepted, at the fresh price', async () => {
    t.sandbox.catalog.setPrice('G-UNDER', '10.80'); // not synced: locally still cost 10.00, sale 11.00
    t.sandbox.catalog.setPrice('G-EQUAL', '11.00'); // exactly the sale price: not above it
    expect(await sku('G-UNDER')).toMatchObject({ cost_price: '10.00', sale_price: '11.00' });
    const executed = t.sandbox.stats.createsExecuted;

    const shopNo = no('UNDER');
    const r = await place({ shop_order_no: shopNo, sku_code: 'G-UNDER', quantity: 2 });
    expect(r.status).toBe(201);
    const order = (r.data as { order: OrderView }).order;
    expect(order).toMatchObject({
      shop_order_no: shopNo,
      sku_code: 'G-UNDER',
      quantity: 2,
      status: 'pending_payment',
      attempt: 1,
      downstream_order_no: shopNo,
      amount: '21.60',
    });
    expect(t.sandbox.order(order.upstream_order_id as number)).toMatchObject({ downstream_order_no: shopNo, amount: '21.60' });
    // the fresh read refreshed the SKU locally: the new cost, and the sale price recomputed from it
    expect(await sku('G-UNDER')).toMatchObject({ cost_price: '10.80', sale_price: '11.88' });

    const equal = await place({ shop_order_no: no('EQUAL'), sku_code: 'G-EQUAL', quantity: 1 });
    expect(equal.status).toBe(201);
    expect((equal.data as { order: OrderView }).order).toMatchObject({ amount: '11.00', attempt: 1 });
    expect(t.sandbox.stats.createsExecuted).toBe(executed + 2);
  });

  it('(b) a cost raised above the local sale price: 409 price_changed with the fresh price and ceiling; nothing kept or sent', async () => {
    t.sandbox.catalog.setPrice('G-OVER', '11.01'); // one cent above the sale price 11.00
    const received = t.sandbox.stats.createsReceived;
    const shopNo = no('OVER');
    const r = await place({ shop_order_no: shopNo, sku_code: 'G-OVER', quantity: 1 });
    expectPriceChanged(r, '11.01', '11.00');
    expect(await getOrder(t.app.http, shopNo)).toBeNull();
    expect((await t.app.http.get(`/internal/orders/${shopNo}`)).data).toMatchObject({ ok: false, error_code: 'order_not_found' });
    expect(await t.db.query('SELECT id FROM orders WHERE shop_order_no = $1', [shopNo])).toHaveLength(0);
    expect(t.sandbox.stats.createsReceived).toBe(received);
    expect(upstreamOrders(shopNo)).toHaveLength(0);
    // the fresh read still refreshed the SKU locally (CONTRACT §5)
    expect(await sku('G-OVER')).toMatchObject({ cost_price: '11.01', sale_price: '12.12', available: true });

    // a second request is checked against the sale price it now has (12.12, from the read above); the
    // key was never recorded, so this is attempt 1 under the same number
    const again = await place({ shop_order_no: shopNo, sku_code: 'G-OVER', quantity: 1 });
    expect(again.status).toBe(201);
    expect((again.data as { order: OrderView }).order).toMatchObject({ attempt: 1, downstream_order_no: shopNo, amount: '11.01' });
    expect(t.sandbox.stats.createsReceived).toBe(received + 1);
    expect(upstreamOrders(shopNo)).toHaveLength(1);
  });

  it('(c) an explicit max_unit_cost replaces the default: above the fresh price accepted, below it 409', async () => {
    t.sandbox.catalog.setPrice('G-EXPLICIT', '12.00'); // above the sale price 11.00
    const received = t.sandbox.stats.createsReceived;

    const low = no('EXPL');
    expectPriceChanged(await place({ shop_order_no: low, sku_code: 'G-EXPLICIT', quantity: 1, max_unit_cost: '11.99' }), '12.00', '11.99');
    expect(await getOrder(t.app.http, low)).toBeNull();
    expect(t.sandbox.stats.createsReceived).toBe(received);

    const shopNo = no('EXPL');
    const r = await place({ shop_order_no: shopNo, sku_code: 'G-EXPLICIT', quantity: 3, max_unit_cost: '12.50' });
    expect(r.status).toBe(201);
    const order = (r.data as { order: OrderView }).order;
    expect(order).toMatchObject({ shop_order_no: shopNo, attempt: 1, downstream_order_no: shopNo, amount: '36.00' });
    expect(t.sandbox.order(order.upstream_order_id as number)).toMatchObject({ downstream_order_no: shopNo, amount: '36.00' });
    expect(t.sandbox.stats.createsReceived).toBe(received + 1);
  });

  it('an explicit max_unit_cost below the sale price is the ceiling even when the cost did not move', async () => {
    const received = t.sandbox.stats.createsReceived;
    const shopNo = no('LOWER');
    expectPriceChanged(await place({ shop_order_no: shopNo, sku_code: 'G-LOWER', quantity: 1, max_unit_cost: '9.99' }), '10.00', '9.99');
    expect(await getOrder(t.app.http, shopNo)).toBeNull();
    expect(t.sandbox.stats.createsReceived).toBe(received);
    const ok = await place({ shop_order_no: shopNo, sku_code: 'G-LOWER', quantity: 1, max_unit_cost: '10.00' });
    expect(ok.status).toBe(201);
    expect((ok.data as { order: OrderView }).order).toMatchObject({ amount: '10.00', attempt: 1 });
  });
});
