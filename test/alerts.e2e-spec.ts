/**
 * Operator alerts end to end (AlertService, see its header), on a real database, two replicas sharing
 * it, without background workers (pings and checks are made by the tests):
 * - a failed catalog sync run raises `sync_failed` through AlertService in the transaction that
 *   records the run failed: one outbox row under `sync_failed:<run_id>` with the payload the shop
 *   always had, the `relay_state` key, one `alert` log line and one count;
 * - an alert raised in a caller's transaction logs and counts only once that commits: nothing at all
 *   when it rolls back; a caller's manager without its afterCommit is refused;
 * - the wallet alert clears: back at or above WALLET_LOW_BALANCE, one `alert.wallet_recovered` (one
 *   replica clears, however many check at once) and one `info` line; a drop right after alerts again.
 */
import { Writable } from 'node:stream';
import axios, { type AxiosInstance } from 'axios';
import { DataSource, type EntityManager } from 'typeorm';
import { createRelayApp, type RelayApp } from '../src/app.factory.js';
import { loadConfig } from '../src/config/app-config.js';
import { AlertService, WALLET_LOW_KEY, type AfterCommit } from '../src/ops/alert.service.js';
import { createPino, JsonLogger } from '../src/ops/json-logger.js';
import { UpstreamMonitor } from '../src/ops/upstream-monitor.service.js';
import type { SandboxServer } from '../src/sandbox/sandbox.server.js';
import type { SyncRunView as Run } from './support/sync-run.js';
import { TEST_TOKEN, openTestDatabase, startSandbox, testEnv, type TestDatabase } from './support/test-app.js';
import { waitsForLock } from './support/db-waits.js';
import { waitFor } from './support/wait.js';

interface Replica {
  relay: RelayApp;
  http: AxiosInstance;
  alerts: AlertService;
  monitor: UpstreamMonitor;
  dataSource: DataSource;
}

interface OutboxRow {
  event_type: string;
  subject: string;
  payload: Record<string, unknown>;
}

const ENV = {
  WALLET_LOW_BALANCE: '100',
  // Written to the outbox, never sent: no workers.
  SHOP_WEBHOOK_URL: 'http://127.0.0.1:9/hooks/relay',
  SHOP_WEBHOOK_SECRET: 'shop-secret-alerts',
  LOG_LEVEL: 'info',
};

describe('operator alerts', () => {
  let db: TestDatabase;
  let sandbox: SandboxServer;
  let a: Replica;
  let b: Replica;
  /**
   * The log of both replicas: Nest's Logger is one per process (the last app's), so the lines of
   * both replicas land in this one sink.
   */
  let output = '';
  const pino = createPino(
    'info',
    new Writable({
      write(chunk: Buffer, _encoding, done) {
        output += chunk.toString('utf8');
        done();
      },
    }),
  );
  const logger = new JsonLogger(pino);

  const startReplica = async (): Promise<Replica> => {
    const config = loadConfig({ ...testEnv(sandbox, ENV), DATABASE_URL: db.url });
    config.workers = false;
    const relay = await createRelayApp(config, { endpoint: db.endpoint, logger, pino });
    const http = axios.create({
      baseURL: relay.url,
      headers: { authorization: `Bearer ${TEST_TOKEN}` },
      validateStatus: () => true,
      timeout: 30_000,
    });
    return {
      relay,
      http,
      alerts: relay.app.get(AlertService),
      monitor: relay.app.get(UpstreamMonitor),
      dataSource: relay.app.get(DataSource),
    };
  };

  /** The `alert` log lines of both replicas so far. */
  const alertLines = (alert: string): Array<Record<string, unknown>> =>
    output
      .split('\n')
      .filter(Boolean)
      .map((l) => JSON.parse(l) as Record<string, unknown>)
      .filter((l) => l.alert === alert);

  /** `relay_alerts_total{kind}` of one replica (its own registry), 0 before the first. */
  const alertsCounted = async (r: Replica, kind: string): Promise<number> => {
    const text = (await axios.get(`${r.relay.url}/metrics`, { timeout: 30_000 })).data as string;
    const line = text.split('\n').find((l) => l.startsWith(`relay_alerts_total{kind="${kind}"} `));
    return line ? Number(line.split(' ')[1]) : 0;
  };
  const counted = async (kind: string): Promise<number> => (await alertsCounted(a, kind)) + (await alertsCounted(b, kind));

  const outbox = (type: string): Promise<OutboxRow[]> =>
    db.query<OutboxRow>('SELECT event_type, subject, payload FROM outbox_events WHERE event_type = $1 ORDER BY id', [type]);
  const stateKey = async (key: string): Promise<boolean> =>
    (await db.query('SELECT 1 FROM relay_state WHERE key = $1', [key])).length === 1;
  /** Whether the wallet alert is active (raised, not cleared since). */
  const walletAlertActive = async (): Promise<boolean> =>
    (await db.query<{ active: string | null }>("SELECT value->>'active' AS active FROM relay_state WHERE key = $1", [WALLET_LOW_KEY]))[0]
      ?.active === 'true';
  /** The hour since the last wallet alert is over (as if it had been raised two hours ago). */
  const walletAlertHourOver = () =>
    db.query("UPDATE relay_state SET updated_at = updated_at - interval '2 hours' WHERE key = $1", [WALLET_LOW_KEY]);

  beforeAll(async () => {
    db = await openTestDatabase();
    sandbox = await startSandbox({ wallet: { balance: '50.00', currency: 'CNY' } });
    a = await startReplica();
    b = await startReplica();
    // opening is setup, not what a test checks: as useAppSuite, beyond Jest's 60 s for a loaded machine
  }, 120_000);
  afterAll(async () => {
    await a?.relay.close();
    await b?.relay.close();
    await sandbox?.stop();
    await db?.close();
  }, 120_000);
  afterEach(() => sandbox.faults.reset());

  it('a failed sync run: one alert.sync_failed under sync_failed:<run_id>, its relay_state key, one log line, one count', async () => {
    const before = {
      rows: (await outbox('alert.sync_failed')).length,
      lines: alertLines('sync_failed').length,
      counted: await counted('sync_failed'),
    };
    sandbox.faults.set({ rules: [{ operation: 'categories', kind: 'coded_error', status: 400, errorCode: 'bad_request', times: 1 }] });
    const started = await a.http.post('/internal/catalog/sync', { mode: 'full' });
    expect(started.status).toBe(202);
    const runId = (started.data as { run_id: string }).run_id;
    const run = await waitFor(
      async () => ((await a.http.get(`/internal/catalog/sync-runs/${runId}`)).data as { run: Run }).run,
      (r) => r.status !== 'running',
      `run ${runId}`,
    );
    expect(run).toMatchObject({ status: 'failed', error: expect.stringMatching(/^categories: /) });
    // The run's own log line comes after the commit, as does the alert's: both there once it is.
    await waitFor(
      () => alertLines('sync_failed').length,
      (n) => n > before.lines,
      'the alert log line',
    );

    const rows = (await outbox('alert.sync_failed')).slice(before.rows);
    expect(rows).toHaveLength(1);
    expect(rows[0].subject).toBe(`sync_failed:${runId}`);
    // The payload the shop always had (run_id, mode, error, failed_at), plus kind and at.
    expect(rows[0].payload).toEqual({
      event: 'alert.sync_failed',
      kind: 'sync_failed',
      run_id: runId,
      mode: 'full',
      error: run.error,
      failed_at: expect.any(String),
      at: expect.any(String),
    });
    expect(await stateKey(`alert:sync_failed:${runId}`)).toBe(true);
    const lines = alertLines('sync_failed').slice(before.lines);
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatchObject({ level: 'warn', alert: 'sync_failed', run_id: runId, mode: 'full', error: run.error });
    expect(await counted('sync_failed')).toBe(before.counted + 1);
  });

  it('a run left running by a process that stopped: recovered as failed by the next start, with its alert.sync_failed', async () => {
    const before = {
      rows: (await outbox('alert.sync_failed')).length,
      lines: alertLines('sync_failed').length,
      counted: await counted('sync_failed'),
    };
    const stale = new Date(Date.now() - 10 * 60_000);
    await db.query(
      `INSERT INTO catalog_sync_runs (run_id, mode, planned_mode, trigger, status, owner, started_at, heartbeat_at)
       VALUES ('run_process_gone', 'full', 'full', 'schedule', 'running', 'gone-1', $1, $1)`,
      [stale],
    );
    const started = await b.http.post('/internal/catalog/sync', { mode: 'full' });
    expect(started.status).toBe(202);
    const nextRun = (started.data as { run_id: string }).run_id;
    const dead = ((await b.http.get('/internal/catalog/sync-runs/run_process_gone')).data as { run: Run }).run;
    expect(dead).toMatchObject({ status: 'failed', error: expect.stringMatching(/^abandoned: no heartbeat since /) });

    const rows = (await outbox('alert.sync_failed')).slice(before.rows);
    expect(rows.map((r) => r.subject)).toEqual(['sync_failed:run_process_gone']);
    expect(rows[0].payload).toMatchObject({
      kind: 'sync_failed',
      run_id: 'run_process_gone',
      mode: 'full',
      error: dead.error,
      failed_at: expect.any(String),
    });
    expect(await stateKey('alert:sync_failed:run_process_gone')).toBe(true);
    expect(alertLines('sync_failed').slice(before.lines)).toEqual([expect.objectContaining({ level: 'warn', run_id: 'run_process_gone' })]);
    expect(await counted('sync_failed')).toBe(before.counted + 1);
    await waitFor(
      async () => ((await b.http.get(`/internal/catalog/sync-runs/${nextRun}`)).data as { run: Run }).run,
      (r) => r.status !== 'running',
      `run ${nextRun}`,
    );
  });

  it("an alert in a caller's transaction: logged and counted after the commit, not at all when it rolls back", async () => {
    await db.query('DELETE FROM relay_state WHERE key = $1', [WALLET_LOW_KEY]); // no wallet alert yet
    const held: Array<() => void> = [];
    const afterCommit: AfterCommit = (effect) => held.push(effect);

    await expect(
      a.dataSource.transaction(async (em) => {
        expect(await a.alerts.checkWallet('10.00', 'CNY', em, afterCommit)).toBe(true);
        throw new Error('roll back');
      }),
    ).rejects.toThrow('roll back');
    // Nothing happened: the caller drops the effects of a transaction that rolled back.
    expect(alertLines('wallet_low')).toHaveLength(0);
    expect(await counted('wallet_low')).toBe(0);
    expect(await outbox('alert.wallet_low')).toHaveLength(0);
    expect(await stateKey(WALLET_LOW_KEY)).toBe(false);

    // Committed: the outbox row with the commit, the log line and the count once the caller runs its effects.
    held.length = 0;
    await walletAlertHourOver(); // (nothing there: the rolled-back alert left no key)
    await a.dataSource.transaction(async (em) => {
      expect(await a.alerts.checkWallet('10.00', 'CNY', em, afterCommit)).toBe(true);
    });
    expect(alertLines('wallet_low')).toHaveLength(0);
    expect(await counted('wallet_low')).toBe(0);
    expect(held).toHaveLength(1);
    for (const effect of held) effect();
    expect(alertLines('wallet_low')).toHaveLength(1);
    expect(await counted('wallet_low')).toBe(1);
    expect(await outbox('alert.wallet_low')).toHaveLength(1);

    // A manager without its afterCommit is refused (the types refuse it too).
    const untyped = a.alerts.checkWallet.bind(a.alerts) as (...args: unknown[]) => Promise<boolean>;
    await a.dataSource.transaction(async (em: EntityManager) => {
      await expect(untyped('10.00', 'CNY', em)).rejects.toThrow(/afterCommit/);
      await expect(untyped('500.00', 'CNY', em)).rejects.toThrow(/afterCommit/);
    });
    await b.alerts.checkWallet('500.00', 'CNY'); // cleared for the next test
  });

  it('wallet low, recovered, low again: one alert and one recovery an hour, however the balance goes back and forth', async () => {
    await db.query('DELETE FROM relay_state WHERE key = $1', [WALLET_LOW_KEY]);
    const before = {
      low: (await outbox('alert.wallet_low')).length,
      recovered: (await outbox('alert.wallet_recovered')).length,
      lowLines: alertLines('wallet_low').length,
      recoveredLines: alertLines('wallet_recovered').length,
      counted: await counted('wallet_low'),
    };
    const lows = async () => (await outbox('alert.wallet_low')).slice(before.low).map((r) => r.payload.balance);
    const recoveries = async () => (await outbox('alert.wallet_recovered')).slice(before.recovered).map((r) => r.payload.balance);
    const ping = async (balance: string, r: Replica = a) => {
      sandbox.setWalletBalance(balance);
      await r.monitor.pingNow();
    };

    await ping('50.00');
    expect(await lows()).toEqual(['50.00']);
    expect(await walletAlertActive()).toBe(true);

    // Back at the threshold (the threshold itself counts as recovered): cleared once, whoever checks.
    await ping('100.00');
    await ping('100.00');
    await ping('100.00', b);
    const recovered = (await outbox('alert.wallet_recovered')).slice(before.recovered);
    expect(recovered).toHaveLength(1);
    expect(recovered[0]).toMatchObject({
      subject: 'wallet_low:wallet',
      payload: {
        event: 'alert.wallet_recovered',
        kind: 'wallet_recovered',
        balance: '100.00',
        currency: 'CNY',
        threshold: '100',
        at: expect.any(String),
      },
    });
    expect(await walletAlertActive()).toBe(false);
    const info = alertLines('wallet_recovered').slice(before.recoveredLines);
    expect(info).toHaveLength(1);
    expect(info[0]).toMatchObject({ level: 'info', alert: 'wallet_recovered', balance: '100.00', currency: 'CNY', threshold: '100' });
    // Not an alert: not counted.
    expect(await counted('wallet_low')).toBe(before.counted + 1);

    // Back and forth within the hour of the alert: quiet (no alert, no second recovery).
    await ping('40.00', b);
    await ping('100.00');
    await ping('45.00');
    expect(await lows()).toEqual(['50.00']);
    expect(await recoveries()).toEqual(['100.00']);

    // Once the hour is over, low again: alerted; while it stays low, not again within the hour.
    await walletAlertHourOver();
    await ping('40.00', b);
    await ping('30.00');
    expect(await lows()).toEqual(['50.00', '40.00']);
    expect(alertLines('wallet_low').length).toBe(before.lowLines + 2);
    expect(await counted('wallet_low')).toBe(before.counted + 2);
    expect(await walletAlertActive()).toBe(true);
    await ping('200.00');
    expect(await recoveries()).toEqual(['100.00', '200.00']);
  });

  it('a wallet alert key from before alerts cleared (no `active`) never gives a recovery', async () => {
    await db.query(
      `INSERT INTO relay_state (key, value, updated_at) VALUES ($1, $2::jsonb, now() - interval '120 days')
       ON CONFLICT (key) DO UPDATE SET value = EXCLUDED.value, updated_at = EXCLUDED.updated_at`,
      [
        WALLET_LOW_KEY,
        JSON.stringify({
          kind: 'wallet_low',
          subject: 'wallet',
          raised_at: '2026-07-01T00:00:00.000Z',
          balance: '5.00',
          currency: 'CNY',
          threshold: '100',
        }),
      ],
    );
    const before = (await outbox('alert.wallet_recovered')).length;
    expect(await a.alerts.checkWallet('5000.00', 'CNY')).toBe(false);
    expect(await outbox('alert.wallet_recovered')).toHaveLength(before);
    // and a drop alerts as always (the old alert is long past its hour)
    expect(await a.alerts.checkWallet('5.00', 'CNY')).toBe(true);
    expect(await walletAlertActive()).toBe(true);
  });

  it('concurrent checks on two replicas clear the wallet alert once', async () => {
    const recoveries = async () => ({
      rows: (await outbox('alert.wallet_recovered')).length,
      lines: alertLines('wallet_recovered').length,
    });

    // Many at once.
    await a.alerts.checkWallet('500.00', 'CNY'); // whatever the earlier tests left
    await walletAlertHourOver();
    expect(await a.alerts.checkWallet('10.00', 'CNY')).toBe(true);
    let before = await recoveries();
    await Promise.all([a, b, a, b, a, b].map((r) => r.alerts.checkWallet('500.00', 'CNY')));
    expect(await recoveries()).toEqual({ rows: before.rows + 1, lines: before.lines + 1 });

    // One replica holds its clearing transaction open while the other checks: the other waits on the
    // key, then finds it cleared and clears nothing.
    await walletAlertHourOver();
    expect(await b.alerts.checkWallet('10.00', 'CNY')).toBe(true);
    before = await recoveries();
    const held: Array<() => void> = [];
    let other: Promise<boolean> | undefined;
    await a.dataSource.transaction(async (em) => {
      await a.alerts.checkWallet('500.00', 'CNY', em, (effect) => held.push(effect));
      other = b.alerts.checkWallet('500.00', 'CNY');
      await waitsForLock(db, other, "the other replica's check");
    });
    for (const effect of held) effect();
    await other;
    expect(held).toHaveLength(1);
    expect(await recoveries()).toEqual({ rows: before.rows + 1, lines: before.lines + 1 });
    expect(await walletAlertActive()).toBe(false);
  });
});
