/**
 * Operations with several suppliers (CONTRACT §5, §10): `/health` shows each supplier's upstream,
 * budget and last sync, and a supplier refusing our credentials as `auth_failed` (the top-level
 * `upstream` the worst of the enabled ones, the service still `ok`), alerted once; each supplier is
 * pinged with its own client, and one that hangs holds no other's ping; the wallet of each supplier;
 * the reconciliation backlog in `/health` and the metrics. Background work is off: the tests drive
 * the monitor's ticks themselves.
 */
import axios from 'axios';
import { MonitorSupplierStatus } from '../src/ops/monitor-supplier-status.js';
import { UpstreamMonitor } from '../src/ops/upstream-monitor.service.js';
import { SupplierRegistry } from '../src/suppliers/supplier-registry.service.js';
import { useAppSuite } from './support/app-suite.js';
import { supplierCredentials } from './support/suppliers.js';
import { waitFor } from './support/wait.js';

const metricValue = (text: string, name: string): number => {
  const line = text.split('\n').find((l) => l.startsWith(`${name} `));
  return line ? Number(line.split(' ')[1]) : NaN;
};

describe('operations with several suppliers', () => {
  const suite = useAppSuite({
    // `bad`'s sandbox takes another secret than the one stored: it refuses our signature (HTTP 401)
    // `second`'s pings wait up to 8 s for an answer: its hanging ping outlasts the others' rounds
    suppliers: {
      second: { sandbox: { wallet: { balance: '310.00', currency: 'CNY' } }, settings: { timeoutMs: 8000 } },
      bad: { sandbox: { apiSecret: 'not-the-stored-one' } },
    },
    env: { LOG_LEVEL: 'debug' },
    workers: false,
    logs: true,
    seed: true,
  });
  const monitor = () => suite.app.relay.app.get(UpstreamMonitor);
  const health = async () => (await axios.get(`${suite.app.url}/health`, { validateStatus: () => true })).data;
  const metrics = async () => (await axios.get(`${suite.app.url}/metrics`)).data as string;
  /** One tick of the periodic ping, and the end of every ping it started. */
  const tickAndSettle = async () => {
    const started = monitor().tick();
    await waitFor(
      () => started.every((n) => monitor().current(n) !== null && !monitor().pinging(n)),
      Boolean,
      `the pings of ${started.join(', ')}`,
    );
    return started;
  };

  it('shows every supplier in /health, the one refusing our credentials as auth_failed, the worst on top, alerted once', async () => {
    expect(await tickAndSettle()).toEqual(['main', 'bad', 'second']);
    const body = await health();
    expect(body).toMatchObject({
      ok: true,
      status: 'ok',
      database: 'up',
      upstream: { status: 'auth_failed', supplier: 'bad', error: expect.stringContaining('HTTP 401') },
    });
    expect(Object.keys(body.suppliers)).toEqual(['main', 'bad', 'second']);
    expect(body.suppliers.main).toMatchObject({
      enabled: true,
      upstream: 'up',
      error: null,
      wallet: { balance: suite.sandbox.walletBalance() },
    });
    expect(body.suppliers.second).toMatchObject({ enabled: true, upstream: 'up', wallet: { balance: '310.00', currency: 'CNY' } });
    expect(body.suppliers.bad).toMatchObject({
      enabled: true,
      upstream: 'auth_failed',
      error: expect.stringContaining('invalid_signature'),
    });
    expect(body.suppliers.bad).not.toHaveProperty('wallet');
    // the seed synced the env supplier's catalog only
    expect(body.suppliers.main.last_sync).toMatchObject({ status: 'succeeded' });
    expect(body.suppliers.second.last_sync).toBeNull();
    expect(body.last_sync).toEqual(body.suppliers.main.last_sync);
    expect(body.budget).toEqual(body.suppliers.main.budget);

    // pinged again: still one alert; the gauges per supplier
    await tickAndSettle();
    const text = await metrics();
    expect(metricValue(text, 'relay_alerts_total{kind="upstream_auth_failed"}')).toBe(1);
    expect(metricValue(text, 'relay_upstream_up{supplier="main"}')).toBe(1);
    expect(metricValue(text, 'relay_upstream_up{supplier="second"}')).toBe(1);
    expect(metricValue(text, 'relay_upstream_up{supplier="bad"}')).toBe(0);
    expect(metricValue(text, 'relay_wallet_balance{currency="CNY",supplier="second"}')).toBe(310);
    const alerts = suite.app.logLines().filter((l) => l.alert === 'upstream_auth_failed');
    expect(alerts).toHaveLength(1);
    expect(alerts[0]).toMatchObject({ supplier: 'bad', level: 'warn' });
    // neither the stored secret nor the sandbox's appears in any answer or log line
    const everything = JSON.stringify(suite.app.logLines()) + JSON.stringify(body) + text;
    expect(everything).not.toContain(supplierCredentials('bad').apiSecret);
    expect(everything).not.toContain('not-the-stored-one');

    // the suppliers API's view of each (MonitorSupplierStatus): the same state
    const registry = suite.app.relay.app.get(SupplierRegistry);
    const status = suite.app.relay.app.get(MonitorSupplierStatus);
    expect(await status.read(registry.get('bad'))).toMatchObject({
      health: { upstream: 'auth_failed', checked_at: monitor().current('bad')?.checked_at },
      wallet: { balance: null, currency: null },
      last_sync: null,
    });
    expect(await status.read(registry.get('second'))).toMatchObject({
      health: { upstream: 'up' },
      wallet: { balance: '310.00', currency: 'CNY' },
    });
    expect(await status.read(registry.get('main'))).toMatchObject({ last_sync: { status: 'succeeded', mode: 'full' } });

    // disabled, it no longer counts in the top-level upstream (and is no longer pinged)
    await suite.db.query(`UPDATE suppliers SET enabled = false WHERE name = 'bad'`);
    await suite.app.relay.app.get(SupplierRegistry).reload();
    try {
      expect(await tickAndSettle()).toEqual(['main', 'second']);
      const after = await health();
      expect(after.upstream).toMatchObject({ status: 'up' });
      expect(after.suppliers.bad).toMatchObject({ enabled: false, upstream: 'auth_failed' });
    } finally {
      await suite.db.query(`UPDATE suppliers SET enabled = true WHERE name = 'bad'`);
      await suite.app.relay.app.get(SupplierRegistry).reload();
    }
  });

  it("pings each supplier with its own client, and a supplier that never answers holds no other's ping", async () => {
    const second = suite.supplier('second');
    const pings = () => [suite.sandbox.stats.requests.ping, second.stats.requests.ping, suite.supplier('bad').stats.totalRequests];
    second.faults.set({ rules: [{ operation: 'ping', kind: 'hang_before' }] });
    const before = pings();
    expect(monitor().tick()).toEqual(['main', 'bad', 'second']);
    await waitFor(
      () => second.stats.requests.ping,
      (n) => n === before[1] + 1,
      "second's ping received",
    );
    // the others' pings end while second's hangs; the next ticks ping them again and leave second out
    for (let round = 1; round <= 3; round++) {
      await waitFor(() => ['main', 'bad'].every((n) => !monitor().pinging(n)), Boolean, `round ${round}: the pings of main and bad`);
      expect(monitor().pinging('second')).toBe(true);
      if (round < 3) expect(monitor().tick()).toEqual(['main', 'bad']);
    }
    const after = pings();
    expect(after[0]).toBe(before[0] + 3);
    expect(after[1]).toBe(before[1] + 1);
    expect(after[2]).toBe(before[2] + 3);
    // second's ping ends by its own timeout: down, not auth_failed
    const snapshot = await waitFor(
      () => monitor().current('second'),
      (s) => s !== null && s.status !== 'up',
      "second's ping given up",
    );
    expect(snapshot?.status).toBe('down');
    expect((await health()).suppliers.second.upstream).toBe('down');
  });

  it('reads the wallet of each supplier: ?supplier=, the env supplier by default, 404 for an unknown one', async () => {
    const main = await suite.app.http.get('/internal/wallet');
    expect(main.status).toBe(200);
    expect(main.data).toMatchObject({ ok: true, balance: suite.sandbox.walletBalance() });
    const second = await suite.app.http.get('/internal/wallet', { params: { supplier: 'second' } });
    expect(second.status).toBe(200);
    expect(second.data).toMatchObject({ ok: true, balance: '310.00', currency: 'CNY' });
    const bad = await suite.app.http.get('/internal/wallet', { params: { supplier: 'bad' } });
    expect(bad.status).toBe(502);
    expect(bad.data).toMatchObject({ ok: false, error_code: 'upstream_auth_failed' });
    const nobody = await suite.app.http.get('/internal/wallet', { params: { supplier: 'nobody' } });
    expect(nobody.status).toBe(404);
    expect(nobody.data).toMatchObject({ ok: false, error_code: 'supplier_not_found' });
  });

  it('counts the reconciliation backlog and its age per supplier, in /health and the metrics', async () => {
    const skus = (await suite.app.http.get('/internal/catalog/skus', { params: { available: true, page_size: 50 } })).data.items as Array<{
      sku_code: string;
      fulfillment_type: string;
    }>;
    const sku = skus.find((s) => s.fulfillment_type === 'auto')!;
    for (const no of ['BL-1', 'BL-2', 'BL-3', 'BL-4']) {
      const placed = await suite.app.http.post('/internal/orders', { shop_order_no: no, sku_code: sku.sku_code, quantity: 1 });
      expect(placed.status).toBeLessThan(300);
    }
    let text = await metrics();
    expect(metricValue(text, 'relay_reconcile_backlog{supplier="main"}')).toBe(0);
    expect((await health()).reconciliation).toEqual({ backlog: 0, oldest_due_s: null });

    // reads due 2 minutes and 10 s ago at main, 40 s ago at second, and one due in an hour (not yet due)
    await suite.db.query(`UPDATE orders SET reconcile_at = now() - interval '120 seconds' WHERE shop_order_no = 'BL-1'`);
    await suite.db.query(`UPDATE orders SET reconcile_at = now() - interval '10 seconds' WHERE shop_order_no = 'BL-2'`);
    await suite.db.query(
      `UPDATE orders SET reconcile_at = now() - interval '40 seconds', supplier = 'second' WHERE shop_order_no = 'BL-3'`,
    );
    await suite.db.query(`UPDATE orders SET reconcile_at = now() + interval '1 hour' WHERE shop_order_no = 'BL-4'`);
    const [{ due: secondDue }] = await suite.db.query<{ due: Date }>("SELECT reconcile_at AS due FROM orders WHERE shop_order_no = 'BL-3'");
    text = await metrics();
    const scrapedBy = Date.now();
    expect(metricValue(text, 'relay_reconcile_backlog{supplier="main"}')).toBe(2);
    expect(metricValue(text, 'relay_reconcile_backlog{supplier="second"}')).toBe(1);
    expect(metricValue(text, 'relay_reconcile_backlog{supplier="bad"}')).toBe(0);
    expect(metricValue(text, 'relay_reconcile_backlog_age_seconds{supplier="main"}')).toBeGreaterThanOrEqual(120);
    expect(metricValue(text, 'relay_reconcile_backlog_age_seconds{supplier="second"}')).toBeGreaterThanOrEqual(40);
    // second's own age (at most what it was once the scrape was answered), not main's
    expect(metricValue(text, 'relay_reconcile_backlog_age_seconds{supplier="second"}')).toBeLessThanOrEqual(
      (scrapedBy - secondDue.getTime()) / 1000,
    );
    expect(metricValue(text, 'relay_reconcile_backlog_age_seconds{supplier="bad"}')).toBe(0);
    const { reconciliation } = await health();
    expect(reconciliation.backlog).toBe(3);
    expect(reconciliation.oldest_due_s).toBeGreaterThanOrEqual(120);
  });
});
