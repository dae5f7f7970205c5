/**
 * The budgeted upstream client against the sandbox upstream (real HTTP, port 0) and a real database
 * for the budget's ledger. Scaled numbers: 10 requests per 500 ms, a block of 300 ms. The 429 of a
 * Dujiao-Next limiter is a `coded_error` fault with status 429 and the server's generic body (no
 * envelope, no Retry-After); the `rate_limit` fault adds a Retry-After. Nothing here asserts a
 * duration: the order of requests, their counts and the ledger's times are checked.
 */
import { DataSource } from 'typeorm';
import { BudgetWaitExceeded } from '../src/budget/budget.errors.js';
import { UpstreamBudgetRepository } from '../src/budget/upstream-budget.repository.js';
import { UpstreamBudgetService } from '../src/budget/upstream-budget.service.js';
import { budgetSettings, envSupplier } from '../src/suppliers/supplier-config.js';
import { SystemClock } from '../src/common/clock.js';
import { loadConfig } from '../src/config/app-config.js';
import { Metrics } from '../src/ops/metrics.service.js';
import { SandboxServer } from '../src/sandbox/sandbox.server.js';
import type { SandboxRequestEvent } from '../src/sandbox/sandbox.types.js';
import { BudgetedUpstreamClient } from '../src/upstream/budgeted-upstream.client.js';
import { UpstreamHttpClient } from '../src/upstream/upstream-http.adapter.js';
import { UpstreamRetryableError } from '../src/upstream/upstream.errors.js';
import { grantsOf, installGrantLog, storedBlockEnd } from './support/budget-ledger.js';
import { openTestDatabase, type TestDatabase } from './support/test-database.js';

const DUJIAO_429 = JSON.stringify({ status_code: 429, msg: 'too many requests', data: { request_id: 'req-429' } });

describe('BudgetedUpstreamClient against the sandbox', () => {
  let db: TestDatabase;
  let sandbox: SandboxServer;
  let ds: DataSource;
  const https: UpstreamHttpClient[] = [];
  const budgets: UpstreamBudgetService[] = [];
  /** The sandbox's answers, in order: `<operation> <status>`. */
  const answers: string[] = [];

  beforeAll(async () => {
    db = await openTestDatabase();
    await installGrantLog(db);
    ds = new DataSource({ type: 'postgres', url: db.url, poolSize: 2 });
    await ds.initialize();
    sandbox = new SandboxServer({
      profile: 'spec',
      apiKey: 'sandbox-api-key',
      apiSecret: 'sandbox-api-secret',
      catalog: { products: 5, seed: 3 },
      timetable: { paidMs: 60_000, fulfillingMs: 60_000, deliveredMs: 60_000, completedMs: null },
    });
    await sandbox.start(0);
    sandbox.events.on('request', (e: SandboxRequestEvent) => {
      if (e.phase === 'done') answers.push(`${e.operation} ${e.status ?? e.outcome}`);
    });
  });
  afterEach(async () => {
    // the ledger transaction a test leaves in flight ends before the next test empties the ledger
    await Promise.all(budgets.splice(0).map((b) => b.close()));
  });
  afterAll(async () => {
    for (const h of https) h.close();
    await sandbox?.stop();
    await ds?.destroy();
    await db?.close();
  });
  beforeEach(async () => {
    sandbox.reset();
    answers.length = 0;
    await db.query(`DELETE FROM upstream_budget_keys`);
    await db.query(`DELETE FROM test_grant_log`);
  });

  /** A budgeted client over the sandbox, with a service and metrics of its own (the ledger is emptied before each test). */
  function budgeted(env: Record<string, string> = {}): { client: BudgetedUpstreamClient; budget: UpstreamBudgetService; metrics: Metrics } {
    const baseUrl = sandbox.baseUrl;
    const config = loadConfig({
      UPSTREAM_BASE_URL: baseUrl,
      UPSTREAM_API_KEY: 'sandbox-api-key',
      UPSTREAM_API_SECRET: 'sandbox-api-secret',
      UPSTREAM_RATE_LIMIT: '10/500ms',
      UPSTREAM_RATE_LIMIT_BLOCK_S: '0.3',
      ...env,
    });
    const metrics = new Metrics();
    const budget = new UpstreamBudgetService(
      budgetSettings(envSupplier(config), config.budget),
      new SystemClock(),
      new UpstreamBudgetRepository(ds),
      metrics,
    );
    const http = new UpstreamHttpClient({
      baseUrl,
      apiKey: config.upstream.apiKey,
      apiSecret: config.upstream.apiSecret,
      headerPrefix: config.upstream.headerPrefix,
      signatureTemplate: config.upstream.signatureTemplate,
      timeoutMs: 5000,
    });
    budgets.push(budget);
    https.push(http);
    return { client: new BudgetedUpstreamClient(http, budget), budget, metrics };
  }

  function autoSkuId(): number {
    const f = sandbox.catalog.findSku({ fulfillmentType: 'auto', stockStatus: 'unlimited' });
    if (!f) throw new Error('no auto SKU in the sandbox catalog');
    return f.sku.id;
  }

  async function blockRecorded(budget: UpstreamBudgetService): Promise<number> {
    for (;;) {
      const end = await storedBlockEnd(db, budget.keyId);
      if (end !== null) return end;
      await new Promise((r) => setTimeout(r, 5));
    }
  }

  const counter = async (m: Metrics, name: 'upstreamRateLimited' | 'upstreamBlocks'): Promise<number> =>
    (await m[name].get()).values.reduce((sum, v) => sum + v.value, 0);

  it("takes a token of the operation's class for every call, or of the class the caller names", async () => {
    const { client, budget } = budgeted();
    await client.ping();
    await client.listCategories();
    const page = await client.listProducts({ page: 1, pageSize: 10 });
    await client.getProduct(page.items[0].id);
    const created = await client.createOrder({ sku_id: autoSkuId(), quantity: 1, downstream_order_no: 'BUDGET-CLASSES' });
    await client.getOrder(created.order_id);
    await client.getOrder(created.order_id, undefined, { priority: 'deliver' });
    await client.cancelOrder(created.order_id);
    expect((await grantsOf(db, budget.keyId)).map((g) => g.cls)).toEqual([
      'poll',
      'sync',
      'sync',
      'price',
      'create',
      'poll',
      'deliver',
      'create',
    ]);
    expect(budget.lastSuccessAt()).not.toBeNull();
    expect(
      budget.lastSuccessAt(['ping', 'listCategories', 'listProducts', 'getProduct', 'createOrder', 'getOrder', 'cancelOrder']),
    ).toBeNull();
  });

  it('a 429 without Retry-After blocks all callers for UPSTREAM_RATE_LIMIT_BLOCK_S; the read, sent again after it, succeeds', async () => {
    const { client, budget, metrics } = budgeted();
    const created = await client.createOrder({ sku_id: autoSkuId(), quantity: 1, downstream_order_no: 'BUDGET-READ' });
    sandbox.faults.set({ rules: [{ operation: 'getOrder', kind: 'coded_error', status: 429, body: DUJIAO_429, times: 1 }] });
    const read = client.getOrder(created.order_id);
    const blockEnd = await blockRecorded(budget);
    // callers that come during the block wait for its end, whatever their class
    const others = await Promise.all([client.ping(), client.listCategories(), client.getProduct(sandbox.catalog.listedProducts()[0].id)]);
    expect(others).toHaveLength(3);
    expect(await read).toMatchObject({ order_id: created.order_id });

    expect(answers.filter((a) => a.startsWith('getOrder'))).toEqual(['getOrder 429', 'getOrder 200']);
    expect(answers.filter((a) => a.endsWith(' 429'))).toHaveLength(1);
    const grants = await grantsOf(db, budget.keyId);
    expect(grants).toHaveLength(6); // the create, the read, its resend, the three others
    const [, first, ...afterBlock] = grants;
    expect(first.atMs).toBeLessThan(blockEnd);
    for (const g of afterBlock) expect(g.atMs).toBeGreaterThanOrEqual(blockEnd);
    // the block lasted UPSTREAM_RATE_LIMIT_BLOCK_S from the 429 (after the read's grant)
    expect(blockEnd - first.atMs).toBeGreaterThanOrEqual(300);
    expect(await counter(metrics, 'upstreamRateLimited')).toBe(1);
    expect(await counter(metrics, 'upstreamBlocks')).toBe(1);
  });

  it('a create answered 429 rejects as retryable rate_limited, nothing placed; the same create after the block places one', async () => {
    const { client, budget } = budgeted();
    sandbox.faults.set({ rules: [{ operation: 'createOrder', kind: 'coded_error', status: 429, body: DUJIAO_429, times: 1 }] });
    const request = { sku_id: autoSkuId(), quantity: 1, downstream_order_no: 'BUDGET-CREATE' };
    const err = await client.createOrder(request).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(UpstreamRetryableError);
    expect(err).not.toBeInstanceOf(BudgetWaitExceeded);
    expect(err).toMatchObject({ reason: 'rate_limited', httpStatus: 429, operation: 'createOrder' });
    expect((err as Error).message).toContain('too many requests');
    expect(sandbox.orders()).toHaveLength(0);
    expect(sandbox.stats.createsReceived).toBe(1);
    expect(sandbox.stats.createsExecuted).toBe(0);

    const blockEnd = await storedBlockEnd(db, budget.keyId);
    expect(blockEnd).not.toBeNull();
    const created = await client.createOrder(request);
    expect(sandbox.orders().map((o) => o.id)).toEqual([created.order_id]);
    expect(answers).toEqual(['createOrder 429', 'createOrder 200']);
    const grants = await grantsOf(db, budget.keyId);
    expect(grants).toHaveLength(2);
    expect(grants[1].atMs).toBeGreaterThanOrEqual(blockEnd!);
  });

  it('a 429 with Retry-After blocks for the Retry-After', async () => {
    const { client, budget } = budgeted();
    sandbox.faults.set({ rules: [{ operation: 'ping', kind: 'rate_limit', retryAfterS: 1, times: 1 }] });
    await client.ping();
    expect(answers).toEqual(['ping 429', 'ping 200']);
    const [first, second] = await grantsOf(db, budget.keyId);
    const blockEnd = (await storedBlockEnd(db, budget.keyId))!;
    expect(blockEnd - first.atMs).toBeGreaterThanOrEqual(1000);
    expect(second.atMs).toBeGreaterThanOrEqual(blockEnd);
  });

  it('a read whose maxWaitMs ends before the block is refused with BudgetWaitExceeded and not sent', async () => {
    const { client, budget } = budgeted();
    await budget.noteRateLimited(60_000, 'test');
    const err = await client.getOrder(1, undefined, { maxWaitMs: 50 }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(BudgetWaitExceeded);
    expect(err).toMatchObject({ failureClass: 'retryable', reason: 'budget_wait_exceeded', operation: 'getOrder', cls: 'poll' });
    expect((err as BudgetWaitExceeded).blockedUntil).toBeInstanceOf(Date);
    expect(answers).toEqual([]);
    // an aborted read ends its wait as the port promises: unknown, reason aborted
    const controller = new AbortController();
    const aborted = client.listProducts({ page: 1, pageSize: 10 }, controller.signal).catch((e: unknown) => e);
    controller.abort();
    expect(await aborted).toMatchObject({ failureClass: 'unknown', reason: 'aborted' });
    expect(answers).toEqual([]);
  });

  describe("under the sandbox's Dujiao-Next limiter (10 per 500 ms from the key's first request, block 300 ms)", () => {
    beforeEach(() => sandbox.setRateLimit({ requests: 10, windowMs: 500, blockMs: 300 }));

    it('two replicas sharing the budget send a burst of every class without one 429', async () => {
      const a = budgeted();
      const b = budgeted();
      const created = await a.client.createOrder({ sku_id: autoSkuId(), quantity: 1, downstream_order_no: 'BUDGET-LIMITER' });
      const productId = sandbox.catalog.listedProducts()[0].id;
      const calls: Array<Promise<unknown>> = [];
      for (let i = 0; i < 12; i++) {
        for (const { client } of [a, b]) {
          calls.push(client.getProduct(productId));
          calls.push(
            i % 3 === 0
              ? client.listCategories()
              : client.getOrder(created.order_id, undefined, { priority: i % 2 === 0 ? 'deliver' : 'poll' }),
          );
        }
      }
      await Promise.all(calls);
      expect(answers).toHaveLength(49);
      expect(answers.filter((x) => !x.endsWith(' 200'))).toEqual([]);
      expect(sandbox.stats.rateLimitBlocks).toBe(0);
      expect(Object.values(sandbox.stats.rateLimited).reduce((n, v) => n + v, 0)).toBe(0);
    });

    it('a budget above the real limit meets its 429s: the block is recorded, every read is sent again after it and succeeds', async () => {
      const { client, budget, metrics } = budgeted({ UPSTREAM_RATE_LIMIT: '30/500ms' });
      const productId = sandbox.catalog.listedProducts()[0].id;
      const reads = await Promise.all(Array.from({ length: 14 }, () => client.getProduct(productId)));
      expect(reads.every((p) => p.id === productId)).toBe(true);
      // the 11th request started the upstream's block; the ones sent before the relay recorded it
      // were refused too; nothing was sent again before the block's end: one block only
      const refused = sandbox.stats.rateLimited.product;
      expect(refused).toBeGreaterThanOrEqual(1);
      expect(refused).toBeLessThanOrEqual(4);
      expect(sandbox.stats.rateLimitBlocks).toBe(1);
      expect(answers.filter((x) => x === 'product 200')).toHaveLength(14);
      expect(answers).toHaveLength(14 + refused);
      expect(await counter(metrics, 'upstreamRateLimited')).toBe(refused);
      expect(await counter(metrics, 'upstreamBlocks')).toBe(1);
      // every resend was granted after the block's end
      const blockEnd = (await storedBlockEnd(db, budget.keyId))!;
      const grants = await grantsOf(db, budget.keyId);
      expect(grants).toHaveLength(14 + refused);
      expect(grants.filter((g) => g.atMs >= blockEnd).length).toBeGreaterThanOrEqual(refused);
    });
  });

  it('budget off: every call goes straight to the adapter, a 429 answered as it came and counted, nothing in the ledger', async () => {
    const { client, budget, metrics } = budgeted({ UPSTREAM_RATE_LIMIT: 'off' });
    await Promise.all(Array.from({ length: 30 }, () => client.ping()));
    sandbox.faults.set({ rules: [{ operation: 'getOrder', kind: 'coded_error', status: 429, body: DUJIAO_429, times: 1 }] });
    const err = await client.getOrder(1).catch((e: unknown) => e);
    expect(err).toMatchObject({ failureClass: 'retryable', reason: 'rate_limited' });
    expect(answers.filter((a) => a.startsWith('getOrder'))).toEqual(['getOrder 429']);
    expect(await counter(metrics, 'upstreamRateLimited')).toBe(1);
    // the block is this process's alone
    expect(await counter(metrics, 'upstreamBlocks')).toBe(1);
    expect(await db.query(`SELECT count(*)::int AS n FROM upstream_budget_keys`)).toEqual([{ n: 0 }]);
    expect(await db.query(`SELECT count(*)::int AS n FROM test_grant_log`)).toEqual([{ n: 0 }]);
    expect(await storedBlockEnd(db, budget.keyId)).toBeNull();
  });

  it('budget off: a 429 (no Retry-After) stops all sends for UPSTREAM_RATE_LIMIT_BLOCK_S; a call unable to wait: refused', async () => {
    const { client, budget } = budgeted({ UPSTREAM_RATE_LIMIT: 'off', UPSTREAM_RATE_LIMIT_BLOCK_S: '0.3' });
    sandbox.faults.set({ rules: [{ operation: 'createOrder', kind: 'coded_error', status: 429, body: DUJIAO_429, times: 1 }] });
    const skuId = autoSkuId();
    const request = { sku_id: skuId, quantity: 1, downstream_order_no: 'OFF-BLOCK-1', trace_id: 't-off-block' };
    const err = await client.createOrder(request).catch((e: unknown) => e);
    expect(err).toMatchObject({ reason: 'rate_limited', httpStatus: 429 });
    const until = budget.localBlockUntil();
    expect(until).not.toBeNull();
    expect(await budget.blockedUntil()).toEqual(until);
    // within the block: a call that may wait 0 ms is refused with the block's end, and nothing is sent
    const refused = await client.ping(undefined, { maxWaitMs: 0 }).catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(BudgetWaitExceeded);
    expect(refused).toMatchObject({ blockedUntil: until });
    expect(answers).toEqual(['createOrder 429']);
    // a call that may wait is sent once the block is over, and succeeds; the create under its number places one order
    await client.ping();
    expect(budget.localBlockUntil()).toBeNull();
    await client.createOrder(request);
    expect(answers).toEqual(['createOrder 429', 'ping 200', 'createOrder 200']);
    expect(sandbox.orders().filter((o) => o.downstream_order_no === 'OFF-BLOCK-1')).toHaveLength(1);
  });
});
