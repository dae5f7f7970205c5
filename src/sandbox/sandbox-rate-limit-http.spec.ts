/**
 * Dujiao-Next's limiter in the sandbox over real HTTP (option `rateLimit`, the control API, and the
 * standalone defaults of `relay sandbox`). Scaled down: 5 requests per 5 s window, block 300 ms.
 */
import { performance } from 'node:perf_hooks';
import { signedRequest, type RawResponse, type SignedRequestOptions } from './sandbox-request.js';
import { standaloneRateLimit } from './sandbox.main.js';
import { SandboxServer } from './sandbox.server.js';

const RULE = { requests: 5, windowMs: 5000, blockMs: 300 };

describe('sandbox rate limit (Dujiao-Next)', () => {
  let sandbox: SandboxServer;
  const api = (method: string, path: string, opts?: SignedRequestOptions): Promise<RawResponse> =>
    signedRequest(sandbox.credentials, method, path, opts);
  const ping = (opts?: SignedRequestOptions): Promise<RawResponse> => api('POST', '/ping', opts);

  /** Waits until the limiter's counter of `key` is gone (its block or window has passed), on its own clock. */
  async function waitUntilExpired(key: string): Promise<void> {
    const entry = sandbox.rateLimitState().find((k) => k.key === key);
    if (!entry) return;
    while (performance.now() < entry.expiresAt) await new Promise((r) => setTimeout(r, Math.max(1, entry.expiresAt - performance.now())));
  }

  beforeAll(async () => {
    sandbox = new SandboxServer({ profile: 'dujiao-next', catalog: { products: 5 }, rateLimit: RULE });
    await sandbox.start();
  });
  afterAll(() => sandbox.stop());
  beforeEach(() => sandbox.reset());

  it('is off unless asked for', () => {
    expect(new SandboxServer().rateLimit).toBeNull();
    expect(new SandboxServer({ profile: 'dujiao-next' }).rateLimit).toBeNull();
    expect(sandbox.rateLimit).toEqual(RULE);
  });

  it('admits N requests; the next is 429 with the generic body and no Retry-After; the block lasts blockMs', async () => {
    for (let i = 0; i < 5; i++) expect((await ping()).status).toBe(200);
    const refused = await ping();
    expect(refused.status).toBe(429);
    expect(refused.headers['retry-after']).toBeUndefined();
    // 300 ms left rounds to 0 s, and the server then names the window's seconds
    expect(refused.json).toEqual({ status_code: 429, msg: '请求过于频繁，请在 5 秒后重试', data: { request_id: expect.any(String) } });
    expect(refused.json).not.toHaveProperty('ok');
    // still blocked right after
    expect((await ping()).status).toBe(429);
    expect(sandbox.stats.rateLimitBlocks).toBe(1);
    expect(sandbox.stats.rateLimited.ping).toBe(2);

    await waitUntilExpired(sandbox.config.apiKey);
    expect((await ping()).status).toBe(200);
    const log = sandbox.rateLimitLog();
    expect(log.map((e) => e.admitted)).toEqual([true, true, true, true, true, false, false, true]);
    expect(new Set(log.map((e) => e.key))).toEqual(new Set([sandbox.config.apiKey]));
    expect(sandbox.admittedTimes()).toHaveLength(6);
  });

  it('says the message in English for an English Accept-Language', async () => {
    sandbox.setRateLimit({ requests: 1, windowMs: 5000, blockMs: 2000 });
    await ping();
    const refused = await ping({ headers: { 'Accept-Language': 'en-US,en;q=0.9' } });
    expect(refused.json).toMatchObject({ status_code: 429, msg: 'Too many requests, retry in 2 seconds' });
  });

  it('runs before the authentication: a blocked key gets 429 whatever its signature; another key is not affected', async () => {
    for (let i = 0; i < 6; i++) await ping();
    expect((await ping({ signature: 'bad' })).status).toBe(429);
    // another key: counted on its own (and refused by the authentication, not the limiter)
    const other = await ping({ apiKey: 'another-key' });
    expect(other.status).toBe(403);
    expect(other.json).toMatchObject({ ok: false, error_code: 'invalid_api_key' });
    // no key at all: counted under the client's IP
    const anonymous = await ping({ headers: { 'Dujiao-Next-Api-Key': null } });
    expect(anonymous.status).toBe(401);
    expect(
      sandbox
        .rateLimitState()
        .map((k) => k.key)
        .sort(),
    ).toEqual(['127.0.0.1', 'another-key', sandbox.config.apiKey].sort());
  });

  it("a 429'd create is not processed: no order, nothing charged", async () => {
    const sku = sandbox.catalog.findSku({ fulfillmentType: 'auto', stockStatus: 'unlimited' })!.sku;
    const balance = sandbox.walletBalance();
    for (let i = 0; i < 5; i++) await ping();
    const refused = await api('POST', '/orders', { body: { sku_id: sku.id, quantity: 1, downstream_order_no: 'RL-1' } });
    expect(refused.status).toBe(429);
    expect(sandbox.orders()).toEqual([]);
    expect(sandbox.walletBalance()).toBe(balance);
    expect(sandbox.stats).toMatchObject({ createsReceived: 1, createsExecuted: 0 });
    expect(sandbox.stats.rateLimited.createOrder).toBe(1);

    await waitUntilExpired(sandbox.config.apiKey);
    const placed = await api('POST', '/orders', { body: { sku_id: sku.id, quantity: 1, downstream_order_no: 'RL-1' } });
    expect(placed.status).toBe(200);
    expect(sandbox.orders()).toHaveLength(1);
  });

  it('counts requests of unknown routes not at all, and faults that answer before it are not counted', async () => {
    sandbox.setRateLimit({ requests: 1, windowMs: 5000, blockMs: 1000 });
    expect((await api('GET', '/nowhere')).status).toBe(404);
    sandbox.faults.add({ operation: 'ping', kind: 'error_before', status: 503, times: 1 });
    expect((await ping()).status).toBe(503);
    expect((await ping()).status).toBe(200);
    expect((await ping()).status).toBe(429);
  });

  it('is set, shown and switched off through the control API, and reset() brings the option back', async () => {
    const control = async (method: string, path: string, body?: unknown) => {
      const res = await fetch(`${sandbox.url}/__sandbox${path}`, {
        method,
        headers: { 'content-type': 'application/json' },
        body: body === undefined ? undefined : JSON.stringify(body),
      });
      return { status: res.status, body: (await res.json()) as Record<string, unknown> };
    };
    expect((await control('GET', '/state')).body.rate_limit).toEqual({ requests: 5, window_ms: 5000, block_ms: 300 });
    const set = await control('POST', '/rate-limit', { requests: 1, window_ms: 2000, block_ms: 500 });
    expect(set).toMatchObject({ status: 200, body: { ok: true, rate_limit: { requests: 1, window_ms: 2000, block_ms: 500 } } });
    await ping();
    expect((await ping()).status).toBe(429);
    expect((await control('GET', '/rate-limit')).body.keys).toEqual([{ key: sandbox.config.apiKey, count: 2, limited: true }]);
    expect((await control('POST', '/rate-limit', { requests: 0, window_ms: 1 })).status).toBe(400);
    expect((await control('POST', '/rate-limit', { off: true })).body.rate_limit).toBeNull();
    expect((await ping()).status).toBe(200);
    expect((await control('GET', '/state')).body).toMatchObject({ rate_limit: null, stats: { rateLimitBlocks: 1 } });
    sandbox.reset();
    expect(sandbox.rateLimit).toEqual(RULE);
    expect(sandbox.stats.rateLimitBlocks).toBe(0);
    expect(sandbox.rateLimitLog()).toEqual([]);
  });
});

describe('relay sandbox: the limiter by profile and environment', () => {
  it("is Dujiao-Next's under dujiao-next and off under spec, unless SANDBOX_RATE_LIMIT says otherwise", () => {
    expect(standaloneRateLimit('dujiao-next', {})).toEqual({ requests: 60, windowMs: 60_000, blockMs: 30_000 });
    expect(standaloneRateLimit('spec', {})).toBeNull();
    expect(standaloneRateLimit('dujiao-next', { SANDBOX_RATE_LIMIT: 'off' })).toBeNull();
    expect(standaloneRateLimit('spec', { SANDBOX_RATE_LIMIT: '20/2s', SANDBOX_RATE_LIMIT_BLOCK_S: '1' })).toEqual({
      requests: 20,
      windowMs: 2000,
      blockMs: 1000,
    });
    expect(standaloneRateLimit('dujiao-next', { SANDBOX_RATE_LIMIT_BLOCK_S: '0.5' })).toEqual({
      requests: 60,
      windowMs: 60_000,
      blockMs: 500,
    });
    expect(() => standaloneRateLimit('spec', { SANDBOX_RATE_LIMIT: '60' })).toThrow(/SANDBOX_RATE_LIMIT/);
    expect(() => standaloneRateLimit('spec', { SANDBOX_RATE_LIMIT_BLOCK_S: '-1' })).toThrow(/SANDBOX_RATE_LIMIT_BLOCK_S/);
  });
});
