/**
 * Reconciliation does not crowd out orders (RECONCILE_BUDGET_SHARE): the `reconcile` class takes at
 * most its share of any window of the budget, even while nothing else waits, so that a burst of orders
 * right after a reconciliation run finds the window free of it; and `/health` tells what the key
 * carries. Scaled: a budget of 20 per 2 s (N' 19 in any 2.2 s), a reconcile share of 0.25 (4 of 19).
 * The ledger's grants are read from a copy kept by a trigger (test/support/budget-ledger.ts).
 */
import { UpstreamBudgetService } from '../src/budget/upstream-budget.service.js';
import { useAppSuite } from './support/app-suite.js';
import { grantsOf, installGrantLog, maxInAnyWindow } from './support/budget-ledger.js';
import { freePort, waitForOrder } from './support/child-app.js';
import { waitFor } from './support/wait.js';

const WINDOW_MS = 2200;
const RECONCILE_LIMIT = 4;

interface CapacityView {
  requests_per_minute: number;
  requests_per_order: number | null;
  orders_per_minute: number | null;
  reconcile: {
    last_window: number;
    limit_per_window: number;
    limit_per_minute: number;
    orders_per_day_full_schedule: number | null;
    due: number | null;
  };
}

describe('reconciliation keeps to its share of the request budget', () => {
  const t = useAppSuite({
    sandbox: { timetable: { paidMs: 10, fulfillingMs: 20, deliveredMs: 30, completedMs: null } },
    prepare: (sandbox) => {
      sandbox.catalog.addProduct({ skus: [{ skuCode: 'RS-1', price: '2.00' }] });
      sandbox.catalog.addProduct({ skus: [{ skuCode: 'RS-2', price: '3.00' }] });
    },
    env: async () => ({
      UPSTREAM_RATE_LIMIT: '20/2s',
      RECONCILE_BUDGET_SHARE: '0.25',
      // the burst's ten takes of the ledger, one transaction each, on a busy machine; below the 2 s
      // window, so that an order placed within it found room in the window it was sent in
      ORDER_QUEUE_WAIT_MS: '1800',
      ORDER_PRICE_FRESH_S: '0',
      ORDER_POLL_BASE_MS: '100',
      ORDER_POLL_MAX_MS: '400',
      PORT: String(await freePort()),
    }),
    seed: true,
  });
  let keyId = '';

  beforeAll(async () => {
    await installGrantLog(t.db);
    keyId = t.app.relay.app.get(UpstreamBudgetService).keyId;
  });

  const place = (no: string, sku: string) => t.app.http.post('/internal/orders', { shop_order_no: no, sku_code: sku, quantity: 1 });
  const capacity = async () => ((await t.app.http.get('/health')).data as { budget: { capacity: CapacityView | null } }).budget.capacity;

  it("12 re-reads take at most a window's share; a burst of orders right after is placed at once; /health tells the cost", async () => {
    const from = new Date(Date.now() - 1000);
    const finished: string[] = [];
    for (let i = 0; i < 12; i++) {
      const no = `RS-F${i}`;
      const r = await place(no, i % 2 ? 'RS-1' : 'RS-2');
      expect([201, 202]).toContain(r.status);
      finished.push(no);
    }
    for (const no of finished) await waitForOrder(t.app.http, no, (o) => o.status === 'delivered', 60_000);

    // with orders in the window, /health knows what an order costs
    const busy = await capacity();
    expect(busy).toMatchObject({
      requests_per_minute: Math.round(((19 * 60_000) / WINDOW_MS) * 10) / 10,
      reconcile: {
        limit_per_window: RECONCILE_LIMIT,
        orders_per_day_full_schedule: Math.floor((RECONCILE_LIMIT * 86_400_000) / WINDOW_MS / 3),
      },
    });
    expect(busy?.requests_per_order).toBeGreaterThanOrEqual(2);
    expect(busy?.orders_per_minute).toBeGreaterThan(0);

    const started = await t.app.http.post('/internal/reconciliation', { from: from.toISOString(), to: new Date().toISOString() });
    expect(started.status).toBe(202);
    const runId = (started.data as { run_id: string }).run_id;
    await waitFor(
      async () =>
        ((await t.app.http.get(`/internal/reconciliation/runs/${runId}`)).data as { run: { status: string; orders_done: number } }).run,
      (run) => run.status !== 'running',
      'the reconciliation run',
      60_000,
    );
    // right after the run: a burst of 5 orders (10 requests) finds room in the window at once
    const burst = await Promise.all(Array.from({ length: 5 }, (_, i) => place(`RS-B${i}`, i % 2 ? 'RS-1' : 'RS-2')));
    expect(burst.map((r) => r.status)).toEqual([201, 201, 201, 201, 201]);

    const grants = await grantsOf(t.db, keyId);
    const reconcile = grants.filter((g) => g.cls === 'reconcile');
    expect(reconcile.length).toBeGreaterThanOrEqual(12);
    expect(maxInAnyWindow(reconcile, WINDOW_MS)).toBeLessThanOrEqual(RECONCILE_LIMIT);
    expect(maxInAnyWindow(grants, WINDOW_MS)).toBeLessThanOrEqual(19);
  });
});
