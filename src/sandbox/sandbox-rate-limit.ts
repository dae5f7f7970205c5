/**
 * Dujiao-Next's limiter of its upstream API, modelled (internal/app/httpserver/router.go
 * `upstreamAPIRule`: 60 requests per 60 s, block 30 s; middleware/rate_limit.go), as a pure class:
 *
 * - one counter per key (the server keys by the API key header, or the client IP without one);
 * - a fixed window that starts at the key's first request: the first request sets the counter to 1
 *   and its expiry to `windowMs` later; every request after it adds 1, admitted or not;
 * - the request that takes the counter to `requests + 1` is refused and moves the expiry to
 *   `blockMs` after itself (the block; with `blockMs` 0 the window's own expiry stays); every request
 *   until the expiry is refused and does not move it;
 * - at the expiry the counter is gone: the next request starts a new window.
 *
 * So at most `requests` requests are admitted per window, but two windows can meet: up to
 * 2 × `requests` admitted within `windowMs` across a window's end. The refusal says how many whole
 * seconds are left, rounded as Redis's TTL rounds them; when that is 0 the server says the window's
 * length instead.
 */

export interface RateLimitRule {
  /** Requests admitted per window (≥ 1). */
  requests: number;
  /** The window's length from the key's first request (ms, ≥ 1). */
  windowMs: number;
  /** The block that the first refused request starts (ms, ≥ 0). */
  blockMs: number;
}

export interface RateLimitVerdict {
  admitted: boolean;
  /** This request is the one that went over the limit (it starts the block). */
  blockStarted: boolean;
  /** The counter after this request. */
  count: number;
  /** Whole seconds until the counter expires (the window's seconds when that rounds to 0), as the refusal says. */
  waitSeconds: number;
}

export interface RateLimitKeyState {
  key: string;
  count: number;
  /** When the counter expires (the `now` clock's ms). */
  expiresAt: number;
  /** Over the limit: every request until `expiresAt` is refused. */
  limited: boolean;
}

interface Entry {
  count: number;
  expiresAt: number;
}

export function validRateLimit(rule: RateLimitRule): RateLimitRule {
  const int = (v: unknown, min: number, name: string): number => {
    if (typeof v !== 'number' || !Number.isSafeInteger(v) || v < min)
      throw new RangeError(`rate limit ${name} must be an integer >= ${min}`);
    return v;
  };
  return {
    requests: int(rule.requests, 1, 'requests'),
    windowMs: int(rule.windowMs, 1, 'windowMs'),
    blockMs: int(rule.blockMs, 0, 'blockMs'),
  };
}

/**
 * `off`, or `<requests>/<window>` with the window in `ms`, `s` or `m` (`60/60s`, `60/1m`, `5/500ms`),
 * with the block given apart (ms). Null for `off`.
 */
export function parseRateLimit(text: string, blockMs: number): RateLimitRule | null {
  const t = text.trim().toLowerCase();
  if (t === 'off') return null;
  const m = /^(\d+)\/(\d+)(ms|s|m)$/.exec(t);
  if (!m) throw new RangeError(`a rate limit is 'off' or <requests>/<window> with the window in ms, s or m (60/60s), got '${text}'`);
  const unit = m[3] === 'ms' ? 1 : m[3] === 's' ? 1000 : 60_000;
  return validRateLimit({ requests: Number(m[1]), windowMs: Number(m[2]) * unit, blockMs });
}

export class RateLimiter {
  private readonly entries = new Map<string, Entry>();

  constructor(readonly rule: Readonly<RateLimitRule>) {}

  /** Counts a request of `key` at `now` (ms, any monotonic clock) and says whether it is admitted. */
  check(key: string, now: number): RateLimitVerdict {
    let entry = this.live(key, now);
    if (!entry) {
      entry = { count: 0, expiresAt: now + this.rule.windowMs };
      this.entries.set(key, entry);
    }
    entry.count++;
    const blockStarted = entry.count === this.rule.requests + 1;
    if (blockStarted && this.rule.blockMs > 0) entry.expiresAt = now + this.rule.blockMs;
    const admitted = entry.count <= this.rule.requests;
    const left = Math.round((entry.expiresAt - now) / 1000);
    return {
      admitted,
      blockStarted,
      count: entry.count,
      waitSeconds: left >= 1 ? left : Math.max(1, Math.round(this.rule.windowMs / 1000)),
    };
  }

  /** The live counters (expired ones are dropped). */
  state(now: number): RateLimitKeyState[] {
    const out: RateLimitKeyState[] = [];
    for (const key of [...this.entries.keys()]) {
      const e = this.live(key, now);
      if (e) out.push({ key, count: e.count, expiresAt: e.expiresAt, limited: e.count > this.rule.requests });
    }
    return out;
  }

  clear(): void {
    this.entries.clear();
  }

  private live(key: string, now: number): Entry | undefined {
    const e = this.entries.get(key);
    if (e && now >= e.expiresAt) {
      this.entries.delete(key);
      return undefined;
    }
    return e;
  }
}

/**
 * The refusal, as Dujiao-Next writes it (response.ErrorWithHTTPStatus): HTTP 429 with its generic
 * body `{status_code, msg, data:{request_id}}` (not the upstream API's `{ok, error_code}` envelope)
 * and no `Retry-After`. `msg` is the i18n text of `error.rate_limited` with the seconds left: English
 * when the request's Accept-Language starts with `en`, else the default zh-CN text.
 */
export function rateLimitedBody(waitSeconds: number, acceptLanguage: string | undefined, requestId: string): string {
  const english = /^\s*en\b/i.test(acceptLanguage ?? '');
  const msg = english ? `Too many requests, retry in ${waitSeconds} seconds` : `请求过于频繁，请在 ${waitSeconds} 秒后重试`;
  return JSON.stringify({ status_code: 429, msg, data: { request_id: requestId } });
}
