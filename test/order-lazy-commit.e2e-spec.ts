/**
 * A poll's claim and its answer's optimistic write commit without waiting for the WAL flush (a write
 * lost in a crash leaves the order due for a poll that reads the same answer again): the setting is
 * the statement's own transaction's, never its connection's, so a reservation or an outcome that runs
 * next on the same connection still waits for its flush. Checked on a pool of one connection.
 */
import type { Pool } from 'pg';
import { DataSource } from 'typeorm';
import { OrderWrites } from '../src/orders/order-writes.repository.js';
import { reserveOrder } from './support/reserved-order.js';
import { openTestDatabase, type TestDatabase } from './support/test-database.js';

describe('lazy commits of polls', () => {
  let db: TestDatabase;
  let ds: DataSource;
  let repo: OrderWrites;

  beforeAll(async () => {
    db = await openTestDatabase();
    ds = new DataSource({ type: 'postgres', url: db.url, poolSize: 1 });
    await ds.initialize();
    repo = new OrderWrites(ds);
  });
  afterAll(async () => {
    await ds?.destroy();
    await db?.close();
  });

  /** The texts of the statements the pool's one connection prepares from now on (each is prepared once). */
  async function preparedTexts(): Promise<string[]> {
    const client = await (ds.driver as unknown as { master: Pool }).master.connect();
    const texts: string[] = [];
    try {
      const connection = (client as unknown as { connection: { parse(q: { text: string }): void } }).connection;
      const parse = connection.parse.bind(connection);
      connection.parse = (q) => {
        texts.push(q.text);
        parse(q);
      };
    } finally {
      client.release();
    }
    return texts;
  }

  /** synchronous_commit as the pool's one connection has it between statements. */
  async function connectionSetting(): Promise<string> {
    const client = await (ds.driver as unknown as { master: Pool }).master.connect();
    try {
      return ((await client.query('SHOW synchronous_commit')).rows[0] as { synchronous_commit: string }).synchronous_commit;
    } finally {
      client.release();
    }
  }

  it("the claim and the poll's write are lazy for their own transaction; the connection stays synchronous", async () => {
    const texts = await preparedTexts();
    expect(await connectionSetting()).toBe('on');
    const reserved = await reserveOrder(repo, 'LAZY-1');
    expect(reserved.lazyCommit).toBeUndefined(); // a reservation, and the outcome written from it, wait for the flush
    await db.query("UPDATE orders SET status = 'paid', upstream_order_id = 77, next_poll_at = now() - interval '1 second' WHERE id = $1", [
      reserved.order.id,
    ]);

    const [claim] = await repo.claimDuePolls(new Date(), new Date(Date.now() + 60_000), 5);
    expect(claim.id).toBe(reserved.order.id);
    expect(claim.snapshot.lazyCommit).toBe(true);
    expect(await connectionSetting()).toBe('on');

    const written = await repo.fromSnapshot(claim.snapshot, (tx) => tx.updateOrder(claim.snapshot.order, { status: 'fulfilling' }));
    expect(written?.status).toBe('fulfilling');
    expect(await connectionSetting()).toBe('on');
    expect(await db.query('SELECT status FROM orders WHERE id = $1', [reserved.order.id])).toEqual([{ status: 'fulfilling' }]);
    const updates = () => texts.filter((t) => /UPDATE orders SET status\b/.test(t));
    expect(updates()).toHaveLength(1);
    expect(updates()[0]).toContain("set_config('synchronous_commit', 'off', true)");

    // the optimistic write's guard still refuses a row that moved: nothing written, and still no leak
    await db.query("UPDATE orders SET status = 'paid' WHERE id = $1", [reserved.order.id]);
    expect(await repo.fromSnapshot(claim.snapshot, (tx) => tx.updateOrder(claim.snapshot.order, { status: 'fulfilling' }))).toBeNull();
    expect(await connectionSetting()).toBe('on');
    expect(await db.query('SELECT status FROM orders WHERE id = $1', [reserved.order.id])).toEqual([{ status: 'paid' }]);
  });

  it("a poll's write that stores delivered items waits for its flush (a later upstream read may lack them)", async () => {
    const texts = await preparedTexts();
    const reserved = await reserveOrder(repo, 'LAZY-2');
    await db.query("UPDATE orders SET status = 'paid', upstream_order_id = 78, next_poll_at = now() - interval '1 second' WHERE id = $1", [
      reserved.order.id,
    ]);
    const [claim] = await repo.claimDuePolls(new Date(), new Date(Date.now() + 60_000), 5);
    expect(claim.snapshot.lazyCommit).toBe(true);
    const sealed = await repo.fromSnapshot(claim.snapshot, (tx) =>
      tx.updateOrder(claim.snapshot.order, { status: 'delivered', delivery_sealed: Buffer.from('sealed items') }),
    );
    expect(sealed?.status).toBe('delivered');
    const update = texts.filter((t) => /UPDATE orders SET status\b/.test(t));
    expect(update).toHaveLength(1);
    expect(update[0]).toContain('relay_expect_unchanged');
    expect(update[0]).not.toContain('synchronous_commit');
  });
});
