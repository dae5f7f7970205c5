/**
 * Orders placed through an offer (CONTRACT §11, issue 32) over two suppliers with a sandbox each (the
 * same seeded catalog, so one sku_key exists at both): priority goes to the first source; a refusal
 * before any charge at the first moves the order to the second as a new attempt; `submit_unknown` at
 * the first never reaches the second; every source refusing is 409 `no_source_available` with nothing
 * placed, and the same body again routes it again; a ceiling below the first source's cost refuses it
 * without a request, and the first supplier's blocked key puts it after the second; concurrent orders
 * across a failover are each placed exactly once at one supplier. The sandboxes' own order lists are the proof of where orders went.
 */
import type { SandboxServer } from '../src/sandbox/sandbox.server.js';
import { SupplierRegistry } from '../src/suppliers/supplier-registry.service.js';
import type { SandboxRequestEvent } from '../src/sandbox/sandbox.types.js';
import { useAppSuite } from './support/app-suite.js';
import { waitFor } from './support/wait.js';
import type { OfferOrder, RouteView } from './support/offer-fixtures.js';

interface SkuView {
  sku_key: string;
  sku_code: string;
  cost_price: string;
  available: boolean;
}

const stockRefusal = { kind: 'coded_error' as const, operation: 'createOrder' as const, status: 409, errorCode: 'insufficient_stock' };

describe('orders through an offer', () => {
  const t = useAppSuite({
    suppliers: { second: {} },
    seed: true,
    // a hung create is given up soon, and its attempt re-sent soon after
    env: {
      UPSTREAM_TIMEOUT_MS: '2000',
      SUBMIT_UNKNOWN_RECHECK_S: '1',
      UPSTREAM_ORDER_NO_IDEMPOTENT: 'true',
      // the shop's notifications are written (to the outbox) and never delivered: read there
      SHOP_WEBHOOK_URL: 'http://127.0.0.1:9/shop-hook',
      SHOP_WEBHOOK_SECRET: 'shop-secret',
    },
  });
  let second: SandboxServer;
  let key = '';
  let code = '';
  let mainCost = '';
  let secondCost = '';
  let n = 0;
  const no = (tag: string) => `OFR-${tag}-${++n}`;
  const http = () => t.app.http;
  const place = (body: Record<string, unknown>) => http().post('/internal/orders', { quantity: 1, ...body });
  const creates = () => [t.sandbox.stats.createsReceived, second.stats.createsReceived];
  /** The orders a sandbox holds for a shop order number (its attempts' numbers are `<no>` and `<no>-<n>`). */
  const held = (s: SandboxServer, shopNo: string) =>
    s.orders().filter((o) => o.downstream_order_no === shopNo || o.downstream_order_no?.startsWith(`${shopNo}-`));

  const sku = async (supplier: string): Promise<SkuView> => {
    const r = await http().get(`/internal/catalog/skus/${encodeURIComponent(key)}`, { params: { supplier } });
    expect(r.status).toBe(200);
    return (r.data as { sku: SkuView }).sku;
  };

  beforeAll(async () => {
    second = t.supplier('second');
    // an automatic SKU both sandboxes carry, cheaper at the second
    const product = t.sandbox.catalog
      .listedProducts()
      .find((p) => p.fulfillment_type !== 'manual' && p.skus.some((s) => s.stock_status !== 'out_of_stock'))!;
    const chosen = product.skus.find((s) => s.stock_status !== 'out_of_stock')!;
    code = chosen.sku_code;
    second.catalog.setPrice(code, '1.00');
    const started = await http().post('/internal/catalog/sync', { mode: 'full', supplier: 'second' });
    expect(started.status).toBe(202);
    const runId = (started.data as { run_id: string }).run_id;
    await waitFor(
      async () => ((await http().get(`/internal/catalog/sync-runs/${runId}`)).data as { run: { status: string } }).run.status,
      (s) => s !== 'running',
      'the second supplier sync',
      60_000,
    );
    key = `${product.id}:${code}`;
    const [m, s] = [await sku('main'), await sku('second')];
    expect([m.available, s.available]).toEqual([true, true]);
    [mainCost, secondCost] = [m.cost_price, s.cost_price];
    expect(Number(secondCost)).toBeLessThan(Number(mainCost));
    const sources = [
      { supplier: 'main', sku_key: key },
      { supplier: 'second', sku_key: key },
    ];
    const put = await http().put('/internal/offers/OFF-P', { title: 'both', routing: 'priority', sources });
    expect(put.status).toBeLessThan(300);
  }, 120_000);

  it('priority: the order goes to the first source; the second sandbox gets no create', async () => {
    const before = creates();
    const shopNo = no('P');
    const r = await place({ shop_order_no: shopNo, offer: 'OFF-P' });
    expect(r.status).toBe(201);
    const order = (r.data as { order: OfferOrder }).order;
    expect(order).toMatchObject({ offer: 'OFF-P', supplier: 'main', sku_key: key, attempt: 1 });
    expect(order.route).toEqual([{ attempt: 1, supplier: 'main', sku_key: key, outcome: 'accepted', error_code: null }]);
    expect(creates()).toEqual([before[0] + 1, before[1]]);
    expect(held(t.sandbox, shopNo)).toHaveLength(1);
    expect(held(second, shopNo)).toHaveLength(0);
  });

  it('the first source out of stock at the create: placed at the second as attempt 2, the route shows both', async () => {
    const before = creates();
    const requests = [t.sandbox.stats.totalRequests, second.stats.totalRequests];
    const shopNo = no('OOS');
    t.sandbox.faults.set({ rules: [{ ...stockRefusal, times: 1 }] });
    const r = await place({ shop_order_no: shopNo, offer: 'OFF-P' });
    expect(r.status).toBe(201);
    const order = (r.data as { order: OfferOrder }).order;
    expect(order).toMatchObject({ offer: 'OFF-P', supplier: 'second', status: expect.not.stringMatching(/rejected/), attempt: 2 });
    expect(order.route).toEqual([
      { attempt: 1, supplier: 'main', sku_key: key, outcome: 'rejected', error_code: 'insufficient_stock' },
      { attempt: 2, supplier: 'second', sku_key: key, outcome: 'accepted', error_code: null },
    ]);
    expect(creates()).toEqual([before[0] + 1, before[1] + 1]);
    // requests spent: at each source the price guard's product read and one create
    expect([t.sandbox.stats.totalRequests - requests[0], second.stats.totalRequests - requests[1]]).toEqual([2, 2]);
    expect(held(t.sandbox, shopNo)).toHaveLength(0);
    expect(held(second, shopNo).map((o) => o.downstream_order_no)).toEqual([`${shopNo}-2`]);
    // the second attempt was reserved in the transaction that recorded the refusal (queued, then sent)
    const events = (await http().get(`/internal/orders/${shopNo}/events`)).data as {
      events: Array<{ from: string | null; to: string | null; detail: Record<string, unknown> | null }>;
    };
    expect(events.events).toContainEqual(
      expect.objectContaining({
        from: 'rejected',
        to: 'queued',
        detail: expect.objectContaining({ attempt: 2, failover_from: 'main', reason: 'insufficient_stock' }),
      }),
    );
    // the shop's notifications of the order name its offer, and the supplier of each step
    const notified = await t.db.query<{ offer: string; supplier: string; status: string }>(
      "SELECT payload->>'offer' AS offer, payload->>'supplier' AS supplier, payload->>'status' AS status " +
        'FROM outbox_events WHERE subject = $1 ORDER BY id',
      [shopNo],
    );
    expect(notified.map((e) => e.offer)).toEqual(notified.map(() => 'OFF-P'));
    expect(notified.find((e) => e.status === 'queued')?.supplier).toBe('second');
    // the same body again: the recorded order, nothing sent
    const again = await place({ shop_order_no: shopNo, offer: 'OFF-P' });
    expect([again.status, (again.data as { order: OfferOrder }).order.supplier]).toEqual([200, 'second']);
    expect(creates()).toEqual([before[0] + 1, before[1] + 1]);
  });

  it('the first source refuses our credentials at the create (401): placed at the second, failover upstream_auth_failed', async () => {
    const before = creates();
    const shopNo = no('AUTH');
    t.sandbox.faults.set({
      rules: [{ kind: 'coded_error', operation: 'createOrder', status: 401, errorCode: 'invalid_signature', times: 1 }],
    });
    const r = await place({ shop_order_no: shopNo, offer: 'OFF-P' });
    expect(r.status).toBe(201);
    const order = (r.data as { order: OfferOrder }).order;
    expect(order).toMatchObject({ supplier: 'second', attempt: 2 });
    expect(order.route!.map((e) => [e.supplier, e.outcome])).toEqual([
      ['main', 'rejected'],
      ['second', 'accepted'],
    ]);
    expect(creates()).toEqual([before[0] + 1, before[1] + 1]);
    expect(held(t.sandbox, shopNo)).toHaveLength(0);
    expect(held(second, shopNo)).toHaveLength(1);
    const events = (await http().get(`/internal/orders/${shopNo}/events`)).data as {
      events: Array<{ to: string | null; detail: Record<string, unknown> | null }>;
    };
    expect(events.events).toContainEqual(
      expect.objectContaining({ to: 'queued', detail: expect.objectContaining({ failover_from: 'main', reason: 'upstream_auth_failed' }) }),
    );
  });

  it('the first source hangs after committing: submit_unknown, the second gets no create, the order ends at the first', async () => {
    const before = creates();
    const shopNo = no('HANG');
    t.sandbox.faults.set({ rules: [{ kind: 'hang_after', operation: 'createOrder', times: 1 }] });
    const r = await place({ shop_order_no: shopNo, offer: 'OFF-P' });
    expect(r.status).toBe(202);
    expect((r.data as { order: OfferOrder }).order).toMatchObject({ status: 'submit_unknown', supplier: 'main' });
    expect(creates()).toEqual([before[0] + 1, before[1]]);
    // the same body again while unknown: the order waits for that attempt, nothing goes to the second
    const again = await place({ shop_order_no: shopNo, offer: 'OFF-P' });
    expect(again.status).toBe(200);
    expect(second.stats.createsReceived).toBe(before[1]);
    const upstream = held(t.sandbox, shopNo);
    expect(upstream).toHaveLength(1);
    // resolved by the relay's re-send of that attempt (the sandbox deduplicates order numbers)
    await waitFor(
      async () => ((await http().get(`/internal/orders/${shopNo}`)).data as { order: OfferOrder }).order,
      (o) => o.upstream_order_id !== null,
      'the order resolved at the first source',
    );
    const order = (await http().get(`/internal/orders/${shopNo}`)).data as { order: OfferOrder };
    expect(order.order).toMatchObject({ supplier: 'main', upstream_order_id: upstream[0].id });
    expect(order.order.route).toHaveLength(1);
    expect(held(second, shopNo)).toHaveLength(0);
    expect(second.stats.createsReceived).toBe(before[1]);
  }, 60_000);

  it('every source refuses: 409 no_source_available, nothing placed anywhere; the same body again routes it again', async () => {
    const before = creates();
    const shopNo = no('ALL');
    t.sandbox.faults.set({ rules: [{ ...stockRefusal, times: 1 }] });
    second.faults.set({ rules: [{ ...stockRefusal, times: 1 }] });
    const r = await place({ shop_order_no: shopNo, offer: 'OFF-P' });
    expect(r.status).toBe(409);
    const body = r.data as { error_code: string; order: OfferOrder; route: RouteView[] };
    expect(body.error_code).toBe('no_source_available');
    expect(body.order).toMatchObject({ status: 'rejected', offer: 'OFF-P' });
    expect(body.route.map((e) => [e.attempt, e.supplier, e.outcome, e.error_code])).toEqual([
      [1, 'main', 'rejected', 'insufficient_stock'],
      [2, 'second', 'rejected', 'insufficient_stock'],
    ]);
    expect(creates()).toEqual([before[0] + 1, before[1] + 1]);
    expect([held(t.sandbox, shopNo), held(second, shopNo)]).toEqual([[], []]);
    second.faults.reset();
    // submitted again: routed again from the first source, as attempt 3
    const again = await place({ shop_order_no: shopNo, offer: 'OFF-P' });
    expect(again.status).toBe(201);
    expect((again.data as { order: OfferOrder }).order).toMatchObject({ supplier: 'main', attempt: 3 });
    expect(held(t.sandbox, shopNo).map((o) => o.downstream_order_no)).toEqual([`${shopNo}-3`]);
    expect(held(second, shopNo)).toHaveLength(0);
  });

  it('a ceiling below the first source cost: refused by the guard, no request to it (a route attempt), placed at the second', async () => {
    // what a placement asks of the first source (its product read, its create); the poller's reads of
    // the earlier tests' orders go on meanwhile and are not this order's
    const asked: string[] = [];
    const onRequest = (e: SandboxRequestEvent) => {
      if (e.phase === 'received' && (e.operation === 'product' || e.operation === 'createOrder')) asked.push(e.operation);
    };
    t.sandbox.events.on('request', onRequest);
    const shopNo = no('CEIL');
    const r = await place({ shop_order_no: shopNo, offer: 'OFF-P', max_unit_cost: secondCost }).finally(() =>
      t.sandbox.events.off('request', onRequest),
    );
    expect(r.status).toBe(201);
    const order = (r.data as { order: OfferOrder }).order;
    expect(order).toMatchObject({ supplier: 'second', attempt: 2 });
    expect(order.route).toEqual([
      { attempt: 1, supplier: 'main', sku_key: key, outcome: 'rejected', error_code: 'price_changed' },
      { attempt: 2, supplier: 'second', sku_key: key, outcome: 'accepted', error_code: null },
    ]);
    expect(asked).toEqual([]);
    // attempt 1's number was never sent: the second holds the order under attempt 2's
    expect(held(second, shopNo).map((o) => o.downstream_order_no)).toEqual([`${shopNo}-2`]);
  });

  it('cheapest: the lower-cost source first', async () => {
    const sources = [
      { supplier: 'main', sku_key: key },
      { supplier: 'second', sku_key: key },
    ];
    expect((await http().put('/internal/offers/OFF-C', { routing: 'cheapest', sources })).status).toBeLessThan(300);
    const before = creates();
    const r = await place({ shop_order_no: no('CHEAP'), offer: 'OFF-C' });
    expect(r.status).toBe(201);
    expect((r.data as { order: OfferOrder }).order).toMatchObject({ supplier: 'second', attempt: 1 });
    expect(creates()).toEqual([before[0], before[1] + 1]);
  });

  it('bad bodies: offer with sku_code or supplier is 400 with fields; an unknown offer is 404; nothing sent', async () => {
    const before = creates();
    const both = await place({ shop_order_no: no('BAD'), offer: 'OFF-P', sku_code: key });
    expect([both.status, both.data]).toEqual([
      400,
      expect.objectContaining({ error_code: 'bad_request', fields: expect.objectContaining({ offer: expect.any(Array) }) }),
    ]);
    const withSupplier = await place({ shop_order_no: no('BAD'), offer: 'OFF-P', supplier: 'main' });
    expect([withSupplier.status, withSupplier.data]).toEqual([
      400,
      expect.objectContaining({ error_code: 'bad_request', fields: expect.objectContaining({ offer: expect.any(Array) }) }),
    ]);
    const neither = await place({ shop_order_no: no('BAD') });
    expect([neither.status, neither.data]).toEqual([
      400,
      expect.objectContaining({ error_code: 'bad_request', fields: expect.objectContaining({ sku_code: expect.any(Array) }) }),
    ]);
    const unknown = await place({ shop_order_no: no('BAD'), offer: 'NO-SUCH-OFFER' });
    expect([unknown.status, (unknown.data as { error_code: string }).error_code]).toEqual([404, 'offer_not_found']);
    expect(creates()).toEqual(before);
  });

  it('20 concurrent orders of one offer across a failover: each placed exactly once at exactly one supplier', async () => {
    // the first source refuses the first 7 creates it gets
    t.sandbox.faults.set({ rules: [{ ...stockRefusal, times: 7 }] });
    const numbers = Array.from({ length: 20 }, () => no('RUN'));
    const answers = await Promise.all(numbers.map((shopNo) => place({ shop_order_no: shopNo, offer: 'OFF-P' })));
    expect(answers.map((a) => a.status)).toEqual(numbers.map(() => 201));
    let failedOver = 0;
    for (const [i, shopNo] of numbers.entries()) {
      const order = (answers[i].data as { order: OfferOrder }).order;
      const at = [held(t.sandbox, shopNo), held(second, shopNo)];
      expect(at[0].length + at[1].length).toBe(1);
      expect(order.supplier).toBe(at[0].length === 1 ? 'main' : 'second');
      expect(order.upstream_order_id).toBe((at[0][0] ?? at[1][0]).id);
      if (order.supplier === 'second') failedOver++;
    }
    expect(failedOver).toBe(7);
  }, 60_000);
  it("the first supplier's key blocked: the order goes to the second at once", async () => {
    const budget = t.app.relay.app.get(SupplierRegistry).get('main').budget;
    // (the last test: the block of this process lasts its few seconds)
    await budget.noteRateLimited(5_000, 'test');
    const requests = t.sandbox.stats.totalRequests;
    const shopNo = no('BLOCK');
    const r = await place({ shop_order_no: shopNo, offer: 'OFF-P' });
    expect(r.status).toBe(201);
    expect((r.data as { order: OfferOrder }).order).toMatchObject({ supplier: 'second', attempt: 1 });
    expect(t.sandbox.stats.totalRequests).toBe(requests);
    expect(held(second, shopNo)).toHaveLength(1);
  });
});
