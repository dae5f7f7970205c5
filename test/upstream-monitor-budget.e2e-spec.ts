/**
 * The upstream monitor under the request budget: its own pings take the lowest class, and its periodic
 * ping is skipped while another upstream request of the process has just succeeded (that answer proves
 * the upstream reachable). The periodic ping is called directly (workers off: no timer runs).
 */
import { UpstreamBudgetService } from '../src/budget/upstream-budget.service.js';
import { UpstreamMonitor } from '../src/ops/upstream-monitor.service.js';
import type { SandboxServer } from '../src/sandbox/sandbox.server.js';
import { UpstreamClient } from '../src/upstream/upstream.client.js';
import { grantsOf, installGrantLog } from './support/budget-ledger.js';
import { useAppSuite } from './support/app-suite.js';
import type { TestApp, TestDatabase } from './support/test-app.js';

describe('upstream monitor under the request budget', () => {
  const suite = useAppSuite({ sandbox: { catalog: { products: 3, seed: 5 } }, env: { UPSTREAM_RATE_LIMIT: '100/1s' }, workers: false });
  let db: TestDatabase;
  let sandbox: SandboxServer;
  let app: TestApp;

  beforeAll(async () => {
    ({ db, sandbox, app } = suite);
    // no background work: nothing has asked the budget for a grant yet
    await installGrantLog(db);
  });

  it("pings at the lowest class, skips the periodic ping after another request succeeded, and never skips a caller's ping", async () => {
    const monitor = app.relay.app.get(UpstreamMonitor);
    const budget = app.relay.app.get(UpstreamBudgetService);
    expect(budget.enabled).toBe(true);
    // no result yet: it pings
    expect(await monitor.periodicPing()).toBe(true);
    expect(sandbox.stats.requests.ping).toBe(1);
    expect(monitor.current()?.status).toBe('up');
    // a ping does not count as another request
    expect(await monitor.periodicPing()).toBe(true);
    expect(sandbox.stats.requests.ping).toBe(2);

    await app.relay.app.get(UpstreamClient).listCategories();
    expect(await monitor.periodicPing()).toBe(false);
    expect(sandbox.stats.requests.ping).toBe(2);
    // GET /internal/wallet asks for a ping of its own: never skipped
    const wallet = await app.http.get('/internal/wallet');
    expect(wallet.status).toBe(200);
    expect(sandbox.stats.requests.ping).toBe(3);

    expect((await grantsOf(db, budget.keyId)).map((g) => g.cls)).toEqual(['reconcile', 'reconcile', 'sync', 'poll']);
  });

  it('pings when its last ping found the upstream down, whatever else succeeded', async () => {
    const monitor = app.relay.app.get(UpstreamMonitor);
    sandbox.faults.set({ rules: [{ operation: 'ping', kind: 'error_before', status: 503, times: 1 }] });
    await monitor.pingNow();
    expect(monitor.current()?.status).toBe('down');
    await app.relay.app.get(UpstreamClient).listCategories();
    const before = sandbox.stats.requests.ping;
    expect(await monitor.periodicPing()).toBe(true);
    expect(sandbox.stats.requests.ping).toBe(before + 1);
    expect(monitor.current()?.status).toBe('up');
  });
});
