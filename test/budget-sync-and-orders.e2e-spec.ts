/**
 * The request budget end to end (CONTRACT §3–§5): the sandbox limits the API key as Dujiao-Next does,
 * scaled in time (20 requests per 2 s, block 1 s), and the relay's budget holds the same rule. A full
 * sync of 40 pages runs while a burst of 30 orders arrives: no request is answered 429, every order is
 * placed exactly once and delivered (answered 201, or 202 `queued` and placed later), and the sync
 * completes, paced by the budget rather than failed by it. Callbacks are on, as the real upstream
 * sends them.
 */
import { useAppSuite } from './support/app-suite.js';
import { freePort, waitFor, waitForOrder } from './support/child-app.js';

const LIMIT = { requests: 20, windowMs: 2000, blockMs: 1000 };
const PAGE = 50;

describe('the request budget: a full sync beside a burst of orders', () => {
  const suite = useAppSuite({
    sandbox: {
      profile: 'dujiao-next',
      catalog: { products: 40 * PAGE },
      timetable: { paidMs: 20, fulfillingMs: 40, deliveredMs: 60, completedMs: null },
      rateLimit: LIMIT,
    },
    prepare: (sandbox) => {
      sandbox.catalog.addProduct({ skus: [{ skuCode: 'BURST-A', price: '2.00' }] });
      sandbox.catalog.addProduct({ skus: [{ skuCode: 'BURST-B', price: '3.00' }] });
    },
    env: async () => {
      const port = await freePort();
      return {
        UPSTREAM_PROFILE: 'dujiao-next',
        UPSTREAM_RATE_LIMIT: `${LIMIT.requests}/${LIMIT.windowMs}ms`,
        UPSTREAM_RATE_LIMIT_BLOCK_S: '1',
        ORDER_QUEUE_WAIT_MS: '1000',
        ORDER_PRICE_FRESH_S: '30',
        ORDER_POLL_BASE_MS: '200',
        ORDER_POLL_MAX_MS: '1000',
        CALLBACK_PUBLIC_URL: `http://127.0.0.1:${port}/callbacks/upstream`,
        PORT: String(port),
      };
    },
  });

  it('0 responses 429; every order placed once and delivered; the sync completes', async () => {
    const { app, sandbox } = suite;
    const limited = () => Object.values(sandbox.stats.rateLimited).reduce((a, b) => a + b, 0);
    // the two SKUs of the burst are known first (a small sync: they are on the last page, so a full one)
    const started = await app.http.post('/internal/catalog/sync', { mode: 'full' });
    expect(started.status).toBe(202);
    const first = started.data.run_id as string;
    const runOf = async (id: string) =>
      ((await app.http.get(`/internal/catalog/sync-runs/${id}`)).data as { run: Record<string, unknown> }).run;
    expect(
      await waitFor(
        () => runOf(first),
        (r) => r.status !== 'running',
        'the first sync',
        120_000,
      ),
    ).toMatchObject({ status: 'succeeded' });

    // a second full sync, and the burst while it runs
    const second = (await app.http.post('/internal/catalog/sync', { mode: 'full' })).data.run_id as string;
    await waitFor(
      () => runOf(second),
      (r) => (r.pages_done as number) >= 2,
      'the sync under way',
      60_000,
    );
    const nos = Array.from({ length: 30 }, (_, i) => `BSO-${String(i).padStart(2, '0')}`);
    const answers = await Promise.all(
      nos.map((no, i) => app.http.post('/internal/orders', { shop_order_no: no, sku_code: i % 2 ? 'BURST-A' : 'BURST-B', quantity: 1 })),
    );
    for (const a of answers) expect([201, 202]).toContain(a.status);
    for (const a of answers.filter((x) => x.status === 202)) expect(a.data.order.status).toBe('queued');

    for (const no of nos) await waitForOrder(app.http, no, (o) => o.status === 'delivered' && o.items.length === 1, 120_000);
    for (const no of nos) expect(sandbox.orders().filter((o) => o.downstream_order_no === no)).toHaveLength(1);
    const run = await waitFor(
      () => runOf(second),
      (r) => r.status !== 'running',
      'the second sync',
      120_000,
    );
    expect(run).toMatchObject({ status: 'succeeded', pages_total: 41, pages_done: 41 });
    expect((run.budget_wait_ms as number) > 0).toBe(true);
    expect(limited()).toBe(0);
    expect(sandbox.stats.rateLimitBlocks).toBe(0);
  }, 300_000);
});
