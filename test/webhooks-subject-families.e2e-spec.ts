/**
 * Events are delivered in order per subject, and the families of events keep their own order: a shop
 * order number may equal a sku_code (both are the shop's and the upstream's strings), and a SKU event
 * the shop keeps refusing must not hold back that order's status webhooks (nor the other way round).
 * Before, one subject string was one queue whatever the event.
 */
import { useAppSuite } from './support/app-suite.js';
import { FakeShop } from './support/fake-shop.js';
import { waitFor } from './support/wait.js';

describe('webhook subjects shared by an order and a SKU', () => {
  const shop = new FakeShop();
  const suite = useAppSuite({
    sandbox: { catalog: { products: 1 } },
    env: async () => {
      await shop.start();
      return { SHOP_WEBHOOK_URL: shop.url, SHOP_WEBHOOK_SECRET: 'sf-families-secret' };
    },
  });
  afterAll(async () => {
    await shop.stop();
  });

  it('a refused SKU event does not hold back the order events of the same string, and each family stays in order', async () => {
    const { db } = suite;
    shop.respond = (r) => (r.event.startsWith('sku.') ? 500 : 200);
    await db.query(
      `INSERT INTO outbox_events (event_type, subject, payload) VALUES
         ('sku.price_changed', 'SAME-1', '{"event":"sku.price_changed","n":1}'::jsonb),
         ('order.status_changed', 'SAME-1', '{"event":"order.status_changed","n":2}'::jsonb),
         ('sku.stock_changed', 'SAME-1', '{"event":"sku.stock_changed","n":3}'::jsonb),
         ('order.status_changed', 'SAME-1', '{"event":"order.status_changed","n":4}'::jsonb)`,
    );
    await waitFor(
      () => shop.received.filter((r) => r.event === 'order.status_changed' && r.status === 200).length,
      (n) => n === 2,
      'both order events delivered',
    );
    const seen = shop.received.map((r) => [r.event, (JSON.parse(r.body) as { data: { n: number } }).data.n, r.status]);
    // the order events in their order; the SKU family held at its first (refused) event
    expect(seen.filter(([e]) => e === 'order.status_changed')).toEqual([
      ['order.status_changed', 2, 200],
      ['order.status_changed', 4, 200],
    ]);
    expect(seen.filter(([e]) => String(e).startsWith('sku.')).every(([, n]) => n === 1)).toBe(true);
    // the shop has answered 200; the relay records the delivery right after (not before the answer)
    const statuses = await waitFor(
      async () =>
        (await db.query<{ status: string }>(`SELECT status FROM outbox_events WHERE subject = 'SAME-1' ORDER BY id`)).map((r) => r.status),
      (s) => s[1] === 'delivered' && s[3] === 'delivered',
      'both order events recorded delivered',
    );
    expect(statuses).toEqual(['pending', 'delivered', 'pending', 'delivered']);
  }, 30_000);
});
