/**
 * What the shop and the operator see of an offer order's route (CONTRACT §7, §11, issue 32), over two
 * suppliers with a sandbox each: the shop's webhooks of a failed-over order carry its offer, supplier,
 * SKU and route, each showing the attempts as the change it announces left them (the refusal of the
 * first source, then the second's attempt), while a direct order's webhooks stay as they were; and
 * `GET /internal/offer-failovers` counts the failovers recorded in the database by reason.
 */
import type { SandboxServer } from '../src/sandbox/sandbox.server.js';
import { useAppSuite } from './support/app-suite.js';
import { waitForOrder } from './support/child-app.js';
import { FakeShop, type ReceivedWebhook } from './support/fake-shop.js';
import { waitFor } from './support/wait.js';
import type { RouteView } from './support/offer-fixtures.js';

const SECRET = 'surface-webhook-secret';

interface StatusChange {
  event: string;
  subject: string;
  data: Record<string, unknown> & {
    status: string;
    previous_status: string | null;
    supplier: string;
    offer: string | null;
    attempt: number;
    sequence: number;
    route?: RouteView[];
  };
}
interface Failovers {
  ok: boolean;
  since: string;
  total: number;
  reasons: Array<{ reason: string; count: number }>;
}

const stockRefusal = { kind: 'coded_error' as const, operation: 'createOrder' as const, status: 409, errorCode: 'insufficient_stock' };

describe('offer orders: the route in webhooks, failovers by reason', () => {
  const shop = new FakeShop();
  const t = useAppSuite({
    suppliers: { second: {} },
    seed: true,
    env: async () => {
      await shop.start('/shop/hooks');
      return { SHOP_WEBHOOK_URL: shop.url, SHOP_WEBHOOK_SECRET: SECRET };
    },
  });
  afterAll(() => shop.stop());
  let second: SandboxServer;
  let key = '';
  let directCode = '';
  let n = 0;
  const no = (tag: string) => `SURF-${tag}-${++n}`;
  const http = () => t.app.http;
  const place = (body: Record<string, unknown>) => http().post('/internal/orders', { quantity: 1, ...body });
  const creates = () => [t.sandbox.stats.createsReceived, second.stats.createsReceived];
  /** The order webhooks the shop received (2xx) for `shopNo`, in the order of their sequence. */
  const hooks = (shopNo: string): Array<ReceivedWebhook & { parsed: StatusChange }> =>
    shop.received
      .filter((h) => h.status < 300)
      .map((h) => ({ ...h, parsed: JSON.parse(h.body) as StatusChange }))
      .filter((h) => h.parsed.event === 'order.status_changed' && h.parsed.subject === shopNo)
      .sort((a, b) => a.parsed.data.sequence - b.parsed.data.sequence);
  const failovers = async (params: Record<string, string> = {}): Promise<Failovers> => {
    const r = await http().get('/internal/offer-failovers', { params });
    expect(r.status).toBe(200);
    return r.data as Failovers;
  };
  const countOf = (f: Failovers, reason: string) => f.reasons.find((r) => r.reason === reason)?.count ?? 0;

  beforeAll(async () => {
    second = t.supplier('second');
    const product = t.sandbox.catalog
      .listedProducts()
      .find((p) => p.fulfillment_type !== 'manual' && p.skus.some((s) => s.stock_status !== 'out_of_stock'))!;
    const chosen = product.skus.find((s) => s.stock_status !== 'out_of_stock')!;
    directCode = chosen.sku_code;
    const started = await http().post('/internal/catalog/sync', { mode: 'full', supplier: 'second' });
    expect(started.status).toBe(202);
    const runId = (started.data as { run_id: string }).run_id;
    await waitFor(
      async () => ((await http().get(`/internal/catalog/sync-runs/${runId}`)).data as { run: { status: string } }).run.status,
      (s) => s !== 'running',
      'the second supplier sync',
      60_000,
    );
    key = `${product.id}:${chosen.sku_code}`;
    const sources = [
      { supplier: 'main', sku_key: key },
      { supplier: 'second', sku_key: key },
    ];
    const put = await http().put('/internal/offers/SURF-P', { title: 'both', routing: 'priority', sources });
    expect(put.status).toBeLessThan(300);
  }, 120_000);

  it("a failed-over order's webhooks carry its offer, supplier, SKU and route, each as the change left the attempts", async () => {
    const before = creates();
    const shopNo = no('FO');
    t.sandbox.faults.set({ rules: [{ ...stockRefusal, times: 1 }] });
    const r = await place({ shop_order_no: shopNo, offer: 'SURF-P' });
    expect(r.status).toBe(201);
    expect(creates()).toEqual([before[0] + 1, before[1] + 1]);
    await waitForOrder(http(), shopNo, (o) => o.status !== 'submitting' && o.status !== 'queued');
    const answered = (await http().get(`/internal/orders/${shopNo}`)).data as { order: { route: RouteView[] } };
    const events = (await http().get(`/internal/orders/${shopNo}/events`)).data as {
      events: Array<{ from: string | null; to: string | null }>;
    };
    const changes = events.events.filter((e) => e.to !== null && e.from !== e.to);
    await waitFor(
      () => hooks(shopNo).length,
      (count) => count >= changes.length,
      'one webhook per status change of the order',
    );
    const sent = hooks(shopNo).map((h) => h.parsed.data);
    // (the order may have moved on since its events were read: their webhooks come after)
    expect(sent.slice(0, changes.length).map((d) => [d.previous_status, d.status])).toEqual(changes.map((e) => [e.from, e.to]));
    for (const d of sent) expect(d).toMatchObject({ offer: 'SURF-P', sku_key: key });

    const first: RouteView = { attempt: 1, supplier: 'main', sku_key: key, outcome: 'submitting', error_code: null };
    const refused: RouteView = { ...first, outcome: 'rejected', error_code: 'insufficient_stock' };
    const secondAt = (outcome: string): RouteView => ({ attempt: 2, supplier: 'second', sku_key: key, outcome, error_code: null });
    const step = (from: string | null, to: string) => sent.find((d) => d.previous_status === from && d.status === to);
    expect(step(null, 'submitting')).toMatchObject({ supplier: 'main', attempt: 1, route: [first] });
    // the attempt's refusal is written in the statement of the notification: the route shows it
    expect(step('submitting', 'rejected')).toMatchObject({ supplier: 'main', attempt: 1, route: [refused] });
    expect(step('rejected', 'queued')).toMatchObject({ supplier: 'second', attempt: 2, route: [refused, secondAt('queued')] });
    expect(step('queued', 'submitting')).toMatchObject({ supplier: 'second', attempt: 2, route: [refused, secondAt('submitting')] });
    // the create's answer at the second, and every change after: both attempts, the second accepted
    const after = sent.slice(sent.indexOf(step('queued', 'submitting')!) + 1);
    expect(after.length).toBeGreaterThan(0);
    for (const d of after) expect(d).toMatchObject({ supplier: 'second', attempt: 2, route: [refused, secondAt('accepted')] });
    // the last webhook's route is the order's, as the API answers it
    expect(answered.order.route).toEqual([refused, secondAt('accepted')]);
    expect(sent.at(-1)!.route).toEqual(answered.order.route);
    for (const h of hooks(shopNo)) expect(shop.verify(h, SECRET)).toEqual({ ok: true });
  });

  it("a direct order's webhooks are as before: no route and no sku_key", async () => {
    const shopNo = no('DIRECT');
    const r = await place({ shop_order_no: shopNo, sku_code: directCode, supplier: 'main' });
    expect(r.status).toBe(201);
    await waitFor(
      () => hooks(shopNo).length,
      (count) => count >= 2,
      "the direct order's first webhooks",
    );
    for (const h of hooks(shopNo)) {
      expect(h.parsed.data).toMatchObject({ supplier: 'main', offer: null });
      expect(Object.keys(h.parsed.data).sort()).toEqual(
        ['shop_order_no', 'supplier', 'offer', 'status', 'previous_status', 'source', 'attempt', 'at', 'sequence'].sort(),
      );
    }
  });

  it('counts the failovers by reason from the database: a new failover is counted under its reason', async () => {
    const before = await failovers();
    // at least the first test's
    expect(countOf(before, 'insufficient_stock')).toBeGreaterThanOrEqual(1);
    expect(before.total).toBe(before.reasons.reduce((s, x) => s + x.count, 0));

    t.sandbox.faults.set({ rules: [{ ...stockRefusal, times: 1 }] });
    expect((await place({ shop_order_no: no('FO2'), offer: 'SURF-P' })).status).toBe(201);
    t.sandbox.faults.set({
      rules: [{ kind: 'coded_error', operation: 'createOrder', status: 401, errorCode: 'invalid_signature', times: 1 }],
    });
    expect((await place({ shop_order_no: no('FO3'), offer: 'SURF-P' })).status).toBe(201);
    // an order placed at its first source is no failover
    expect((await place({ shop_order_no: no('NOFO'), offer: 'SURF-P' })).status).toBe(201);

    const after = await failovers();
    expect(after.total).toBe(before.total + 2);
    expect(countOf(after, 'insufficient_stock')).toBe(countOf(before, 'insufficient_stock') + 1);
    expect(countOf(after, 'upstream_auth_failed')).toBe(countOf(before, 'upstream_auth_failed') + 1);
    // a window that starts later counts none of these
    expect((await failovers({ since: new Date(Date.now() + 3600_000).toISOString() })).total).toBe(0);
    expect((await failovers({ since: '2000-01-01T00:00:00Z' })).total).toBe(after.total);
  });

  it('refuses a since that is no date-time, with its field', async () => {
    const r = await http().get('/internal/offer-failovers', { params: { since: 'yesterday' } });
    expect(r.status).toBe(400);
    expect(r.data).toMatchObject({ ok: false, error_code: 'bad_request', fields: { since: expect.any(Array) } });
  });
});
