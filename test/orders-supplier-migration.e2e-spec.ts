/**
 * Migration 20261129132000 (orders and callbacks per supplier): an upstream order id is unique within
 * a supplier, not across them (each supplier numbers its own orders), and a callback body is a
 * duplicate within the supplier whose URL it reached; the order found by an upstream id is the named
 * supplier's. Its down migration puts the global uniqueness back; the rows are kept both ways.
 */
import { createRelayApp, type RelayApp } from '../src/app.factory.js';
import { loadConfig } from '../src/config/app-config.js';
import { migrateDown, migrateUp } from '../src/database/migrator.js';
import { OrderReads } from '../src/orders/order-reads.repository.js';
import { OrderWrites } from '../src/orders/order-writes.repository.js';
import { reserveOrder } from './support/reserved-order.js';
import { openTestDatabase, testEnv, type TestDatabase } from './support/test-app.js';

const VERSION = '20261129132000';

describe('migration 20261129132000: orders and callbacks per supplier', () => {
  let db: TestDatabase;
  let relay: RelayApp | null = null;

  beforeAll(async () => {
    db = await openTestDatabase();
    const config = loadConfig({
      ...testEnv(null, { UPSTREAM_BASE_URL: 'http://127.0.0.1:9/api/v1/upstream', UPSTREAM_API_KEY: 'k', UPSTREAM_API_SECRET: 's' }),
      DATABASE_URL: db.url,
    });
    config.workers = false;
    relay = await createRelayApp(config, { endpoint: db.endpoint, logger: false });
  });
  afterAll(async () => {
    await relay?.close();
    await db?.close();
  });

  const inbox = (supplier: string, sha: string) =>
    db.query(
      `INSERT INTO callback_inbox (supplier, body_sha256, upstream_order_id, reported_status, next_try_at, received_at)
       VALUES ($1, $2, 42, 'paid', now(), now())
       ON CONFLICT (supplier, body_sha256) DO UPDATE SET duplicates = callback_inbox.duplicates + 1 RETURNING duplicates`,
      [supplier, sha],
    );

  it('takes one upstream order id at two suppliers, and finds each by its supplier; down puts the global key back', async () => {
    const repo = relay!.app.get(OrderWrites);
    const reads = relay!.app.get(OrderReads);
    const a = await reserveOrder(repo, 'MIG-A', 60_000, { supplier: 'main' });
    const b = await reserveOrder(repo, 'MIG-B', 60_000, { supplier: 'second' });
    const c = await reserveOrder(repo, 'MIG-C', 60_000, { supplier: 'main' });
    await db.query('UPDATE orders SET upstream_order_id = 42 WHERE id = ANY($1::bigint[])', [[a.order.id, b.order.id]]);
    await expect(db.query('UPDATE orders SET upstream_order_id = 42 WHERE id = $1', [c.order.id])).rejects.toThrow(/unique/i);
    expect((await reads.findByUpstreamId('main', 42))?.shopOrderNo).toBe('MIG-A');
    expect((await reads.findByUpstreamId('second', 42))?.shopOrderNo).toBe('MIG-B');
    expect(await reads.findByUpstreamId('third', 42)).toBeNull();
    // one body at two suppliers: two rows; again at one: a duplicate of its row
    expect(await inbox('main', 'sha-1')).toEqual([{ duplicates: 0 }]);
    expect(await inbox('second', 'sha-1')).toEqual([{ duplicates: 0 }]);
    expect(await inbox('second', 'sha-1')).toEqual([{ duplicates: 1 }]);

    await relay!.close();
    relay = null;
    // down (the migrations after it first): the second supplier's rows keep theirs apart from main's
    await db.query("UPDATE orders SET upstream_order_id = 43 WHERE shop_order_no = 'MIG-B'");
    await db.query("DELETE FROM callback_inbox WHERE supplier = 'second'");
    const [{ n }] = await db.query<{ n: string | number }>('SELECT count(*) AS n FROM schema_migrations WHERE version >= $1', [VERSION]);
    const reverted = await migrateDown(db.url, Number(n));
    expect(reverted.at(-1)).toBe(`${VERSION}_orders_per_supplier`);
    await expect(db.query("UPDATE orders SET upstream_order_id = 42 WHERE shop_order_no = 'MIG-B'")).rejects.toThrow(/unique/i);
    expect(await db.query('SELECT shop_order_no, supplier FROM orders ORDER BY shop_order_no')).toEqual([
      { shop_order_no: 'MIG-A', supplier: 'main' },
      { shop_order_no: 'MIG-B', supplier: 'second' },
      { shop_order_no: 'MIG-C', supplier: 'main' },
    ]);
    // and up again
    await migrateUp(db.url);
    await db.query("UPDATE orders SET upstream_order_id = 42 WHERE shop_order_no = 'MIG-B'");
    expect(await db.query<{ n: number }>('SELECT count(*)::int AS n FROM orders WHERE upstream_order_id = 42')).toEqual([{ n: 2 }]);
  });
});
