/**
 * The upstream request budget of this API key, shared by every replica on the database
 * (UPSTREAM_RATE_LIMIT; the rule in `request-budget.ts`, the ledger in `upstream-budget.repository.ts`).
 *
 * Every upstream request takes a token first; the `BudgetedUpstreamClient` (src/upstream) does it for
 * each call of the port, so most code never calls this service. Use it directly only for what the
 * port does not cover:
 *
 *   const ticket = await budget.take('sync', { signal, maxWaitMs });  // resolves when granted
 *   ticket.waitedMs;                                                   // how long it waited
 *   // rejects with BudgetWaitExceeded (retryable; nothing sent) once maxWaitMs passes first, or when
 *   // the budget already knows it cannot grant within maxWaitMs (e.g. the key is blocked for longer);
 *   // with BudgetWaitAborted (unknown, reason `aborted`) when the signal aborts;
 *   // with BudgetUnavailable (retryable) when the ledger's database fails.
 *   await budget.noteRateLimited(retryAfterMs ?? null);               // after an HTTP 429
 *   await budget.blockedUntil();                                       // for /health: Date | null
 *
 * - Waiters of this process are served in class order (create, deliver, price, poll, sync, reconcile),
 *   first come first served within a class, one ledger transaction at a time: the first waiter is
 *   asked for; when it must wait, the ledger names the earliest time it can be granted and the service
 *   sleeps until then (or until a waiter of a higher class arrives). No waiter behind it could be
 *   granted sooner: the window, the block and the pace bind every class alike, and the sync share
 *   binds only the lowest two.
 * - A waiting class above `sync` raises the key's demand flag (`demand_until`), so that the sync of
 *   every replica keeps to SYNC_BUDGET_SHARE while it waits.
 * - A 429 blocks the key on every replica for its `Retry-After`, or UPSTREAM_RATE_LIMIT_BLOCK_S.
 * - `off` (no UPSTREAM_RATE_LIMIT): `take` resolves at once and nothing touches the database. A 429
 *   still blocks the key, in this process only (`untilUnblocked`): the BudgetedUpstreamClient holds
 *   every call back until the block's end, and an order create answered 429 waits in the queue.
 */
import { createHash } from 'node:crypto';
import { performance } from 'node:perf_hooks';
import { Logger } from '@nestjs/common';
import type { Clock } from '../common/clock.js';
import type { RateLimitSetting } from '../config/app-config.js';
import type { Metrics } from '../ops/metrics.service.js';
import { BudgetUnavailable, BudgetWaitAborted, BudgetWaitExceeded } from './budget.errors.js';
import { keyCapacity, type KeyCapacity } from './key-capacity.js';
import { budgetRule, classRank, decideGrant, type BudgetClass, type BudgetDecision, type BudgetRule } from './request-budget.js';
import type { UpstreamBudgetRepository } from './upstream-budget.repository.js';

/** What one supplier's budget is made of (its settings, CONTRACT §3 and §10). */
export interface BudgetSettings {
  /** The supplier's name: the `supplier` label of the budget's metrics and its log lines. */
  supplier: string;
  /** The key's limit (UPSTREAM_RATE_LIMIT or the supplier's); null: off. */
  rateLimit: RateLimitSetting | null;
  /** A block after a 429 without `Retry-After`, in milliseconds. */
  blockMs: number;
  /** SYNC_BUDGET_SHARE */
  syncShare: number;
  /** RECONCILE_BUDGET_SHARE */
  reconcileShare: number;
  /** The key and base URL, hashed into the ledger's key (never stored as they are). */
  apiKey: string;
  baseUrl: string;
}

export interface TakeOptions {
  /** Aborting it ends the wait at once (BudgetWaitAborted); nothing is sent. */
  signal?: AbortSignal;
  /** The longest wait for a token; past it, BudgetWaitExceeded. Default: no limit. `0`: only a token free now. */
  maxWaitMs?: number;
  /** The upstream operation the token is for, named in the errors. Default `budget`. */
  operation?: string;
}

export interface BudgetTicket {
  cls: BudgetClass;
  /** How long the take waited for its token, in milliseconds. */
  waitedMs: number;
}

/** How long the service waits before it asks a failed ledger again, while nobody waits. */
const LEDGER_RETRY_MS = 1000;

interface Waiter {
  cls: BudgetClass;
  rank: number;
  seq: number;
  operation: string;
  startedAt: number;
  /** performance.now() deadline; undefined: none. */
  deadline: number | undefined;
  /** The deadline passed while this waiter's ask was in flight: settled once the ask answers. */
  expired: boolean;
  timer: NodeJS.Timeout | undefined;
  signal: AbortSignal | undefined;
  onAbort: (() => void) | undefined;
  resolve: (t: BudgetTicket) => void;
  reject: (e: Error) => void;
}

type Outcome = (BudgetDecision & { nowMs: number; blockedUntilMs: number | null; demandUntilMs: number | null }) | { ledgerError: unknown };

export class UpstreamBudgetService {
  private readonly logger: Logger;
  /** The rule held; null when the budget is off. */
  readonly rule: BudgetRule | null;
  private keyIdValue: string | undefined;
  /** In class order, then arrival order. */
  private readonly waiters: Waiter[] = [];
  private seq = 0;
  /** The pump in flight (one ledger transaction at a time), if any. */
  private pumping: Promise<void> | null = null;
  private again = false;
  private asking: Waiter | undefined;
  private timer: NodeJS.Timeout | undefined;
  private closed = false;
  /** The last successful upstream answer by operation (the injected clock). */
  private readonly lastSuccess = new Map<string, number>();
  /** Budget off: the end of this process's block after a 429 (Date.now() milliseconds), else null. */
  private localBlockUntilMs: number | null = null;
  /** Budget off: the waits for the local block's end, ended by close(). */
  private readonly blockWaits = new Set<() => void>();

  constructor(
    readonly settings: BudgetSettings,
    private readonly clock: Clock,
    private readonly repo: UpstreamBudgetRepository,
    private readonly metrics: Metrics,
  ) {
    const limit = settings.rateLimit;
    this.rule = limit ? budgetRule(limit, settings.syncShare, settings.reconcileShare) : null;
    this.logger = new Logger('upstream-budget');
  }

  /** The supplier whose key this budget is. */
  get supplier(): string {
    return this.settings.supplier;
  }

  /** Whether a budget is held (UPSTREAM_RATE_LIMIT is not `off`). */
  get enabled(): boolean {
    return this.rule !== null;
  }

  /**
   * The ledger's key: a hash of the API key and the base URL (never the key itself), so that two
   * services on one database with different keys or upstreams keep budgets apart.
   */
  get keyId(): string {
    this.keyIdValue ??= createHash('sha256').update(`${this.settings.baseUrl}\n${this.settings.apiKey}`).digest('hex').slice(0, 32);
    return this.keyIdValue;
  }

  /** Resolves when a token of `cls` is granted; see the file header for the rejections. */
  take(cls: BudgetClass, opts: TakeOptions = {}): Promise<BudgetTicket> {
    const operation = opts.operation ?? 'budget';
    if (this.rule === null) {
      // no budget: granted at once, unless a 429 blocked the key in this process
      const startedAt = performance.now();
      return this.untilUnblocked(cls, opts).then(() => {
        this.metrics.budgetGrants.inc({ class: cls, supplier: this.supplier });
        return { cls, waitedMs: performance.now() - startedAt };
      });
    }
    if (opts.signal?.aborted) return Promise.reject(new BudgetWaitAborted(operation));
    if (this.closed) return Promise.reject(new BudgetWaitExceeded(operation, cls, 0, null));
    return new Promise<BudgetTicket>((resolve, reject) => {
      const startedAt = performance.now();
      const maxWait = opts.maxWaitMs;
      const w: Waiter = {
        cls,
        rank: classRank(cls),
        seq: this.seq++,
        operation,
        startedAt,
        deadline: maxWait === undefined ? undefined : startedAt + Math.max(0, maxWait),
        expired: false,
        timer: undefined,
        signal: opts.signal,
        onAbort: undefined,
        resolve,
        reject,
      };
      if (w.deadline !== undefined) {
        // (a timer longer than 2^31 − 1 ms would fire at once)
        w.timer = setTimeout(() => this.onDeadline(w), Math.min(Math.max(0, maxWait ?? 0), 2_147_483_647));
      }
      if (opts.signal) {
        w.onAbort = () => this.settle(w, new BudgetWaitAborted(operation));
        opts.signal.addEventListener('abort', w.onAbort, { once: true });
      }
      let at = this.waiters.length;
      while (at > 0 && this.waiters[at - 1].rank > w.rank) at--;
      this.waiters.splice(at, 0, w);
      if (at === 0) this.kick();
    });
  }

  /**
   * Records an HTTP 429: the key is blocked on every replica for `retryAfterMs` (when the answer had a
   * positive `Retry-After`) or UPSTREAM_RATE_LIMIT_BLOCK_S. Returns the block's end (null when the
   * budget is off: nothing is recorded). Never throws: a ledger failure is logged.
   */
  async noteRateLimited(retryAfterMs: number | null, operation = 'unknown'): Promise<Date | null> {
    this.metrics.upstreamRateLimited.inc({ operation, supplier: this.supplier });
    const blockMs = retryAfterMs !== null && retryAfterMs > 0 ? retryAfterMs : this.settings.blockMs;
    if (this.rule === null) return this.blockLocally(blockMs, operation);
    try {
      const { blockedUntilMs, started } = await this.repo.block(this.keyId, blockMs);
      const until = new Date(blockedUntilMs);
      if (started) {
        this.metrics.upstreamBlocks.inc({ supplier: this.supplier });
        this.logger.warn({
          msg: `upstream answered 429 (rate limited) to ${operation}: every request of this key waits until ${until.toISOString()}`,
          operation,
          blocked_until: until.toISOString(),
        });
      }
      this.kick();
      return until;
    } catch (e) {
      this.logger.warn({ msg: `could not record the upstream's rate-limit block: ${(e as Error).message}`, operation });
      return null;
    }
  }

  /** Requests granted in the window ending now, and how many more it grants (N' less those); null when off. */
  async usage(): Promise<{ used: number; left: number } | null> {
    if (this.rule === null) return null;
    const used = await this.repo.grantsInWindow(this.keyId, this.rule.windowMs);
    return { used, left: Math.max(0, this.rule.limit - used) };
  }

  /**
   * What the key carries at the current mix (key-capacity.ts), from the grants of the window ending
   * now by class; null when the budget is off. `reconcileSteps`: scheduled reads per finished order.
   */
  async capacity(reconcileSteps: number | null): Promise<KeyCapacity | null> {
    if (this.rule === null) return null;
    return keyCapacity(this.rule, await this.repo.grantsInWindowByClass(this.keyId, this.rule.windowMs), reconcileSteps);
  }

  /**
   * The end of the key's block when it is blocked now (any replica's 429); with the budget off, the
   * block this process met (see `untilUnblocked`); null otherwise.
   */
  async blockedUntil(): Promise<Date | null> {
    if (this.rule === null) return this.localBlockUntil();
    return this.repo.blockedUntil(this.keyId);
  }

  /** Budget off: the end of this process's block, when it is blocked now. */
  localBlockUntil(): Date | null {
    if (this.localBlockUntilMs === null || this.localBlockUntilMs <= Date.now()) return null;
    return new Date(this.localBlockUntilMs);
  }

  /**
   * Budget off: resolves at once unless this process met a 429 whose block is not over, else at the
   * block's end. The upstream processed nothing of a request answered 429, and every request of the
   * key meets the same answer until the block ends, so nothing is sent meanwhile. Rejects as `take`
   * does: BudgetWaitExceeded at once when the block ends after `maxWaitMs` (or when closed),
   * BudgetWaitAborted when the signal aborts. (With the budget on, `take` covers the block.)
   */
  untilUnblocked(cls: BudgetClass, opts: TakeOptions = {}): Promise<void> {
    const until = this.localBlockUntilMs;
    const waitMs = until === null ? 0 : until - Date.now();
    if (waitMs <= 0) return Promise.resolve();
    const operation = opts.operation ?? 'budget';
    if (opts.signal?.aborted) return Promise.reject(new BudgetWaitAborted(operation));
    if (this.closed || (opts.maxWaitMs !== undefined && opts.maxWaitMs < waitMs)) {
      this.metrics.budgetWaitExceeded.inc({ class: cls, supplier: this.supplier });
      return Promise.reject(new BudgetWaitExceeded(operation, cls, 0, new Date(until as number)));
    }
    const deadline = opts.maxWaitMs === undefined ? undefined : Date.now() + opts.maxWaitMs;
    return new Promise<void>((resolve, reject) => {
      let timer: NodeJS.Timeout | undefined;
      const exceeded = (): BudgetWaitExceeded => new BudgetWaitExceeded(operation, cls, 0, new Date(this.localBlockUntilMs ?? Date.now()));
      const end = (error?: Error): void => {
        clearTimeout(timer);
        opts.signal?.removeEventListener('abort', onAbort);
        this.blockWaits.delete(onClose);
        if (error) reject(error);
        else resolve();
      };
      const onAbort = (): void => end(new BudgetWaitAborted(operation));
      const onClose = (): void => end(exceeded());
      // until the block's end as it stands when the timer fires (a later 429 may have extended it)
      const arm = (): void => {
        const blockEnd = this.localBlockUntilMs ?? 0;
        const now = Date.now();
        if (blockEnd <= now) return end();
        if (deadline !== undefined && blockEnd > deadline) {
          this.metrics.budgetWaitExceeded.inc({ class: cls, supplier: this.supplier });
          return end(exceeded());
        }
        timer = setTimeout(arm, Math.min(Math.ceil(blockEnd - now), 2_147_483_647));
      };
      opts.signal?.addEventListener('abort', onAbort, { once: true });
      this.blockWaits.add(onClose);
      arm();
    });
  }

  /** Budget off: a 429 blocks the key in this process for `blockMs` (or longer, when it is blocked longer already). */
  private blockLocally(blockMs: number, operation: string): Date {
    const now = Date.now();
    const before = this.localBlockUntilMs;
    const until = Math.max(before ?? 0, now + blockMs);
    this.localBlockUntilMs = until;
    if (before === null || before <= now) {
      this.metrics.upstreamBlocks.inc({ supplier: this.supplier });
      this.logger.warn({
        msg: `upstream answered 429 (rate limited) to ${operation}: this process sends nothing until ${new Date(until).toISOString()}`,
        operation,
        blocked_until: new Date(until).toISOString(),
      });
    }
    return new Date(until);
  }

  /** Called by the budgeted client after each successful upstream answer (the monitor skips its ping after one). */
  noteSuccess(operation: string): void {
    this.lastSuccess.set(operation, this.clock.nowMs());
  }

  /** When this process last had a successful upstream answer (the injected clock) of an operation not in `except`, if ever. */
  lastSuccessAt(except: readonly string[] = []): number | null {
    let last: number | null = null;
    for (const [operation, at] of this.lastSuccess) if (!except.includes(operation) && (last === null || at > last)) last = at;
    return last;
  }

  /** Waiters of this process by class, for reports. */
  waiting(): Partial<Record<BudgetClass, number>> {
    const out: Partial<Record<BudgetClass, number>> = {};
    for (const w of this.waiters) out[w.cls] = (out[w.cls] ?? 0) + 1;
    return out;
  }

  /**
   * Nest's last lifecycle hook: the budget keeps granting while the modules stop their work and the
   * HTTP server answers its requests in flight (the sync and the poller end their waits with their
   * signals), and closes only after them.
   */

  /**
   * Stops: every waiter is refused with BudgetWaitExceeded (nothing was sent; an order create stays to
   * be sent later), so is every later take, and the ledger transaction in flight is waited for.
   */
  async close(): Promise<void> {
    this.closed = true;
    this.clearTimer();
    for (const end of [...this.blockWaits]) end();
    for (const w of [...this.waiters]) this.settle(w, new BudgetWaitExceeded(w.operation, w.cls, performance.now() - w.startedAt, null));
    await this.pumping;
  }

  private onDeadline(w: Waiter): void {
    w.timer = undefined;
    if (this.asking === w) {
      w.expired = true; // its ask is in flight: the answer settles it
      return;
    }
    this.exceed(w, null);
  }

  private exceed(w: Waiter, blockedUntilMs: number | null): void {
    this.metrics.budgetWaitExceeded.inc({ class: w.cls, supplier: this.supplier });
    this.settle(
      w,
      new BudgetWaitExceeded(
        w.operation,
        w.cls,
        performance.now() - w.startedAt,
        blockedUntilMs === null ? null : new Date(blockedUntilMs),
      ),
    );
  }

  /** Ends a waiter, granted (no error) or refused; removes it from the queue once. */
  private settle(w: Waiter, error?: Error): void {
    const i = this.waiters.indexOf(w);
    if (i < 0) return;
    this.waiters.splice(i, 1);
    if (w.timer) clearTimeout(w.timer);
    if (w.onAbort) w.signal?.removeEventListener('abort', w.onAbort);
    if (error) {
      w.reject(error);
      if (i === 0 && !this.closed) this.kick(); // the new first waiter may be of a class that can go sooner
      return;
    }
    const waitedMs = performance.now() - w.startedAt;
    this.metrics.budgetGrants.inc({ class: w.cls, supplier: this.supplier });
    this.metrics.budgetWait.observe({ class: w.cls, supplier: this.supplier }, waitedMs / 1000);
    w.resolve({ cls: w.cls, waitedMs });
  }

  private clearTimer(): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
  }

  /** Asks the ledger for the first waiter now (or once the ask in flight has answered). */
  private kick(): void {
    if (this.closed) return;
    if (this.pumping) {
      this.again = true;
      return;
    }
    this.clearTimer();
    this.pumping = this.pump().finally(() => {
      this.pumping = null;
      if (this.again) {
        this.again = false;
        this.kick();
      }
    });
  }

  private sleep(ms: number): void {
    this.clearTimer();
    // re-asked at least once a window: another replica's grants or block change what the ledger says
    const wait = Math.min(Math.max(1, Math.ceil(ms)), Math.ceil(this.rule?.windowMs ?? LEDGER_RETRY_MS));
    this.timer = setTimeout(() => {
      this.timer = undefined;
      this.kick();
    }, wait);
    this.timer.unref?.();
  }

  private async pump(): Promise<void> {
    const rule = this.rule;
    if (rule === null) return;
    while (this.waiters.length > 0 && !this.closed) {
      this.again = false;
      const head = this.waiters[0];
      this.asking = head;
      const outcome = await this.ask(rule, head);
      this.asking = undefined;

      if ('ledgerError' in outcome) {
        this.logger.warn({
          msg: `the upstream budget's ledger failed: ${(outcome.ledgerError as Error)?.message ?? String(outcome.ledgerError)}`,
        });
        for (const w of [...this.waiters]) this.settle(w, new BudgetUnavailable(w.operation, outcome.ledgerError));
        return;
      }
      this.metrics.budgetTokensLeft.set({ supplier: this.supplier }, outcome.tokensLeft);

      if (outcome.grant) {
        // The token goes to the waiter it was asked for; if that one left meanwhile (its signal, its
        // deadline), to the first waiter when it is of the same class or higher, else it is unused.
        const to = this.waiters[0];
        if (to !== undefined && (to === head || to.rank <= head.rank)) this.settle(to);
        continue;
      }

      // Refused: the first waiter, and any waiter whose deadline comes before the time named (every
      // waiter when the key is blocked), cannot be granted in time. (The sync share binds only while
      // the demand flag stands: the sync may go as soon as it falls.)
      const retryAtMs =
        outcome.reason === 'sync_share' && outcome.demandUntilMs !== null
          ? Math.min(outcome.retryAtMs, outcome.demandUntilMs)
          : outcome.retryAtMs;
      const waitMs = retryAtMs - outcome.nowMs;
      const readyAt = performance.now() + waitMs;
      for (const w of [...this.waiters]) {
        const late = w.expired || (w.deadline !== undefined && w.deadline < readyAt);
        if (late && (w === head || outcome.reason === 'blocked'))
          this.exceed(w, outcome.reason === 'blocked' ? outcome.blockedUntilMs : null);
      }
      if (this.again || this.waiters[0] !== head) continue;
      this.sleep(waitMs);
      return;
    }
  }

  /** One ledger transaction for the waiter's class. */
  private async ask(rule: BudgetRule, head: Waiter): Promise<Outcome> {
    try {
      return await this.repo.take(this.keyId, rule.windowMs, 2 * rule.windowMs, (state) => {
        const higherDemand = state.demandUntilMs !== null && state.demandUntilMs > state.nowMs;
        const d = decideGrant(rule, {
          nowMs: state.nowMs,
          cls: head.cls,
          grants: state.grants,
          higherDemand,
          blockedUntilMs: state.blockedUntilMs,
        });
        const result = { ...d, nowMs: state.nowMs, blockedUntilMs: state.blockedUntilMs, demandUntilMs: state.demandUntilMs };
        if (d.grant) return { grant: true, cls: head.cls, result };
        // a class above the sync waits: the other replicas' syncs keep to their share until it had its turn
        const demandUntilMs = head.rank < classRank('sync') ? d.retryAtMs + rule.spacingMs : undefined;
        return { grant: false, demandUntilMs, result };
      });
    } catch (e) {
      return { ledgerError: e };
    }
  }
}
