/**
 * The sandbox's place for Dujiao-Next's limiter (sandbox-rate-limit.ts) on the API's requests: the rule
 * in force (or none), the admission of each request of a known route before its authentication and
 * any work (Dujiao-Next runs the limiter as the first middleware of the upstream API's routes), the 429
 * answer of a refused one, and the log of every request that reached this place, admitted or not.
 */
import { randomUUID } from 'node:crypto';
import type http from 'node:http';
import { performance } from 'node:perf_hooks';
import { signatureHeaderNames } from '../signing/signing.js';
import { headerValue } from './sandbox-auth.js';
import type { Answer } from './sandbox-http.js';
import { rateLimitedBody, RateLimiter, validRateLimit, type RateLimitKeyState } from './sandbox-rate-limit.js';
import type { SandboxOperation, SandboxRateLimit, SandboxRateLimitEntry, SandboxStats } from './sandbox.types.js';

/** Entries kept in the log (the oldest half is dropped past it). */
const LOG_MAX = 200_000;

export class SandboxLimiterGate {
  private limiter: RateLimiter | null = null;
  private readonly entries: SandboxRateLimitEntry[] = [];

  constructor(
    private readonly initial: SandboxRateLimit | null,
    private readonly headerPrefix: string,
    private readonly stats: SandboxStats,
  ) {
    this.reset();
  }

  /** Back to the sandbox's configured rule, its counters and log empty. */
  reset(): void {
    this.limiter = this.initial ? new RateLimiter(this.initial) : null;
    this.entries.length = 0;
  }

  /** The rule now (null: off). */
  get rule(): SandboxRateLimit | null {
    return this.limiter ? { ...this.limiter.rule } : null;
  }

  /** Switches the limiter on with a rule (its counters start empty) or off (null). */
  set(rule: SandboxRateLimit | null): void {
    this.limiter = rule ? new RateLimiter(validRateLimit(rule)) : null;
  }

  /** The live counters (`expiresAt` on the performance.now() clock); [] when off. */
  state(): RateLimitKeyState[] {
    return this.limiter ? this.limiter.state(performance.now()) : [];
  }

  /**
   * Every API request of a known route that reached the limiter's place (after the faults that answer
   * before it), admitted or not, oldest first; with the limiter off every one is admitted. The newest
   * LOG_MAX are kept.
   */
  get log(): readonly SandboxRateLimitEntry[] {
    return this.entries;
  }

  /** performance.now() of every admitted request in the log, oldest first. */
  admittedTimes(): number[] {
    return this.entries.filter((e) => e.admitted).map((e) => e.at);
  }

  /** Null when `req` is admitted (keyed by its API key, else its address), else the 429 answer. */
  admit(req: http.IncomingMessage, operation: SandboxOperation): Answer | null {
    const headerKey = headerValue(req, signatureHeaderNames(this.headerPrefix).apiKey)?.trim();
    const key = headerKey || (req.socket.remoteAddress ?? 'unknown');
    const at = performance.now();
    const verdict = this.limiter?.check(key, at);
    const admitted = verdict?.admitted ?? true;
    if (this.entries.length >= LOG_MAX) this.entries.splice(0, LOG_MAX / 2);
    this.entries.push({ at, key, operation, admitted });
    if (!verdict || admitted) return null;
    this.stats.rateLimited[operation]++;
    if (verdict.blockStarted) this.stats.rateLimitBlocks++;
    return { status: 429, body: rateLimitedBody(verdict.waitSeconds, headerValue(req, 'accept-language'), randomUUID()) };
  }
}
