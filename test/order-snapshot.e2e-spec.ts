/**
 * The optimistic one-statement write of an outcome (OrderWrites.fromSnapshot), on both databases:
 * it writes everything at once when neither the order nor its attempt changed since the reservation,
 * and writes nothing at all (no attempt update, no event, no side effect) when either did, whether
 * the change was committed before it or by a transaction it had to wait for; work that needs more
 * than one statement is refused before anything is sent. And the locks a transaction takes on an
 * order see what the transaction they waited for committed (a refund, which a resubmission and a
 * second refund check).
 */
import { DataSource } from 'typeorm';
import type { Pool } from 'pg';
import type { OrderRecord } from '../src/orders/order.records.js';
import { SnapshotUnusable, type OrderSnapshot, type OrderTx } from '../src/orders/order-tx.js';
import { OrderWrites } from '../src/orders/order-writes.repository.js';
import { reserveOrder } from './support/reserved-order.js';
import { waitsForLock } from './support/db-waits.js';
import { openTestDatabase, startTestApp, type TestApp, type TestDatabase } from './support/test-app.js';

describe('optimistic outcome write (fromSnapshot)', () => {
  let db: TestDatabase;
  let app: TestApp;
  let repo: OrderWrites;
  let ds: DataSource;
  let n = 0;

  beforeAll(async () => {
    db = await openTestDatabase();
    app = await startTestApp(db, null, {
      UPSTREAM_BASE_URL: 'http://127.0.0.1:9/api/v1/upstream',
      UPSTREAM_API_KEY: 'k',
      UPSTREAM_API_SECRET: 's',
      ORDER_POLL_BASE_MS: '3600000',
      ORDER_POLL_MAX_MS: '3600000',
    });
    repo = app.relay.app.get(OrderWrites);
    ds = app.relay.app.get(DataSource);
  });
  afterAll(async () => {
    await app.close();
    await db.close();
  });

  /** A new order with its attempt being sent, as the reservation writes it. */
  function reserve(): Promise<OrderSnapshot> {
    return reserveOrder(repo, `SNAP-${++n}`);
  }

  /** What `record` does for an accepted create: attempt, event, order, in that transaction. */
  function accept(snapshot: OrderSnapshot, effects: string[]) {
    return async (tx: OrderTx) => {
      const locked = await tx.lockOrderAndAttempt(snapshot.order.id, snapshot.attempt.attemptNo);
      if (!locked) throw new Error('gone');
      await tx.updateAttempt(locked.attempt.id, { status: 'accepted', sending_until: null, upstream_order_id: 9000 + n });
      await tx.insertEvent(locked.order.id, { source: 'api', kind: 'status', from: 'submitting', to: 'paid' }, new Date());
      tx.afterCommit(() => effects.push('counted'));
      return tx.updateOrder(locked.order, { status: 'paid', upstream_order_id: 9000 + n });
    };
  }

  async function state(orderId: string) {
    const [o] = await db.query<{ status: string; upstream_order_id: string | null }>(
      'SELECT status, upstream_order_id FROM orders WHERE id = $1',
      [orderId],
    );
    const [a] = await db.query<{ status: string }>('SELECT status FROM order_attempts WHERE order_id = $1', [orderId]);
    const [{ events }] = await db.query<{ events: number }>('SELECT count(*)::int AS events FROM order_events WHERE order_id = $1', [
      orderId,
    ]);
    return { order: o.status, attempt: a.status, events };
  }

  it('writes the attempt, the event and the order in one go when nothing moved', async () => {
    const snap = await reserve();
    const effects: string[] = [];
    const order = await repo.fromSnapshot(snap, accept(snap, effects));
    expect(order?.status).toBe('paid');
    expect(await state(snap.order.id)).toEqual({ order: 'paid', attempt: 'accepted', events: 2 });
    expect(effects).toEqual(['counted']);
  });

  it('writes nothing when the order changed since (e.g. a callback was applied first)', async () => {
    const snap = await reserve();
    await db.query("UPDATE orders SET status = 'pending_payment' WHERE id = $1", [snap.order.id]);
    const effects: string[] = [];
    expect(await repo.fromSnapshot(snap, accept(snap, effects))).toBeNull();
    expect(await state(snap.order.id)).toEqual({ order: 'pending_payment', attempt: 'submitting', events: 1 });
    expect(effects).toEqual([]);
  });

  it('writes nothing when only the attempt changed (under the order lock)', async () => {
    const snap = await reserve();
    await ds.transaction(async (em) => {
      await em.query('SELECT 1 FROM orders WHERE id = $1 FOR UPDATE', [snap.order.id]);
      await em.query("UPDATE order_attempts SET status = 'submit_unknown', sending_until = NULL WHERE id = $1", [snap.attempt.id]);
    });
    const effects: string[] = [];
    expect(await repo.fromSnapshot(snap, accept(snap, effects))).toBeNull();
    expect(await state(snap.order.id)).toEqual({ order: 'submitting', attempt: 'submit_unknown', events: 1 });
    expect(effects).toEqual([]);
  });

  it('waits for a transaction holding the order, then writes nothing when it changed the order', async () => {
    const snap = await reserve();
    const effects: string[] = [];
    let optimistic: Promise<unknown> | null = null;
    await ds.transaction(async (em) => {
      await em.query("UPDATE orders SET status = 'canceled' WHERE id = $1", [snap.order.id]);
      optimistic = repo.fromSnapshot(snap, accept(snap, effects)); // blocks on the row lock
      await waitsForLock(db, optimistic, 'the optimistic write');
    });
    expect(await optimistic).toBeNull();
    expect(await state(snap.order.id)).toEqual({ order: 'canceled', attempt: 'submitting', events: 1 });
    expect(effects).toEqual([]);
  });

  it('writes when a transaction only locked the order meanwhile', async () => {
    const snap = await reserve();
    await ds.transaction(async (em) => {
      await em.query('SELECT 1 FROM orders WHERE id = $1 FOR UPDATE', [snap.order.id]);
    });
    const effects: string[] = [];
    expect((await repo.fromSnapshot(snap, accept(snap, effects)))?.status).toBe('paid');
    expect(effects).toEqual(['counted']);
  });

  it('without an order update the writes still go in one statement that checks the order row', async () => {
    const writeAside = (snap: OrderSnapshot, effects: string[]) => async (tx: OrderTx) => {
      await tx.lockOrderAndAttempt(snap.order.id, snap.attempt.attemptNo);
      await tx.updateAttempt(snap.attempt.id, { sending_until: null });
      await tx.insertEvent(snap.order.id, { source: 'api', kind: 'note', from: null, to: null }, new Date());
      tx.afterCommit(() => effects.push('counted'));
      return 'done';
    };
    const kept = await reserve();
    const effects: string[] = [];
    expect(await repo.fromSnapshot(kept, writeAside(kept, effects))).toBe('done');
    expect(await state(kept.order.id)).toEqual({ order: 'submitting', attempt: 'submitting', events: 2 });
    expect(effects).toEqual(['counted']);

    const moved = await reserve();
    await db.query("UPDATE orders SET status = 'pending_payment' WHERE id = $1", [moved.order.id]);
    expect(await repo.fromSnapshot(moved, writeAside(moved, effects))).toBeNull();
    expect(await state(moved.order.id)).toEqual({ order: 'pending_payment', attempt: 'submitting', events: 1 });
    expect(effects).toEqual(['counted']);
  });

  it('refuses work that needs another statement, before sending anything', async () => {
    const snap = await reserve();
    const effects: string[] = [];
    const result = await repo.fromSnapshot(snap, async (tx) => {
      await tx.updateAttempt(snap.attempt.id, { status: 'accepted' });
      tx.afterCommit(() => effects.push('counted'));
      return tx.insertRefund(snap.order.id, '1.00', 'CNY', new Date());
    });
    expect(result).toBeNull();
    expect(await state(snap.order.id)).toEqual({ order: 'submitting', attempt: 'submitting', events: 1 });
    expect(effects).toEqual([]);
  });

  it('work that asks for another statement after its one statement committed is an error, not done again', async () => {
    const snap = await reserve();
    const effects: string[] = [];
    const work = repo.fromSnapshot(snap, async (tx) => {
      const locked = await tx.lockOrderAndAttempt(snap.order.id, snap.attempt.attemptNo);
      await tx.insertEvent(snap.order.id, { source: 'api', kind: 'note', from: null, to: null }, new Date());
      await tx.updateOrder(locked!.order, { error_message: 'written' });
      tx.afterCommit(() => effects.push('counted'));
      return tx.lockOrder(snap.order.id); // a bug: the statement above is committed
    });
    await expect(work).rejects.toBeInstanceOf(SnapshotUnusable);
    expect(await state(snap.order.id)).toEqual({ order: 'submitting', attempt: 'submitting', events: 2 });
    expect(effects).toEqual([]);
  });

  it('a write that found its rows moved keeps its pooled connection (and its prepared statements)', async () => {
    const pool = (ds.driver as unknown as { master: Pool }).master;
    const connected: unknown[] = [];
    pool.on('connect', (c) => connected.push(c));
    try {
      for (let i = 0; i < 3; i++) {
        const snap = await reserve();
        await db.query("UPDATE orders SET status = 'pending_payment' WHERE id = $1", [snap.order.id]);
        const before = pool.totalCount;
        expect(await repo.fromSnapshot(snap, accept(snap, []))).toBeNull();
        expect(pool.totalCount).toBe(before);
      }
      expect(connected).toEqual([]);
    } finally {
      pool.removeAllListeners('connect');
    }
  });

  it.each([
    ['lockOrder', (tx: OrderTx, snap: OrderSnapshot) => tx.lockOrder(snap.order.id)],
    ['lockOrderByShopNo', (tx: OrderTx, snap: OrderSnapshot) => tx.lockOrderByShopNo(snap.order.shopOrderNo)],
    [
      'lockOrderAndAttempt',
      async (tx: OrderTx, snap: OrderSnapshot) => (await tx.lockOrderAndAttempt(snap.order.id, snap.attempt.attemptNo))?.order ?? null,
    ],
  ] as const)('%s that waited for a transaction recording a refund sees the refund', async (_name, lock) => {
    const snap = await reserve();
    let locked: Promise<OrderRecord | null> = Promise.resolve(null);
    await ds.transaction(async (em) => {
      // what a refund does: lock the order, add its refund row, touch the order
      await em.query('SELECT 1 FROM orders WHERE id = $1 FOR UPDATE', [snap.order.id]);
      await em.query("INSERT INTO order_refunds (order_id, amount, currency, created_at) VALUES ($1, '1.00', 'CNY', now())", [
        snap.order.id,
      ]);
      await em.query('UPDATE orders SET updated_at = now() WHERE id = $1', [snap.order.id]);
      locked = repo.transaction((tx) => lock(tx, snap)); // blocks on the row lock
      await waitsForLock(db, locked, 'the lock');
    });
    const order = await locked;
    expect(order?.refundAt).toBeInstanceOf(Date);
    expect(order?.refundAmount).toBe('1.00');
  });

  it("an operator's sending lease is given back only while it is still that lease", async () => {
    const snap = await reserve();
    await db.query("UPDATE order_attempts SET status = 'submit_unknown', sending_until = NULL WHERE id = $1", [snap.attempt.id]);
    const mine = await repo.claimUnknownAttempt(snap.attempt.id, 1000);
    expect(mine).toBeInstanceOf(Date);
    expect(await repo.claimUnknownAttempt(snap.attempt.id, 1000)).toBeNull(); // held
    // it outlived itself, and a re-send took the attempt meanwhile
    const theirs = new Date(mine!.getTime() + 60_000);
    await db.query('UPDATE order_attempts SET sending_until = $2 WHERE id = $1', [snap.attempt.id, theirs]);
    await repo.releaseAttemptLease(snap.attempt.id, mine!);
    const [held] = await db.query<{ until: Date | null }>('SELECT sending_until AS until FROM order_attempts WHERE id = $1', [
      snap.attempt.id,
    ]);
    expect(held.until?.getTime()).toBe(theirs.getTime());
    await repo.releaseAttemptLease(snap.attempt.id, theirs);
    const [freed] = await db.query<{ until: Date | null }>('SELECT sending_until AS until FROM order_attempts WHERE id = $1', [
      snap.attempt.id,
    ]);
    expect(freed.until).toBeNull();
  });
});
