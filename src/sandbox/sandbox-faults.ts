/**
 * Switchable faults of the sandbox upstream. Tests call `sandbox.faults.set({...})`, read the current
 * values back as plain properties, and `reset()` between tests.
 *
 * Rule kinds (each scoped to an operation or '*', optionally to the requests whose path names one id
 * (`pathId`: the product of GET /products/:id, the order of GET /orders/:id and POST
 * /orders/:id/cancel), optionally for `times` requests, then expired):
 * - `error_before`  answer `status` (default 503) without doing the work
 * - `error_after`   do the work, then answer `status` (default 503)
 * - `hang_before`   never answer, do nothing (socket kept open until stop)
 * - `hang_after`    do the work, then never answer (socket kept open until stop)
 * - `reset_before`  destroy the socket (TCP RST) without doing the work: the client sees ECONNRESET
 * - `reset_after`   do the work, then destroy the socket
 * - `rate_limit`    429 with `Retry-After: retryAfterS` (default 1) without doing the work
 * - `garbage_after` do the work, then answer 200 with an unparsable body (`body` to choose it)
 * - `payment_failed` createOrder only: the order is recorded as `canceled` (nothing charged) and the
 *                   answer is HTTP 200 `{ok:false, error_code:'payment_failed', error_message, order_id,
 *                   order_no, status:'canceled'}`, as Dujiao-Next names the order it canceled
 * - `coded_error`   answer `status` (default 400) with `errorCode` (default 'bad_request') without work
 * - `delay`         wait `delayMs` (default 1000) before the work, then answer normally
 * - `hold_before`   hold the request, doing nothing, until released (`SandboxServer.releaseHeld()`,
 *                   POST /__sandbox/held/release), then do the work and answer normally: a request
 *                   kept in flight for exactly as long as a test needs (`heldRequests` counts them)
 *
 * Listing behaviours (GET /products), besides the rules:
 * - `updatedAfterFilter`: how `updated_after` is applied: `exclusive` (the default: products updated
 *   strictly after it, to the millisecond), `inclusive_seconds` (updated at or after it, compared in
 *   whole seconds, as an upstream that keeps whole-second timestamps and filters with `>=`), `ignored`
 *   (the whole listing, as an upstream that does not know the parameter).
 * - `insertAtFrontWhilePaging` / `withdrawWhilePaging`: once that page has been served, a product is
 *   inserted at the front of the listing / the first product of that page is withdrawn (delisted), once:
 *   the later products of the listing move one place back / forward under a client paging through it.
 */
import { errorJson, type Answer } from './sandbox-http.js';
import { SANDBOX_OPERATIONS, type SandboxOperation } from './sandbox.types.js';

export type FaultOperation = SandboxOperation | '*';

export const FAULT_KINDS = [
  'error_before',
  'error_after',
  'hang_before',
  'hang_after',
  'reset_before',
  'reset_after',
  'rate_limit',
  'garbage_after',
  'payment_failed',
  'coded_error',
  'delay',
  'hold_before',
] as const;
export type FaultKind = (typeof FAULT_KINDS)[number];

export interface FaultRule {
  kind: FaultKind;
  /** Default '*'. */
  operation?: FaultOperation;
  /**
   * Only the requests whose path names this id, as written in the path (an order's `order_id`, a
   * product's `id`): a test aims a fault at one order while other requests of the operation (a
   * background poller's) pass. Requests without an id in their path never match. Default: any.
   */
  pathId?: string;
  /** Applies to this many matching requests, then expires. Default: until reset. */
  times?: number;
  /** HTTP status for error_before / error_after (default 503) and coded_error (default 400). */
  status?: number;
  /** rate_limit: the Retry-After header, seconds. Default 1. */
  retryAfterS?: number;
  /** coded_error / error_*: the error_code of the envelope. */
  errorCode?: string;
  errorMessage?: string;
  /** garbage_after / error_*: the raw body to answer instead of the default. */
  body?: string;
  /** delay: how long. Default 1000. */
  delayMs?: number;
}

export type UpdatedAfterFilter = 'exclusive' | 'inclusive_seconds' | 'ignored';
export const UPDATED_AFTER_FILTERS: readonly UpdatedAfterFilter[] = ['exclusive', 'inclusive_seconds', 'ignored'];

export type CallbackFaultMode = 'normal' | 'drop' | 'duplicate' | 'reorder' | 'delay' | 'bad_signature';
export const CALLBACK_FAULT_MODES: readonly CallbackFaultMode[] = ['normal', 'drop', 'duplicate', 'reorder', 'delay', 'bad_signature'];

export interface FaultSettings {
  /** Added to every API request (for createOrder: between the dedup check and the insert). */
  latencyMs: number;
  /** Replaces the current rules when given to set(). */
  rules: FaultRule[];
  callbacks: CallbackFaultMode;
  /** `duplicate`: how many copies of each callback. Default 5. */
  duplicateTimes: number;
  /** `delay`: how long each callback is held before its first try. Default 500. */
  delayMs: number;
  /** After this page of GET /products has been served, a product is inserted at the front (once). */
  insertAtFrontWhilePaging: { afterPage: number } | null;
  /** After this page of GET /products has been served, the first product on it is withdrawn (once). */
  withdrawWhilePaging: { afterPage: number } | null;
  /** How GET /products applies `updated_after` (see the header). Default `exclusive`. */
  updatedAfterFilter: UpdatedAfterFilter;
}

const OPERATIONS: readonly FaultOperation[] = [...SANDBOX_OPERATIONS, '*'];

function defaults(): FaultSettings {
  return {
    latencyMs: 0,
    rules: [],
    callbacks: 'normal',
    duplicateTimes: 5,
    delayMs: 500,
    insertAtFrontWhilePaging: null,
    withdrawWhilePaging: null,
    updatedAfterFilter: 'exclusive',
  };
}

function nonNegativeInt(name: string, v: unknown): number {
  if (typeof v !== 'number' || !Number.isInteger(v) || v < 0) throw new RangeError(`${name} must be a non-negative integer`);
  return v;
}

/** Checks one rule (it may come from JSON over the control API). */
export function validateFaultRule(input: unknown): FaultRule {
  if (typeof input !== 'object' || input === null || Array.isArray(input)) throw new RangeError('a fault rule must be an object');
  const r = input as Record<string, unknown>;
  if (typeof r.kind !== 'string' || !(FAULT_KINDS as readonly string[]).includes(r.kind)) {
    throw new RangeError(`fault kind must be one of ${FAULT_KINDS.join(', ')}`);
  }
  const rule: FaultRule = { kind: r.kind as FaultKind, operation: '*' };
  if (r.operation !== undefined) {
    if (typeof r.operation !== 'string' || !(OPERATIONS as readonly string[]).includes(r.operation)) {
      throw new RangeError(`fault operation must be one of ${OPERATIONS.join(', ')}`);
    }
    rule.operation = r.operation as FaultOperation;
  }
  if (r.pathId !== undefined) {
    const id = typeof r.pathId === 'number' && Number.isInteger(r.pathId) && r.pathId > 0 ? String(r.pathId) : r.pathId;
    if (typeof id !== 'string' || id === '' || id.includes('/'))
      throw new RangeError('pathId must be a positive integer or a non-empty string without "/"');
    rule.pathId = id;
  }
  if (r.times !== undefined) {
    rule.times = nonNegativeInt('times', r.times);
    if (rule.times === 0) throw new RangeError('times must be at least 1');
  }
  if (r.status !== undefined) {
    const s = nonNegativeInt('status', r.status);
    if (s < 100 || s > 599) throw new RangeError('status must be an HTTP status');
    rule.status = s;
  }
  if (r.retryAfterS !== undefined) rule.retryAfterS = nonNegativeInt('retryAfterS', r.retryAfterS);
  if (r.delayMs !== undefined) rule.delayMs = nonNegativeInt('delayMs', r.delayMs);
  for (const key of ['errorCode', 'errorMessage', 'body'] as const) {
    const v = r[key];
    if (v !== undefined) {
      if (typeof v !== 'string') throw new RangeError(`${key} must be a string`);
      rule[key] = v;
    }
  }
  return rule;
}

export class SandboxFaults implements FaultSettings {
  latencyMs = 0;
  rules: FaultRule[] = [];
  callbacks: CallbackFaultMode = 'normal';
  duplicateTimes = 5;
  delayMs = 500;
  insertAtFrontWhilePaging: { afterPage: number } | null = null;
  withdrawWhilePaging: { afterPage: number } | null = null;
  updatedAfterFilter: UpdatedAfterFilter = 'exclusive';

  /** Changes the given settings (validated); `rules`, when given, replace the current ones. */
  set(partial: Partial<FaultSettings>): void {
    const next = this.snapshot();
    if (partial.latencyMs !== undefined) next.latencyMs = nonNegativeInt('latencyMs', partial.latencyMs);
    if (partial.rules !== undefined) {
      if (!Array.isArray(partial.rules)) throw new RangeError('rules must be an array');
      next.rules = partial.rules.map(validateFaultRule);
    }
    if (partial.callbacks !== undefined) {
      if (!CALLBACK_FAULT_MODES.includes(partial.callbacks)) {
        throw new RangeError(`callbacks must be one of ${CALLBACK_FAULT_MODES.join(', ')}`);
      }
      next.callbacks = partial.callbacks;
    }
    if (partial.duplicateTimes !== undefined) next.duplicateTimes = nonNegativeInt('duplicateTimes', partial.duplicateTimes);
    if (partial.delayMs !== undefined) next.delayMs = nonNegativeInt('delayMs', partial.delayMs);
    if (partial.insertAtFrontWhilePaging !== undefined) {
      const v = partial.insertAtFrontWhilePaging;
      next.insertAtFrontWhilePaging =
        v === null ? null : { afterPage: Math.max(1, nonNegativeInt('insertAtFrontWhilePaging.afterPage', v.afterPage)) };
    }
    if (partial.withdrawWhilePaging !== undefined) {
      const v = partial.withdrawWhilePaging;
      next.withdrawWhilePaging =
        v === null ? null : { afterPage: Math.max(1, nonNegativeInt('withdrawWhilePaging.afterPage', v.afterPage)) };
    }
    if (partial.updatedAfterFilter !== undefined) {
      if (!UPDATED_AFTER_FILTERS.includes(partial.updatedAfterFilter)) {
        throw new RangeError(`updatedAfterFilter must be one of ${UPDATED_AFTER_FILTERS.join(', ')}`);
      }
      next.updatedAfterFilter = partial.updatedAfterFilter;
    }
    Object.assign(this, next);
  }

  /** Appends one rule. */
  add(rule: FaultRule): void {
    this.rules = [...this.rules, validateFaultRule(rule)];
  }

  /** Back to no faults at all. */
  reset(): void {
    Object.assign(this, defaults());
  }

  /** A copy of the current settings (rules with their remaining `times`). */
  snapshot(): FaultSettings {
    return {
      latencyMs: this.latencyMs,
      rules: this.rules.map((r) => ({ ...r })),
      callbacks: this.callbacks,
      duplicateTimes: this.duplicateTimes,
      delayMs: this.delayMs,
      insertAtFrontWhilePaging: this.insertAtFrontWhilePaging ? { ...this.insertAtFrontWhilePaging } : null,
      withdrawWhilePaging: this.withdrawWhilePaging ? { ...this.withdrawWhilePaging } : null,
      updatedAfterFilter: this.updatedAfterFilter,
    };
  }

  /**
   * The first rule that applies to a request of this operation (and of this id in its path, null for
   * none), consumed (its `times` counted down, removed at zero). `payment_failed` applies to
   * createOrder only.
   */
  take(operation: SandboxOperation, pathId: string | null = null): FaultRule | undefined {
    const index = this.rules.findIndex(
      (r) =>
        (r.operation === undefined || r.operation === '*' || r.operation === operation) &&
        (r.pathId === undefined || r.pathId === pathId) &&
        (r.kind !== 'payment_failed' || operation === 'createOrder'),
    );
    if (index < 0) return undefined;
    const rule = this.rules[index];
    if (rule.times !== undefined) {
      const left = rule.times - 1;
      this.rules =
        left > 0 ? this.rules.map((r, i) => (i === index ? { ...r, times: left } : r)) : this.rules.filter((_, i) => i !== index);
    }
    return rule;
  }

  /** The one-shot insert-at-front fault, consumed when `page` is the page it waits for. */
  takeInsertAtFront(page: number): boolean {
    if (this.insertAtFrontWhilePaging?.afterPage !== page) return false;
    this.insertAtFrontWhilePaging = null;
    return true;
  }

  /** The one-shot withdraw fault, consumed when `page` is the page it waits for. */
  takeWithdraw(page: number): boolean {
    if (this.withdrawWhilePaging?.afterPage !== page) return false;
    this.withdrawWhilePaging = null;
    return true;
  }
}

/** The answer of a rule that answers in place of the work (or after it: `error_after`). */
export function faultAnswer(rule: FaultRule): Answer {
  if (rule.kind === 'rate_limit') {
    return {
      status: 429,
      body: rule.body ?? errorJson(rule.errorCode ?? 'rate_limited', rule.errorMessage ?? 'too many requests'),
      headers: { 'retry-after': String(rule.retryAfterS ?? 1) },
    };
  }
  if (rule.kind === 'coded_error') {
    return {
      status: rule.status ?? 400,
      body: rule.body ?? errorJson(rule.errorCode ?? 'bad_request', rule.errorMessage ?? 'refused by a sandbox fault'),
    };
  }
  const status = rule.status ?? 503;
  const code =
    rule.errorCode ??
    (status === 503 ? 'service_unavailable' : status === 502 ? 'bad_gateway' : status === 504 ? 'gateway_timeout' : 'internal_error');
  return { status, body: rule.body ?? errorJson(code, rule.errorMessage ?? 'sandbox fault') };
}
