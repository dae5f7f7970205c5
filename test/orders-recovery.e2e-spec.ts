/**
 * Exactly once when the outcome of a create is unknown (CONTRACT §4, §5), under both profiles:
 * - `spec`: the upstream does not deduplicate order numbers; an unknown attempt is settled by the
 *   callback that carries its number;
 * - `dujiao-next`: the upstream deduplicates; the same attempt is sent again under the same number
 *   after SUBMIT_UNKNOWN_RECHECK_S.
 * The service killed with SIGKILL right after the upstream received the create, then started again
 * (the attempt left `submitting` is made `submit_unknown` by the restarted service's sweep);
 * and a hang, a reset and a 5xx after the upstream did the work. Each time: exactly one upstream
 * order and one wallet debit.
 */
import { Decimal } from 'decimal.js';
import type { SandboxServer } from '../src/sandbox/sandbox.server.js';
import type { SandboxRequestEvent } from '../src/sandbox/sandbox.types.js';
import { freePort, seedCatalog, startRelayChild, waitFor, waitForOrder, type OrderView } from './support/child-app.js';
import { openTestDatabase, startSandbox, startTestApp, type TestApp, type TestDatabase } from './support/test-app.js';

const PRICE = '7.00';
/** UPSTREAM_TIMEOUT_MS of the relay under test. */
const TIMEOUT_MS = 1000;
const SETTLED = (o: OrderView) => ['delivered', 'completed'].includes(o.status);

interface Profile {
  name: 'spec' | 'dujiao-next';
  dedupe: boolean;
  /** How an unknown attempt is settled under this profile. */
  settledBy: 'callback' | 'resend';
}

const PROFILES: Profile[] = [
  { name: 'spec', dedupe: false, settledBy: 'callback' },
  { name: 'dujiao-next', dedupe: true, settledBy: 'resend' },
];

describe.each(PROFILES)('exactly once with an unknown outcome, profile $name', (profile) => {
  let db: TestDatabase;
  let sandbox: SandboxServer;

  const env = (port: number): Record<string, string> => ({
    UPSTREAM_PROFILE: profile.name,
    UPSTREAM_ORDER_NO_IDEMPOTENT: String(profile.dedupe),
    SUBMIT_UNKNOWN_RECHECK_S: '1',
    UPSTREAM_TIMEOUT_MS: String(TIMEOUT_MS),
    ORDER_POLL_BASE_MS: '50',
    ORDER_POLL_MAX_MS: '300',
    CALLBACK_PUBLIC_URL: `http://127.0.0.1:${port}/callbacks/upstream`,
  });

  beforeAll(async () => {
    db = await openTestDatabase();
    sandbox = await startSandbox({
      profile: profile.name,
      dedupeDownstreamOrderNo: profile.dedupe,
      catalog: { products: 2 },
      timetable: { paidMs: 50, fulfillingMs: 100, deliveredMs: 150, completedMs: 200 },
      callbackRetryDelaysMs: [500, 1000, 2000, 4000, 8000],
    });
    sandbox.catalog.addProduct({ skus: [{ skuCode: 'X-ONCE', price: PRICE }] });
  });

  afterEach(() => {
    sandbox.faults.reset();
  });

  afterAll(async () => {
    await sandbox?.stop();
    await db?.close();
  });

  /** The resend profile proves its own path: callbacks are dropped there. */
  const quietCallbacks = () => {
    if (profile.settledBy === 'resend') sandbox.faults.set({ callbacks: 'drop' });
  };

  const expectOnce = (shopNo: string, balanceBefore: string) => {
    const upstream = sandbox.orders().filter((o) => o.downstream_order_no === shopNo);
    expect(upstream).toHaveLength(1);
    expect(sandbox.walletBalance()).toBe(new Decimal(balanceBefore).minus(PRICE).toFixed(2));
    return upstream[0];
  };

  it('SIGKILL right after the upstream received the create, restart: one upstream order, one debit', async () => {
    const port = await freePort();
    const first = await startRelayChild({ databaseUrl: db.url, sandbox, port, env: env(port) });
    let second: Awaited<ReturnType<typeof startRelayChild>> | null = null;
    try {
      await seedCatalog(first.http);
      quietCallbacks();
      // the upstream takes its time between receiving the create and doing it
      sandbox.faults.set({ latencyMs: 300 });
      const balance = sandbox.walletBalance();
      const executed = sandbox.stats.createsExecuted;
      const onRequest = (e: SandboxRequestEvent) => {
        if (e.operation === 'createOrder' && e.phase === 'received') first.process.kill('SIGKILL');
      };
      sandbox.events.on('request', onRequest);
      const shopNo = `KILL-${profile.name}`;
      const answer = await first.http
        .post('/internal/orders', { shop_order_no: shopNo, sku_code: 'X-ONCE', quantity: 1 })
        .catch((e: Error) => e);
      sandbox.events.off('request', onRequest);
      expect(answer).toBeInstanceOf(Error);
      expect(await first.exited).toBeNull(); // killed by the signal
      const [row] = await db.query<{ status: string }>('SELECT status FROM orders WHERE shop_order_no = $1', [shopNo]);
      expect(row.status).toBe('submitting');

      sandbox.faults.set({ latencyMs: 0 });
      const restarted = await startRelayChild({ databaseUrl: db.url, sandbox, port, env: env(port) });
      second = restarted;
      // CONTRACT §5: the attempt found in `submitting` becomes `submit_unknown` once its lease has run
      // out, by the restarted service's sweep (its pace, within 2 × UPSTREAM_TIMEOUT_MS whatever the
      // poller does, is order-sweep-pace.e2e-spec.ts's, counted in sweeps; timings are bench/'s). The
      // order's status may move on at once (a callback, a re-send): the events list keeps the transition.
      const swept = await waitFor(
        async () =>
          (
            (await restarted.http.get(`/internal/orders/${shopNo}/events`)).data as {
              events?: Array<{ from: string | null; to: string | null; at: string }>;
            }
          ).events?.find((e) => e.from === 'submitting' && e.to === 'submit_unknown'),
        (e) => e !== undefined,
        'the sweep of the attempt left submitting',
      );
      expect(swept).toBeDefined();
      await restarted.waitForLog(
        (l) => typeof l.msg === 'string' && l.msg === `order ${shopNo}: attempt 1 found in flight after its lease: submit_unknown`,
      );
      const done = await waitForOrder(second.http, shopNo, SETTLED, 40_000);
      const upstream = expectOnce(shopNo, balance);
      expect(sandbox.stats.createsExecuted).toBe(executed + 1);
      expect(done.upstream_order_id).toBe(upstream.id);
      const events = (
        (await second.http.get(`/internal/orders/${shopNo}/events`)).data as {
          events: Array<{ source: string; from: string | null; to: string | null }>;
        }
      ).events;
      expect(events.find((e) => e.to === 'submit_unknown')).toMatchObject({ from: 'submitting', source: 'poll' });
      const settled = events.find((e) => e.from === 'submit_unknown');
      expect(settled?.source).toBe(profile.settledBy === 'callback' ? 'callback' : 'poll');
      if (profile.settledBy === 'resend') expect(sandbox.orders().find((o) => o.downstream_order_no === shopNo)).toBeDefined();
    } finally {
      await first.kill('SIGKILL');
      await second?.kill('SIGTERM');
    }
  }, 150_000); // two services boot in child processes on a loaded machine

  describe('the upstream did the work but the answer was lost', () => {
    let app: TestApp;

    beforeAll(async () => {
      const port = await freePort();
      app = await startTestApp(db, sandbox, { ...env(port), PORT: String(port) });
      await seedCatalog(app.http);
    });

    afterAll(async () => {
      await app?.close();
    });

    it.each([
      ['hang_after', {}],
      ['reset_after', {}],
      ['error_after', { status: 502 }],
    ] as const)('%s: 202 submit_unknown, then settled; one upstream order, one debit', async (kind, extra) => {
      quietCallbacks();
      const shopNo = `LOST-${kind}-${profile.name}`;
      const balance = sandbox.walletBalance();
      const received = sandbox.stats.createsReceived;
      sandbox.faults.set({ rules: [{ operation: 'createOrder', kind, times: 1, ...extra }] });
      const r = await app.http.post('/internal/orders', { shop_order_no: shopNo, sku_code: 'X-ONCE', quantity: 1 });
      expect(r.status).toBe(202);
      const done = await waitForOrder(app.http, shopNo, SETTLED, 30_000);
      const upstream = expectOnce(shopNo, balance);
      expect(done).toMatchObject({ upstream_order_id: upstream.id, attempt: 1, downstream_order_no: shopNo });
      // the resend profile sent the same attempt once more, under the same number; the other never did
      expect(sandbox.stats.createsReceived - received).toBe(profile.settledBy === 'resend' ? 2 : 1);
    });

    if (profile.settledBy === 'resend') {
      it('a re-send refused with a code proves nothing of the first: still submit_unknown, never rejected or resubmitted', async () => {
        quietCallbacks();
        const shopNo = `LOST-refused-resend-${profile.name}`;
        const balance = sandbox.walletBalance();
        // the first send is placed but its answer lost; the re-send is refused before the upstream
        // looks the number up (as an upstream may check the signature, stock or balance first)
        sandbox.faults.set({
          rules: [
            { operation: 'createOrder', kind: 'error_after', status: 502, times: 1 },
            { operation: 'createOrder', kind: 'coded_error', status: 401, errorCode: 'unauthorized', times: 1 },
          ],
        });
        const r = await app.http.post('/internal/orders', { shop_order_no: shopNo, sku_code: 'X-ONCE', quantity: 1 });
        expect(r.status).toBe(202);
        const seen = new Set<string>();
        const done = await waitForOrder(
          app.http,
          shopNo,
          (o) => {
            seen.add(o.status);
            return SETTLED(o);
          },
          30_000,
        );
        expect(seen.has('rejected')).toBe(false);
        const upstream = expectOnce(shopNo, balance);
        expect(done).toMatchObject({ upstream_order_id: upstream.id, attempt: 1, downstream_order_no: shopNo });
        expect(sandbox.orders().filter((o) => o.downstream_order_no?.startsWith(`${shopNo}-`))).toHaveLength(0);
        // sent three times under the one number: the lost one, the refused one, the deduplicated one
        const [attempt] = await db.query<{ sends: number; status: string }>(
          'SELECT a.sends, a.status FROM order_attempts a JOIN orders o ON o.id = a.order_id WHERE o.shop_order_no = $1',
          [shopNo],
        );
        expect(attempt).toMatchObject({ sends: 3, status: 'accepted' });
      });
    }

    it('a normal order is followed by verified callbacks under this profile', async () => {
      const r = await app.http.post('/internal/orders', { shop_order_no: `CB-${profile.name}`, sku_code: 'X-ONCE', quantity: 1 });
      expect(r.status).toBe(201);
      await waitForOrder(app.http, `CB-${profile.name}`, (o) => o.status === 'completed');
      // one snapshot per status change (paid, fulfilling, delivered, completed), each verified and applied
      await waitFor(
        () => db.query<{ state: string }>('SELECT state FROM callback_inbox WHERE downstream_order_no = $1', [`CB-${profile.name}`]),
        (rows) => rows.length === 4 && rows.every((x) => x.state === 'applied'),
      );
    });
  });
});
