/**
 * Poll claims among replicas and at shutdown (CONTRACT §9: an unfinished order is polled by one of
 * them at a time; README "Shutdown": the reads in flight end and their claims are given back).
 */
import { jest } from '@jest/globals';
import { Clock } from '../src/common/clock.js';
import { OrderFollowService } from '../src/orders/order-follow.service.js';
import { OrderPoller } from '../src/orders/order-poller.service.js';
import type { SandboxServer } from '../src/sandbox/sandbox.server.js';
import { UpstreamClient } from '../src/upstream/upstream.client.js';
import { seedCatalog } from './support/child-app.js';
import { openTestDatabase, startSandbox, startTestApp, type TestApp, type TestDatabase } from './support/test-app.js';
import { useAppSuite } from './support/app-suite.js';
import { waitFor } from './support/wait.js';

/**
 * The poller claims 20 orders, then reads them 8 at a time: the claim's lease covers every wave (it
 * covered one: the third wave's reads started after their lease had run out, and another replica
 * claimed and read the same orders meanwhile). Replica A's reads are held until the test lets each
 * wave go; replica B's clock stands where the last wave's reads may begin at the latest (two waves of
 * reads, each as long as a read's lease, after A's claim), and B runs a pass while each wave is held.
 */
describe('poll claims: a claimed batch is held until its last read', () => {
  const t = useAppSuite({
    sandbox: { catalog: { products: 1 }, timetable: { paidMs: 600_000, fulfillingMs: 600_000, deliveredMs: 600_000, completedMs: null } },
    prepare: (sandbox) => sandbox.catalog.addProduct({ skus: [{ skuCode: 'RL-1', price: '1.00' }] }),
    env: { UPSTREAM_TIMEOUT_MS: '1000', ORDER_POLL_BASE_MS: '3600000', ORDER_POLL_MAX_MS: '3600000' },
    instances: 2,
    workers: false,
    seed: true,
  });

  it('never has one order read by two replicas at once', async () => {
    const { db } = t;
    const [a, b] = t.apps;
    for (let i = 0; i < 20; i++) {
      const r = await a.http.post('/internal/orders', { shop_order_no: `RL-${i}`, sku_code: 'RL-1', quantity: 1 });
      expect(r.status).toBe(201);
    }
    await db.query("UPDATE orders SET next_poll_at = now() - interval '1 second', poll_lease_until = NULL WHERE shop_order_no LIKE 'RL-%'");

    // who is reading which upstream order right now; A's reads wait for the test before they go out
    const inFlight = new Map<number, string>();
    const overlaps: string[] = [];
    const reads = { A: 0, B: 0 };
    let heldA: Array<() => void> = [];
    const releaseA = () => {
      for (const release of heldA) release();
      heldA = [];
    };
    for (const [name, app] of [
      ['A', a],
      ['B', b],
    ] as const) {
      const client = app.relay.app.get(UpstreamClient);
      const real = client.getOrder.bind(client);
      jest.spyOn(client, 'getOrder').mockImplementation(async (id: number, signal?: AbortSignal) => {
        const other = inFlight.get(id);
        if (other !== undefined && other !== name) overlaps.push(`order ${id}: read by ${name} while ${other} reads it`);
        inFlight.set(id, name);
        reads[name]++;
        try {
          if (name === 'A') await new Promise<void>((resolve) => heldA.push(resolve));
          return await real(id, signal);
        } finally {
          if (inFlight.get(id) === name) inFlight.delete(id);
        }
      });
    }
    try {
      const claimedAfter = a.relay.app.get(Clock).nowMs();
      const readLeaseMs = a.relay.app.get(OrderFollowService).pollLeaseMs;
      jest.spyOn(b.relay.app.get(Clock), 'now').mockImplementation(() => new Date(claimedAfter + 2 * readLeaseMs + 1));
      const passA = a.relay.app.get(OrderPoller).tick();
      const pollerB = b.relay.app.get(OrderPoller);
      for (const [started, held] of [
        [8, 8],
        [16, 8],
        [20, 4],
      ]) {
        await waitFor(
          () => ({ started: reads.A, held: heldA.length }),
          (w) => w.started === started && w.held === held,
          `A's wave of reads up to ${started} held`,
        );
        // replica B runs a pass meanwhile, as its own timer would
        await pollerB.tick();
        releaseA();
      }
      await passA;
    } finally {
      releaseA();
      jest.restoreAllMocks();
    }
    expect(overlaps).toEqual([]);
    expect(reads).toEqual({ A: 20, B: 0 });
  });
});

/**
 * A poll ended by the shutdown gives its claim back as it was: due, its backoff untouched, not
 * recorded as a failed read (whose wait doubles, up to ORDER_POLL_MAX_MS), since the upstream said
 * nothing.
 */
describe('poll claims: a poll ended by the shutdown is not counted as a failed read', () => {
  let db: TestDatabase;
  let sandbox: SandboxServer;
  let app: TestApp | null = null;

  beforeAll(async () => {
    db = await openTestDatabase();
    sandbox = await startSandbox({
      catalog: { products: 1 },
      timetable: { paidMs: 600_000, fulfillingMs: 600_000, deliveredMs: 600_000, completedMs: null },
    });
    sandbox.catalog.addProduct({ skus: [{ skuCode: 'RS-1', price: '1.00' }] });
  });
  afterAll(async () => {
    await app?.close();
    await sandbox?.stop();
    await db?.close();
  });

  it('leaves the order due as it was, its backoff untouched', async () => {
    app = await startTestApp(db, sandbox, { ORDER_POLL_BASE_MS: '60000', ORDER_POLL_MAX_MS: '600000', UPSTREAM_TIMEOUT_MS: '60000' });
    await seedCatalog(app.http);
    const placed = await app.http.post('/internal/orders', { shop_order_no: 'RS-ORDER', sku_code: 'RS-1', quantity: 1 });
    expect(placed.status).toBe(201);
    let reads = 0;
    sandbox.events.on('request', (e: { operation: string; phase: string }) => {
      if (e.operation === 'getOrder' && e.phase === 'received') reads++;
    });
    sandbox.faults.set({ rules: [{ operation: 'getOrder', kind: 'hang_before' }] });
    // due now, after a wait of 2 minutes (a failed read would make it 4)
    await db.query(
      "UPDATE orders SET next_poll_at = now() - interval '1 second', poll_interval_ms = 120000 WHERE shop_order_no = 'RS-ORDER'",
    );
    await waitFor(
      () => reads,
      (n) => n > 0,
      "the poll's read received",
    );

    await app.close();
    app = null;
    sandbox.faults.reset();
    const [after] = await db.query<{ due_now: boolean; poll_interval_ms: number }>(
      "SELECT next_poll_at <= now() + interval '5 seconds' AS due_now, poll_interval_ms FROM orders WHERE shop_order_no = 'RS-ORDER'",
    );
    expect(after).toEqual({ due_now: true, poll_interval_ms: 120000 });
  });
});
