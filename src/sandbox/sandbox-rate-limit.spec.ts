/**
 * The sandbox's model of Dujiao-Next's limiter, on a given clock.
 */
import { parseRateLimit, RateLimiter, validRateLimit } from './sandbox-rate-limit.js';

describe('RateLimiter (Dujiao-Next rule)', () => {
  const rule = { requests: 3, windowMs: 1000, blockMs: 500 };

  it('admits N requests in the window that starts at the first; the N+1st is refused and starts the block', () => {
    const l = new RateLimiter(rule);
    const verdicts = [0, 100, 200, 300].map((t) => l.check('k', t));
    expect(verdicts.map((v) => v.admitted)).toEqual([true, true, true, false]);
    expect(verdicts.map((v) => v.blockStarted)).toEqual([false, false, false, true]);
    expect(verdicts[3]).toMatchObject({ count: 4, waitSeconds: 1 });
  });

  it('the block runs blockMs from the refused request, even past the window, and refused requests do not extend it', () => {
    const l = new RateLimiter({ requests: 2, windowMs: 1000, blockMs: 3000 });
    l.check('k', 0);
    l.check('k', 100);
    expect(l.check('k', 900)).toMatchObject({ admitted: false, blockStarted: true, waitSeconds: 3 });
    // refused all the way to 900 + 3000, though the window would have ended at 1000
    for (const t of [1000, 2000, 3899]) expect(l.check('k', t)).toMatchObject({ admitted: false, blockStarted: false });
    expect(l.check('k', 3900)).toMatchObject({ admitted: true, count: 1 });
  });

  it("a block shorter than the rest of the window ends the key's counter early", () => {
    const l = new RateLimiter({ requests: 1, windowMs: 10_000, blockMs: 500 });
    expect(l.check('k', 0).admitted).toBe(true);
    expect(l.check('k', 100)).toMatchObject({ admitted: false, blockStarted: true });
    expect(l.check('k', 599).admitted).toBe(false);
    expect(l.check('k', 600)).toMatchObject({ admitted: true, count: 1 });
  });

  it('without a block the refusals last until the window ends', () => {
    const l = new RateLimiter({ requests: 1, windowMs: 1000, blockMs: 0 });
    l.check('k', 0);
    expect(l.check('k', 10)).toMatchObject({ admitted: false, blockStarted: true });
    expect(l.check('k', 999).admitted).toBe(false);
    expect(l.check('k', 1000).admitted).toBe(true);
  });

  it('a fixed window: a new one starts at the first request after the expiry, so two windows can meet', () => {
    const l = new RateLimiter(rule);
    const admitted = [0, 990, 995, 1000, 1001, 1002].filter((t) => l.check('k', t).admitted);
    // 3 at the end of the first window and 3 at the start of the next, within 12 ms
    expect(admitted).toEqual([0, 990, 995, 1000, 1001, 1002]);
    expect(l.check('k', 1003).admitted).toBe(false);
  });

  it('keeps one counter per key', () => {
    const l = new RateLimiter({ requests: 1, windowMs: 1000, blockMs: 1000 });
    expect(l.check('a', 0).admitted).toBe(true);
    expect(l.check('a', 1).admitted).toBe(false);
    expect(l.check('b', 2).admitted).toBe(true);
    expect(l.state(3)).toEqual([
      { key: 'a', count: 2, expiresAt: 1001, limited: true },
      { key: 'b', count: 1, expiresAt: 1002, limited: false },
    ]);
    expect(l.state(1001).map((s) => s.key)).toEqual(['b']);
    l.clear();
    expect(l.state(3)).toEqual([]);
  });

  it('says the whole seconds left (rounded, as Redis TTL); under half a second left it says the window', () => {
    const l = new RateLimiter({ requests: 1, windowMs: 60_000, blockMs: 30_000 });
    l.check('k', 0);
    expect(l.check('k', 1).waitSeconds).toBe(30);
    expect(l.check('k', 29_000).waitSeconds).toBe(1);
    // TTL 0: the server falls back to WindowSeconds
    expect(l.check('k', 30_000).waitSeconds).toBe(60);
  });
});

describe('rate limit settings', () => {
  it('parses off and <requests>/<window> in ms, s or m', () => {
    expect(parseRateLimit('off', 30_000)).toBeNull();
    expect(parseRateLimit('60/60s', 30_000)).toEqual({ requests: 60, windowMs: 60_000, blockMs: 30_000 });
    expect(parseRateLimit('60/1m', 1)).toEqual({ requests: 60, windowMs: 60_000, blockMs: 1 });
    expect(parseRateLimit('5/500ms', 300)).toEqual({ requests: 5, windowMs: 500, blockMs: 300 });
    for (const bad of ['', '60', '60/60', '0/1s', '60/0s', 'x/1s', '60/1h']) expect(() => parseRateLimit(bad, 1)).toThrow(RangeError);
  });

  it('refuses a rule out of range', () => {
    expect(() => validRateLimit({ requests: 0, windowMs: 1, blockMs: 0 })).toThrow(/requests/);
    expect(() => validRateLimit({ requests: 1, windowMs: 0, blockMs: 0 })).toThrow(/windowMs/);
    expect(() => validRateLimit({ requests: 1, windowMs: 1, blockMs: -1 })).toThrow(/blockMs/);
    expect(() => validRateLimit({ requests: 1.5, windowMs: 1, blockMs: 0 })).toThrow(/requests/);
  });
});
