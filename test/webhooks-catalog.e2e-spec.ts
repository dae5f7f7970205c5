/**
 * CONTRACT §7 for the catalog: a change of price, stock or listing found by a sync reaches the
 * shop as a signed webhook from the outbox, written in the sync's own transaction; a sync that
 * changes nothing sends nothing; a stock change carries the old and new stock.
 */
import type { SandboxServer } from '../src/sandbox/sandbox.server.js';
import { useAppSuite } from './support/app-suite.js';
import { seedCatalog } from './support/child-app.js';
import { FakeShop } from './support/fake-shop.js';
import type { TestApp, TestDatabase } from './support/test-app.js';
import { waitFor } from './support/wait.js';

const SECRET = 'catalog-webhook-secret';

describe('catalog changes as shop webhooks', () => {
  let db: TestDatabase;
  let sandbox: SandboxServer;
  let app: TestApp;
  const shop = new FakeShop();
  const hooks = shop.received;
  const pending = async () => (await db.query<{ n: number }>("SELECT count(*)::int AS n FROM outbox_events WHERE status = 'pending'"))[0].n;
  const outboxCount = async () =>
    (await db.query<{ n: number }>("SELECT count(*)::int AS n FROM outbox_events WHERE event_type LIKE 'sku.%'"))[0].n;

  const suite = useAppSuite({
    sandbox: { catalog: { products: 12 } },
    env: async () => {
      await shop.start('/shop/hooks');
      return { SHOP_WEBHOOK_URL: shop.url, SHOP_WEBHOOK_SECRET: SECRET };
    },
    seed: true,
  });
  beforeAll(() => {
    ({ db, sandbox, app } = suite);
  });
  afterAll(async () => {
    await shop.stop();
  });

  it('delivers a price change and a delisting, signed, and nothing for a sync without change', async () => {
    const { sku, product } = sandbox.catalog.findSku({ fulfillmentType: 'auto' })!;
    const other = sandbox.catalog.findSku({ skip: 3 })!;
    expect(other.product.id).not.toBe(product.id); // the delisted product is another one
    // The first sync's own events (SKUs created) are all delivered before the change.
    await waitFor(pending, (n) => n === 0, "the first sync's webhooks");
    const mark = hooks.length;
    const since = () => hooks.slice(mark);
    sandbox.catalog.setPrice(sku.sku_code, '987.65');
    sandbox.catalog.delistProduct(other.product.id);
    await seedCatalog(app.http);

    const price = await waitFor(
      () => since().find((h) => h.event === 'sku.price_changed' && h.subject === sku.sku_code),
      Boolean,
      'the price webhook',
    );
    expect(JSON.parse(price!.body)).toMatchObject({ event: 'sku.price_changed', subject: sku.sku_code });
    expect(price!.body).toContain('987.65');
    const delisted = other.product.skus.map((s) => s.sku_code);
    await waitFor(
      () => since().filter((h) => h.event === 'sku.listing_changed' && delisted.includes(h.subject)).length,
      (n) => n === delisted.length,
      'the listing webhooks',
    );

    const verified = shop.verify(price!, SECRET);
    expect(verified).toEqual({ ok: true });

    const before = await outboxCount();
    await seedCatalog(app.http);
    expect(await outboxCount()).toBe(before);
  });

  it('delivers a stock change with the SKU code and the old and new stock, signed', async () => {
    const { sku, product } = sandbox.catalog.findSku({ skip: 1 })!;
    await waitFor(pending, (n) => n === 0, 'the earlier webhooks');
    // The stock as the relay holds it before the change: what the event's old_* must carry.
    const local = await app.http.get(`/internal/catalog/skus/${sku.sku_code}`);
    expect(local.status).toBe(200);
    const held = (local.data as { sku: { stock_status: string; stock_quantity: number; listed: boolean } }).sku;
    expect(held).toMatchObject({ stock_status: sku.stock_status, stock_quantity: sku.stock_quantity, listed: true });
    const [status, quantity] = held.stock_status === 'low_stock' ? (['in_stock', 42] as const) : (['low_stock', 3] as const);
    expect(quantity).not.toBe(held.stock_quantity);

    const mark = hooks.length;
    const since = () => hooks.slice(mark);
    sandbox.catalog.setStock(sku.sku_code, status, quantity);
    await seedCatalog(app.http);

    const stock = await waitFor(
      () => since().find((h) => h.event === 'sku.stock_changed' && h.subject === sku.sku_code),
      Boolean,
      'the stock webhook',
    );
    const body = JSON.parse(stock!.body) as {
      id: string;
      event: string;
      subject: string;
      created_at: string;
      data: Record<string, unknown>;
    };
    expect(body).toMatchObject({ id: stock!.id, event: 'sku.stock_changed', subject: sku.sku_code });
    expect(new Date(body.created_at).toISOString()).toBe(body.created_at);
    expect(body.data).toEqual({
      supplier: 'main',
      sku_code: sku.sku_code,
      upstream_sku_id: sku.id,
      product_id: product.id,
      stock_status: status,
      stock_quantity: quantity,
      old_stock_status: held.stock_status,
      old_stock_quantity: held.stock_quantity,
      available: true,
    });
    expect(shop.verify(stock!, SECRET)).toEqual({ ok: true });
    // Only the stock moved: no price or listing event for this SKU.
    await waitFor(pending, (n) => n === 0, "the stock sync's webhooks");
    expect(since().filter((h) => h.subject === sku.sku_code && h.event !== 'sku.stock_changed')).toEqual([]);
    expect(
      since()
        .filter((h) => h.subject === sku.sku_code && h.event === 'sku.stock_changed')
        .every((h) => h.id === stock!.id),
    ).toBe(true);
  });
});
