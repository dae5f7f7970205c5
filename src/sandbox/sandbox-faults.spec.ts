/**
 * Each HTTP fault of the sandbox, as a raw client observes it.
 */
import { SandboxFaults } from './sandbox-faults.js';
import { signedRequest, type RawResponse, type SignedRequestOptions } from './sandbox-request.js';
import { SandboxServer } from './sandbox.server.js';
import type { SandboxCreatedOrder, SandboxErrorBody, SandboxProductPage, SandboxRequestEvent } from './sandbox.types.js';

async function errorCodeOf(p: Promise<unknown>): Promise<string | undefined> {
  try {
    await p;
    return undefined;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code;
  }
}

describe('sandbox faults', () => {
  let sandbox: SandboxServer;
  let skuId: number;
  const api = (method: string, path: string, opts?: SignedRequestOptions): Promise<RawResponse> =>
    signedRequest(sandbox.credentials, method, path, opts);
  const createOrder = (opts: SignedRequestOptions = {}): Promise<RawResponse> =>
    api('POST', '/orders', { body: { sku_id: skuId, quantity: 1 }, ...opts });

  beforeAll(async () => {
    sandbox = new SandboxServer({ catalog: { products: 30 }, timetable: { paidMs: null } });
    await sandbox.start();
  });
  afterAll(() => sandbox.stop());
  beforeEach(() => {
    sandbox.reset();
    skuId = sandbox.catalog.findSku({ fulfillmentType: 'auto', stockStatus: 'unlimited' })!.sku.id;
  });

  it('error_before: 503 without doing the work', async () => {
    sandbox.faults.set({ rules: [{ operation: 'createOrder', kind: 'error_before' }] });
    const r = await createOrder();
    expect(r.status).toBe(503);
    expect((r.json as SandboxErrorBody).ok).toBe(false);
    expect(sandbox.orders()).toHaveLength(0);
    expect(sandbox.stats).toMatchObject({ createsReceived: 1, createsExecuted: 0, faultsApplied: 1 });
  });

  it('error_after: does the work, then answers the configured 5xx', async () => {
    sandbox.faults.set({ rules: [{ operation: 'createOrder', kind: 'error_after', status: 500 }] });
    const r = await createOrder();
    expect(r.status).toBe(500);
    expect(sandbox.orders()).toHaveLength(1);
    expect(sandbox.walletBalance()).not.toBe('1000000.00');
    expect(sandbox.stats).toMatchObject({ createsReceived: 1, createsExecuted: 1 });
  });

  it('a rule with times expires; rules are scoped to their operation', async () => {
    sandbox.faults.set({ rules: [{ operation: 'ping', kind: 'error_before', times: 2 }] });
    expect((await api('GET', '/categories')).status).toBe(200);
    expect((await api('POST', '/ping')).status).toBe(503);
    expect(sandbox.faults.rules).toEqual([expect.objectContaining({ kind: 'error_before', times: 1 })]);
    expect((await api('POST', '/ping')).status).toBe(503);
    expect(sandbox.faults.rules).toEqual([]);
    expect((await api('POST', '/ping')).status).toBe(200);
    expect(sandbox.stats.requests.ping).toBe(3);
  });

  it("pathId: a rule aimed at one order's path applies to that order's requests only, and never to a path without an id", async () => {
    const idOf = async () => String(((await createOrder()).json as SandboxCreatedOrder).order_id);
    const [other, aimed] = [await idOf(), await idOf()];
    sandbox.faults.set({ rules: [{ operation: '*', kind: 'error_before', pathId: Number(aimed) as unknown as string, times: 1 }] });
    expect(sandbox.faults.rules).toEqual([expect.objectContaining({ pathId: aimed })]);
    expect((await api('GET', `/orders/${other}`)).status).toBe(200);
    expect((await api('POST', '/ping')).status).toBe(200);
    expect((await api('GET', '/orders')).status).toBe(404); // no such route: no rule is taken either
    expect(sandbox.faults.rules).toHaveLength(1);
    expect((await api('GET', `/orders/${aimed}`)).status).toBe(503);
    expect(sandbox.faults.rules).toEqual([]);
    expect((await api('GET', `/orders/${aimed}`)).status).toBe(200);
    for (const pathId of ['', 'a/b', -1, 1.5, {}]) {
      expect(() => sandbox.faults.set({ rules: [{ kind: 'error_before', pathId: pathId as string }] })).toThrow(/pathId/);
    }
    expect(sandbox.faults.rules).toEqual([]);
  });

  it("a '*' rule applies to every operation", async () => {
    sandbox.faults.set({ rules: [{ operation: '*', kind: 'error_before', status: 502 }] });
    expect((await api('POST', '/ping')).status).toBe(502);
    expect((await api('GET', '/products')).status).toBe(502);
    expect((await createOrder()).status).toBe(502);
  });

  it('hang_after: does the work and never answers (the client times out)', async () => {
    sandbox.faults.set({ rules: [{ operation: 'createOrder', kind: 'hang_after', times: 1 }] });
    expect(await errorCodeOf(createOrder({ timeoutMs: 300 }))).toBe('ETIMEDOUT');
    expect(sandbox.orders()).toHaveLength(1);
    expect((await api('POST', '/ping')).status).toBe(200);
  });

  it('hang_before: never answers and does nothing', async () => {
    sandbox.faults.set({ rules: [{ operation: 'createOrder', kind: 'hang_before', times: 1 }] });
    expect(await errorCodeOf(createOrder({ timeoutMs: 300 }))).toBe('ETIMEDOUT');
    expect(sandbox.orders()).toHaveLength(0);
  });

  it('reset_after: does the work, then the client sees ECONNRESET', async () => {
    sandbox.faults.set({ rules: [{ operation: 'createOrder', kind: 'reset_after', times: 1 }] });
    expect(await errorCodeOf(createOrder())).toBe('ECONNRESET');
    expect(sandbox.orders()).toHaveLength(1);
    expect(sandbox.stats.createsExecuted).toBe(1);
  });

  it('reset_before: ECONNRESET without doing the work', async () => {
    sandbox.faults.set({ rules: [{ operation: 'createOrder', kind: 'reset_before', times: 1 }] });
    expect(await errorCodeOf(createOrder())).toBe('ECONNRESET');
    expect(sandbox.orders()).toHaveLength(0);
    expect(sandbox.stats.createsReceived).toBe(1);
  });

  it('rate_limit: 429 with Retry-After, without doing the work', async () => {
    sandbox.faults.set({ rules: [{ operation: 'createOrder', kind: 'rate_limit', retryAfterS: 7 }] });
    const r = await createOrder();
    expect(r.status).toBe(429);
    expect(r.headers['retry-after']).toBe('7');
    expect((r.json as SandboxErrorBody).ok).toBe(false);
    expect(sandbox.orders()).toHaveLength(0);
  });

  it('garbage_after: does the work, answers 200 with an unparsable body', async () => {
    sandbox.faults.set({ rules: [{ operation: 'createOrder', kind: 'garbage_after' }] });
    const r = await createOrder();
    expect(r.status).toBe(200);
    expect(r.text.length).toBeGreaterThan(0);
    expect(r.json).toBeUndefined();
    expect(sandbox.orders()).toHaveLength(1);
  });

  it('coded_error: a given status and error_code, without doing the work', async () => {
    sandbox.faults.set({ rules: [{ operation: 'createOrder', kind: 'coded_error', status: 403, errorCode: 'account_disabled' }] });
    const r = await createOrder();
    expect(r.status).toBe(403);
    expect(r.json).toEqual({ ok: false, error_code: 'account_disabled', error_message: expect.any(String) });
    expect(sandbox.orders()).toHaveLength(0);
  });

  it('payment_failed: HTTP 200 ok:false, the order recorded as canceled, nothing charged', async () => {
    sandbox.faults.set({ rules: [{ kind: 'payment_failed', times: 1 }] });
    expect((await api('POST', '/ping')).status).toBe(200); // does not apply to other operations
    const r = await createOrder();
    expect(r.status).toBe(200);
    // as Dujiao-Next: the canceled order is named in the refusal
    const [canceled] = sandbox.orders();
    expect(r.json).toEqual({
      ok: false,
      error_code: 'payment_failed',
      error_message: expect.any(String),
      order_id: canceled.id,
      order_no: canceled.order_no,
      status: 'canceled',
    });
    expect(sandbox.orders()).toEqual([expect.objectContaining({ status: 'canceled' })]);
    expect(sandbox.walletBalance()).toBe('1000000.00');
    const next = await createOrder();
    expect((next.json as SandboxCreatedOrder).ok).toBe(true);
  });

  it('delay: answers normally after the delay', async () => {
    sandbox.faults.set({ rules: [{ operation: 'ping', kind: 'delay', delayMs: 50, times: 1 }] });
    expect((await api('POST', '/ping')).status).toBe(200);
    expect(sandbox.faults.rules).toEqual([]);
  });

  it('hold_before: holds the request, doing nothing, until released; then does the work and answers', async () => {
    sandbox.faults.set({ rules: [{ operation: 'createOrder', kind: 'hold_before', times: 2 }] });
    const first = createOrder();
    const second = createOrder();
    const received = () => sandbox.stats.createsReceived;
    while (sandbox.heldRequests < 2) await new Promise<void>((resolve) => sandbox.events.once('request', () => resolve()));
    expect([received(), sandbox.stats.createsExecuted, sandbox.orders()]).toEqual([2, 0, []]);
    expect(sandbox.releaseHeld(1)).toBe(1);
    expect((await first).status).toBe(200);
    expect([sandbox.heldRequests, sandbox.orders()]).toEqual([1, [expect.objectContaining({ quantity: 1 })]]);
    expect(sandbox.releaseHeld()).toBe(1);
    expect((await second).status).toBe(200);
    expect([sandbox.heldRequests, sandbox.orders().length, sandbox.releaseHeld()]).toEqual([0, 2, 0]);
  });

  it('latencyMs is readable and applies to every request', async () => {
    sandbox.faults.set({ latencyMs: 30 });
    expect(sandbox.faults.latencyMs).toBe(30);
    expect((await api('POST', '/ping')).status).toBe(200);
    expect((await createOrder()).status).toBe(200);
    sandbox.faults.reset();
    expect(sandbox.faults.latencyMs).toBe(0);
  });

  it('refuseConnections: the client sees ECONNREFUSED until acceptConnections, on the same port', async () => {
    const url = sandbox.url;
    await sandbox.refuseConnections();
    expect(await errorCodeOf(api('POST', '/ping'))).toBe('ECONNREFUSED');
    await sandbox.acceptConnections();
    expect(sandbox.url).toBe(url);
    expect((await api('POST', '/ping')).status).toBe(200);
  });

  it('insertAtFrontWhilePaging: after that page is served, a product is inserted at the front and later pages shift', async () => {
    sandbox.faults.set({ insertAtFrontWhilePaging: { afterPage: 1 } });
    const page = async (n: number): Promise<SandboxProductPage> =>
      (await api('GET', '/products', { query: { page: n, page_size: 10 } })).json as SandboxProductPage;
    const p1 = await page(1);
    expect(p1.total).toBe(30);
    const p2 = await page(2);
    expect(p2.total).toBe(31);
    expect(p2.items[0].id).toBe(p1.items[9].id); // the last item of page 1 again
    const again = await page(1);
    expect(again.items[0].id).toBe(31);
    expect(sandbox.faults.insertAtFrontWhilePaging).toBeNull();
  });

  it('withdrawWhilePaging: after that page is served, its first product is withdrawn and later pages shift forward', async () => {
    sandbox.faults.set({ withdrawWhilePaging: { afterPage: 1 } });
    const page = async (n: number): Promise<SandboxProductPage> =>
      (await api('GET', '/products', { query: { page: n, page_size: 10 } })).json as SandboxProductPage;
    const p1 = await page(1);
    expect(p1.total).toBe(30);
    const p2 = await page(2);
    expect(p2.total).toBe(29);
    const again = await page(1);
    expect(again.items.map((p) => p.id)).toEqual([...p1.items.slice(1).map((p) => p.id), p2.items[0].id - 1]);
    expect(sandbox.catalog.getProduct(p1.items[0].id)?.is_active).toBe(false);
    expect(sandbox.faults.withdrawWhilePaging).toBeNull();
    expect((await page(2)).total).toBe(29); // once
  });

  it('updatedAfterFilter: exclusive to the millisecond (default), inclusive in whole seconds, or ignored', async () => {
    const at = (id: number) => Date.parse(sandbox.catalog.getProduct(id)!.updated_at!);
    sandbox.catalog.setPrice(sandbox.catalog.getProduct(3)!.skus[0].sku_code, '123.45');
    const t = at(3);
    const ids = async (after: number, filter?: 'exclusive' | 'inclusive_seconds' | 'ignored'): Promise<number[]> => {
      if (filter) sandbox.faults.set({ updatedAfterFilter: filter });
      const r = await api('GET', '/products', { query: { page: 1, page_size: 50, updated_after: new Date(after).toISOString() } });
      return (r.json as SandboxProductPage).items.map((p) => p.id);
    };
    const second = Math.floor(t / 1000) * 1000;
    expect(await ids(t - 1)).toEqual([3]);
    expect(await ids(t)).toEqual([]);
    expect(await ids(second, 'inclusive_seconds')).toEqual([3]);
    expect(await ids(second + 999, 'inclusive_seconds')).toEqual([3]);
    expect(await ids(second + 1000, 'inclusive_seconds')).toEqual([]);
    expect(await ids(second + 1000, 'ignored')).toHaveLength(30);
  });

  it('request events carry the query string', async () => {
    const seen: SandboxRequestEvent[] = [];
    const on = (e: SandboxRequestEvent): void => void seen.push(e);
    sandbox.events.on('request', on);
    try {
      await api('GET', '/products', { query: { page: 2, page_size: 5 } });
      await api('POST', '/ping');
    } finally {
      sandbox.events.off('request', on);
    }
    expect(seen.filter((e) => e.phase === 'received').map((e) => [e.operation, e.query])).toEqual([
      ['products', 'page=2&page_size=5'],
      ['ping', ''],
    ]);
  });

  it('counts every request (faulted ones included) and reports each outcome in request events', async () => {
    const seen: SandboxRequestEvent[] = [];
    const on = (e: SandboxRequestEvent): void => void seen.push(e);
    sandbox.events.on('request', on);
    try {
      sandbox.faults.set({
        rules: [
          { operation: 'createOrder', kind: 'reset_before', times: 1 },
          { operation: 'createOrder', kind: 'rate_limit', times: 1 },
        ],
      });
      await errorCodeOf(createOrder());
      await createOrder();
      await createOrder();
    } finally {
      sandbox.events.off('request', on);
    }
    expect(sandbox.stats.createsReceived).toBe(3);
    expect(sandbox.stats.createsExecuted).toBe(1);
    expect(seen.filter((e) => e.phase === 'received')).toHaveLength(3);
    expect(seen.filter((e) => e.phase === 'done').map((e) => [e.outcome, e.status])).toEqual([
      ['reset', undefined],
      ['answered', 429],
      ['answered', 200],
    ]);
  });

  it('stop() ends a held request without doing its work', async () => {
    const own = new SandboxServer({ catalog: { products: 5 } });
    await own.start();
    own.faults.set({ rules: [{ kind: 'hold_before' }] });
    const pending = errorCodeOf(signedRequest(own.credentials, 'POST', '/ping', { timeoutMs: 30_000 }));
    await new Promise<void>((resolve) => own.events.once('request', () => resolve()));
    expect(own.heldRequests).toBe(1);
    await own.stop();
    expect(await pending).toMatch(/ECONNRESET/);
    expect(own.heldRequests).toBe(0);
  });

  it('stop() closes a hung connection', async () => {
    const own = new SandboxServer({ catalog: { products: 5 } });
    await own.start();
    own.faults.set({ rules: [{ kind: 'hang_before' }] });
    const pending = errorCodeOf(signedRequest(own.credentials, 'POST', '/ping', { timeoutMs: 30_000 }));
    await new Promise<void>((resolve) => own.events.once('request', () => resolve()));
    await own.stop();
    expect(await pending).toMatch(/ECONNRESET/);
  });
});

describe('SandboxFaults settings', () => {
  it('validates what it is given and resets to no faults', () => {
    const f = new SandboxFaults();
    expect(() => f.set({ rules: [{ kind: 'nonsense' as 'error_before' }] })).toThrow(RangeError);
    expect(() => f.set({ rules: [{ kind: 'error_before', operation: 'everything' as 'ping' }] })).toThrow(RangeError);
    expect(() => f.set({ callbacks: 'sometimes' as 'drop' })).toThrow(RangeError);
    expect(() => f.set({ latencyMs: -1 })).toThrow(RangeError);
    f.set({ latencyMs: 5, callbacks: 'duplicate', duplicateTimes: 2, rules: [{ kind: 'rate_limit' }] });
    f.add({ kind: 'error_after', operation: 'getOrder', times: 1 });
    expect(f.snapshot()).toMatchObject({ latencyMs: 5, callbacks: 'duplicate', duplicateTimes: 2 });
    expect(f.rules.map((r) => r.kind)).toEqual(['rate_limit', 'error_after']);
    expect(f.take('getOrder')?.kind).toBe('rate_limit');
    f.reset();
    expect(f.snapshot()).toEqual({
      latencyMs: 0,
      rules: [],
      callbacks: 'normal',
      duplicateTimes: 5,
      delayMs: 500,
      insertAtFrontWhilePaging: null,
      withdrawWhilePaging: null,
      updatedAfterFilter: 'exclusive',
    });
    expect(() => f.set({ updatedAfterFilter: 'sometimes' as 'ignored' })).toThrow(RangeError);
    f.set({ updatedAfterFilter: 'ignored', withdrawWhilePaging: { afterPage: 0 } });
    expect(f.snapshot()).toMatchObject({ updatedAfterFilter: 'ignored', withdrawWhilePaging: { afterPage: 1 } });
    f.reset();
    expect(f.snapshot()).toMatchObject({ updatedAfterFilter: 'exclusive', withdrawWhilePaging: null });
  });
});
