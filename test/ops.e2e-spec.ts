/**
 * Operations end to end: `/health` (database, the periodic upstream ping, the last sync, the
 * wallet), `/health/live`, `/health/ready` (database and migrations; 503 otherwise), `/metrics`, and
 * alerts (wallet below WALLET_LOW_BALANCE from the ping, stuck orders, failed syncs): a log line, a
 * metric and a shop notification, once per condition per hour.
 */
import { createServer, type Server } from 'node:http';
import axios from 'axios';
import { DataSource } from 'typeorm';
import { migrateDown, migrateUp, readMigrations } from '../src/database/migrator.js';
import { AlertService } from '../src/ops/alert.service.js';
import { UpstreamMonitor } from '../src/ops/upstream-monitor.service.js';
import { useAppSuite } from './support/app-suite.js';
import { openTestDatabase, startSandbox, startTestApp, UNREACHABLE_UPSTREAM } from './support/test-app.js';
import { waitFor } from './support/wait.js';
import { TestClock } from './support/test-clock.js';

const metricValue = (text: string, name: string): number => {
  const line = text.split('\n').find((l) => l.startsWith(`${name} `));
  return line ? Number(line.split(' ')[1]) : NaN;
};

/** No token: `/health` and `/metrics` are public. */
const publicGet = (url: string) => axios.get(url, { validateStatus: () => true, timeout: 30_000 });

describe('operations', () => {
  describe('a healthy instance', () => {
    let shop: Server;
    const webhooks: Array<{ event: string; subject: string; data: Record<string, unknown> }> = [];
    const clock = new TestClock();

    // the shop opens before the suite (the service's env names it) and closes after it
    beforeAll(async () => {
      shop = createServer((req, res) => {
        let body = '';
        req.on('data', (c: Buffer) => (body += c.toString()));
        req.on('end', () => {
          webhooks.push(JSON.parse(body));
          res.writeHead(204).end();
        });
      });
      await new Promise<void>((r) => shop.listen(0, '127.0.0.1', r));
    });
    const t = useAppSuite({
      sandbox: { wallet: { balance: '50.00', currency: 'CNY' } },
      env: () => ({
        WALLET_LOW_BALANCE: '100',
        SHOP_WEBHOOK_URL: `http://127.0.0.1:${(shop.address() as { port: number }).port}/hook`,
        SHOP_WEBHOOK_SECRET: 'shop-secret',
      }),
      clock,
    });
    afterAll(async () => {
      shop.closeAllConnections();
      await new Promise((r) => shop.close(r));
    });

    it('GET /health: database up, the upstream as pinged in the background, the wallet, no token needed', async () => {
      const body = await waitFor(
        async () => (await publicGet(`${t.app.url}/health`)).data,
        (b) => b.upstream?.status === 'up',
        'the first ping',
      );
      const res = await publicGet(`${t.app.url}/health`);
      expect(res.status).toBe(200);
      expect(res.headers['x-request-id']).toEqual(expect.any(String));
      expect(body).toMatchObject({
        ok: true,
        status: 'ok',
        database: 'up',
        upstream: { status: 'up', checked_at: expect.any(String), latency_ms: expect.any(Number), error: null },
        wallet: { balance: '50.00', currency: 'CNY', checked_at: expect.any(String) },
      });
      expect(body).toHaveProperty('last_sync');
    });

    it('shows the last catalog sync once there is one', async () => {
      const started = await t.app.http.post('/internal/catalog/sync', { mode: 'full' });
      expect(started.status).toBe(202);
      const runId = started.data.run_id as string;
      const body = await waitFor(
        async () => (await publicGet(`${t.app.url}/health`)).data,
        (b) => b.last_sync?.run_id === runId && b.last_sync.status !== 'running',
        'the sync in /health',
      );
      expect(body.last_sync).toMatchObject({
        run_id: runId,
        mode: 'full',
        status: 'succeeded',
        started_at: expect.any(String),
        finished_at: expect.any(String),
      });
      expect(body.last_sync.last_success_at).toBe(body.last_sync.finished_at);

      // a failed run after it: the last sync is the failure, its last success still that run's end
      const failedAt = new Date(Date.parse(body.last_sync.finished_at) + 60_000);
      await t.db.query(
        `INSERT INTO catalog_sync_runs (run_id, mode, planned_mode, trigger, status, owner, started_at, heartbeat_at, finished_at, error)
         VALUES ('ops-failed-run', 'full', 'full', 'cron', 'failed', 'test', $1, $1, $1, 'page 3: upstream unavailable')`,
        [failedAt],
      );
      const after = (await publicGet(`${t.app.url}/health`)).data;
      expect(after.last_sync).toMatchObject({ run_id: 'ops-failed-run', status: 'failed', last_success_at: body.last_sync.finished_at });
      await t.db.query("DELETE FROM catalog_sync_runs WHERE run_id = 'ops-failed-run'");
    });

    it('live and ready', async () => {
      const live = await publicGet(`${t.app.url}/health/live`);
      expect(live.status).toBe(200);
      expect(live.data).toEqual({ ok: true });
      const ready = await publicGet(`${t.app.url}/health/ready`);
      expect(ready.status).toBe(200);
      expect(ready.data).toEqual({ ok: true, database: 'up', migrations: { pending: [] }, shutting_down: false });
    });

    it('raises wallet_low from the ping once per hour: a log-worthy alert, a metric, a shop notification', async () => {
      const monitor = t.app.relay.app.get(UpstreamMonitor);
      await waitFor(
        async () => webhooks.filter((w) => w.event === 'alert.wallet_low').length,
        (n) => n === 1,
        'the wallet_low webhook',
      );
      const alert = webhooks.find((w) => w.event === 'alert.wallet_low')!;
      expect(alert).toMatchObject({
        subject: 'wallet_low:wallet',
        data: { kind: 'wallet_low', balance: '50.00', currency: 'CNY', threshold: '100' },
      });

      // Pinged again within the hour: no new alert.
      await monitor.pingNow();
      await monitor.pingNow();
      let metrics = (await publicGet(`${t.app.url}/metrics`)).data as string;
      expect(metricValue(metrics, 'relay_alerts_total{kind="wallet_low"}')).toBe(1);
      expect(metricValue(metrics, 'relay_wallet_balance{currency="CNY",supplier="main"}')).toBe(50);
      expect(metricValue(metrics, 'relay_upstream_up{supplier="main"}')).toBe(1);

      // An hour later, still low: alerted again.
      clock.advance(3600_000 + 1000);
      await monitor.pingNow();
      metrics = (await publicGet(`${t.app.url}/metrics`)).data as string;
      expect(metricValue(metrics, 'relay_alerts_total{kind="wallet_low"}')).toBe(2);

      // Above the threshold: nothing.
      t.sandbox.setWalletBalance('500.00');
      clock.advance(3600_000 + 1000);
      await monitor.pingNow();
      metrics = (await publicGet(`${t.app.url}/metrics`)).data as string;
      expect(metricValue(metrics, 'relay_alerts_total{kind="wallet_low"}')).toBe(2);
      expect(metricValue(metrics, 'relay_wallet_balance{currency="CNY",supplier="main"}')).toBe(500);
      t.sandbox.setWalletBalance('50.00');
    });

    it('offers AlertService to the other modules: orderStuck, syncFailed and checkWallet, deduplicated', async () => {
      const alerts = t.app.relay.app.get(AlertService);
      const since = new Date(Date.now() - 2 * 86_400_000);
      expect(await alerts.orderStuck({ shopOrderNo: 'SO-STUCK-1', status: 'fulfilling', since, traceId: 't-1' })).toBe(true);
      expect(await alerts.orderStuck({ shopOrderNo: 'SO-STUCK-1', status: 'fulfilling', since })).toBe(false);
      expect(await alerts.orderStuck({ shopOrderNo: 'SO-STUCK-2', status: 'paid', since })).toBe(true);
      expect(await alerts.syncFailed({ runId: 'run_x', mode: 'full', error: 'upstream_unavailable' })).toBe(true);
      expect(await alerts.syncFailed({ runId: 'run_x', mode: 'full', error: 'upstream_unavailable' })).toBe(false);
      // Inside the caller's transaction, committed with it; rolled back with it (its log line and
      // metric wait for the commit: never run here).
      const ds = t.app.relay.app.get(DataSource);
      await expect(
        ds.transaction(async (em) => {
          expect(await alerts.syncFailed({ runId: 'run_rolled_back', error: 'x' }, em, () => undefined)).toBe(true);
          throw new Error('roll back');
        }),
      ).rejects.toThrow('roll back');
      expect(await alerts.syncFailed({ runId: 'run_rolled_back', error: 'x' })).toBe(true);
      // Above the threshold: no alert; below: one (the ping's last was over an hour ago), then none within the hour.
      expect(await alerts.checkWallet('150.00', 'CNY')).toBe(false);
      expect(await alerts.checkWallet('10.00', 'CNY')).toBe(true);
      expect(await alerts.checkWallet('9.00', 'CNY')).toBe(false);

      await waitFor(
        async () => webhooks.filter((w) => w.event === 'alert.order_stuck' || w.event === 'alert.sync_failed').length,
        (n) => n === 4,
        'the alert webhooks',
      );
      expect(
        webhooks
          .filter((w) => w.event === 'alert.order_stuck')
          .map((w) => w.data.shop_order_no)
          .sort(),
      ).toEqual(['SO-STUCK-1', 'SO-STUCK-2']);
      expect(webhooks.find((w) => w.event === 'alert.order_stuck' && w.data.shop_order_no === 'SO-STUCK-1')!.data).toMatchObject({
        kind: 'order_stuck',
        status: 'fulfilling',
        since: since.toISOString(),
        trace_id: 't-1',
      });
      expect(
        webhooks
          .filter((w) => w.event === 'alert.sync_failed')
          .map((w) => w.data.run_id)
          .sort(),
      ).toEqual(['run_rolled_back', 'run_x']);
      const metrics = (await publicGet(`${t.app.url}/metrics`)).data as string;
      expect(metricValue(metrics, 'relay_alerts_total{kind="order_stuck"}')).toBe(2);
      expect(metricValue(metrics, 'relay_alerts_total{kind="sync_failed"}')).toBe(2);
    });

    it('GET /metrics: Prometheus text of the relay_ metrics, no token needed', async () => {
      const res = await publicGet(`${t.app.url}/metrics`);
      expect(res.status).toBe(200);
      expect(res.headers['content-type']).toMatch(/^text\/plain; version=0\.0\.4/);
      const text = res.data as string;
      for (const name of [
        'relay_upstream_calls_total',
        'relay_upstream_call_duration_seconds',
        'relay_upstream_up',
        'relay_wallet_balance',
        'relay_outbox_backlog',
        'relay_outbox_dead',
        'relay_outbox_deliveries_total',
        'relay_alerts_total',
        'relay_sync_runs_total',
        'relay_orders',
        'relay_process_cpu_user_seconds_total',
      ]) {
        expect({ name, declared: text.includes(`# TYPE ${name} `) }).toEqual({ name, declared: true });
      }
      expect(metricValue(text, 'relay_upstream_calls_total{operation="ping",outcome="ok",supplier="main"}')).toBeGreaterThanOrEqual(1);
      const names = text
        .split('\n')
        .filter((l) => l.startsWith('# TYPE '))
        .map((l) => l.split(' ')[2]);
      expect(names.length).toBeGreaterThan(20);
      expect(names.filter((n) => !n.startsWith('relay_'))).toEqual([]);
    });
  });

  describe('an instance without workers', () => {
    const clock = new TestClock();
    const t = useAppSuite({ sandbox: false, env: UNREACHABLE_UPSTREAM, workers: false, clock });

    it('GET /metrics: relay_orders counts orders by status when scraped, without workers too (final ones at most each 5 min)', async () => {
      const insert = (no: string, status: string) =>
        t.db.query(
          `INSERT INTO orders (shop_order_no, sku_code, quantity, request_fingerprint, trace_id, status, downstream_order_no, ` +
            `status_changed_at, progress_at, created_at, updated_at)
         VALUES ($1, 'SKU', 1, 'f', 't', $2, $1, now(), now(), now(), now())`,
          [no, status],
        );
      await insert('SO-GAUGE-1', 'paid');
      await insert('SO-GAUGE-2', 'paid');
      await insert('SO-GAUGE-3', 'completed');
      let text = (await publicGet(`${t.app.url}/metrics`)).data as string;
      expect(metricValue(text, 'relay_orders{status="paid"}')).toBe(2);
      expect(metricValue(text, 'relay_orders{status="completed"}')).toBe(1);
      expect(metricValue(text, 'relay_orders{status="delivered"}')).toBe(0);
      // unfinished statuses at every scrape; the final ones (a count over the whole table) later
      await insert('SO-GAUGE-4', 'delivered');
      await insert('SO-GAUGE-5', 'paid');
      text = (await publicGet(`${t.app.url}/metrics`)).data as string;
      expect(metricValue(text, 'relay_orders{status="paid"}')).toBe(3);
      expect(metricValue(text, 'relay_orders{status="delivered"}')).toBe(0);
      clock.advance(5 * 60_000);
      text = (await publicGet(`${t.app.url}/metrics`)).data as string;
      expect(metricValue(text, 'relay_orders{status="delivered"}')).toBe(1);
      expect(metricValue(text, 'relay_orders{status="completed"}')).toBe(1);
    });
  });

  it('the stuck-order housekeeping reads the flagged orders by their partial index, not the whole table', async () => {
    const db = await openTestDatabase();
    try {
      // the planner's choice on a table it believes large (no statistics needed for a partial index's predicate)
      await db.query('SET enable_seqscan = off');
      const plan = async (sql: string) =>
        (await db.query<{ 'QUERY PLAN': string }>(`EXPLAIN ${sql}`)).map((r) => r['QUERY PLAN']).join('\n');
      expect(await plan('SELECT count(*) FROM orders WHERE stuck_since IS NOT NULL')).toContain('orders_stuck');
      expect(await plan("UPDATE orders o SET stuck_since = NULL WHERE o.stuck_since IS NOT NULL AND NOT (o.status = 'paid')")).toContain(
        'orders_stuck',
      );
    } finally {
      await db.close();
    }
  });

  it('reports an unreachable upstream without failing /health, and never waits for it', async () => {
    const db = await openTestDatabase();
    const app = await startTestApp(db, null, UNREACHABLE_UPSTREAM);
    try {
      const body = await waitFor(
        async () => (await publicGet(`${app.url}/health`)).data,
        (b) => b.upstream?.status !== 'unknown',
        'the first ping',
      );
      expect(body).toMatchObject({ ok: true, database: 'up', upstream: { status: 'down', error: expect.stringMatching(/^retryable: /) } });
      expect(body).not.toHaveProperty('wallet');
      const metrics = (await publicGet(`${app.url}/metrics`)).data as string;
      expect(metricValue(metrics, 'relay_upstream_up{supplier="main"}')).toBe(0);
    } finally {
      await app.close();
    }

    // An instance without workers does not ping: it shows what a worker stored.
    const idle = await startTestApp(db, null, UNREACHABLE_UPSTREAM, { workers: false });
    try {
      const body = (await publicGet(`${idle.url}/health`)).data;
      expect(body.upstream).toMatchObject({ status: 'down', checked_at: expect.any(String) });
      const metrics = (await publicGet(`${idle.url}/metrics`)).data as string;
      expect(metrics).not.toContain('relay_upstream_calls_total{operation="ping"');
    } finally {
      await idle.close();
      await db.close();
    }
  });

  it('is not ready with a pending migration, and answers 503 when the database is gone', async () => {
    const db = await openTestDatabase();
    const sandbox = await startSandbox();
    const app = await startTestApp(db, sandbox);
    try {
      const latest = readMigrations().at(-1)!;
      await migrateDown(db.url, 1);
      let ready = await publicGet(`${app.url}/health/ready`);
      expect(ready.status).toBe(503);
      expect(ready.data).toMatchObject({ ok: false, database: 'up', migrations: { pending: [`${latest.version}_${latest.name}`] } });
      await migrateUp(db.url);
      ready = await publicGet(`${app.url}/health/ready`);
      expect(ready.status).toBe(200);

      // The database goes away (server stopped / database dropped).
      if (db.embedded) await db.embedded.stop();
      else await dropDatabase(db.url);
      const health = await publicGet(`${app.url}/health`);
      expect(health.status).toBe(503);
      expect(health.data).toMatchObject({ ok: false, status: 'unavailable', database: 'down', last_sync: null });
      ready = await publicGet(`${app.url}/health/ready`);
      expect(ready.status).toBe(503);
      expect(ready.data).toMatchObject({ ok: false, database: 'down' });
      const live = await publicGet(`${app.url}/health/live`);
      expect(live.status).toBe(200);
    } finally {
      await app.close().catch(() => undefined);
      await sandbox.stop();
      await db.close().catch(() => undefined);
    }
  });
});

async function dropDatabase(url: string): Promise<void> {
  const u = new URL(url);
  const name = u.pathname.slice(1);
  u.pathname = '/postgres';
  const pg = (await import('pg')).default;
  const admin = new pg.Client({ connectionString: u.toString() });
  await admin.connect();
  try {
    await admin.query(`DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`);
  } finally {
    await admin.end();
  }
}
