/**
 * CONTRACT §7 for the catalog: a change of price, stock or listing found by a sync reaches the
 * shop as a signed webhook from the outbox, written in the sync's own transaction; a sync that
 * changes nothing sends nothing.
 */
import type { SandboxServer } from '../src/sandbox/sandbox.server.js';
import { seedCatalog } from './support/child-app.js';
import { FakeShop } from './support/fake-shop.js';
import { openTestDatabase, startSandbox, startTestApp, type TestApp, type TestDatabase } from './support/test-app.js';
import { waitFor } from './support/wait.js';

const SECRET = 'catalog-webhook-secret';

describe('catalog changes as shop webhooks', () => {
  let db: TestDatabase;
  let sandbox: SandboxServer;
  let app: TestApp;
  const shop = new FakeShop();
  const hooks = shop.received;
  const pending = async () => (await db.query<{ n: number }>("SELECT count(*)::int AS n FROM outbox_events WHERE status = 'pending'"))[0].n;
  const outboxCount = async () => (await db.query<{ n: number }>("SELECT count(*)::int AS n FROM outbox_events WHERE event_type LIKE 'sku.%'"))[0].n;

  beforeAll(async () => {
    await shop.start('/shop/hooks');
    db = await openTestDatabase();
    sandbox = await startSandbox({ catalog: { products: 12 } });
    app = await startTestApp(db, sandbox, { SHOP_WEBHOOK_URL: shop.url, SHOP_WEBHOOK_SECRET: SECRET });
    await seedCatalog(app.http);
  });
  afterAll(async () => {
    await app.close();
    await sandbox.stop();
    await db.close();
    await shop.stop();
  });

  it('delivers a price change and a delisting, signed, and nothing for a sync without change', async () => {
    const { sku, product } = sandbox.catalog.findSku({ fulfillmentType: 'auto' })!;
    const other = sandbox.catalog.findSku({ skip: 3 })!;
    expect(other.product.id).not.toBe(product.id); // the delisted product is another one
    // The first sync's own events (SKUs created) are all delivered before the change.
    await waitFor(pending, (n) => n === 0, 'the first sync\'s webhooks');
    const mark = hooks.length;
    const since = () => hooks.slice(mark);
    sandbox.catalog.setPrice(sku.sku_code, '987.65');
    sandbox.catalog.delistProduct(other.product.id);
    await seedCatalog(app.http);

    const price = await waitFor(() => since().find((h) => h.event === 'sku.price_changed' && h.subject === sku.sku_code), Boolean, 'the price webhook');
    expect(JSON.parse(price!.body)).toMatchObject({ event: 'sku.price_changed', subject: sku.sku_code });
    expect(price!.body).toContain('987.65');
    const delisted = other.product.skus.map((s) => s.sku_code);
    await waitFor(() => since().filter((h) => h.event === 'sku.listing_changed' && delisted.includes(h.subject)).length, (n) => n === delisted.length, 'the listing webhooks');

    const verified = shop.verify(price!, SECRET);
    expect(verified).toEqual({ ok: true });

    const before = await outboxCount();
    await seedCatalog(app.http);
    expect(await outboxCount()).toBe(before);
  });
});
