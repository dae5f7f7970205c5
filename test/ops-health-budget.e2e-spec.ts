/**
 * `/health` under the upstream's request budget (issue 24, "Visible"): the budget's limit as
 * configured, the key's block after a 429 (`upstream: rate_limited` meanwhile, whatever the last ping
 * saw) and the number of `queued` orders; once the block is over and the queue empty, neither shows.
 */
import { useAppSuite } from './support/app-suite.js';
import { freePort, waitFor } from './support/child-app.js';

interface HealthAnswer {
  upstream: { status: string };
  budget: { limit: string | null; used: number | null; left: number | null; blocked_until: string | null };
  queued: number | null;
}

describe('/health: the request budget and the queue', () => {
  const suite = useAppSuite({
    sandbox: { profile: 'dujiao-next', dedupeDownstreamOrderNo: true, catalog: { products: 1 } },
    prepare: (sandbox) => sandbox.catalog.addProduct({ skus: [{ skuCode: 'HB-1', price: '3.00' }] }),
    env: async () => ({
      UPSTREAM_PROFILE: 'dujiao-next',
      UPSTREAM_RATE_LIMIT: '10/1s',
      UPSTREAM_RATE_LIMIT_BLOCK_S: '1',
      ORDER_QUEUE_WAIT_MS: '150',
      PORT: String(await freePort()),
    }),
    seed: true,
  });

  const health = async (): Promise<HealthAnswer> => (await suite.app.http.get('/health')).data as HealthAnswer;

  it("a 429 blocks the key: rate_limited with the block's end, and the order waiting for it is counted as queued", async () => {
    const { app, sandbox } = suite;
    const before = await health();
    expect(before.budget).toMatchObject({ limit: '10/1s', blocked_until: null });
    expect(before.upstream.status).not.toBe('rate_limited');
    expect(before.queued).toBe(0);

    // a 429 with Retry-After 3 s on the create: the key is blocked, the order is queued
    sandbox.faults.set({ rules: [{ operation: 'createOrder', kind: 'rate_limit', retryAfterS: 3, times: 1 }] });
    const r = await app.http.post('/internal/orders', { shop_order_no: 'HB-QUEUED-1', sku_code: 'HB-1', quantity: 1 });
    expect(r.status).toBe(202);
    expect(r.data.order).toMatchObject({ status: 'queued' });

    const blocked = await health();
    expect(blocked.upstream.status).toBe('rate_limited');
    expect(blocked.budget.limit).toBe('10/1s');
    expect(blocked.budget.blocked_until).toEqual(expect.stringMatching(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/));
    expect(blocked.queued).toBe(1);
    // the 429'd create was granted a moment ago: counted in the window, with what is left beside it
    expect(blocked.budget.used).toBeGreaterThanOrEqual(1);
    expect((blocked.budget.used as number) + (blocked.budget.left as number)).toBeLessThanOrEqual(10);

    // canceled locally: the queue is empty; once the block ends, the key is free again
    expect((await app.http.post('/internal/orders/HB-QUEUED-1/cancel', {})).data.order).toMatchObject({ status: 'canceled' });
    sandbox.faults.reset();
    const after = await waitFor(health, (h) => h.budget.blocked_until === null, 'the block to end');
    expect(after.upstream.status).not.toBe('rate_limited');
    expect(after.queued).toBe(0);
  });
});
