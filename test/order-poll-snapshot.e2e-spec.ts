/**
 * A poll's answer applied from the row as the claim wrote it (one optimistic statement, no locking
 * transaction), on both databases: when nothing else wrote the order between the claim and the
 * answer, it is applied as a locked poll would; when something did (a callback's apply, a cancel, an
 * operator), the optimistic statement writes nothing and the answer is applied to the order as it now
 * is: its events name the real previous status, and a report older than the stored status is a
 * regression, never a step back.
 */
import { OrderFollowService } from '../src/orders/order-follow.service.js';
import { OrderWrites, type PollClaim } from '../src/orders/order-writes.repository.js';
import { useAppSuite } from './support/app-suite.js';
import { waitsForLock } from './support/db-waits.js';
import { waitFor } from './support/wait.js';

describe('poll applied from the claim (optimistic)', () => {
  const suite = useAppSuite({
    // the sandbox moves nothing by itself: each test sets what the poll reads
    sandbox: { catalog: { products: 1 }, timetable: { paidMs: 600_000, fulfillingMs: 600_000, deliveredMs: 600_000, completedMs: null } },
    prepare: (sandbox) => sandbox.catalog.addProduct({ skus: [{ skuCode: 'PS-1', price: '1.00' }] }),
    // no background poller: the tests make orders due and claim them themselves (a pass woken by a
    // placement could otherwise claim one between the test's UPDATE and its claim)
    env: { ORDER_POLL_BASE_MS: '3600000', ORDER_POLL_MAX_MS: '3600000' },
    workers: false,
    seed: true,
  });
  let repo: OrderWrites;
  let follow: OrderFollowService;
  let n = 0;
  beforeAll(() => {
    repo = suite.app.relay.app.get(OrderWrites);
    follow = suite.app.relay.app.get(OrderFollowService);
  });

  /** A placed order, made due and claimed by a poll. */
  async function placedAndClaimed(): Promise<{ id: string; upstreamId: number; status: string; claim: PollClaim }> {
    const { app, db } = suite;
    const shopOrderNo = `PS-ORDER-${++n}`;
    const placed = await app.http.post('/internal/orders', { shop_order_no: shopOrderNo, sku_code: 'PS-1', quantity: 1 });
    expect(placed.status).toBe(201);
    const [row] = await db.query<{ id: string; upstream_order_id: string; status: string }>(
      "UPDATE orders SET next_poll_at = now() - interval '1 second' WHERE shop_order_no = $1 RETURNING id, upstream_order_id, status",
      [shopOrderNo],
    );
    const claims = await repo.claimDuePolls(new Date(), new Date(Date.now() + 60_000), 10);
    const claim = claims.find((c) => c.shopOrderNo === shopOrderNo);
    expect(claim?.snapshot?.order.status).toBe(row.status);
    return { id: String(row.id), upstreamId: Number(row.upstream_order_id), status: row.status, claim: claim! };
  }

  async function order(id: string) {
    const { db } = suite;
    const [o] = await db.query<{ status: string; leased: boolean; next_poll: boolean }>(
      'SELECT status, poll_lease_until IS NOT NULL AS leased, next_poll_at IS NOT NULL AS next_poll FROM orders WHERE id = $1',
      [id],
    );
    const events = await db.query<{ source: string; old_status: string | null; new_status: string | null }>(
      "SELECT source, old_status, new_status FROM order_events WHERE order_id = $1 AND kind = 'status' ORDER BY id",
      [id],
    );
    return { ...o, events };
  }

  it('applies the answer when nothing wrote the order since the claim', async () => {
    const { sandbox } = suite;
    const placed = await placedAndClaimed();
    sandbox.setOrderStatus(placed.upstreamId, 'fulfilling');
    await follow.pollOne(placed.claim);
    const after = await order(placed.id);
    expect(after).toMatchObject({ status: 'fulfilling', leased: false, next_poll: true });
    expect(after.events.at(-1)).toEqual({ source: 'poll', old_status: placed.status, new_status: 'fulfilling' });
  });

  it('applies the answer to the order as it now is when it moved after the claim (the event names the real previous status)', async () => {
    const { db, sandbox } = suite;
    const placed = await placedAndClaimed();
    // a callback's apply between the claim and the answer
    await db.query("UPDATE orders SET status = 'paid', status_changed_at = now(), updated_at = now() WHERE id = $1", [placed.id]);
    sandbox.setOrderStatus(placed.upstreamId, 'fulfilling');
    await follow.pollOne(placed.claim);
    const after = await order(placed.id);
    expect(after).toMatchObject({ status: 'fulfilling', leased: false });
    expect(after.events.at(-1)).toEqual({ source: 'poll', old_status: 'paid', new_status: 'fulfilling' });
  });

  it('never moves an order back: a stale answer after a later status was stored is a regression', async () => {
    const { db, sandbox } = suite;
    const placed = await placedAndClaimed();
    await db.query("UPDATE orders SET status = 'fulfilling', status_changed_at = now(), updated_at = now() WHERE id = $1", [placed.id]);
    sandbox.setOrderStatus(placed.upstreamId, 'paid');
    const eventsBefore = (await order(placed.id)).events.length;
    await follow.pollOne(placed.claim);
    const after = await order(placed.id);
    expect(after).toMatchObject({ status: 'fulfilling', leased: false });
    expect(after.events).toHaveLength(eventsBefore);
  });

  it('waits for a transaction holding the order and applies the answer to what it committed', async () => {
    const { app, db, sandbox } = suite;
    const placed = await placedAndClaimed();
    sandbox.setOrderStatus(placed.upstreamId, 'fulfilling');
    let poll: Promise<boolean> | null = null;
    await app.relay.app.get(OrderWrites).transaction(async (tx) => {
      const locked = await tx.lockOrder(placed.id);
      await tx.updateOrder(locked!, { status: 'paid', status_changed_at: new Date(), updated_at: new Date() });
      const reads = sandbox.stats.requests.getOrder;
      poll = follow.pollOne(placed.claim); // its read goes out; its write waits for this transaction
      await waitFor(
        () => sandbox.stats.requests.getOrder,
        (n) => n > reads,
        "the poll's read",
      );
      await waitsForLock(db, poll, "the poll's write");
    });
    await poll;
    const after = await order(placed.id);
    expect(after).toMatchObject({ status: 'fulfilling', leased: false });
    expect(after.events.at(-1)).toEqual({ source: 'poll', old_status: 'paid', new_status: 'fulfilling' });
  });

  it('a failed read gives the lease back from the snapshot too', async () => {
    const { sandbox } = suite;
    const placed = await placedAndClaimed();
    sandbox.faults.set({ rules: [{ operation: 'getOrder', kind: 'error_before', status: 503 }] });
    try {
      await follow.pollOne(placed.claim);
    } finally {
      sandbox.faults.reset();
    }
    expect(await order(placed.id)).toMatchObject({ status: placed.status, leased: false, next_poll: true });
  });
});
