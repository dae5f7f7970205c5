/**
 * Reads the environment's variables one by one for the configuration (app-config.ts): each typed
 * reading gives the value or its default, and collects a message naming the variable for every value
 * refused, so that the start can report every variable at fault at once. Pure: no I/O, no process.env.
 */
import type { RateLimitSetting } from './app-config.js';
import { redactUrl } from './redact-url.js';

export type Env = Record<string, string | undefined>;

const DECIMAL_RE = /^-?\d+(\.\d+)?$/;

export class Reader {
  readonly problems: string[] = [];
  constructor(private readonly env: Env) {}

  raw(name: string): string | undefined {
    const v = this.env[name];
    if (v === undefined) return undefined;
    const t = v.trim();
    return t === '' ? undefined : t;
  }

  fail(name: string, message: string): void {
    this.problems.push(`${name}: ${message}`);
  }

  int(name: string, def: number, min: number, max: number): number {
    const v = this.raw(name);
    if (v === undefined) return def;
    if (!/^-?\d+$/.test(v)) {
      this.fail(name, `must be an integer, got "${v}"`);
      return def;
    }
    const n = Number(v);
    if (n < min || n > max) {
      this.fail(name, `must be between ${min} and ${max}, got ${n}`);
      return def;
    }
    return n;
  }

  bool(name: string, def: boolean): boolean {
    const v = this.raw(name)?.toLowerCase();
    if (v === undefined) return def;
    if (['true', '1', 'yes', 'on'].includes(v)) return true;
    if (['false', '0', 'no', 'off'].includes(v)) return false;
    this.fail(name, `must be true or false, got "${v}"`);
    return def;
  }

  oneOf<T extends string>(name: string, def: T, allowed: readonly T[]): T {
    const v = this.raw(name);
    if (v === undefined) return def;
    if (!(allowed as readonly string[]).includes(v)) {
      this.fail(name, `must be one of ${allowed.join(', ')}, got "${v}"`);
      return def;
    }
    return v as T;
  }

  /** A URL of one of `protocols`; a refused value is echoed without its credentials (redactUrl). */
  url(name: string, protocols: string[]): string | undefined {
    const v = this.raw(name);
    if (v === undefined) return undefined;
    try {
      const u = new URL(v);
      if (!protocols.includes(u.protocol)) {
        this.fail(name, `must be a ${protocols.join(' or ')} URL, got "${redactUrl(v)}"`);
        return undefined;
      }
      return v;
    } catch {
      this.fail(name, `is not a valid URL: "${redactUrl(v)}"`);
      return undefined;
    }
  }

  decimal(name: string, def: string | null, opts: { positive?: boolean; nonNegative?: boolean } = {}): string | null {
    const v = this.raw(name);
    if (v === undefined) return def;
    if (!DECIMAL_RE.test(v)) {
      this.fail(name, `must be a decimal number such as 1.50, got "${v}"`);
      return def;
    }
    const n = Number(v);
    if (opts.positive && !(n > 0)) this.fail(name, `must be greater than 0, got ${v}`);
    if (opts.nonNegative && n < 0) this.fail(name, `must not be negative, got ${v}`);
    return v;
  }

  /** A whole number of days from 1 to `max`; null when switched off with `0` or `off`. */
  daysOrOff(name: string, def: number, max: number): number | null {
    const v = this.raw(name);
    if (v === undefined) return def;
    if (v.toLowerCase() === 'off' || /^0+$/.test(v)) return null;
    if (!/^\d+$/.test(v) || Number(v) > max) {
      this.fail(name, `must be a whole number of days from 1 to ${max}, or 0 or off to disable it, got "${v}"`);
      return def;
    }
    return Number(v);
  }

  /** A decimal number greater than `min` and at most `max`; `what` says so in the message. */
  number(name: string, def: number, opts: { min: number; max: number; what: string }): number {
    const v = this.raw(name);
    if (v === undefined) return def;
    const n = /^\d+(\.\d+)?$/.test(v) ? Number(v) : Number.NaN;
    if (!(n > opts.min) || !(n <= opts.max)) {
      this.fail(name, `must be ${opts.what}, got "${v}"`);
      return def;
    }
    return n;
  }

  /** UPSTREAM_RATE_LIMIT: `<requests>/<window>` with the window in ms, s or m (`60/60s`, `60/1m`), or `off`. */
  rateLimit(name: string, def: RateLimitSetting | null): RateLimitSetting | null {
    const v = this.raw(name);
    if (v === undefined) return def;
    if (v.toLowerCase() === 'off') return null;
    const m = /^(\d+)\s*\/\s*(\d+)(ms|s|m)$/.exec(v);
    const units: Record<string, number> = { ms: 1, s: 1000, m: 60_000 };
    const requests = m ? Number(m[1]) : 0;
    const windowMs = m ? Number(m[2]) * (units[m[3]] ?? 1000) : 0;
    if (!m || requests < 1 || requests > 1_000_000 || windowMs < 1 || windowMs > 86_400_000) {
      this.fail(
        name,
        `must be <requests>/<window> with a window in ms, s or m (60/60s, 60/1m, 20/2s; from 1 request and 1 ms to ` +
          `1000000 requests and 1440m), or off, got "${v}"`,
      );
      return def;
    }
    return { requests, windowMs };
  }

  duration(name: string, defMs: number): number {
    const v = this.raw(name);
    if (v === undefined) return defMs;
    const m = /^(\d+)(ms|s|m|h|d)?$/.exec(v);
    if (!m) {
      this.fail(name, `must be a duration such as 90s, 30m, 6h or 1d, got "${v}"`);
      return defMs;
    }
    const units: Record<string, number> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 };
    const unit = units[m[2] ?? 's'] ?? 1000;
    const ms = Number(m[1]) * unit;
    if (ms <= 0) this.fail(name, 'must be greater than 0');
    return ms;
  }
}
