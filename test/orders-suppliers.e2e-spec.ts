/**
 * Orders and callbacks at several suppliers (CONTRACT §5, §6, §10), with two sandboxes of their own
 * keys and secrets: an order at each supplier reaches only that supplier and is delivered through that
 * supplier's callback URL; a callback signed by the other supplier (or for an unknown one) is 401 and
 * stores nothing; a code both carry is ambiguous unless the order names the supplier; a disabled
 * supplier takes no new order (nothing sent) while its unfinished order is followed to the end; a
 * cancel goes to the order's supplier; and with one supplier's key blocked, or its server refusing
 * connections, the other's orders (queued ones included) go on.
 */
import axios from 'axios';
import { CatalogWriter } from '../src/catalog/catalog-writer.service.js';
import type { SandboxServer } from '../src/sandbox/sandbox.server.js';
import { SupplierRegistry } from '../src/suppliers/supplier-registry.service.js';
import { SupplierRepository } from '../src/suppliers/supplier.repository.js';
import { useAppSuite, type AppSuite } from './support/app-suite.js';
import { callbackHeaders, freePort, getOrder, waitForOrder, type OrderView } from './support/child-app.js';
import { waitFor } from './support/wait.js';
import { supplierCredentials } from './support/suppliers.js';

const TIMETABLE = { paidMs: 30, fulfillingMs: 60, deliveredMs: 100, completedMs: null };

/**
 * Stores the product `productId` of `supplier`'s sandbox in the local catalog as that supplier's: read
 * with its client, written by the catalog's write path, then named the supplier's. (The product ids
 * of the second sandbox used here are ones the env supplier's catalog does not have.)
 */
async function storeSupplierProduct(t: AppSuite, supplier: string, productId: number): Promise<void> {
  const product = await t.app.relay.app.get(SupplierRegistry).get(supplier).client.getProduct(productId);
  await t.app.relay.app.get(CatalogWriter).applyFreshProduct(product, { supplier, runId: null, source: 'refresh' });
}

describe('orders at several suppliers', () => {
  const t = useAppSuite({
    sandbox: { catalog: { products: 2 }, timetable: TIMETABLE, callbackRetryDelaysMs: [100, 200, 400] },
    prepare: (s) =>
      s.catalog.addProduct({
        skus: [
          { skuCode: 'SUP-MAIN', price: '4.00' },
          { skuCode: 'SUP-BOTH', price: '4.50' },
        ],
      }),
    env: async () => {
      const port = await freePort();
      return {
        PORT: String(port),
        CALLBACK_PUBLIC_URL: `http://127.0.0.1:${port}/callbacks/upstream`,
        // the shop's notifications are written (to the outbox) and never delivered: read there
        SHOP_WEBHOOK_URL: 'http://127.0.0.1:9/shop-hook',
        SHOP_WEBHOOK_SECRET: 'shop-secret',
        // polling is slow: callbacks deliver the orders
        ORDER_POLL_BASE_MS: '5000',
        ORDER_POLL_MAX_MS: '10000',
      };
    },
    seed: true,
    suppliers: { second: { sandbox: { catalog: { products: 5 }, timetable: TIMETABLE, callbackRetryDelaysMs: [100, 200, 400] } } },
  });
  let second: SandboxServer;
  let n = 0;
  const no = (tag: string) => `${tag}-${++n}`;
  const place = (body: Record<string, unknown>) => t.app.http.post('/internal/orders', body);
  const creates = () => [t.sandbox.stats.createsReceived, second.stats.createsReceived];

  beforeAll(async () => {
    second = t.supplier('second');
    // product 6 at the second supplier: the env supplier's catalog has products 1 to 3
    const p = second.catalog.addProduct({
      skus: [
        { skuCode: 'SUP-SECOND', price: '6.00' },
        { skuCode: 'SUP-BOTH', price: '6.50' },
      ],
    });
    await storeSupplierProduct(t, 'second', p.id);
  });

  it('places an order at each supplier, reaching only that supplier, each delivered through its own callback URL', async () => {
    const before = creates();
    const a = await place({ shop_order_no: no('M'), sku_code: 'SUP-MAIN', quantity: 1 });
    const b = await place({ shop_order_no: no('S'), sku_code: 'SUP-SECOND', quantity: 2 });
    expect([a.status, b.status]).toEqual([201, 201]);
    const [oa, ob] = [(a.data as { order: OrderView }).order, (b.data as { order: OrderView }).order];
    expect([oa.supplier, ob.supplier]).toEqual(['main', 'second']);
    expect(creates()).toEqual([before[0] + 1, before[1] + 1]);
    expect(second.orders().find((o) => o.id === ob.upstream_order_id)).toBeDefined();
    expect(t.sandbox.orders().find((o) => o.downstream_order_no === ob.shop_order_no)).toBeUndefined();
    for (const o of [oa, ob]) await waitForOrder(t.app.http, o.shop_order_no, (x) => x.status === 'delivered' && x.items.length > 0);
    // delivered by callbacks, each at its supplier's own URL, stored as that supplier's
    const urls = (s: SandboxServer, id: number) =>
      new Set(s.callbackLog.filter((c) => c.orderId === id).map((c) => new URL(c.url).pathname));
    expect(urls(t.sandbox, oa.upstream_order_id!)).toEqual(new Set(['/callbacks/upstream']));
    expect(urls(second, ob.upstream_order_id!)).toEqual(new Set(['/callbacks/upstream/second']));
    const inbox = await t.db.query<{ supplier: string; state: string }>(
      'SELECT DISTINCT supplier, state FROM callback_inbox WHERE downstream_order_no = $1',
      [ob.shop_order_no],
    );
    expect(inbox).toEqual([{ supplier: 'second', state: 'applied' }]);
    // every shop notification of an order names its supplier
    const notified = await t.db.query<{ subject: string; supplier: string }>(
      "SELECT DISTINCT subject, payload->>'supplier' AS supplier FROM outbox_events WHERE subject = ANY($1::text[]) ORDER BY subject",
      [[oa.shop_order_no, ob.shop_order_no]],
    );
    expect(notified).toEqual([
      { subject: oa.shop_order_no, supplier: 'main' },
      { subject: ob.shop_order_no, supplier: 'second' },
    ]);
    const listed = await t.app.http.get('/internal/orders', { params: { supplier: 'second' } });
    expect((listed.data as { items: OrderView[] }).items.map((o) => o.supplier)).toEqual(
      (listed.data as { items: OrderView[] }).items.map(() => 'second'),
    );
  });

  it("refuses at a supplier's URL a callback signed by another supplier, or for an unknown one (401), and stores nothing", async () => {
    const r = await place({ shop_order_no: no('CB'), sku_code: 'SUP-SECOND', quantity: 1 });
    const order = (r.data as { order: OrderView }).order;
    await waitForOrder(t.app.http, order.shop_order_no, (x) => x.status === 'delivered');
    // the delivered callback (with its fulfillment), claiming `completed`: applied as it stands where it is verified
    const delivered = second.callbackLog.find((c) => c.orderId === order.upstream_order_id && c.json.status === 'delivered')!;
    const body = JSON.stringify({ ...delivered.json, status: 'completed' });
    const rowsBefore = await t.db.query<{ n: number }>('SELECT count(*)::int AS n FROM callback_inbox');
    const post = (path: string, headers: Record<string, string>) =>
      axios.post(`${t.app.url}${path}`, body, { headers, validateStatus: () => true });
    const own = supplierCredentials('second');
    // main's key and secret at second's URL; second's at the bare (main's) URL; an unknown supplier
    const refused = await Promise.all([
      post('/callbacks/upstream/second', callbackHeaders(body, { path: '/callbacks/upstream/second' })),
      post('/callbacks/upstream', callbackHeaders(body, { apiKey: own.apiKey, secret: own.apiSecret })),
      post(
        '/callbacks/upstream/nobody',
        callbackHeaders(body, { apiKey: own.apiKey, secret: own.apiSecret, path: '/callbacks/upstream/nobody' }),
      ),
    ]);
    expect(refused.map((x) => [x.status, (x.data as { error_code?: string }).error_code])).toEqual([
      [401, 'invalid_signature'],
      [401, 'invalid_signature'],
      [401, 'invalid_signature'],
    ]);
    expect(await t.db.query<{ n: number }>('SELECT count(*)::int AS n FROM callback_inbox')).toEqual(rowsBefore);
    expect((await getOrder(t.app.http, order.shop_order_no))?.status).toBe('delivered');
    // the same body signed by second at its own URL is taken and applied
    const taken = await post(
      '/callbacks/upstream/second',
      callbackHeaders(body, { apiKey: own.apiKey, secret: own.apiSecret, path: '/callbacks/upstream/second' }),
    );
    expect(taken.status).toBe(200);
    await waitForOrder(t.app.http, order.shop_order_no, (x) => x.status === 'completed');
  });

  it('refuses a code both suppliers carry unless the order names its supplier (nothing sent), then places it there', async () => {
    const before = creates();
    const shopNo = no('BOTH');
    const ambiguous = await place({ shop_order_no: shopNo, sku_code: 'SUP-BOTH', quantity: 1 });
    expect(ambiguous.status).toBe(409);
    expect(ambiguous.data).toMatchObject({
      error_code: 'sku_ambiguous',
      candidates: [
        { supplier: 'main', sku_key: '3:SUP-BOTH' },
        { supplier: 'second', sku_key: '6:SUP-BOTH' },
      ],
    });
    expect((await place({ shop_order_no: shopNo, sku_code: 'SUP-BOTH', supplier: 'nobody', quantity: 1 })).data).toMatchObject({
      error_code: 'supplier_not_found',
    });
    expect(creates()).toEqual(before);
    const placed = await place({ shop_order_no: shopNo, sku_code: 'SUP-BOTH', supplier: 'second', quantity: 1 });
    expect(placed.status).toBe(201);
    expect((placed.data as { order: OrderView }).order).toMatchObject({ supplier: 'second', sku_key: '6:SUP-BOTH', amount: '6.50' });
    expect(creates()).toEqual([before[0], before[1] + 1]);
    // the replay compares the supplier too
    expect((await place({ shop_order_no: shopNo, sku_code: 'SUP-BOTH', supplier: 'second', quantity: 1 })).status).toBe(200);
    const other = await place({ shop_order_no: shopNo, sku_code: 'SUP-BOTH', supplier: 'main', quantity: 1 });
    expect([other.status, (other.data as { error_code: string }).error_code]).toEqual([409, 'idempotency_conflict']);
    // and by its sku_key at one supplier
    const byKey = await place({ shop_order_no: no('KEY'), sku_code: '3:SUP-BOTH', supplier: 'main', quantity: 1 });
    expect((byKey.data as { order: OrderView }).order).toMatchObject({ supplier: 'main', sku_key: '3:SUP-BOTH' });
    expect(creates()).toEqual([before[0] + 1, before[1] + 1]);
  });

  it('a disabled supplier takes no new order (409 supplier_disabled, nothing sent); its open order is followed to the end', async () => {
    second.setTimetable({ ...TIMETABLE, paidMs: 400 });
    const pending = await place({ shop_order_no: no('DIS'), sku_code: 'SUP-SECOND', quantity: 1 });
    expect(pending.status).toBe(201);
    const repo = t.app.relay.app.get(SupplierRepository);
    const stored = (await repo.find('second'))!;
    const setEnabled = async (enabled: boolean) => {
      await repo.update({ ...stored, enabled });
      await t.app.relay.app.get(SupplierRegistry).reload();
    };
    await setEnabled(false);
    try {
      const before = creates();
      const refusedNo = no('DIS');
      const refused = await place({ shop_order_no: refusedNo, sku_code: 'SUP-SECOND', quantity: 1 });
      expect([refused.status, (refused.data as { error_code: string }).error_code]).toEqual([409, 'supplier_disabled']);
      expect(creates()).toEqual(before);
      expect(await getOrder(t.app.http, refusedNo)).toBeNull();
      // (the suppliers API's DELETE is 409 supplier_busy while this counts any)
      expect(await repo.unfinishedOrders('second')).toBeGreaterThanOrEqual(1);
      await waitForOrder(t.app.http, (pending.data as { order: OrderView }).order.shop_order_no, (x) => x.status === 'delivered');
      await waitFor(
        () => repo.unfinishedOrders('second'),
        (count) => count === 0,
        "the second supplier's unfinished orders",
      );
    } finally {
      await setEnabled(true);
      second.setTimetable(TIMETABLE);
    }
  });

  it("cancels a second supplier's order at that supplier, then records its refund", async () => {
    second.setTimetable({ paidMs: null, fulfillingMs: null, deliveredMs: null, completedMs: null });
    try {
      const placed = await place({ shop_order_no: no('CXL'), sku_code: 'SUP-SECOND', quantity: 1 });
      const shopNo = (placed.data as { order: OrderView }).order.shop_order_no;
      const cancels = [t.sandbox.stats.cancelsExecuted, second.stats.cancelsExecuted];
      const canceled = await t.app.http.post(`/internal/orders/${shopNo}/cancel`);
      expect(canceled.status).toBe(200);
      expect((canceled.data as { order: OrderView }).order).toMatchObject({
        supplier: 'second',
        status: 'canceled',
        refund_state: 'refundable',
      });
      expect([t.sandbox.stats.cancelsExecuted, second.stats.cancelsExecuted]).toEqual([cancels[0], cancels[1] + 1]);
      const refunded = await t.app.http.post(`/internal/orders/${shopNo}/refund`);
      expect((refunded.data as { order: OrderView }).order).toMatchObject({ supplier: 'second', refund_state: 'refunded' });
    } finally {
      second.setTimetable(TIMETABLE);
    }
  });

  it("goes on at one supplier while the other's key is blocked: its queued orders are not held behind the other's", async () => {
    // both keys answer 429: an order at each is queued, the second supplier's first
    second.faults.set({ rules: [{ kind: 'rate_limit', retryAfterS: 1 }] });
    t.sandbox.faults.set({ rules: [{ kind: 'rate_limit', retryAfterS: 1 }] });
    const [qsNo, qmNo] = [no('QS'), no('QM')];
    const qs = await place({ shop_order_no: qsNo, sku_code: 'SUP-SECOND', quantity: 1 });
    const qm = await place({ shop_order_no: qmNo, sku_code: 'SUP-MAIN', quantity: 1 });
    expect([qs.status, qm.status]).toEqual([202, 202]);
    expect([(qs.data as { order: OrderView }).order.status, (qm.data as { order: OrderView }).order.status]).toEqual(['queued', 'queued']);
    // the env supplier's key is free again; the second supplier's stays blocked
    t.sandbox.faults.reset();
    const sent = await waitForOrder(t.app.http, qmNo, (x) => x.status === 'delivered');
    expect(sent.supplier).toBe('main');
    const live = await place({ shop_order_no: no('LIVE'), sku_code: 'SUP-MAIN', quantity: 1 });
    expect(live.status).toBe(201);
    expect((await getOrder(t.app.http, qsNo))?.status).toBe('queued');
    expect(second.orders().some((o) => o.downstream_order_no === qsNo)).toBe(false);
    second.faults.reset();
    await waitForOrder(t.app.http, qsNo, (x) => x.status === 'delivered');
  });

  it('goes on at one supplier while the other refuses connections', async () => {
    await second.stop();
    const downNo = no('DOWN');
    const down = await place({ shop_order_no: downNo, sku_code: 'SUP-SECOND', quantity: 1 });
    expect([down.status, (down.data as { error_code: string }).error_code]).toEqual([503, 'upstream_unavailable']);
    expect(await getOrder(t.app.http, downNo)).toBeNull();
    const before = t.sandbox.stats.createsReceived;
    const placed = await Promise.all([1, 2, 3].map(() => place({ shop_order_no: no('UP'), sku_code: 'SUP-MAIN', quantity: 1 })));
    expect(placed.map((p) => [p.status, (p.data as { order: OrderView }).order.supplier])).toEqual([
      [201, 'main'],
      [201, 'main'],
      [201, 'main'],
    ]);
    expect(t.sandbox.stats.createsReceived).toBe(before + 3);
    for (const p of placed)
      await waitForOrder(t.app.http, (p.data as { order: OrderView }).order.shop_order_no, (x) => x.status === 'delivered');
  });
});
