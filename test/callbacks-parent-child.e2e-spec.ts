/**
 * Two callbacks per status change (issue 25, point 5), against the sandbox upstream as a real server
 * under its `dujiao-next` profile. Dujiao-Next enqueues a callback for the order and one for its child
 * order; the child has no callback reference of its own, so both resolve to the order's and each send
 * reads that order: the two carry one body. The relay stores and acknowledges each (the second
 * recognised as a duplicate of the first), applies each status once, and reads the order no more than
 * the callback rules give for one callback per change (src/callbacks/callback-plan.ts, CALLBACK_TRUST
 * verified): the paid and fulfilling claims are status moves, the delivered one carries its
 * fulfillment; none reads. Polling is slow enough (ORDER_POLL_BASE_MS 60 s) that every
 * `GET /orders/{id}` counted here would be a callback's.
 */
import { useAppSuite } from './support/app-suite.js';
import { freePort, waitFor, waitForOrder, type OrderView } from './support/child-app.js';

const POLL_BASE_MS = 60_000;

interface InboxRow {
  reported_status: string;
  state: string;
  outcome: string | null;
  duplicates: number;
}

describe('callbacks: the order and its child order call back each change (profile dujiao-next)', () => {
  const t = useAppSuite({
    sandbox: {
      profile: 'dujiao-next',
      catalog: { products: 2 },
      // the create pays the order; no completedMs: the upstream order rests at `delivered`, so that no
      // later callback reads it
      timetable: { fulfillingMs: 60, deliveredMs: 120 },
      callbackRetryDelaysMs: [100, 200, 400, 800],
    },
    prepare: (sandbox) => sandbox.catalog.addProduct({ skus: [{ skuCode: 'PC-AUTO', price: '4.00' }] }),
    env: async () => {
      const port = await freePort();
      return {
        PORT: String(port),
        UPSTREAM_PROFILE: 'dujiao-next',
        CALLBACK_PUBLIC_URL: `http://127.0.0.1:${port}/callbacks/upstream`,
        ORDER_POLL_BASE_MS: String(POLL_BASE_MS),
        ORDER_POLL_MAX_MS: String(POLL_BASE_MS),
        UPSTREAM_TIMEOUT_MS: '1000',
        CALLBACK_TOLERANCE_S: '60',
      };
    },
    seed: true,
  });
  let n = 0;
  const reads = () => t.sandbox.stats.requests.getOrder;
  const duplicatesMetric = async (): Promise<number> => {
    const text = (await t.app.http.get('/metrics')).data as string;
    const line = text.split('\n').find((l) => l.startsWith('relay_callbacks_duplicate_total'));
    return line ? Number(line.split(' ').pop()) : 0;
  };
  const inbox = (upstreamId: number) =>
    t.db.query<InboxRow>(
      'SELECT reported_status, state, outcome, duplicates FROM callback_inbox WHERE upstream_order_id = $1 ORDER BY id',
      [upstreamId],
    );
  const events = async (shopNo: string) =>
    (
      (await t.app.http.get(`/internal/orders/${shopNo}/events`)).data as {
        events: Array<{ source: string; kind: string; from: string | null; to: string | null }>;
      }
    ).events;

  it('paid → fulfilling → delivered, two callbacks each: all acknowledged and stored, each status applied once, no read', async () => {
    for (let round = 0; round < 2; round++) {
      const shopNo = `PC-FLOW-${++n}`;
      const readsBefore = reads();
      const duplicatesBefore = await duplicatesMetric();
      const r = await t.app.http.post('/internal/orders', { shop_order_no: shopNo, sku_code: 'PC-AUTO', quantity: 1 });
      expect(r.status).toBe(201);
      const placed = (r.data as { order: OrderView }).order;
      const upstreamId = placed.upstream_order_id!;

      const done = await waitForOrder(t.app.http, shopNo, (x) => x.status === 'delivered' && x.items.length > 0);
      expect(done.items).toHaveLength(1);
      expect(done.items[0]).toBe(t.sandbox.order(upstreamId)!.payload);

      // the sandbox sent two callbacks per change, each acknowledged on its first try
      const sent = await waitFor(
        () => t.sandbox.callbackLog.filter((e) => e.orderId === upstreamId),
        (entries) => entries.length === 6,
        'six callbacks of the order',
      );
      expect(sent.map((e) => [e.json.status, e.attempt, e.status, e.responseBody])).toEqual(
        ['paid', 'paid', 'fulfilling', 'fulfilling', 'delivered', 'delivered'].map((s) => [s, 1, 200, '{"ok":true}']),
      );
      // the copies of one change carry one body (the real server's parent and child callbacks)
      for (let i = 0; i < 6; i += 2) expect(sent[i].body).toBe(sent[i + 1].body);

      // stored once per change, the copy recognised as a duplicate; each applied
      const rows = await waitFor(
        () => inbox(upstreamId),
        (x) => x.length === 3 && x.every((row) => row.state !== 'pending' && row.duplicates === 1),
        'the callbacks of the order to be processed',
      );
      expect(rows.map((row) => [row.reported_status, row.state, row.duplicates])).toEqual([
        ['paid', 'applied', 1],
        ['fulfilling', 'applied', 1],
        ['delivered', 'applied', 1],
      ]);
      // each applied as it stands on receipt
      for (const row of rows) expect(row.outcome).toMatch(/^verified /);
      expect(rows[2].outcome).toBe('verified delivered: order delivered');
      expect((await duplicatesMetric()) - duplicatesBefore).toBe(3);

      // the delivered claim carried its fulfillment: nothing read
      expect(reads() - readsBefore).toBe(0);

      // one status event per status reached
      const statusEvents = (await events(shopNo)).filter((e) => e.kind === 'status');
      const reached = statusEvents.map((e) => e.to);
      expect(new Set(reached).size).toBe(reached.length);
      expect(reached).toContain('delivered');
      expect(statusEvents.find((e) => e.to === 'delivered')).toMatchObject({ source: 'callback' });
      const [{ next_poll_at }] = await t.db.query<{ next_poll_at: Date | null }>(
        'SELECT next_poll_at FROM orders WHERE shop_order_no = $1',
        [shopNo],
      );
      expect(next_poll_at).toBeNull();
    }
  });
});
