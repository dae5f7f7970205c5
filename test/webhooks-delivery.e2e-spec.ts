/**
 * Shop webhook delivery under pressure (CONTRACT §7, §9), end to end against real HTTP shops:
 * - an answer is taken at its status and its body is not read: a shop that trickles its body, or
 *   sends a large one, neither holds the delivery open nor fails it (the request's deadline runs to
 *   the status);
 * - one event is never sent by two instances at once, even when one instance's clock runs ahead
 *   (due times and leases are the database's), and a claim whose lease ran out records nothing over
 *   the newer claim;
 * - a stuck order's alert is written in the transaction that flags the order (a failed outbox write
 *   leaves the order unflagged, to be flagged with its alert at the next pass), under its own
 *   subject `order_stuck:<no>`, so that a shop refusing alerts does not hold back the order's status
 *   webhooks; those carry `data.sequence`, growing with each change of the order.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { DataSource } from 'typeorm';
import { createRelayApp, type RelayApp } from '../src/app.factory.js';
import { Clock } from '../src/common/clock.js';
import { loadConfig } from '../src/config/app-config.js';
import { OutboxRepository } from '../src/notifications/outbox.repository.js';
import { OutboxWriter, type OutboxEvent } from '../src/notifications/outbox.writer.js';
import { WebhookSender } from '../src/notifications/webhook-sender.service.js';
import { Metrics } from '../src/ops/metrics.service.js';
import type { SandboxServer } from '../src/sandbox/sandbox.server.js';
import { useAppSuite } from './support/app-suite.js';
import { waitForOrder } from './support/child-app.js';
import { FakeShop } from './support/fake-shop.js';
import { openTestDatabase, startSandbox, testEnv, type TestDatabase } from './support/test-app.js';
import { passesRun, waitFor } from './support/wait.js';

const SHOP_SECRET = 'shop-webhook-secret-delivery';

/** The wall clock shifted by a fixed offset (a replica whose clock is wrong). */
class ShiftedClock extends Clock {
  constructor(private readonly offsetMs: number) {
    super();
  }
  now(): Date {
    return new Date(Date.now() + this.offsetMs);
  }
}

interface App {
  relay: RelayApp;
  sender: WebhookSender;
  append(events: OutboxEvent[]): Promise<void>;
  close(): Promise<void>;
}

async function startApp(
  db: TestDatabase,
  sandbox: SandboxServer,
  env: Record<string, string>,
  opts: { clock?: Clock; workers?: boolean } = {},
): Promise<App> {
  const config = loadConfig({ ...testEnv(sandbox, env), DATABASE_URL: db.url });
  if (opts.workers === false) config.workers = false;
  const relay = await createRelayApp(config, { endpoint: db.endpoint, logger: false, clock: opts.clock });
  const ds = relay.app.get(DataSource);
  const writer = relay.app.get(OutboxWriter);
  return {
    relay,
    sender: relay.app.get(WebhookSender),
    append: (events) => ds.transaction((em) => writer.append(em, events)),
    close: () => relay.close(),
  };
}

const orderEvent = (subject: string): OutboxEvent => ({
  type: 'order.status_changed',
  subject,
  payload: {
    shop_order_no: subject,
    status: 'delivered',
    previous_status: 'fulfilling',
    source: 'poll',
    attempt: 1,
    at: new Date().toISOString(),
  },
});

interface Row {
  id: string;
  status: string;
  attempts: number;
  last_status: number | null;
  last_error: string | null;
  lease_token: string | null;
  /** next_attempt_at − the database's now(), in ms. */
  due_in_ms: number;
}

/** The database's time now (for a bracket: a stamp written after this is not earlier). */
const databaseNow = async (db: TestDatabase): Promise<Date> => (await db.query<{ now: Date }>('SELECT now() AS now'))[0].now;

/**
 * Whether the event's next_attempt_at is `ms` after a time of the database's clock between `since`
 * and now: set from that clock at a moment the test brackets, whatever the time the test took.
 */
const dueFrom = async (db: TestDatabase, subject: string, since: Date, ms: number) =>
  (
    await db.query<{ not_before: boolean; not_after: boolean }>(
      `SELECT next_attempt_at >= $2::timestamptz + make_interval(secs => $3 / 1000.0) AS not_before,
              next_attempt_at <= now() + make_interval(secs => $3 / 1000.0) AS not_after
         FROM outbox_events WHERE subject = $1`,
      [subject, since, ms],
    )
  )[0];

const rowOf = async (db: TestDatabase, subject: string): Promise<Row | undefined> =>
  (
    await db.query<Row>(
      `SELECT id::text, status, attempts, last_status, last_error, lease_token,
              (extract(epoch FROM next_attempt_at - now()) * 1000)::int AS due_in_ms
         FROM outbox_events WHERE subject = $1`,
      [subject],
    )
  )[0];

/** What a shop did with one request. */
interface Seen {
  subject: string;
  /** The connection closed (by either side); false while it is open. */
  closed: boolean;
  /** The shop ended its answer itself; false while it is still sending, or if the relay closed first. */
  endedByShop: boolean;
}

/**
 * A shop whose answer per subject is chosen by the test: `trickle` (headers at once, then one byte
 * every 100 ms, for as long as the connection stays open, up to five minutes), `big` (200 with a
 * 1 MiB body), `hold` (nothing until `release`), else 200.
 */
class ScriptedShop {
  readonly seen: Seen[] = [];
  mode: (subject: string) => 'trickle' | 'big' | 'hold' | 'ok' = () => 'ok';
  private readonly held: ServerResponse[] = [];
  private server: Server | null = null;
  url = '';

  async start(): Promise<void> {
    this.server = createServer((req: IncomingMessage, res: ServerResponse) => {
      let body = '';
      req.on('data', (c: Buffer) => (body += c.toString('utf8')));
      req.on('end', () => {
        const seen: Seen = { subject: (JSON.parse(body) as { subject: string }).subject, closed: false, endedByShop: false };
        this.seen.push(seen);
        res.on('close', () => (seen.closed = true));
        const mode = this.mode(seen.subject);
        if (mode === 'trickle') {
          res.writeHead(200, { 'content-type': 'text/plain' });
          let n = 0;
          const timer = setInterval(() => {
            if (res.destroyed || ++n > 3000) {
              clearInterval(timer);
              if (!res.destroyed) {
                seen.endedByShop = true;
                res.end();
              }
              return;
            }
            res.write('x');
          }, 100);
        } else if (mode === 'big') {
          res.writeHead(200, { 'content-type': 'text/plain' }).end('x'.repeat(1024 * 1024));
        } else if (mode === 'hold') {
          this.held.push(res);
        } else {
          res.writeHead(200).end('{"ok":true}');
        }
      });
    });
    await new Promise<void>((resolve) => this.server!.listen(0, '127.0.0.1', resolve));
    this.url = `http://127.0.0.1:${(this.server.address() as { port: number }).port}/hooks`;
  }

  /** Answers 200 to every held request. */
  release(): void {
    for (const res of this.held.splice(0)) res.writeHead(200).end('{"ok":true}');
  }

  of(subject: string): Seen[] {
    return this.seen.filter((s) => s.subject === subject);
  }

  async stop(): Promise<void> {
    this.release();
    this.server?.closeAllConnections();
    await new Promise<void>((resolve) => (this.server ? this.server.close(() => resolve()) : resolve()));
  }
}

describe('shop webhook delivery: deadlines and leases', () => {
  let sandbox: SandboxServer;
  const shop = new ScriptedShop();
  beforeAll(async () => {
    sandbox = await startSandbox();
    await shop.start();
  });
  afterAll(async () => {
    await shop.stop();
    await sandbox.stop();
  });

  describe('one instance', () => {
    let db: TestDatabase;
    let app: App;
    beforeAll(async () => {
      db = await openTestDatabase();
      app = await startApp(db, sandbox, { SHOP_WEBHOOK_URL: shop.url, SHOP_WEBHOOK_SECRET: SHOP_SECRET });
      // A short deadline, so that the test need not wait 10 s; the lease stays well above it.
      app.sender.timing = { requestMs: 1000, leaseMs: 10_000 };
    });
    afterAll(async () => {
      await app?.close();
      await db?.close();
    });

    it('takes the answer at its status: a shop that trickles its body neither holds the delivery nor fails it', async () => {
      shop.mode = (s) => (s === 'SO-TRICKLE' ? 'trickle' : 'ok');
      // A deadline far beyond what this test waits: a delivery that waited for the body (which never
      // ends on its own) would be recorded only at it.
      const timing = app.sender.timing;
      app.sender.timing = { requestMs: 120_000, leaseMs: 240_000 };
      let row: Awaited<ReturnType<typeof rowOf>>;
      try {
        await app.append([orderEvent('SO-TRICKLE')]);
        app.sender.kick();
        row = await waitFor(
          () => rowOf(db, 'SO-TRICKLE'),
          (r) => r?.attempts === 1,
          'the first attempt recorded',
          20_000,
        );
      } finally {
        app.sender.timing = timing;
      }
      const [request] = shop.of('SO-TRICKLE');
      // delivered, at the answer's headers
      expect(row).toMatchObject({ status: 'delivered', last_status: 200, lease_token: null });
      // and the relay closed the connection, the shop still sending
      await waitFor(
        () => request.closed,
        (closed) => closed,
        'the relay to close the connection',
        10_000,
      );
      expect(request.endedByShop).toBe(false);
    });

    it('does not read a large answer: a 2xx with a 1 MiB body delivers the event', async () => {
      shop.mode = (s) => (s === 'SO-BIG' ? 'big' : 'ok');
      await app.append([orderEvent('SO-BIG')]);
      app.sender.kick();
      const row = await waitFor(
        () => rowOf(db, 'SO-BIG'),
        (r) => r?.attempts === 1,
        'the first attempt recorded',
        10_000,
      );
      expect(row).toMatchObject({ status: 'delivered', last_status: 200 });
    });
  });

  it('never sends one event from two instances at once, even when one clock runs two minutes ahead', async () => {
    const db = await openTestDatabase();
    const env = { SHOP_WEBHOOK_URL: shop.url, SHOP_WEBHOOK_SECRET: SHOP_SECRET };
    const a = await startApp(db, sandbox, env);
    let b: App | null = null;
    try {
      shop.mode = (s) => (s === 'SO-HOLD' ? 'hold' : 'ok');
      const beforeClaim = await databaseNow(db);
      await a.append([orderEvent('SO-HOLD')]);
      a.sender.kick();
      await waitFor(
        () => shop.of('SO-HOLD').length,
        (n) => n === 1,
        'the first request at the shop',
      );
      // Leased by the database's clock from the claim: the whole lease ahead, whatever the clocks say.
      const leased = await rowOf(db, 'SO-HOLD');
      expect(leased!.lease_token).not.toBeNull();
      expect(await dueFrom(db, 'SO-HOLD', beforeClaim, a.sender.timing.leaseMs)).toEqual({ not_before: true, not_after: true });
      expect(a.sender.timing.leaseMs).toBeGreaterThanOrEqual(2 * a.sender.timing.requestMs);

      // A second replica whose clock is two minutes ahead (the old claim compared its own clock).
      b = await startApp(db, sandbox, env, { clock: new ShiftedClock(120_000) });
      // whole delivery cycles of B begun after it started: none took the leased event
      b.sender.kick();
      await passesRun(b.sender.cycles, 2, 'delivery cycles of B');
      expect(shop.of('SO-HOLD')).toHaveLength(1);

      shop.release();
      const done = await waitFor(
        () => rowOf(db, 'SO-HOLD'),
        (r) => r?.status === 'delivered',
        'the delivery recorded',
      );
      expect(done!.attempts).toBe(1);
      // whole delivery cycles of both begun after: neither sent it again
      await Promise.all([a, b].map((x) => passesRun(x!.sender.cycles, 1, 'delivery cycles')));
      expect(shop.of('SO-HOLD')).toHaveLength(1);
    } finally {
      await a.close();
      await b?.close();
      await db.close();
    }
  });

  it('records nothing for a claim whose lease ran out and was claimed again', async () => {
    const db = await openTestDatabase();
    const app = await startApp(db, sandbox, { SHOP_WEBHOOK_URL: shop.url, SHOP_WEBHOOK_SECRET: SHOP_SECRET }, { workers: false });
    try {
      const outbox = app.relay.app.get(OutboxRepository);
      await app.append([orderEvent('SO-LEASE')]);
      const [first] = await outbox.claimDue(60_000, 10);
      expect(first).toMatchObject({ subject: 'SO-LEASE', attempts: 0 });
      expect(await outbox.claimDue(60_000, 10)).toEqual([]); // not before its lease ran out…
      // the minute of its lease passes (its end moved back, as the database's clock would reach it)
      await db.query(
        `UPDATE outbox_events SET next_attempt_at = next_attempt_at - interval '60 seconds' WHERE subject = 'SO-LEASE' AND ` +
          `lease_token = $1`,
        [first.leaseToken],
      );
      const [second] = await outbox.claimDue(60_000, 10); // …then another claim takes it
      expect(second).toMatchObject({ id: first.id });
      expect(second.leaseToken).not.toBe(first.leaseToken);

      expect(await outbox.recordAttempt(first, { status: 'delivered', retryInMs: null, httpStatus: 200, error: null })).toEqual({
        recorded: false,
      });
      expect(await rowOf(db, 'SO-LEASE')).toMatchObject({ status: 'pending', attempts: 0, lease_token: second.leaseToken });
      const beforeRecord = await databaseNow(db);
      expect(
        await outbox.recordAttempt(second, { status: 'pending', retryInMs: 30_000, httpStatus: 503, error: 'HTTP 503' }),
      ).toMatchObject({ recorded: true });
      const row = await rowOf(db, 'SO-LEASE');
      expect(row).toMatchObject({ status: 'pending', attempts: 1, last_status: 503, lease_token: null });
      expect(await dueFrom(db, 'SO-LEASE', beforeRecord, 30_000)).toEqual({ not_before: true, not_after: true });
    } finally {
      await app.close();
      await db.close();
    }
  });
});

interface Hook {
  id: string;
  event: string;
  subject: string;
  status: number;
  data: Record<string, unknown>;
}

describe('stuck-order alerts and the order of status webhooks', () => {
  const shop = new FakeShop();
  const t = useAppSuite({
    sandbox: {
      catalog: { products: 2 },
      // orders stay in fulfilling until the test delivers them
      timetable: { paidMs: 30, fulfillingMs: 60, deliveredMs: null, completedMs: null },
    },
    prepare: (sandbox) => sandbox.catalog.addProduct({ skus: [{ skuCode: 'STUCK-1', price: '2.00' }] }),
    env: async () => {
      await shop.start();
      return {
        SHOP_WEBHOOK_URL: shop.url,
        SHOP_WEBHOOK_SECRET: SHOP_SECRET,
        ORDER_POLL_BASE_MS: '50',
        ORDER_POLL_MAX_MS: '200',
        STUCK_ORDER_ALERT_S: '1',
        LOG_LEVEL: 'warn',
      };
    },
    logs: true,
    seed: true,
  });
  afterAll(async () => {
    await shop.stop();
  });

  const hooks = (subject: string): Hook[] =>
    shop.received
      .filter((r) => r.subject === subject)
      .map((r) => ({
        id: r.id,
        event: r.event,
        subject: r.subject,
        status: r.status,
        data: (JSON.parse(r.body) as { data: Record<string, unknown> }).data,
      }));
  const alertsRaised = async (): Promise<number> => {
    const text = await t.app.relay.app.get(Metrics).registry.metrics();
    const line = text.split('\n').find((l) => l.startsWith('relay_alerts_total{kind="order_stuck"} '));
    return line ? Number(line.split(' ')[1]) : 0;
  };

  it('flags a stuck order only with its alert, under order_stuck:<no>, which does not hold back the order', async () => {
    const { db, sandbox, app } = t;
    // A shop that refuses the event types it does not know (here: every alert).
    shop.respond = (r) => (r.event.startsWith('alert.') ? 400 : 200);
    // The alert's outbox write fails for a while (a real error of the database).
    await db.query(`ALTER TABLE outbox_events ADD CONSTRAINT test_no_stuck_alert CHECK (event_type <> 'alert.order_stuck') NOT VALID`);
    let constrained = true;
    try {
      expect((await app.http.post('/internal/orders', { shop_order_no: 'SO-STUCK-A', sku_code: 'STUCK-1', quantity: 1 })).status).toBe(201);
      const placed = await waitForOrder(app.http, 'SO-STUCK-A', (o) => o.status === 'fulfilling');
      await waitFor(
        () => app.logLines().filter((l) => String(l.msg).includes('test_no_stuck_alert')).length,
        (n) => n >= 1,
        'a stuck-order pass that failed on the outbox',
        15_000,
      );
      // Not flagged without its alert, nothing counted nor logged for the alert that was not written.
      const [unflagged] = await db.query<{ stuck: boolean }>(
        `SELECT stuck_since IS NOT NULL AS stuck FROM orders WHERE shop_order_no = 'SO-STUCK-A'`,
      );
      expect(unflagged.stuck).toBe(false);
      expect(await alertsRaised()).toBe(0);
      expect(app.logLines().filter((l) => l.alert === 'order_stuck')).toHaveLength(0);

      await db.query('ALTER TABLE outbox_events DROP CONSTRAINT test_no_stuck_alert');
      constrained = false;
      await waitFor(
        () => db.query<{ stuck: boolean }>(`SELECT stuck_since IS NOT NULL AS stuck FROM orders WHERE shop_order_no = 'SO-STUCK-A'`),
        (rows) => rows[0].stuck,
        'the order flagged stuck',
      );
      const alerts = await db.query<{ subject: string; payload: Record<string, unknown> }>(
        `SELECT subject, payload FROM outbox_events WHERE event_type = 'alert.order_stuck' AND payload->>'shop_order_no' = 'SO-STUCK-A'`,
      );
      expect(alerts).toHaveLength(1);
      expect(alerts[0].subject).toBe('order_stuck:SO-STUCK-A');
      expect(alerts[0].payload).toMatchObject({
        kind: 'order_stuck',
        shop_order_no: 'SO-STUCK-A',
        status: 'fulfilling',
        since: expect.any(String),
      });
      const ownSubject = await db.query<{ event_type: string }>(`SELECT event_type FROM outbox_events WHERE subject = 'SO-STUCK-A'`);
      expect(ownSubject.map((r) => r.event_type).every((e) => e === 'order.status_changed')).toBe(true);
      await waitFor(
        () => alertsRaised(),
        (n) => n === 1,
        'the alert counted once',
      );
      expect(app.logLines().filter((l) => l.alert === 'order_stuck' && l.shop_order_no === 'SO-STUCK-A')).toHaveLength(1);
      await waitFor(
        () => hooks('order_stuck:SO-STUCK-A').length,
        (n) => n >= 1,
        'the alert at the shop (refused)',
      );

      // The refused alert does not hold back the order's own webhooks.
      sandbox.setOrderStatus(placed.upstream_order_id!, 'delivered');
      await waitForOrder(app.http, 'SO-STUCK-A', (o) => o.status === 'delivered');
      const changes = await waitFor(
        () => hooks('SO-STUCK-A').filter((h) => h.status === 200),
        (hs) => hs.some((h) => h.data.status === 'delivered'),
        "the order's delivered webhook",
      );
      expect(changes.map((h) => h.data.status)).toEqual(expect.arrayContaining(['submitting', 'fulfilling', 'delivered']));
    } finally {
      if (constrained) await db.query('ALTER TABLE outbox_events DROP CONSTRAINT IF EXISTS test_no_stuck_alert');
    }
  });

  it("numbers an order's status webhooks with data.sequence, so that a replayed older one can be told apart", async () => {
    const { sandbox, app } = t;
    shop.respond = () => 200;
    expect((await app.http.post('/internal/orders', { shop_order_no: 'SO-SEQ-B', sku_code: 'STUCK-1', quantity: 1 })).status).toBe(201);
    const placed = await waitForOrder(app.http, 'SO-SEQ-B', (o) => o.status === 'fulfilling');
    sandbox.setOrderStatus(placed.upstream_order_id!, 'delivered');
    await waitForOrder(app.http, 'SO-SEQ-B', (o) => o.status === 'delivered');
    const changes = await waitFor(
      () => hooks('SO-SEQ-B').filter((h) => h.event === 'order.status_changed'),
      (hs) => hs.some((h) => h.data.status === 'delivered'),
      "the order's delivered webhook",
    );
    expect(changes.length).toBeGreaterThanOrEqual(3);
    // data.sequence: the event's id, a number that grows with each change of the order.
    const sequences = changes.map((h) => h.data.sequence);
    expect(sequences.every((s) => typeof s === 'number')).toBe(true);
    expect(changes.map((h) => String(h.data.sequence))).toEqual(changes.map((h) => h.id));
    expect(sequences).toEqual([...(sequences as number[])].sort((x, y) => x - y));
    expect(new Set(sequences).size).toBe(sequences.length);

    // A replay of an older change arrives last, with its older sequence: a shop that applies only a
    // sequence above the last it applied for the order ignores it.
    const first = changes[0];
    expect((await app.http.post(`/internal/webhooks/deliveries/${first.id}/replay`)).status).toBe(200);
    const replayed = await waitFor(
      () => hooks('SO-SEQ-B').filter((h) => h.id === first.id),
      (hs) => hs.length === 2,
      'the replay at the shop',
    );
    expect(replayed[1].data.sequence).toBe(first.data.sequence);
    expect(replayed[1].data.sequence as number).toBeLessThan(changes.at(-1)!.data.sequence as number);
  });
});
