/**
 * OrderWrites.pipelinedTransaction (a verified callback's transaction): its BEGIN goes in the
 * exchange of its first prepared statement and its held writes with the COMMIT, so a transaction of
 * one locking statement and one write is two exchanges. What it must keep of a transaction: all or
 * nothing when a statement or the writes sent with the COMMIT fail, and the connection fine after.
 */
import type { Pool, PoolClient } from 'pg';
import { DataSource } from 'typeorm';
import { rows } from '../src/database/prepared-statements.js';
import { OrderWrites } from '../src/orders/order-writes.repository.js';
import { openTestDatabase, type TestDatabase } from './support/test-database.js';

describe('pipelined transactions: BEGIN and COMMIT in the exchanges of the statements', () => {
  let db: TestDatabase;
  let ds: DataSource;
  let orders: OrderWrites;
  /** ReadyForQuery messages (one per exchange) on the pool's one connection. */
  let exchanges = 0;

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
    await ds.query('CREATE TABLE pipelined_probe (id int PRIMARY KEY, v text NOT NULL)');
    orders = new OrderWrites(ds);
  });
  afterAll(async () => {
    await ds?.destroy();
    await db?.close();
  });

  const values = async (): Promise<number[]> =>
    ((await ds.query('SELECT id FROM pipelined_probe ORDER BY id')) as Array<{ id: number }>).map((r) => r.id);

  /** A locking statement, then a held write: the shape of a verified callback's transaction. */
  const lockThenWrite = (lockId: number, writeId: number) =>
    orders.pipelinedTransaction(async (tx) => {
      await rows(tx.em, 'INSERT INTO pipelined_probe (id, v) VALUES ($1, $2) RETURNING id', [lockId, 'first']);
      await tx.write('INSERT INTO pipelined_probe (id, v) VALUES ($?, $?)', [writeId, 'held']);
      return 'done';
    });

  it('commits both statements, in two exchanges once the connection has its BEGIN and COMMIT', async () => {
    expect(await lockThenWrite(1, 2)).toBe('done'); // the connection's first: BEGIN and COMMIT parsed on their own
    const before = exchanges;
    expect(await lockThenWrite(3, 4)).toBe('done');
    expect(exchanges - before).toBe(2);
    expect(await values()).toEqual([1, 2, 3, 4]);
  });

  it('a failing first statement: nothing written, and the connection goes on', async () => {
    await expect(lockThenWrite(1, 10)).rejects.toMatchObject({ code: '23505' });
    expect(await values()).toEqual([1, 2, 3, 4]);
    await lockThenWrite(11, 12);
    expect(await values()).toEqual([1, 2, 3, 4, 11, 12]);
  });

  it('a failing write sent with the COMMIT: the first statement is rolled back too', async () => {
    await expect(lockThenWrite(20, 1)).rejects.toMatchObject({ code: '23505' });
    expect(await values()).toEqual([1, 2, 3, 4, 11, 12]);
    await lockThenWrite(21, 22);
    expect(await values()).toEqual([1, 2, 3, 4, 11, 12, 21, 22]);
  });

  it('a TypeORM query in it sends the BEGIN first: rolled back with the rest on a failure', async () => {
    await expect(
      orders.pipelinedTransaction(async (tx) => {
        await tx.em.query('INSERT INTO pipelined_probe (id, v) VALUES ($1, $2)', [30, 'typeorm']);
        await rows(tx.em, 'INSERT INTO pipelined_probe (id, v) VALUES ($1, $2)', [1, 'duplicate']);
      }),
    ).rejects.toMatchObject({ code: '23505' });
    expect(await values()).toEqual([1, 2, 3, 4, 11, 12, 21, 22]);
  });

  it('a transaction that sends nothing sends nothing', async () => {
    const before = exchanges;
    expect(await orders.pipelinedTransaction(async () => 7)).toBe(7);
    expect(exchanges).toBe(before);
  });
});
