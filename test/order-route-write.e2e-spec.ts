/**
 * OrderTx.writeWithRoute, on both databases: a write that shows an order's route (an offer order's
 * shop notification) goes in the statement of the writes held with it, as a plain held write does
 * (no statement or exchange of its own, in a transaction and from a snapshot), and its route shows
 * the attempt updates sent in that same statement, which the statement's own reads of
 * `order_attempts` do not see.
 */
import type { Pool, PoolClient } from 'pg';
import { DataSource } from 'typeorm';
import type { AppConfig } from '../src/config/app-config.js';
import { OutboxWriter } from '../src/notifications/outbox.writer.js';
import { ORDER_ROUTE, type OrderSnapshot, type OrderTx } from '../src/orders/order-tx.js';
import { OrderWrites } from '../src/orders/order-writes.repository.js';
import { reserveOrder } from './support/reserved-order.js';
import { openTestDatabase, type TestDatabase } from './support/test-database.js';

interface RouteView {
  attempt: number;
  supplier: string;
  outcome: string;
  error_code: string | null;
}

describe('an outbox row showing the route, written with the held writes', () => {
  let db: TestDatabase;
  let ds: DataSource;
  let repo: OrderWrites;
  /** ReadyForQuery messages (one per exchange) on the pool's one connection. */
  let exchanges = 0;
  let n = 0;
  const outbox = new OutboxWriter({ shopWebhook: { url: 'http://127.0.0.1:9/hook', secret: 's', maxAttempts: 3 } } as AppConfig);

  beforeAll(async () => {
    db = await openTestDatabase();
    ds = new DataSource({ type: 'postgres', url: db.url, poolSize: 1 });
    await ds.initialize();
    const pool = (ds.driver as unknown as { master: Pool }).master;
    const count = (client: PoolClient) =>
      (client as unknown as { connection: { on(e: string, f: () => void): void } }).connection.on('readyForQuery', () => exchanges++);
    pool.on('connect', count);
    const open = await pool.connect();
    count(open);
    open.release();
    repo = new OrderWrites(ds);
  });
  afterAll(async () => {
    await ds?.destroy();
    await db?.close();
  });

  /** The order's notification: its route computed by the statement when `routed`. */
  const notice = (snap: OrderSnapshot, routed: boolean) =>
    outbox.insert([
      {
        type: 'order.status_changed',
        subject: snap.order.shopOrderNo,
        payload: { shop_order_no: snap.order.shopOrderNo, status: 'rejected' },
        ...(routed ? { computed: { route: ORDER_ROUTE } } : {}),
      },
    ])!;

  /** What a refusal's outcome writes: the attempt, the notification, the order (which carries the held writes). */
  const refuse = (snap: OrderSnapshot, routed: boolean) => async (tx: OrderTx) => {
    const locked = await tx.lockOrderAndAttempt(snap.order.id, snap.attempt.attemptNo);
    if (!locked) throw new Error('gone');
    await tx.updateAttempt(locked.attempt.id, { status: 'rejected', error_code: 'insufficient_stock', sending_until: null });
    const w = notice(snap, routed);
    if (routed) await tx.writeWithRoute(locked.order.id, w.sql, w.params);
    else await tx.write(w.sql, w.params);
    return tx.updateOrder(locked.order, { status: 'rejected', error_code: 'insufficient_stock' });
  };

  const sent = async (shopOrderNo: string) =>
    db.query<{ payload: { status: string; route?: RouteView[] } }>('SELECT payload FROM outbox_events WHERE subject = $1 ORDER BY id', [
      shopOrderNo,
    ]);
  const refused: RouteView = { attempt: 1, supplier: 'main', outcome: 'rejected', error_code: 'insufficient_stock' };

  it('in a transaction: as many exchanges as a plain held write, and the route shows the attempt updated with it', async () => {
    const [plain, routed] = [await reserveOrder(repo, `RW-${++n}`), await reserveOrder(repo, `RW-${++n}`)];
    let start = exchanges;
    await repo.transaction(refuse(plain, false));
    const plainExchanges = exchanges - start;
    start = exchanges;
    await repo.transaction(refuse(routed, true));
    expect(exchanges - start).toBe(plainExchanges);

    expect((await sent(plain.order.shopOrderNo)).map((r) => r.payload)).toEqual([
      { event: 'order.status_changed', shop_order_no: plain.order.shopOrderNo, status: 'rejected' },
    ]);
    const [row] = await sent(routed.order.shopOrderNo);
    expect(row.payload.route).toEqual([expect.objectContaining(refused)]);
  });

  it('from a snapshot: the one statement, the route showing the attempt it updates', async () => {
    const snap = await reserveOrder(repo, `RW-${++n}`);
    const start = exchanges;
    const order = await repo.fromSnapshot(snap, refuse(snap, true));
    expect(order?.status).toBe('rejected');
    expect(exchanges - start).toBe(1);
    const [row] = await sent(snap.order.shopOrderNo);
    expect(row.payload.route).toEqual([expect.objectContaining(refused)]);
  });

  it('outside a transaction, and with no attempt update beside it: the attempts as stored', async () => {
    const snap = await reserveOrder(repo, `RW-${++n}`);
    await repo.autocommit(async (tx) => {
      const w = notice(snap, true);
      await tx.writeWithRoute(snap.order.id, w.sql, w.params);
    });
    const [row] = await sent(snap.order.shopOrderNo);
    expect(row.payload.route).toEqual([expect.objectContaining({ ...refused, outcome: 'submitting', error_code: null })]);
  });
});
