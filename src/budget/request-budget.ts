/**
 * The upstream request budget's rule, pure: given the grants of the last window, may a request of a
 * class be sent now, and if not, when to ask again. No I/O, no clock: every time is an input.
 *
 * The upstream counts requests per API key in fixed windows that start at the key's first request, and
 * blocks the key when one window overflows. The start of its windows is unknown to us, so the rule
 * holds a stricter one that covers every possible start: at most `limit` grants in ANY closed interval
 * of `windowMs` (a sliding log). Both carry a safety margin against clock skew between replicas and
 * network jitter (a request granted here reaches the upstream a little later, and two requests granted
 * apart may arrive closer together):
 *   limit    N' = N − max(1, floor(N × 5 %))   (at least 1)
 *   windowMs W' = W + max(200 ms, 2 % of W)
 *
 * Classes, highest priority first (BUDGET_CLASSES):
 *   create    createOrder, cancelOrder
 *   deliver   reads that can hand items to the shop (confirming a delivery, resolving an unknown attempt)
 *   price     the product read before a create
 *   poll      following unfinished orders; the periodic ping
 *   sync      catalog pages, categories, the sync's own product reads
 *   reconcile re-reading finished orders; the lowest
 * `create`, `deliver` and `price` burst: they take any free slot of the window. `poll`, `sync` and
 * `reconcile` are paced: together at most one grant per `spacingMs` = W'/N', so they never fill the
 * window in a burst, and an order that arrives behind them finds a slot within one spacing. While a
 * class above `sync` waits (`higherDemand`), `sync` and `reconcile` together hold at most
 * `syncShareLimit` = max(1, floor(SYNC_BUDGET_SHARE × N')) grants of the window; when nothing else
 * waits they may use all of it. (At least 1, so that a small budget never starves the sync.)
 * `reconcile` alone holds at most `reconcileLimit` = max(1, floor(RECONCILE_BUDGET_SHARE × N')) grants
 * of any window, whatever waits: its work (re-reads of finished orders, of ordered products, the
 * periodic ping) has no deadline and can be a large backlog, and a burst of orders must find the window
 * free of it, since nothing can take back a grant already made.
 *
 * Priority between waiting requests of one process is the service's (it asks for the highest waiter
 * first); across replicas it is the demand flag (`higherDemand`) and the pacing.
 */

/** Highest priority first. */
export const BUDGET_CLASSES = ['create', 'deliver', 'price', 'poll', 'sync', 'reconcile'] as const;
export type BudgetClass = (typeof BUDGET_CLASSES)[number];

/** Classes that take any free slot of the window. */
export const BURST_CLASSES: ReadonlySet<BudgetClass> = new Set<BudgetClass>(['create', 'deliver', 'price']);
/** Classes that share one pace of at most one grant per `spacingMs`. */
export const PACED_CLASSES: ReadonlySet<BudgetClass> = new Set<BudgetClass>(['poll', 'sync', 'reconcile']);
/** Classes limited to the sync share while a higher class waits. */
export const SHARE_CLASSES: ReadonlySet<BudgetClass> = new Set<BudgetClass>(['sync', 'reconcile']);

/** 0 for `create` … 5 for `reconcile`: lower is served first. */
export function classRank(cls: BudgetClass): number {
  return BUDGET_CLASSES.indexOf(cls);
}

export function isBudgetClass(v: unknown): v is BudgetClass {
  return typeof v === 'string' && (BUDGET_CLASSES as readonly string[]).includes(v);
}

/** The upstream's limit as configured (UPSTREAM_RATE_LIMIT). */
export interface RateLimit {
  requests: number;
  windowMs: number;
}

/** The rule this side holds: the limit with its safety margin, the pace and the sync share. */
export interface BudgetRule {
  /** N': grants allowed in any interval of `windowMs`. */
  limit: number;
  /** W'. */
  windowMs: number;
  /** W'/N': the least time between two grants of the paced classes. */
  spacingMs: number;
  /** The most `sync` + `reconcile` grants in a window while a higher class waits. */
  syncShareLimit: number;
  /** The most `reconcile` grants in any window, always. */
  reconcileLimit: number;
}

/** Builds the rule from the upstream's limit, SYNC_BUDGET_SHARE and RECONCILE_BUDGET_SHARE (each in (0, 1]). */
export function budgetRule(limit: RateLimit, syncShare: number, reconcileShare = 1): BudgetRule {
  if (!(limit.requests >= 1) || !(limit.windowMs > 0)) throw new RangeError('a rate limit needs at least 1 request and a window above 0');
  if (!(syncShare > 0 && syncShare <= 1)) throw new RangeError('the sync share must be in (0, 1]');
  if (!(reconcileShare > 0 && reconcileShare <= 1)) throw new RangeError('the reconcile share must be in (0, 1]');
  const n = Math.max(1, limit.requests - Math.max(1, Math.floor(limit.requests * 0.05)));
  const w = limit.windowMs + Math.max(200, limit.windowMs * 0.02);
  return {
    limit: n,
    windowMs: w,
    spacingMs: w / n,
    syncShareLimit: Math.max(1, Math.floor(syncShare * n)),
    reconcileLimit: Math.max(1, Math.floor(reconcileShare * n)),
  };
}

/** One grant of the log: when (milliseconds, the ledger's clock) and for which class. */
export interface Grant {
  atMs: number;
  cls: BudgetClass;
}

export interface BudgetAsk {
  /** Now, by the same clock as the grants. */
  nowMs: number;
  cls: BudgetClass;
  /** The grants of at least the last `windowMs` (older ones are ignored), in any order. */
  grants: readonly Grant[];
  /** A class above `sync` waits for the budget (in this process or, by the demand flag, in another). */
  higherDemand: boolean;
  /** The key is blocked until then (after a 429); null or past: not blocked. */
  blockedUntilMs: number | null;
}

/** Why a request may not be sent now; the latest of the binding reasons when several hold. */
export type BudgetWaitReason = 'blocked' | 'window_full' | 'paced' | 'sync_share' | 'reconcile_share';

export type BudgetDecision =
  | { grant: true; /** Slots left in the window ending now, this grant counted. */ tokensLeft: number }
  | {
      grant: false;
      reason: BudgetWaitReason;
      /** The earliest time this ask can be granted if nothing else is granted first. */ retryAtMs: number;
      tokensLeft: number;
    };

/**
 * Decides one ask. Granting at `nowMs` keeps every closed interval of `windowMs` at no more than
 * `limit` grants (given that the grants passed in were decided by this rule), and the paced classes at
 * least `spacingMs` apart. A refusal names the earliest time at which every constraint could hold;
 * each constraint only loosens as time passes without new grants, so that time is exact for the
 * grants known now.
 */
export function decideGrant(rule: BudgetRule, ask: BudgetAsk): BudgetDecision {
  const { nowMs, cls } = ask;
  const since = nowMs - rule.windowMs;
  // (a grant stamped after `nowMs` — clocks that disagree — counts too: that only makes the rule stricter)
  const recent = ask.grants.filter((g) => g.atMs >= since).sort((a, b) => a.atMs - b.atMs);
  const tokensLeft = Math.max(0, rule.limit - recent.length);

  let retryAtMs = nowMs;
  let reason: BudgetWaitReason | null = null;
  const needs = (at: number, why: BudgetWaitReason): void => {
    if (at > nowMs && at >= retryAtMs) {
      retryAtMs = at;
      reason = why;
    }
  };

  if (ask.blockedUntilMs !== null) needs(ask.blockedUntilMs, 'blocked');

  // The window ending now must hold fewer than `limit` grants: the oldest (recent − limit + 1) of them
  // must fall out of it first (an interval is closed: a grant exactly windowMs ago still counts).
  if (recent.length >= rule.limit) needs(recent[recent.length - rule.limit].atMs + rule.windowMs + 1, 'window_full');

  if (PACED_CLASSES.has(cls)) {
    const lastPaced = lastOf(recent, (g) => PACED_CLASSES.has(g.cls));
    if (lastPaced !== undefined) needs(lastPaced + rule.spacingMs, 'paced');
  }

  if (SHARE_CLASSES.has(cls) && ask.higherDemand) {
    const shared = recent.filter((g) => SHARE_CLASSES.has(g.cls));
    if (shared.length >= rule.syncShareLimit) needs(shared[shared.length - rule.syncShareLimit].atMs + rule.windowMs + 1, 'sync_share');
  }

  if (cls === 'reconcile') {
    const own = recent.filter((g) => g.cls === 'reconcile');
    if (own.length >= rule.reconcileLimit) needs(own[own.length - rule.reconcileLimit].atMs + rule.windowMs + 1, 'reconcile_share');
  }

  if (reason === null) return { grant: true, tokensLeft: Math.max(0, tokensLeft - 1) };
  return { grant: false, reason, retryAtMs, tokensLeft };
}

function lastOf(sorted: readonly Grant[], pick: (g: Grant) => boolean): number | undefined {
  for (let i = sorted.length - 1; i >= 0; i--) if (pick(sorted[i])) return sorted[i].atMs;
  return undefined;
}
