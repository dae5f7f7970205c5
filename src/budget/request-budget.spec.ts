import {
  BUDGET_CLASSES,
  PACED_CLASSES,
  SHARE_CLASSES,
  budgetRule,
  classRank,
  decideGrant,
  type BudgetAsk,
  type BudgetClass,
  type BudgetRule,
  type Grant,
} from './request-budget.js';

/** A small deterministic generator (mulberry32), so that a failing sequence can be replayed. */
function random(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** The largest number of grants in any closed interval of `windowMs`. */
function maxInAnyWindow(times: number[], windowMs: number): number {
  const t = [...times].sort((a, b) => a - b);
  let most = 0;
  let j = 0;
  for (let i = 0; i < t.length; i++) {
    while (t[i] - t[j] > windowMs) j++;
    most = Math.max(most, i - j + 1);
  }
  return most;
}

const ask = (over: Partial<BudgetAsk> & Pick<BudgetAsk, 'nowMs' | 'cls'>): BudgetAsk => ({
  grants: [],
  higherDemand: false,
  blockedUntilMs: null,
  ...over,
});

describe('budgetRule', () => {
  it('keeps a safety margin: fewer requests, a longer window', () => {
    expect(budgetRule({ requests: 60, windowMs: 60_000 }, 0.5, 0.2)).toEqual({
      limit: 57,
      windowMs: 61_200,
      spacingMs: 61_200 / 57,
      syncShareLimit: 28,
      reconcileLimit: 11,
    });
    expect(budgetRule({ requests: 10, windowMs: 500 }, 0.5)).toEqual({
      limit: 9,
      windowMs: 700,
      spacingMs: 700 / 9,
      syncShareLimit: 4,
      reconcileLimit: 9,
    });
    // at least one request, and shares of at least one grant
    expect(budgetRule({ requests: 1, windowMs: 1000 }, 0.1, 0.1)).toMatchObject({ limit: 1, syncShareLimit: 1, reconcileLimit: 1 });
    expect(budgetRule({ requests: 2, windowMs: 1000 }, 1)).toMatchObject({ limit: 1, windowMs: 1200 });
  });

  it('refuses a share outside (0, 1] and an empty limit', () => {
    expect(() => budgetRule({ requests: 60, windowMs: 60_000 }, 0)).toThrow(RangeError);
    expect(() => budgetRule({ requests: 60, windowMs: 60_000 }, 1.5)).toThrow(RangeError);
    expect(() => budgetRule({ requests: 0, windowMs: 60_000 }, 0.5)).toThrow(RangeError);
    expect(() => budgetRule({ requests: 60, windowMs: 60_000 }, 0.5, 0)).toThrow(RangeError);
    expect(() => budgetRule({ requests: 60, windowMs: 60_000 }, 0.5, 1.01)).toThrow(RangeError);
  });

  it('ranks the classes create first, reconcile last', () => {
    expect(BUDGET_CLASSES.map(classRank)).toEqual([0, 1, 2, 3, 4, 5]);
    expect(classRank('create')).toBeLessThan(classRank('sync'));
  });
});

describe('decideGrant', () => {
  const rule: BudgetRule = budgetRule({ requests: 10, windowMs: 1000 }, 0.5); // N' 9, W' 1200, spacing 133.3, share 4

  it('lets a burst class take every free slot at once, then names when the oldest slot frees', () => {
    const grants: Grant[] = [];
    for (let i = 0; i < rule.limit; i++) {
      const d = decideGrant(rule, ask({ nowMs: 1000, cls: 'create', grants }));
      expect(d).toEqual({ grant: true, tokensLeft: rule.limit - i - 1 });
      grants.push({ atMs: 1000, cls: 'create' });
    }
    expect(decideGrant(rule, ask({ nowMs: 1000, cls: 'create', grants }))).toEqual({
      grant: false,
      reason: 'window_full',
      retryAtMs: 1000 + rule.windowMs + 1,
      tokensLeft: 0,
    });
    // a grant exactly one window old still counts (closed interval); just after, it does not
    expect(decideGrant(rule, ask({ nowMs: 1000 + rule.windowMs, cls: 'create', grants })).grant).toBe(false);
    expect(decideGrant(rule, ask({ nowMs: 1000 + rule.windowMs + 1, cls: 'create', grants })).grant).toBe(true);
  });

  it('paces poll, sync and reconcile together at one grant per spacing', () => {
    const grants: Grant[] = [{ atMs: 0, cls: 'sync' }];
    for (const cls of ['poll', 'sync', 'reconcile'] as const) {
      expect(decideGrant(rule, ask({ nowMs: 10, cls, grants }))).toMatchObject({
        grant: false,
        reason: 'paced',
        retryAtMs: rule.spacingMs,
      });
      expect(decideGrant(rule, ask({ nowMs: rule.spacingMs, cls, grants })).grant).toBe(true);
    }
    // the burst classes do not wait for the pace
    for (const cls of ['create', 'deliver', 'price'] as const) expect(decideGrant(rule, ask({ nowMs: 10, cls, grants })).grant).toBe(true);
    // and their grants do not hold the pace back
    expect(decideGrant(rule, ask({ nowMs: 200, cls: 'sync', grants: [...grants, { atMs: 199, cls: 'create' }] })).grant).toBe(true);
  });

  it('holds sync and reconcile to their share while a higher class waits, and lets them use the whole window otherwise', () => {
    const grants: Grant[] = [];
    for (let i = 0; i < rule.syncShareLimit; i++) grants.push({ atMs: i * 140, cls: i % 2 === 0 ? 'sync' : 'reconcile' });
    const now = rule.syncShareLimit * 140;
    const waiting = decideGrant(rule, ask({ nowMs: now, cls: 'sync', grants, higherDemand: true }));
    expect(waiting).toEqual({
      grant: false,
      reason: 'sync_share',
      retryAtMs: 0 + rule.windowMs + 1,
      tokensLeft: rule.limit - rule.syncShareLimit,
    });
    expect(decideGrant(rule, ask({ nowMs: now, cls: 'reconcile', grants, higherDemand: true })).grant).toBe(false);
    expect(decideGrant(rule, ask({ nowMs: now, cls: 'sync', grants, higherDemand: false })).grant).toBe(true);
    // poll is not part of the share
    expect(decideGrant(rule, ask({ nowMs: now, cls: 'poll', grants, higherDemand: true })).grant).toBe(true);
  });

  it('holds reconcile to its own share of any window, whatever waits; the other classes are not held by it', () => {
    const r = budgetRule({ requests: 10, windowMs: 1000 }, 1, 0.25); // N' 9, W' 1200, spacing 133.3, reconcile 2
    expect(r.reconcileLimit).toBe(2);
    const grants: Grant[] = [
      { atMs: 0, cls: 'reconcile' },
      { atMs: 200, cls: 'reconcile' },
    ];
    // nothing else waits and the window has 7 free slots: still refused until the oldest reconcile grant leaves it
    for (const higherDemand of [false, true]) {
      expect(decideGrant(r, ask({ nowMs: 400, cls: 'reconcile', grants, higherDemand }))).toEqual({
        grant: false,
        reason: 'reconcile_share',
        retryAtMs: 0 + r.windowMs + 1,
        tokensLeft: 7,
      });
    }
    expect(decideGrant(r, ask({ nowMs: r.windowMs + 1, cls: 'reconcile', grants })).grant).toBe(true);
    for (const cls of ['create', 'deliver', 'price', 'poll', 'sync'] as const)
      expect(decideGrant(r, ask({ nowMs: 400, cls, grants })).grant).toBe(true);
    // the other classes' grants do not count against it
    const others: Grant[] = Array.from({ length: 6 }, (_, i) => ({ atMs: i, cls: 'create' as const }));
    expect(decideGrant(r, ask({ nowMs: 400, cls: 'reconcile', grants: others })).grant).toBe(true);
  });

  it('leaves a burst of orders the window less the reconcile share, however long reconciliation had it alone', () => {
    const r = budgetRule({ requests: 60, windowMs: 60_000 }, 0.5, 0.2); // N' 57, reconcile 11
    const grants: Grant[] = [];
    // a backlog of reconciliation asks as fast as they are allowed, for ten windows, nothing else
    for (let now = 0; now < 10 * r.windowMs;) {
      const d = decideGrant(r, ask({ nowMs: now, cls: 'reconcile', grants }));
      if (d.grant) grants.push({ atMs: now, cls: 'reconcile' });
      else now = d.retryAtMs;
    }
    expect(
      maxInAnyWindow(
        grants.map((g) => g.atMs),
        r.windowMs,
      ),
    ).toBe(r.reconcileLimit);
    // then a burst of creates: every slot but the reconcile share is free at once
    const at = 10 * r.windowMs;
    let burst = 0;
    while (decideGrant(r, ask({ nowMs: at, cls: 'create', grants })).grant) {
      grants.push({ atMs: at, cls: 'create' });
      burst++;
    }
    expect(burst).toBeGreaterThanOrEqual(r.limit - r.reconcileLimit);
  });

  it('refuses every class until a block ends, then names the latest of the binding times', () => {
    for (const cls of BUDGET_CLASSES) {
      expect(decideGrant(rule, ask({ nowMs: 100, cls, blockedUntilMs: 5000 }))).toEqual({
        grant: false,
        reason: 'blocked',
        retryAtMs: 5000,
        tokensLeft: rule.limit,
      });
      expect(decideGrant(rule, ask({ nowMs: 5000, cls, blockedUntilMs: 5000 })).grant).toBe(true);
      expect(decideGrant(rule, ask({ nowMs: 100, cls, blockedUntilMs: 99 })).grant).toBe(true);
    }
    const full: Grant[] = Array.from({ length: rule.limit }, () => ({ atMs: 4900, cls: 'create' as const }));
    expect(decideGrant(rule, ask({ nowMs: 5000, cls: 'create', grants: full, blockedUntilMs: 5001 }))).toMatchObject({
      reason: 'window_full',
      retryAtMs: 4900 + rule.windowMs + 1,
    });
  });

  it.each([1, 2, 3, 4, 5])("never grants more than N' in any interval of W' for random arrivals (seed %p)", (seed) => {
    const rnd = random(seed);
    const r = budgetRule(
      { requests: 5 + Math.floor(rnd() * 60), windowMs: 200 + Math.floor(rnd() * 5000) },
      0.1 + rnd() * 0.9,
      0.1 + rnd() * 0.9,
    );
    const grants: Grant[] = [];
    const paced: number[] = [];
    let now = 0;
    let blockedUntilMs: number | null = null;
    let refusals = 0;
    for (let step = 0; step < 4000; step++) {
      // arrivals in bursts and gaps, at fractional milliseconds as a database clock gives them
      now += rnd() < 0.7 ? rnd() * 3 : rnd() * r.windowMs * 0.3;
      if (rnd() < 0.002) blockedUntilMs = now + rnd() * r.windowMs;
      const cls: BudgetClass = BUDGET_CLASSES[Math.floor(rnd() * BUDGET_CLASSES.length)];
      const higherDemand = rnd() < 0.5;
      const d = decideGrant(r, { nowMs: now, cls, grants, higherDemand, blockedUntilMs });
      if (!d.grant) {
        refusals++;
        expect(d.retryAtMs).toBeGreaterThan(now);
        // the time named is exact for the grants known now
        const later = decideGrant(r, { nowMs: d.retryAtMs, cls, grants, higherDemand, blockedUntilMs });
        expect(later.grant).toBe(true);
        continue;
      }
      grants.push({ atMs: now, cls });
      if (PACED_CLASSES.has(cls)) paced.push(now);
      if (SHARE_CLASSES.has(cls) && higherDemand) {
        const shared = grants.filter((g) => SHARE_CLASSES.has(g.cls) && g.atMs >= now - r.windowMs).length;
        expect(shared).toBeLessThanOrEqual(r.syncShareLimit);
      }
      if (cls === 'reconcile')
        expect(grants.filter((g) => g.cls === 'reconcile' && g.atMs >= now - r.windowMs).length).toBeLessThanOrEqual(r.reconcileLimit);
    }
    expect(refusals).toBeGreaterThan(0);
    expect(grants.length).toBeGreaterThan(r.limit);
    expect(
      maxInAnyWindow(
        grants.map((g) => g.atMs),
        r.windowMs,
      ),
    ).toBeLessThanOrEqual(r.limit);
    for (let i = 1; i < paced.length; i++) expect(paced[i] - paced[i - 1]).toBeGreaterThanOrEqual(r.spacingMs - 1e-9);
  });

  it('fills the window completely when asks come as fast as they are allowed', () => {
    const grants: Grant[] = [];
    let now = 0;
    while (now < 10 * rule.windowMs) {
      const d = decideGrant(rule, ask({ nowMs: now, cls: 'create', grants }));
      if (d.grant) grants.push({ atMs: now, cls: 'create' });
      else now = d.retryAtMs;
    }
    expect(
      maxInAnyWindow(
        grants.map((g) => g.atMs),
        rule.windowMs,
      ),
    ).toBe(rule.limit);
    // every window of W' after the first holds N' grants: nothing is left unused
    expect(grants.length).toBeGreaterThanOrEqual(9 * rule.limit);
  });
});
