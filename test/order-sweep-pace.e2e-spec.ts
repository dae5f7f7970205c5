/**
 * The sweep of attempts left `submitting` keeps its pace while the poller is busy: CONTRACT §5 gives
 * 2 × UPSTREAM_TIMEOUT_MS for such an attempt to become `submit_unknown`, and a pass of polls against
 * an upstream that answers slowly (but within the timeout) may take many seconds. The sweep therefore
 * runs on its own timer, never only at the start of a pass, where it would wait behind the slow reads.
 */
import { OrderPoller } from '../src/orders/order-poller.service.js';
import { OrderWrites } from '../src/orders/order-writes.repository.js';
import { useAppSuite } from './support/app-suite.js';
import { reserveOrder } from './support/reserved-order.js';
import { passesRun, waitFor } from './support/wait.js';

const TIMEOUT_MS = 1000;

describe('order poller: the sweep of stale attempts is not held up by slow polls', () => {
  const suite = useAppSuite({
    // orders stay `paid`: every one of them is polled again and again
    sandbox: {
      catalog: { products: 2 },
      timetable: { paidMs: 50, fulfillingMs: 3_600_000, deliveredMs: 3_600_000, completedMs: 3_600_000 },
    },
    prepare: (sandbox) => sandbox.catalog.addProduct({ skus: [{ skuCode: 'X-SLOW', price: '1.00' }] }),
    env: { UPSTREAM_TIMEOUT_MS: String(TIMEOUT_MS), ORDER_POLL_BASE_MS: '50', ORDER_POLL_MAX_MS: '100' },
    seed: true,
  });

  it('an attempt whose sender died is submit_unknown at the first sweeps after its lease, while a pass of slow reads runs', async () => {
    const { app, db, sandbox } = suite;
    const poller = app.relay.app.get(OrderPoller);
    // CONTRACT §5 gives 2 × UPSTREAM_TIMEOUT_MS: the sweep runs every tick, at most a quarter of the
    // timeout, so the first sweep begun after a lease's end comes well within it. The pace is
    // configuration, checked here; below, the test counts sweeps and passes, never a measured time.
    expect(poller.tickMs).toBeLessThanOrEqual(TIMEOUT_MS / 4);
    for (let i = 0; i < 32; i++) {
      const r = await app.http.post('/internal/orders', { shop_order_no: `SLOW-${i}`, sku_code: 'X-SLOW', quantity: 1 });
      expect(r.status).toBe(201);
    }
    // reads answer within the timeout, slowly: a pass over 32 due orders, 8 at a time, takes seconds
    sandbox.faults.set({ rules: [{ operation: 'getOrder', kind: 'delay', delayMs: 600 }] });
    // a pass begun after the fault, its reads slow
    const slowPass = poller.passes.begun + 1;
    await waitFor(
      () => poller.passes.begun,
      (begun) => begun >= slowPass,
      'a pass of slow reads to begin',
    );
    // an attempt in flight whose sender "died", its lease already ended
    const created = await reserveOrder(app.relay.app.get(OrderWrites), 'CRASHED-1', 0);
    // the first sweep begun after the lease ended finds it
    await passesRun(poller.sweeps, 1, 'sweeps');
    const [{ status }] = await db.query<{ status: string }>('SELECT status FROM orders WHERE id = $1', [created.order.id]);
    expect(status).toBe('submit_unknown');
    // ...while the pass of slow reads that was running when the lease ended still runs: the sweep did
    // not wait for it
    expect(poller.passes.ended).toBeLessThan(slowPass);
  });
});
