/**
 * Shop webhooks from the transactional outbox (CONTRACT §7), end to end: events written with
 * `OutboxWriter.append` in a transaction, delivered by the app's sender to a real local HTTP server
 * (the "shop"), retried with growing backoff, given up into `dead`, listed and replayed through the
 * internal API, kept across a restart, delivered once with two instances on one database, and signed
 * so that `verifySignature` accepts them. Due times and leases are the database's (`now()`): time
 * passes for the outbox by moving its pending rows' due times back (`elapse`), never by waiting for a
 * backoff; the signatures' timestamps come from the clock seam (a test clock that runs with the wall
 * clock plus an offset the test advances).
 */
import axios from 'axios';
import { DataSource } from 'typeorm';
import type { Clock } from '../src/common/clock.js';
import { OutboxRepository } from '../src/notifications/outbox.repository.js';
import { OutboxWriter, type OutboxEvent } from '../src/notifications/outbox.writer.js';
import { WebhookSender } from '../src/notifications/webhook-sender.service.js';
import type { SandboxServer } from '../src/sandbox/sandbox.server.js';
import { useAppSuite } from './support/app-suite.js';
import { FakeShop } from './support/fake-shop.js';
import { openTestDatabase, startSandbox, startTestApp, type TestApp, type TestDatabase } from './support/test-app.js';
import { passesRun, waitFor } from './support/wait.js';
import { TestClock } from './support/test-clock.js';

const SHOP_SECRET = 'shop-webhook-secret-for-tests';

/** An instance, with a way to write outbox events in a transaction and to wake its sender. */
interface App extends TestApp {
  append(events: OutboxEvent[]): Promise<void>;
  kick(): void;
}

function withOutbox(app: TestApp): App {
  const ds = app.relay.app.get(DataSource);
  const writer = app.relay.app.get(OutboxWriter);
  return {
    ...app,
    append: (events) => ds.transaction((em) => writer.append(em, events)),
    kick: () => app.relay.app.get(WebhookSender).kick(),
  };
}

const startApp = async (db: TestDatabase, sandbox: SandboxServer, env: Record<string, string>, clock?: Clock): Promise<App> =>
  withOutbox(await startTestApp(db, sandbox, env, { clock }));

interface Row {
  id: string;
  subject: string;
  status: string;
  attempts: number;
  next_attempt_at: Date;
  last_attempt_at: Date | null;
  lease_token: string | null;
}

const rowOf = async (db: TestDatabase, subject: string): Promise<Row | undefined> =>
  (
    await db.query<Row>(
      'SELECT id::text, subject, status, attempts, next_attempt_at, last_attempt_at, lease_token FROM outbox_events WHERE subject = $1',
      [subject],
    )
  )[0];

/** `ms` pass for the outbox's waiting rows, as the database's clock judges their due times. */
const elapse = (db: TestDatabase, ms: number): Promise<unknown> =>
  db.query(
    `UPDATE outbox_events SET next_attempt_at = next_attempt_at - $1 * interval '1 millisecond' WHERE status = 'pending' AND ` +
      `lease_token IS NULL`,
    [ms],
  );

const orderEvent = (subject: string, status = 'delivered'): OutboxEvent => ({
  type: 'order.status_changed',
  subject,
  payload: { shop_order_no: subject, status, previous_status: 'fulfilling', source: 'poll', attempt: 1, at: new Date().toISOString() },
});

const metricValue = (text: string, name: string): number => {
  const line = text.split('\n').find((l) => l.startsWith(`${name} `));
  return line ? Number(line.split(' ')[1]) : NaN;
};

describe('shop webhooks', () => {
  let shop: FakeShop;
  /** The upstream of the tests that start their instances themselves. */
  let sandbox: SandboxServer;
  beforeAll(async () => {
    sandbox = await startSandbox();
    shop = new FakeShop();
    await shop.start();
  });
  afterAll(async () => {
    await shop.stop();
    await sandbox.stop();
  });
  const shopEnv = () => ({ SHOP_WEBHOOK_URL: shop.url, SHOP_WEBHOOK_SECRET: SHOP_SECRET });

  describe('one instance', () => {
    const clock = new TestClock();
    const t = useAppSuite({ env: () => ({ ...shopEnv(), SHOP_WEBHOOK_MAX_ATTEMPTS: '4' }), clock });
    let db: TestDatabase;
    let app: App;
    beforeAll(() => {
      db = t.db;
      app = withOutbox(t.app);
    });

    it('retries a failing shop with growing backoff and delivers once it answers 2xx; the signature verifies', async () => {
      let failuresLeft = 3;
      shop.respond = (r) => (r.subject === 'SO-RETRY' && failuresLeft-- > 0 ? 503 : 200);
      await app.append([orderEvent('SO-RETRY')]);
      app.kick();

      const delays: number[] = [];
      for (let attempt = 1; attempt <= 3; attempt++) {
        const row = await waitFor(
          () => rowOf(db, 'SO-RETRY'),
          (r) => r !== undefined && r.attempts === attempt,
          `attempt ${attempt}`,
        );
        expect(row!.status).toBe('pending');
        delays.push(new Date(row!.next_attempt_at).getTime() - new Date(row!.last_attempt_at!).getTime());
        // Not due before its time: nothing more reaches the shop until its due time has passed.
        expect(shop.received.filter((r) => r.subject === 'SO-RETRY')).toHaveLength(attempt);
        await elapse(db, delays[attempt - 1] + 1000);
        app.kick();
      }
      const done = await waitFor(
        () => rowOf(db, 'SO-RETRY'),
        (r) => r?.status === 'delivered',
        'delivery',
      );
      expect(done!.attempts).toBe(4);
      expect(delays[0]).toBeGreaterThan(0);
      expect(delays[1]).toBeGreaterThan(delays[0]);
      expect(delays[2]).toBeGreaterThan(delays[1]);

      const got = shop.received.filter((r) => r.subject === 'SO-RETRY');
      expect(got.map((r) => r.status)).toEqual([503, 503, 503, 200]);
      expect(got.map((r) => r.attempt)).toEqual([1, 2, 3, 4]);
      expect(new Set(got.map((r) => r.id)).size).toBe(1);
      expect(new Set(got.map((r) => r.body)).size).toBe(1);
      expect(shop.delivered(done!.id, 'SO-RETRY')).toHaveLength(1);

      const last = got[3];
      expect(JSON.parse(last.body)).toMatchObject({
        id: done!.id,
        event: 'order.status_changed',
        subject: 'SO-RETRY',
        data: { shop_order_no: 'SO-RETRY', status: 'delivered' },
      });
      const verify = (secret: string) =>
        shop.verify(last, secret, { nowSeconds: Math.floor(clock.now().getTime() / 1000), toleranceSeconds: 60 });
      expect(verify(SHOP_SECRET)).toEqual({ ok: true });
      expect(verify('another-secret')).toEqual({ ok: false, reason: 'signature_mismatch' });
      // Nothing more arrives for it.
      await elapse(db, 24 * 3600_000);
      app.kick();
      // a whole delivery cycle begun after the kick: it found nothing due for it
      await passesRun(app.relay.app.get(WebhookSender).cycles, 1, 'delivery cycles');
      expect(shop.received.filter((r) => r.subject === 'SO-RETRY')).toHaveLength(4);
    });

    it('gives up after SHOP_WEBHOOK_MAX_ATTEMPTS into dead, lists it, and delivers it on replay', async () => {
      let shopDown = true;
      shop.respond = (r) => (r.subject === 'SO-DEAD' && shopDown ? 500 : 200);
      await app.append([orderEvent('SO-DEAD', 'canceled')]);
      app.kick();
      for (let attempt = 1; attempt < 4; attempt++) {
        await waitFor(
          () => rowOf(db, 'SO-DEAD'),
          (r) => r !== undefined && r.attempts === attempt,
          `attempt ${attempt}`,
        );
        await elapse(db, 2 * 3600_000);
        app.kick();
      }
      const dead = await waitFor(
        () => rowOf(db, 'SO-DEAD'),
        (r) => r?.status === 'dead',
        'dead letter',
      );
      expect(dead!.attempts).toBe(4);
      expect(shop.received.filter((r) => r.subject === 'SO-DEAD').map((r) => r.status)).toEqual([500, 500, 500, 500]);

      const listed = await app.http.get('/internal/webhooks/deliveries', { params: { status: 'dead' } });
      expect(listed.status).toBe(200);
      expect(listed.data).toMatchObject({ ok: true, total: 1, page: 1, page_size: 100 });
      expect(listed.data.items[0]).toMatchObject({
        id: dead!.id,
        event: 'order.status_changed',
        subject: 'SO-DEAD',
        status: 'dead',
        attempts: 4,
        last_status: 500,
        last_error: 'HTTP 500',
        next_attempt_at: null,
        payload: { shop_order_no: 'SO-DEAD', status: 'canceled' },
      });
      const all = await app.http.get('/internal/webhooks/deliveries', { params: { page_size: 1 } });
      expect(all.data).toMatchObject({ ok: true, total: 2, page_size: 1 });
      expect(all.data.items).toHaveLength(1);

      const metrics = (await axios.get(`${app.relay.url}/metrics`)).data as string;
      expect(metricValue(metrics, 'relay_outbox_deliveries_total{result="dead"}')).toBe(1);
      expect(metricValue(metrics, 'relay_outbox_deliveries_total{result="delivered"}')).toBe(1);
      expect(metricValue(metrics, 'relay_outbox_deliveries_total{result="failed"}')).toBe(6);
      expect(metricValue(metrics, 'relay_outbox_dead')).toBe(1);
      expect(metricValue(metrics, 'relay_outbox_backlog')).toBe(0);

      shopDown = false;
      const replay = await app.http.post(`/internal/webhooks/deliveries/${dead!.id}/replay`);
      expect(replay.status).toBe(200);
      expect(replay.data).toMatchObject({ ok: true, delivery: { id: dead!.id, status: 'pending', attempts: 0, replays: 1 } });
      const delivered = await waitFor(
        () => rowOf(db, 'SO-DEAD'),
        (r) => r?.status === 'delivered',
        'replayed delivery',
      );
      expect(delivered!.attempts).toBe(1);
      expect(shop.delivered(dead!.id, 'SO-DEAD')).toHaveLength(1);
      expect((await app.http.get('/internal/webhooks/deliveries', { params: { status: 'dead' } })).data.total).toBe(0);
    });

    it('answers the operator endpoints with the contract envelope', async () => {
      expect((await axios.get(`${app.relay.url}/internal/webhooks/deliveries`, { validateStatus: () => true })).status).toBe(401);
      const bad = await app.http.get('/internal/webhooks/deliveries', { params: { status: 'lost' } });
      expect(bad.status).toBe(400);
      expect(bad.data).toMatchObject({ ok: false, error_code: 'bad_request', fields: { status: expect.any(Array) } });
      const tooBig = await app.http.get('/internal/webhooks/deliveries', { params: { page_size: 501 } });
      expect(tooBig.status).toBe(400);
      for (const id of ['999999', 'abc', '0']) {
        const missing = await app.http.post(`/internal/webhooks/deliveries/${id}/replay`);
        expect(missing.status).toBe(404);
        expect(missing.data).toMatchObject({ ok: false, error_code: 'delivery_not_found' });
      }
      // A pending one is on its way already: not replayed.
      shop.respond = (r) => (r.subject === 'SO-PENDING' ? 503 : 200);
      await app.append([orderEvent('SO-PENDING')]);
      app.kick();
      const row = await waitFor(
        () => rowOf(db, 'SO-PENDING'),
        (r) => r?.attempts === 1,
        'first attempt',
      );
      const pending = await app.http.post(`/internal/webhooks/deliveries/${row!.id}/replay`);
      expect(pending.status).toBe(409);
      expect(pending.data).toMatchObject({ ok: false, error_code: 'delivery_pending', delivery: { id: row!.id, status: 'pending' } });
    });
  });

  it('loses nothing across a restart: another instance on the same database delivers what the first could not', async () => {
    const db = await openTestDatabase();
    const clock = new TestClock();
    const env = shopEnv();
    let first: App | null = await startApp(db, sandbox, env, clock);
    let second: App | null = null;
    try {
      shop.respond = (r) => (r.subject.startsWith('SO-RESTART') ? 502 : 200);
      await first.append([orderEvent('SO-RESTART-1'), orderEvent('SO-RESTART-2')]);
      first.kick();
      await waitFor(
        async () => [await rowOf(db, 'SO-RESTART-1'), await rowOf(db, 'SO-RESTART-2')],
        (rs) => rs.every((r) => r?.attempts === 1),
        'first attempts',
      );
      await first.close();
      first = null;
      // Written while no instance runs (e.g. by a migration or another service's transaction).
      await db.query(
        `INSERT INTO outbox_events (event_type, subject, payload) VALUES ('order.status_changed', 'SO-RESTART-3', ` +
          `'{"event":"order.status_changed","status":"paid"}')`,
      );

      shop.respond = () => 200;
      second = await startApp(db, sandbox, env, clock);
      await elapse(db, 3600_000);
      second.kick();
      const rows = await waitFor(
        async () => db.query<Row>(`SELECT id::text, subject, status FROM outbox_events WHERE subject LIKE 'SO-RESTART-%' ORDER BY id`),
        (rs) => rs.length === 3 && rs.every((r) => r.status === 'delivered'),
        'every event delivered',
      );
      for (const r of rows) expect(shop.delivered(r.id, r.subject)).toHaveLength(1);
    } finally {
      await first?.close();
      await second?.close();
      await db.close();
    }
  });

  describe('two instances on one database', () => {
    const t = useAppSuite({ instances: 2, env: shopEnv });

    it('delivers each event once with two instances on one database, in order per subject', async () => {
      const [a, b] = t.apps.map(withOutbox);
      shop.respond = async () => {
        await new Promise((r) => setTimeout(r, 5));
        return 200;
      };
      const events: OutboxEvent[] = [];
      for (let i = 0; i < 40; i++) events.push(orderEvent(`SO-PAIR-${i % 8}`, `status-${Math.floor(i / 8)}`));
      await a.append(events.slice(0, 20));
      await b.append(events.slice(20));
      a.kick();
      b.kick();
      const rows = await waitFor(
        async () => t.db.query<Row>(`SELECT id::text, subject, status FROM outbox_events WHERE subject LIKE 'SO-PAIR-%' ORDER BY id`),
        (rs) => rs.length === 40 && rs.every((r) => r.status === 'delivered'),
        'every event delivered',
        60_000,
      );
      const got = shop.received.filter((r) => r.subject.startsWith('SO-PAIR-'));
      expect(got).toHaveLength(40);
      expect(new Set(got.map((r) => r.id)).size).toBe(40);
      for (const r of rows) expect(shop.delivered(r.id, r.subject)).toHaveLength(1);
      for (let s = 0; s < 8; s++) {
        const ids = got.filter((r) => r.subject === `SO-PAIR-${s}`).map((r) => Number(r.id));
        expect(ids).toEqual([...ids].sort((x, y) => x - y));
      }
    });
  });

  describe('the claims of a subject', () => {
    const t = useAppSuite({ env: shopEnv, workers: false }); // the test claims

    it("claims a subject's events one by one in order: a later waits while an earlier is pending, due or not, leased or not", async () => {
      const relay = t.app.relay;
      const outbox = relay.app.get(OutboxRepository);
      await relay.app
        .get(DataSource)
        .transaction((em) =>
          relay.app
            .get(OutboxWriter)
            .append(em, [orderEvent('SO-SEQ-A', 'paid'), orderEvent('SO-SEQ-A', 'delivered'), orderEvent('SO-SEQ-B')]),
        );
      const ids = async (subject: string) =>
        (await t.db.query<{ id: string }>('SELECT id::text FROM outbox_events WHERE subject = $1 ORDER BY id', [subject])).map((r) => r.id);
      const [a1, a2] = await ids('SO-SEQ-A');
      const [b1] = await ids('SO-SEQ-B');
      const claimed = async () => (await outbox.claimDue(60_000, 10)).map((e) => e.id);
      // A's first event waits for a retry an hour away: A's second waits behind it, B goes
      await t.db.query("UPDATE outbox_events SET next_attempt_at = now() + interval '1 hour' WHERE id = $1", [a1]);
      expect(await claimed()).toEqual([b1]);
      // due again: A's first is claimed, its second still waits while the first is leased
      await t.db.query('UPDATE outbox_events SET next_attempt_at = now() WHERE id = $1', [a1]);
      const [first] = await outbox.claimDue(60_000, 10);
      expect(first.id).toBe(a1);
      await t.db.query('UPDATE outbox_events SET next_attempt_at = now() WHERE id = $1', [a2]);
      expect(await claimed()).toEqual([]);
      // delivered: the second goes
      expect(await outbox.recordAttempt(first, { status: 'delivered', retryInMs: null, httpStatus: 200, error: null })).toMatchObject({
        recorded: true,
      });
      expect(await claimed()).toEqual([a2]);
    });
  });

  it('sends nothing without SHOP_WEBHOOK_URL, and nothing from an instance without workers', async () => {
    const db = await openTestDatabase();
    const off = await startApp(db, sandbox, {});
    try {
      await off.append([orderEvent('SO-OFF')]);
      expect(await rowOf(db, 'SO-OFF')).toBeUndefined();
    } finally {
      await off.close();
    }
    const idle = await startTestApp(db, sandbox, shopEnv(), { workers: false });
    const relay = idle.relay;
    try {
      const ds = relay.app.get(DataSource);
      await ds.transaction((em) => relay.app.get(OutboxWriter).append(em, [orderEvent('SO-NOWORKERS')]));
      const sender = relay.app.get(WebhookSender);
      sender.kick();
      // Its delivery loop never began a cycle (an instance with workers begins its first as it starts):
      // nothing claims the event, now or later.
      expect(sender.enabled).toBe(false);
      expect(sender.cycles).toMatchObject({ begun: 0, ended: 0 });
      expect(await rowOf(db, 'SO-NOWORKERS')).toMatchObject({ status: 'pending', attempts: 0, lease_token: null });
      expect(shop.received.filter((r) => r.subject === 'SO-NOWORKERS')).toHaveLength(0);
      // Its metrics still show the backlog, read from the table.
      const metrics = (await axios.get(`${relay.url}/metrics`)).data as string;
      expect(metricValue(metrics, 'relay_outbox_backlog')).toBe(1);
    } finally {
      await idle.close();
      await db.close();
    }
  });
});
