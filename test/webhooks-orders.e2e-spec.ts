/**
 * CONTRACT §7 for orders: every status change of an order placed through the API reaches the shop as
 * a signed webhook from the outbox, in order, one per change: the reservation's, the create answer's
 * (written with the outcome in one statement) and the poller's.
 */
import { useAppSuite } from './support/app-suite.js';
import { waitForOrder } from './support/child-app.js';
import { FakeShop } from './support/fake-shop.js';
import { waitFor } from './support/wait.js';

const SECRET = 'order-webhook-secret';

interface StatusChange {
  event: string;
  subject: string;
  data: { status: string; previous_status: string | null; source: string };
}

describe('order status changes as shop webhooks', () => {
  const shop = new FakeShop();
  const suite = useAppSuite({
    sandbox: { catalog: { products: 2 }, timetable: { paidMs: 30, fulfillingMs: 60, deliveredMs: 100, completedMs: null } },
    prepare: (sandbox) => sandbox.catalog.addProduct({ skus: [{ skuCode: 'WH-1', price: '2.00' }] }),
    env: async () => {
      await shop.start('/shop/hooks');
      return { SHOP_WEBHOOK_URL: shop.url, SHOP_WEBHOOK_SECRET: SECRET, ORDER_POLL_BASE_MS: '50', ORDER_POLL_MAX_MS: '200' };
    },
    seed: true,
  });
  afterAll(async () => {
    await shop.stop();
  });

  it('sends each status change of an order, in order, signed', async () => {
    const { app } = suite;
    const placed = await app.http.post('/internal/orders', { shop_order_no: 'WH-ORDER', sku_code: 'WH-1', quantity: 1 });
    expect(placed.status).toBe(201);
    await waitForOrder(app.http, 'WH-ORDER', (o) => o.status === 'delivered');

    const events = (await app.http.get('/internal/orders/WH-ORDER/events')).data as {
      events: Array<{ source: string; from: string | null; to: string | null }>;
    };
    const changes = events.events.filter((e) => e.to !== null && e.from !== e.to);
    const mine = () =>
      shop.received
        .map((h) => ({ ...h, parsed: JSON.parse(h.body) as StatusChange }))
        .filter((h) => h.parsed.event === 'order.status_changed' && h.parsed.subject === 'WH-ORDER');
    await waitFor(
      () => mine().length,
      (n) => n === changes.length,
      'one webhook per status change',
    );
    expect(mine().map((h) => [h.parsed.data.previous_status, h.parsed.data.status, h.parsed.data.source])).toEqual(
      changes.map((e) => [e.from, e.to, e.source]),
    );
    expect(mine()[0].parsed.data).toMatchObject({ previous_status: null, status: 'submitting', source: 'api', supplier: 'main' });
    expect(mine()[1].parsed.data).toMatchObject({ previous_status: 'submitting', source: 'api' }); // the create answer
    expect(mine().at(-1)!.parsed.data.status).toBe('delivered');

    for (const h of mine()) {
      const verified = shop.verify(h, SECRET);
      expect(verified).toEqual({ ok: true });
    }
  });
});
