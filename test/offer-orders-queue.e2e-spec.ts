/**
 * An offer order's failover whoever sends its attempt (CONTRACT §11, issue 32), over three suppliers
 * with a sandbox each (the same seeded catalog, so one sku_key exists at all three), and every source
 * refused before sending as an attempt of the route:
 * - the first source refuses the create; the second's reserved attempt is left to the queue (the
 *   request cannot read its product now) and the queue's send is refused too: the queue moves the
 *   order on to the third, where it is placed exactly once;
 * - the first source's product cannot be read at the price guard: an attempt rejected before sending
 *   (`upstream_unavailable`, no create to it), and the order placed at the second;
 * - every source above the ceiling: 409 `no_source_available` with the `rejected` order and its route
 *   (one `price_changed` attempt per source, nothing sent anywhere), and the same body again is routed
 *   again under new numbers;
 * - no source that could take the order (two unavailable locally, the third's supplier disabled): 409
 *   `no_source_available` with the order recorded `rejected`, one attempt per source with its code,
 *   nothing sent; submitted again once the supplier is enabled, it is placed there;
 * - the first supplier's key blocked and the other sources unavailable: a budget is not a refusal, the
 *   order is answered 202 `queued` at the first, nothing sent while the block lasts, and the queue
 *   places it there when the block ends.
 * The sandboxes' own order lists are the proof of where orders went; the metrics count the failovers
 * by reason and the routed orders by supplier.
 */
import type { SandboxServer } from '../src/sandbox/sandbox.server.js';
import { SupplierRegistry } from '../src/suppliers/supplier-registry.service.js';
import { useAppSuite } from './support/app-suite.js';
import { waitFor } from './support/wait.js';
import type { OfferOrder, RouteView } from './support/offer-fixtures.js';

const stockRefusal = { kind: 'coded_error' as const, operation: 'createOrder' as const, status: 409, errorCode: 'insufficient_stock' };

describe('orders through an offer of three sources', () => {
  // every price guard reads the product (a sync's read of it would otherwise serve the guard)
  // (a request waits for no blocked key: a placement's budget wait is 0 ms)
  const t = useAppSuite({ suppliers: { second: {}, third: {} }, seed: true, env: { ORDER_PRICE_FRESH_S: '0', ORDER_QUEUE_WAIT_MS: '0' } });
  let second: SandboxServer;
  let third: SandboxServer;
  let key = '';
  /** A SKU out of stock at every sandbox (the seeded catalog), known unavailable locally. */
  let outKey = '';
  let n = 0;
  const no = (tag: string) => `OQ-${tag}-${++n}`;
  const http = () => t.app.http;
  const place = (body: Record<string, unknown>) => http().post('/internal/orders', { quantity: 1, ...body });
  const sandboxes = () => [t.sandbox, second, third];
  const creates = () => sandboxes().map((s) => s.stats.createsReceived);
  const requests = () => sandboxes().map((s) => s.stats.totalRequests);
  /** The order numbers a sandbox holds for a shop order number (its attempts' numbers are `<no>` and `<no>-<n>`). */
  const held = (s: SandboxServer, shopNo: string) =>
    s
      .orders()
      .filter((o) => o.downstream_order_no === shopNo || o.downstream_order_no?.startsWith(`${shopNo}-`))
      .map((o) => o.downstream_order_no);
  /** A counter's value in GET /metrics (0 when absent). */
  const metric = async (name: string, label: string, value: string): Promise<number> => {
    const text = String((await http().get('/metrics')).data);
    const m = new RegExp(`^${name}\\{${label}="${value}"\\} (\\d+)$`, 'm').exec(text);
    return m ? Number(m[1]) : 0;
  };
  const sync = async (supplier: string) => {
    const started = await http().post('/internal/catalog/sync', { mode: 'full', supplier });
    expect(started.status).toBe(202);
    const runId = (started.data as { run_id: string }).run_id;
    await waitFor(
      async () => ((await http().get(`/internal/catalog/sync-runs/${runId}`)).data as { run: { status: string } }).run.status,
      (s) => s !== 'running',
      `the ${supplier} supplier sync`,
      60_000,
    );
  };

  beforeAll(async () => {
    second = t.supplier('second');
    third = t.supplier('third');
    const product = t.sandbox.catalog
      .listedProducts()
      .find((p) => p.fulfillment_type !== 'manual' && p.skus.some((s) => s.stock_status !== 'out_of_stock'))!;
    const chosen = product.skus.find((s) => s.stock_status !== 'out_of_stock')!;
    for (const s of sandboxes()) s.catalog.setStock(chosen.sku_code, 'in_stock', 1_000_000);
    await sync('second');
    await sync('third');
    key = `${product.id}:${chosen.sku_code}`;
    const out = t.sandbox.catalog
      .listedProducts()
      .filter((p) => p.fulfillment_type !== 'manual')
      .flatMap((p) => p.skus.filter((s) => s.stock_status === 'out_of_stock').map((s) => `${p.id}:${s.sku_code}`))
      .find((k) => k !== key)!;
    expect(out).toBeDefined();
    outKey = out;
    const sources = ['main', 'second', 'third'].map((supplier) => ({ supplier, sku_key: key }));
    const put = await http().put('/internal/offers/OFF-3', { title: 'three', routing: 'priority', sources });
    expect(put.status).toBeLessThan(300);
    expect((put.data as { offer: { available: boolean } }).offer.available).toBe(true);
  }, 180_000);

  it("the second source's reserved attempt, sent by the queue and refused: the queue moves it on to the third, placed once", async () => {
    const before = creates();
    const failovers = await metric('relay_offer_failovers_total', 'reason', 'insufficient_stock');
    const routed = await metric('relay_offer_orders_routed_total', 'supplier', 'third');
    const shopNo = no('QUEUE');
    t.sandbox.faults.set({ rules: [{ ...stockRefusal, times: 1 }] });
    // the request cannot read the second's product now (its reserved attempt stays queued for the
    // queue), and the second refuses the create the queue then sends
    second.faults.set({
      rules: [
        { operation: 'product', kind: 'error_before', status: 502, times: 1 },
        { ...stockRefusal, times: 1 },
      ],
    });
    const r = await place({ shop_order_no: shopNo, offer: 'OFF-3' });
    expect(r.status).toBe(202);
    // answered as the request left it: queued at the second
    expect((r.data as { order: OfferOrder }).order).toMatchObject({ status: 'queued', supplier: 'second', attempt: 2 });
    const settled = await waitFor(
      async () => ((await http().get(`/internal/orders/${shopNo}`)).data as { order: OfferOrder }).order,
      (o) => o.status !== 'queued' && o.status !== 'submitting',
      'the order settled by the queue',
      60_000,
    );
    expect(settled).toMatchObject({ offer: 'OFF-3', supplier: 'third', attempt: 3 });
    expect(settled.upstream_order_id).not.toBeNull();
    expect(settled.route).toEqual([
      { attempt: 1, supplier: 'main', sku_key: key, outcome: 'rejected', error_code: 'insufficient_stock' },
      { attempt: 2, supplier: 'second', sku_key: key, outcome: 'rejected', error_code: 'insufficient_stock' },
      { attempt: 3, supplier: 'third', sku_key: key, outcome: 'accepted', error_code: null },
    ]);
    expect(creates()).toEqual([before[0] + 1, before[1] + 1, before[2] + 1]);
    expect([held(t.sandbox, shopNo), held(second, shopNo), held(third, shopNo)]).toEqual([[], [], [`${shopNo}-3`]]);
    // the third attempt was reserved in the transaction recording the queue's refusal at the second
    const events = (await http().get(`/internal/orders/${shopNo}/events`)).data as {
      events: Array<{ from: string | null; to: string | null; detail: Record<string, unknown> | null }>;
    };
    expect(events.events).toContainEqual(
      expect.objectContaining({
        from: 'rejected',
        to: 'queued',
        detail: expect.objectContaining({ attempt: 3, failover_from: 'second', reason: 'insufficient_stock' }),
      }),
    );
    expect(await metric('relay_offer_failovers_total', 'reason', 'insufficient_stock')).toBe(failovers + 2);
    expect(await metric('relay_offer_orders_routed_total', 'supplier', 'third')).toBe(routed + 1);
  }, 90_000);

  it("the first source's product unreadable at the price guard: an attempt rejected before sending, placed at the second", async () => {
    const before = creates();
    const failovers = await metric('relay_offer_failovers_total', 'reason', 'upstream_unavailable');
    const routed = await metric('relay_offer_orders_routed_total', 'supplier', 'second');
    const shopNo = no('READ');
    t.sandbox.faults.set({ rules: [{ operation: 'product', kind: 'error_before', status: 502, times: 1 }] });
    const r = await place({ shop_order_no: shopNo, offer: 'OFF-3' });
    expect(r.status).toBe(201);
    const order = (r.data as { order: OfferOrder }).order;
    expect(order).toMatchObject({ supplier: 'second', attempt: 2 });
    expect(order.route).toEqual([
      { attempt: 1, supplier: 'main', sku_key: key, outcome: 'rejected', error_code: 'upstream_unavailable' },
      { attempt: 2, supplier: 'second', sku_key: key, outcome: 'accepted', error_code: null },
    ]);
    // nothing sent to the first beyond the guard's read
    expect(creates()).toEqual([before[0], before[1] + 1, before[2]]);
    expect([held(t.sandbox, shopNo), held(second, shopNo), held(third, shopNo)]).toEqual([[], [`${shopNo}-2`], []]);
    expect(await metric('relay_offer_failovers_total', 'reason', 'upstream_unavailable')).toBe(failovers + 1);
    expect(await metric('relay_offer_orders_routed_total', 'supplier', 'second')).toBe(routed + 1);
  });

  it('every source above the ceiling: 409 no_source_available, the order rejected, a route of 3 price_changed; nothing sent', async () => {
    const before = requests();
    const failovers = await metric('relay_offer_failovers_total', 'reason', 'price_changed');
    const shopNo = no('CEIL');
    const body = { shop_order_no: shopNo, offer: 'OFF-3', max_unit_cost: '0.01' };
    const r = await place(body);
    expect(r.status).toBe(409);
    const answer = r.data as { error_code: string; order: OfferOrder; route: RouteView[] };
    expect(answer.error_code).toBe('no_source_available');
    expect(answer.order).toMatchObject({ shop_order_no: shopNo, status: 'rejected', offer: 'OFF-3', attempt: 3 });
    const refusedAt = (first: number) =>
      ['main', 'second', 'third'].map((supplier, i) => ({
        attempt: first + i,
        supplier,
        sku_key: key,
        outcome: 'rejected',
        error_code: 'price_changed',
      }));
    expect(answer.route).toEqual(refusedAt(1));
    expect(answer.order.route).toEqual(refusedAt(1));
    expect(requests()).toEqual(before);
    // the failover from the first to the second, and from the second to the third
    expect(await metric('relay_offer_failovers_total', 'reason', 'price_changed')).toBe(failovers + 2);
    // the same body again: routed again from the first source, under numbers never used (none was sent)
    const again = await place(body);
    expect(again.status).toBe(409);
    expect((again.data as { route: RouteView[] }).route).toEqual([...refusedAt(1), ...refusedAt(4)]);
    expect(requests()).toEqual(before);
    expect(sandboxes().map((s) => held(s, shopNo))).toEqual([[], [], []]);
  });

  it('no source could take it: 409 no_source_available, the order rejected, an attempt per source with its code; none sent', async () => {
    const sources = [
      { supplier: 'main', sku_key: outKey },
      { supplier: 'second', sku_key: outKey },
      { supplier: 'third', sku_key: key },
    ];
    expect((await http().put('/internal/offers/OFF-NONE', { routing: 'priority', sources })).status).toBeLessThan(300);
    expect((await http().patch('/internal/suppliers/third', { enabled: false })).status).toBe(200);
    const before = requests();
    const shopNo = no('NONE');
    const body = { shop_order_no: shopNo, offer: 'OFF-NONE' };
    let r;
    try {
      r = await place(body);
    } finally {
      expect((await http().patch('/internal/suppliers/third', { enabled: true })).status).toBe(200);
    }
    expect(r.status).toBe(409);
    const answer = r.data as { error_code: string; order: OfferOrder | null; route: RouteView[] };
    expect(answer.error_code).toBe('no_source_available');
    expect(answer.order).toMatchObject({ shop_order_no: shopNo, status: 'rejected', offer: 'OFF-NONE', supplier: 'third', attempt: 3 });
    const refused = [
      { attempt: 1, supplier: 'main', sku_key: outKey, outcome: 'rejected', error_code: 'sku_unavailable' },
      { attempt: 2, supplier: 'second', sku_key: outKey, outcome: 'rejected', error_code: 'sku_unavailable' },
      { attempt: 3, supplier: 'third', sku_key: key, outcome: 'rejected', error_code: 'supplier_disabled' },
    ];
    expect(answer.route).toEqual(refused);
    expect(answer.order!.route).toEqual(refused);
    // recorded as the API reads it, and nothing asked of any supplier
    const recorded = (await http().get(`/internal/orders/${shopNo}`)).data as { order: OfferOrder };
    expect(recorded.order).toMatchObject({ status: 'rejected', attempt: 3, route: refused });
    expect(requests()).toEqual(before);
    // the same body again, the supplier enabled: routed again, placed at the third under a new number
    const creates0 = creates();
    const again = await place(body);
    expect(again.status).toBe(201);
    expect((again.data as { order: OfferOrder }).order).toMatchObject({ supplier: 'third', attempt: 4 });
    expect((again.data as { order: OfferOrder }).order.route).toEqual([
      ...refused,
      { attempt: 4, supplier: 'third', sku_key: key, outcome: 'accepted', error_code: null },
    ]);
    expect(creates()).toEqual([creates0[0], creates0[1], creates0[2] + 1]);
    expect(sandboxes().map((s) => held(s, shopNo))).toEqual([[], [], [`${shopNo}-4`]]);
  });

  it("the first supplier's key blocked, the others unavailable: 202 queued at the first, placed there once the block ends", async () => {
    const sources = [
      { supplier: 'main', sku_key: key },
      { supplier: 'second', sku_key: outKey },
      { supplier: 'third', sku_key: outKey },
    ];
    expect((await http().put('/internal/offers/OFF-BLK', { routing: 'priority', sources })).status).toBeLessThan(300);
    const before = requests();
    const shopNo = no('BLK');
    // (the last test: main's block, in this process, lasts a few seconds)
    const until = await t.app.relay.app.get(SupplierRegistry).get('main').budget.noteRateLimited(4_000, 'test');
    expect(until).not.toBeNull();
    const r = await place({ shop_order_no: shopNo, offer: 'OFF-BLK' });
    expect(r.status).toBe(202);
    const order = (r.data as { order: OfferOrder }).order;
    expect(order).toMatchObject({ status: 'queued', supplier: 'main', attempt: 1 });
    // nothing sent while the key is blocked, and nothing to the others
    expect(requests()).toEqual(before);
    const placed = await waitFor(
      async () => ((await http().get(`/internal/orders/${shopNo}`)).data as { order: OfferOrder }).order,
      (o) => o.status !== 'queued' && o.status !== 'submitting',
      'the queued order sent by the queue once the block ended',
      60_000,
    );
    expect(placed).toMatchObject({ supplier: 'main', attempt: 1 });
    expect(placed.upstream_order_id).not.toBeNull();
    expect(placed.route).toEqual([{ attempt: 1, supplier: 'main', sku_key: key, outcome: 'accepted', error_code: null }]);
    expect(sandboxes().map((s) => held(s, shopNo))).toEqual([[shopNo], [], []]);
  }, 90_000);
});
