/**
 * The upstream request budget's service against a real database (PGlite, or PostgreSQL with
 * TEST_DATABASE_URL): two service instances on one database stand for two replicas. Scaled numbers:
 * 10 requests per 500 ms (held as 9 per 700 ms), a block of 300 ms. Nothing here asserts a duration:
 * the ledger's own grant times are checked against the rule.
 */
import { DataSource } from 'typeorm';
import { BudgetWaitAborted, BudgetWaitExceeded } from '../src/budget/budget.errors.js';
import { PACED_CLASSES, type BudgetClass } from '../src/budget/request-budget.js';
import { UpstreamBudgetRepository } from '../src/budget/upstream-budget.repository.js';
import { UpstreamBudgetService } from '../src/budget/upstream-budget.service.js';
import { budgetSettings, envSupplier } from '../src/suppliers/supplier-config.js';
import { SystemClock } from '../src/common/clock.js';
import { loadConfig } from '../src/config/app-config.js';
import { Metrics } from '../src/ops/metrics.service.js';
import { grantsOf, installGrantLog, maxInAnyWindow } from './support/budget-ledger.js';
import { openTestDatabase, type TestDatabase } from './support/test-database.js';
import { waitFor } from './support/wait.js';

describe('upstream request budget (service and ledger)', () => {
  let db: TestDatabase;
  const sources: DataSource[] = [];
  const services: UpstreamBudgetService[] = [];

  beforeAll(async () => {
    db = await openTestDatabase();
    await installGrantLog(db);
  });

  afterAll(async () => {
    await Promise.all(services.map((s) => s.close()));
    for (const ds of sources) await ds.destroy().catch(() => undefined);
    await db?.close();
  });

  /** A "replica": its own connection pool, repository and service, for the API key `key`. */
  async function replica(
    key: string,
    env: Record<string, string> = {},
  ): Promise<{ budget: UpstreamBudgetService; repo: UpstreamBudgetRepository; metrics: Metrics }> {
    const ds = new DataSource({ type: 'postgres', url: db.url, poolSize: 2 });
    await ds.initialize();
    sources.push(ds);
    const config = loadConfig({
      UPSTREAM_BASE_URL: 'http://127.0.0.1:9/api/v1/upstream',
      UPSTREAM_API_KEY: key,
      UPSTREAM_API_SECRET: 'secret',
      UPSTREAM_RATE_LIMIT: '10/500ms',
      UPSTREAM_RATE_LIMIT_BLOCK_S: '0.3',
      ...env,
    });
    const repo = new UpstreamBudgetRepository(ds);
    const metrics = new Metrics();
    const budget = new UpstreamBudgetService(budgetSettings(envSupplier(config), config.budget), new SystemClock(), repo, metrics);
    services.push(budget);
    return { budget, repo, metrics };
  }

  it("two replicas taking tokens at once never exceed N' in any W' window, and pace the paced classes", async () => {
    const a = await replica('key-replicas');
    const b = await replica('key-replicas');
    expect(a.budget.keyId).toBe(b.budget.keyId);
    expect(a.budget.keyId).not.toContain('key-replicas');
    const rule = a.budget.rule!;
    const classes: BudgetClass[] = ['create', 'poll', 'sync', 'price', 'deliver', 'create', 'reconcile', 'create'];
    const takes: Array<Promise<unknown>> = [];
    for (let i = 0; i < 24; i++) {
      takes.push(a.budget.take(classes[i % classes.length]));
      takes.push(b.budget.take(classes[(i + 3) % classes.length]));
    }
    await Promise.all(takes);

    const grants = await grantsOf(db, a.budget.keyId);
    expect(grants).toHaveLength(48);
    expect(maxInAnyWindow(grants, rule.windowMs)).toBeLessThanOrEqual(rule.limit);
    const paced = grants.filter((g) => PACED_CLASSES.has(g.cls)).map((g) => g.atMs);
    for (let i = 1; i < paced.length; i++) expect(paced[i] - paced[i - 1]).toBeGreaterThanOrEqual(rule.spacingMs - 0.01);
    // a key the other replica does not use keeps its own budget
    const other = await replica('key-other');
    expect(other.budget.keyId).not.toBe(a.budget.keyId);
    await other.budget.take('create', { maxWaitMs: 0 });
  });

  it('serves the waiters of a process in class order, first come first served within a class, and raises the demand flag', async () => {
    const { budget } = await replica('key-priority');
    // every waiter queues behind a block (all are queued in this tick, before the ledger answers)
    await budget.noteRateLimited(1500);
    const order: string[] = [];
    const ask = (cls: BudgetClass, tag: string) => budget.take(cls).then(() => order.push(tag));
    const all = [
      ask('reconcile', 'reconcile'),
      ask('sync', 'sync'),
      ask('poll', 'poll'),
      ask('price', 'price'),
      ask('create', 'create-1'),
      ask('deliver', 'deliver'),
      ask('create', 'create-2'),
    ];
    expect(budget.waiting()).toEqual({ create: 2, deliver: 1, price: 1, poll: 1, sync: 1, reconcile: 1 });
    // the create waits, and its wait is visible to the other replicas: the flag stands past the block's end
    await waitFor(
      async () =>
        (
          await db.query<{ on: boolean }>(`SELECT demand_until > blocked_until AS on FROM upstream_budget_keys WHERE key_id = $1`, [
            budget.keyId,
          ])
        )[0]?.on === true,
      Boolean,
      'the demand flag raised until past the block while the create waits',
    );
    await Promise.all(all);
    expect(order).toEqual(['create-1', 'create-2', 'deliver', 'price', 'poll', 'sync', 'reconcile']);
  });

  it('maxWaitMs: refused (BudgetWaitExceeded, nothing granted) when the window stays full past it; 0 takes only a free token', async () => {
    // 3 per 10 s, held as 2 per 10.2 s: the window stays full for the whole test
    const { budget, metrics } = await replica('key-maxwait', { UPSTREAM_RATE_LIMIT: '3/10s' });
    expect(budget.rule).toMatchObject({ limit: 2 });
    await budget.take('create', { maxWaitMs: 0 });
    await budget.take('create');
    const err = await budget.take('create', { maxWaitMs: 20, operation: 'createOrder' }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(BudgetWaitExceeded);
    expect(err).toMatchObject({
      failureClass: 'retryable',
      reason: 'budget_wait_exceeded',
      operation: 'createOrder',
      cls: 'create',
      blockedUntil: null,
    });
    expect(await budget.take('price', { maxWaitMs: 0 }).catch((e: unknown) => e)).toBeInstanceOf(BudgetWaitExceeded);
    expect(await grantsOf(db, budget.keyId)).toHaveLength(2);
    expect((await metrics.budgetWaitExceeded.get()).values.find((v) => v.labels.class === 'create')?.value).toBe(1);

    // a wait long enough is granted once the oldest grant leaves the window
    const small = await replica('key-maxwait-granted');
    for (let i = 0; i < small.budget.rule!.limit; i++) await small.budget.take('create');
    const ticket = await small.budget.take('create', { maxWaitMs: 30_000 });
    expect(ticket.cls).toBe('create');
    expect(await grantsOf(db, small.budget.keyId)).toHaveLength(small.budget.rule!.limit + 1);
  });

  it('a 429 blocks the key on every replica until the block ends; a wait shorter than the block is refused at once', async () => {
    const a = await replica('key-block');
    const b = await replica('key-block');
    await a.budget.take('poll');
    // a Retry-After of 1.5 s: longer than any wait below
    const until = await a.budget.noteRateLimited(1500, 'getOrder');
    expect(until).toBeInstanceOf(Date);
    expect((await b.budget.blockedUntil())?.getTime()).toBe(until!.getTime());
    const refused = await b.budget.take('create', { maxWaitMs: 50 }).catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(BudgetWaitExceeded);
    expect((refused as BudgetWaitExceeded).blockedUntil?.getTime()).toBe(until!.getTime());
    await Promise.all([b.budget.take('create'), a.budget.take('sync')]);
    const grants = await grantsOf(db, a.budget.keyId);
    expect(grants).toHaveLength(3);
    // both granted after the block's end, by the database's clock
    for (const g of grants.slice(1)) expect(g.atMs).toBeGreaterThanOrEqual(until!.getTime());
    expect((await a.metrics.upstreamBlocks.get()).values[0]?.value).toBe(1);
    // a 429 after the block starts a new one; another inside it extends it without starting a third
    await a.budget.noteRateLimited(null, 'getOrder');
    await a.budget.noteRateLimited(5_000, 'createOrder');
    expect((await a.metrics.upstreamBlocks.get()).values[0]?.value).toBe(2);
    expect(((await a.budget.blockedUntil())?.getTime() ?? 0) - until!.getTime()).toBeGreaterThan(1000);
  });

  it(
    "while another replica's higher class waits (the demand flag), sync and reconcile keep to SYNC_BUDGET_SHARE; " +
      'once it falls they go on',
    async () => {
      // 100 per 60 s: N' 95, a share of 4, a pace of W'/N' (644 ms) between two sync grants. The window
      // (61.2 s) is long beside the test's few paced grants, so the share's first grant is still in it
      // when the flag falls however slowly the machine runs, and a sync held back by the share would
      // wait for nearly all of it.
      // (reconcile's own share, RECONCILE_BUDGET_SHARE, is the whole window here: test/budget-reconcile-share.e2e-spec.ts)
      const { budget } = await replica('key-share', {
        UPSTREAM_RATE_LIMIT: '100/60s',
        SYNC_BUDGET_SHARE: '0.05',
        RECONCILE_BUDGET_SHARE: '1',
      });
      expect(budget.rule).toMatchObject({ limit: 95, syncShareLimit: 4, windowMs: 61_200 });
      await budget.take('create'); // creates the key's row
      // another replica's create waits: its flag stands for a minute
      await db.query(`UPDATE upstream_budget_keys SET demand_until = clock_timestamp() + interval '1 minute' WHERE key_id = $1`, [
        budget.keyId,
      ]);
      for (let i = 0; i < 4; i++) await budget.take(i % 2 === 0 ? 'sync' : 'reconcile');
      expect(await budget.take('sync', { maxWaitMs: 100 }).catch((e: unknown) => e)).toBeInstanceOf(BudgetWaitExceeded);
      // the window still has room for the classes above the sync
      await budget.take('poll');
      // the other replica's create had its turn: its flag falls in 300 ms, and the sync goes on then,
      // while its first share grant is still in the window. A sync that waited for the share instead
      // would wait ~60 s: the ledger names that time at once, so a wait allowed half the window is
      // refused at once rather than left to Jest's timeout.
      const [{ ms: flagEnd }] = await db.query<{ ms: number }>(
        `UPDATE upstream_budget_keys SET demand_until = clock_timestamp() + interval '300 milliseconds' WHERE key_id = $1
       RETURNING (extract(epoch FROM demand_until) * 1000)::float8 AS ms`,
        [budget.keyId],
      );
      await budget.take('sync', { maxWaitMs: budget.rule!.windowMs / 2 });
      const grants = await grantsOf(db, budget.keyId);
      expect(grants.map((g) => g.cls)).toEqual(['create', 'sync', 'reconcile', 'sync', 'reconcile', 'poll', 'sync']);
      // by the ledger's own times: granted once the flag fell, with the four share grants still in its window
      const last = grants[grants.length - 1].atMs;
      expect(last).toBeGreaterThanOrEqual(Number(flagEnd));
      expect(grants.slice(1, 5).every((g) => g.atMs >= last - budget.rule!.windowMs)).toBe(true);
    },
  );

  it('an aborted wait rejects as aborted and takes nothing', async () => {
    const { budget } = await replica('key-abort');
    await budget.noteRateLimited(60_000);
    const controller = new AbortController();
    const waiting = budget.take('sync', { signal: controller.signal, operation: 'listProducts' }).catch((e: unknown) => e);
    controller.abort();
    const err = await waiting;
    expect(err).toBeInstanceOf(BudgetWaitAborted);
    expect(err).toMatchObject({ failureClass: 'unknown', reason: 'aborted', operation: 'listProducts' });
    expect(await budget.take('sync', { signal: controller.signal }).catch((e: unknown) => e)).toBeInstanceOf(BudgetWaitAborted);
    expect(await grantsOf(db, budget.keyId)).toEqual([]);
    expect(budget.waiting()).toEqual({});
  });

  it('off: every take resolves at once and nothing is written to the ledger; a 429 blocks this process alone', async () => {
    const before = await db.query<{ n: number }>(
      `SELECT (SELECT count(*) FROM upstream_budget_keys)::int + (SELECT count(*) FROM upstream_budget_grants)::int AS n`,
    );
    const { budget, metrics } = await replica('key-off', { UPSTREAM_RATE_LIMIT: 'off' });
    expect(budget.enabled).toBe(false);
    await Promise.all(Array.from({ length: 200 }, () => budget.take('sync')));
    expect(await budget.blockedUntil()).toBeNull();
    // a 429 without Retry-After: blocked for UPSTREAM_RATE_LIMIT_BLOCK_S, in this process
    const until = await budget.noteRateLimited(null, 'ping');
    expect(until).toBeInstanceOf(Date);
    expect(await budget.blockedUntil()).toEqual(until);
    const refused = await budget.take('create', { maxWaitMs: 0 }).catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(BudgetWaitExceeded);
    expect(refused).toMatchObject({ blockedUntil: until });
    await budget.take('create');
    expect(await budget.blockedUntil()).toBeNull();
    const after = await db.query<{ n: number }>(
      `SELECT (SELECT count(*) FROM upstream_budget_keys)::int + (SELECT count(*) FROM upstream_budget_grants)::int AS n`,
    );
    expect(after[0].n).toBe(before[0].n);
    expect((await metrics.budgetGrants.get()).values.find((v) => v.labels.class === 'sync')?.value).toBe(200);
  });
});
