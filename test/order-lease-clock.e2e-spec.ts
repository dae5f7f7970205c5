/**
 * Attempt sending leases are set and judged by the database's clock, never a replica's own: a replica
 * whose clock runs ahead does not sweep an attempt whose sender is still within its lease, nor take it
 * for a re-send or an operator; once the lease has ended by the database's clock, it does.
 */
import { OrderFollowService } from '../src/orders/order-follow.service.js';
import { OrderWrites } from '../src/orders/order-writes.repository.js';
import { useAppSuite } from './support/app-suite.js';
import { UNREACHABLE_UPSTREAM } from './support/test-app.js';
import { reserveOrder } from './support/reserved-order.js';
import { TestClock } from './support/test-clock.js';

describe('attempt leases on the database clock', () => {
  let repo: OrderWrites;
  let follow: OrderFollowService;
  let n = 0;
  const ahead = new TestClock();
  // the test runs the sweeps and claims itself
  const t = useAppSuite({ sandbox: false, env: UNREACHABLE_UPSTREAM, workers: false, clock: ahead });

  beforeAll(() => {
    repo = t.app.relay.app.get(OrderWrites);
    follow = t.app.relay.app.get(OrderFollowService);
    ahead.advance(10 * 60_000); // this replica's clock runs ten minutes ahead
  });

  /** An attempt being sent by another replica, with a lease of a minute from now (the database's clock). */
  async function sending(): Promise<{ orderId: string; attemptId: string }> {
    const created = await reserveOrder(repo, `LEASE-${++n}`, 60_000);
    const [{ ahead_of_db }] = await t.db.query<{ ahead_of_db: boolean }>(
      "SELECT sending_until > now() + interval '50 seconds' AS ahead_of_db FROM order_attempts WHERE id = $1",
      [created.attempt.id],
    );
    expect(ahead_of_db).toBe(true); // the lease was set by the database's clock, not this replica's
    return { orderId: created.order.id, attemptId: created.attempt.id };
  }

  const attemptStatus = async (id: string) =>
    (await t.db.query<{ status: string }>('SELECT status FROM order_attempts WHERE id = $1', [id]))[0].status;

  it('does not sweep an attempt within its lease however far ahead its own clock is; sweeps it once the lease has ended', async () => {
    const a = await sending();
    expect(await follow.sweepStale()).toBe(0);
    expect(await attemptStatus(a.attemptId)).toBe('submitting');
    await t.db.query("UPDATE order_attempts SET sending_until = now() - interval '1 second' WHERE id = $1", [a.attemptId]);
    expect(await follow.sweepStale()).toBe(1);
    expect(await attemptStatus(a.attemptId)).toBe('submit_unknown');
  });

  it('does not take a leased unknown attempt for a re-send or an operator; takes it once the lease has ended', async () => {
    const a = await sending();
    // unknown, due for a re-send, while another replica's re-send holds its lease
    await t.db.query(
      "UPDATE order_attempts SET status = 'submit_unknown', next_resend_at = now(), sending_until = now() + interval '1 minute' " +
        'WHERE id = $1',
      [a.attemptId],
    );
    await t.db.query("UPDATE orders SET status = 'submit_unknown' WHERE id = $1", [a.orderId]);
    expect((await repo.claimResends(ahead.now(), 30_000, 10, ['main'])).map((c) => c.id)).not.toContain(a.attemptId);
    expect(await repo.claimUnknownAttempt(a.attemptId, 30_000)).toBeNull();
    await t.db.query("UPDATE order_attempts SET sending_until = now() - interval '1 second' WHERE id = $1", [a.attemptId]);
    expect((await repo.claimResends(ahead.now(), 30_000, 10, ['main'])).map((c) => c.id)).toContain(a.attemptId);
  });
});
