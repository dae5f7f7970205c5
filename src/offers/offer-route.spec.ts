import {
  FAILOVER_CODES,
  failoverStep,
  passesOverBeforeSending,
  planRoute,
  REFUSAL_CODES,
  refusalMessage,
  routeCeiling,
  routeOrder,
  SKIP_REASONS,
  type AttemptEnd,
  type FailoverStep,
  type RouteSource,
  type SkipReason,
  type SupplierState,
} from './offer-route.js';

const NOW = 1_000_000;
const src = (position: number, supplier: string, cost: string | null, available = true): RouteSource => ({
  position,
  supplier,
  sku_key: `${position + 1}:A`,
  cost_price: cost,
  available,
});
const ok: SupplierState = { enabled: true, blockedUntil: null };
const states = (over: Record<string, SupplierState> = {}) => new Map(Object.entries({ a: ok, b: ok, c: ok, ...over }));
const positions = (list: RouteSource[]) => list.map((s) => s.position);

describe('routeOrder', () => {
  const sources = [src(0, 'a', '12.00'), src(1, 'b', '9.50'), src(2, 'c', '12.0'), src(3, 'a', null), src(4, 'b', '10')];
  it('priority: the sources in their order', () => {
    expect(positions(routeOrder('priority', [...sources].reverse()))).toEqual([0, 1, 2, 3, 4]);
  });
  it('cheapest: ascending cost as decimals, ties in their order, unknown costs last', () => {
    expect(positions(routeOrder('cheapest', sources))).toEqual([1, 4, 0, 2, 3]);
  });
});

describe('planRoute', () => {
  it('tries every usable source in the routing order', () => {
    const plan = planRoute('cheapest', [src(0, 'a', '12.00'), src(1, 'b', '10.00')], states(), null, NOW);
    expect(positions(plan.tries)).toEqual([1, 0]);
    expect(plan.skipped).toEqual([]);
  });

  // One row per reason: the source at position 0 is the one that fails; position 1 is always tried.
  const table: Array<[string, RouteSource, Record<string, SupplierState>, string | null, SkipReason | null]> = [
    ['usable', src(0, 'a', '10.00'), {}, '20.00', null],
    ['cost equal to the ceiling', src(0, 'a', '20.00'), {}, '20.00', null],
    ['no ceiling', src(0, 'a', '1000.00'), {}, null, null],
    ['a block that has ended', src(0, 'a', '10.00'), { a: { enabled: true, blockedUntil: NOW } }, null, null],
    ['an unknown supplier', src(0, 'zz', '10.00'), {}, null, 'supplier_unknown'],
    ['a disabled supplier', src(0, 'a', '10.00'), { a: { enabled: false, blockedUntil: null } }, null, 'supplier_disabled'],
    ['unavailable locally', src(0, 'a', '10.00', false), {}, null, 'unavailable'],
    ['lacking in its catalog', src(0, 'a', null), {}, null, 'unavailable'],
    ['above the ceiling', src(0, 'a', '20.01'), {}, '20.00', 'above_ceiling'],
    // the first reason that holds
    ['disabled and unavailable', src(0, 'a', '10.00', false), { a: { enabled: false, blockedUntil: null } }, null, 'supplier_disabled'],
    ['unavailable and above the ceiling', src(0, 'a', '30.00', false), {}, '20.00', 'unavailable'],
    ['above the ceiling and blocked', src(0, 'a', '30.00'), { a: { enabled: true, blockedUntil: NOW + 1 } }, '20.00', 'above_ceiling'],
    ['disabled and blocked', src(0, 'a', '10.00'), { a: { enabled: false, blockedUntil: NOW + 1 } }, null, 'supplier_disabled'],
  ];
  it.each(table)('%s', (_what, first, over, ceiling, reason) => {
    const second = src(1, 'b', '5.00');
    const plan = planRoute('priority', [first, second], states(over), ceiling, NOW);
    if (reason === null) {
      expect(positions(plan.tries)).toEqual([0, 1]);
      expect(plan.skipped).toEqual([]);
    } else {
      expect(positions(plan.tries)).toEqual([1]);
      expect(plan.skipped).toEqual([{ source: first, reason }]);
    }
    // the steps: the price guard's refusal of a source above the ceiling is met (and recorded); other skips are not
    const met =
      reason === 'above_ceiling'
        ? [{ kind: 'refuse', source: first, reason, code: 'price_changed' }]
        : reason === null
          ? [{ kind: 'try', source: first }]
          : [];
    expect(plan.steps).toEqual([...met, { kind: 'try', source: second }]);
  });

  it('covers every reason in the table', () => {
    expect(new Set(table.map((r) => r[4]).filter((r) => r !== null))).toEqual(new Set(SKIP_REASONS));
  });

  it('lists the skipped sources in the routing order too, and may try none', () => {
    const plan = planRoute('cheapest', [src(0, 'a', '30.00'), src(1, 'b', '25.00', false)], states(), '20.00', NOW);
    expect(plan.tries).toEqual([]);
    expect(plan.skipped.map((s) => [s.source.position, s.reason])).toEqual([
      [1, 'unavailable'],
      [0, 'above_ceiling'],
    ]);
    expect(plan.steps.map((s) => [s.kind, s.source.position])).toEqual([['refuse', 0]]);
  });

  it('holds a source whose key is blocked: tried after every source that can be tried now, in the routing order', () => {
    const blocked = { enabled: true, blockedUntil: NOW + 1 };
    const sources = [src(0, 'a', '10.00'), src(1, 'b', '10.00'), src(2, 'c', '30.00'), src(3, 'c', '10.00')];
    const plan = planRoute('priority', sources, states({ a: blocked, b: blocked }), '20.00', NOW);
    expect(positions(plan.held)).toEqual([0, 1]);
    expect(positions(plan.tries)).toEqual([3, 0, 1]);
    expect(plan.skipped.map((s) => [s.source.position, s.reason])).toEqual([[2, 'above_ceiling']]);
    expect(plan.steps.map((s) => [s.kind, s.source.position])).toEqual([
      ['refuse', 2],
      ['try', 3],
      ['try', 0],
      ['try', 1],
    ]);
  });

  it('every source that could take the order blocked: the order meets them, the first held first (queued there, not refused)', () => {
    const blocked = { enabled: true, blockedUntil: NOW + 1 };
    const plan = planRoute('priority', [src(0, 'a', '10.00'), src(1, 'b', '10.00', false)], states({ a: blocked }), null, NOW);
    expect(plan.steps).toEqual([{ kind: 'try', source: src(0, 'a', '10.00') }]);
    expect(plan.skipped).toEqual([{ source: src(1, 'b', '10.00', false), reason: 'unavailable' }]);
  });

  it('no source met: every source a refused step with its reason and code, in the routing order', () => {
    const sources = [src(0, 'a', '10.00', false), src(1, 'zz', '10.00'), src(2, 'b', '10.00')];
    const plan = planRoute('priority', sources, states({ b: { enabled: false, blockedUntil: NOW + 1 } }), null, NOW);
    expect(plan.tries).toEqual([]);
    expect(plan.steps).toEqual([
      { kind: 'refuse', source: sources[0], reason: 'unavailable', code: 'sku_unavailable' },
      { kind: 'refuse', source: sources[1], reason: 'supplier_unknown', code: 'supplier_not_found' },
      { kind: 'refuse', source: sources[2], reason: 'supplier_disabled', code: 'supplier_disabled' },
    ]);
    // each with a message that names its source and why it was not asked
    const messages = plan.steps.map((step) => (step.kind === 'refuse' ? refusalMessage(step) : null));
    expect(messages).toEqual([
      'a 1:A is known unavailable locally: it was not asked',
      'no supplier zz: 2:A was not asked',
      'supplier b is disabled: it takes no new orders, 3:A was not asked',
    ]);
  });

  it('has a code for every reason', () => {
    expect(Object.keys(REFUSAL_CODES).sort()).toEqual([...SKIP_REASONS].sort());
  });
});

describe('routeCeiling', () => {
  it("is max_unit_cost, else the offer's sale price", () => {
    expect(routeCeiling('12.00', '15.00')).toBe('12.00');
    expect(routeCeiling(undefined, '15.00')).toBe('15.00');
    expect(routeCeiling(null, null)).toBeNull();
  });
});

describe('failoverStep', () => {
  const refusals = [...FAILOVER_CODES];
  it('names exactly the refusals of CONTRACT §11', () => {
    expect(refusals.sort()).toEqual(
      [
        'insufficient_balance',
        'insufficient_stock',
        'payment_failed',
        'price_changed',
        'product_unavailable',
        'sku_unavailable',
        'upstream_auth_failed',
      ].sort(),
    );
  });

  const table: Array<[string, AttemptEnd, FailoverStep]> = [
    ...refusals.flatMap((code): Array<[string, AttemptEnd, FailoverStep]> => [
      [`${code}, sent`, { status: 'rejected', errorCode: code, sent: true }, 'next'],
      [`${code}, not sent`, { status: 'rejected', errorCode: code, sent: false }, 'next'],
    ]),
    ['upstream_unavailable before sending', { status: 'rejected', errorCode: 'upstream_unavailable', sent: false }, 'next'],
    ['upstream_unavailable after sending', { status: 'rejected', errorCode: 'upstream_unavailable', sent: true }, 'wait'],
    ['submit_unknown', { status: 'submit_unknown' }, 'wait'],
    ['placed', { status: 'placed' }, 'wait'],
    ['queued for the budget', { status: 'queued' }, 'queued'],
    ['another refusal', { status: 'rejected', errorCode: 'bad_request', sent: true }, 'wait'],
    ['another refusal before sending', { status: 'rejected', errorCode: 'bad_request', sent: false }, 'wait'],
    ['the route refused the supplier as disabled', { status: 'rejected', errorCode: 'supplier_disabled', sent: false }, 'next'],
    ['the route refused the supplier as unknown', { status: 'rejected', errorCode: 'supplier_not_found', sent: false }, 'next'],
    ['supplier_disabled after sending', { status: 'rejected', errorCode: 'supplier_disabled', sent: true }, 'wait'],
    ['a refusal without a code', { status: 'rejected', errorCode: null, sent: true }, 'wait'],
    ['an unknown refusal', { status: 'rejected', errorCode: 'upstream_error', sent: true }, 'wait'],
  ];
  it.each(table)('%s → %s', (_what, end, step) => {
    expect(failoverStep(end)).toBe(step);
  });

  it('passes over before sending exactly as failoverStep says', () => {
    expect(['price_changed', 'upstream_unavailable', 'supplier_disabled', 'sku_unavailable'].map(passesOverBeforeSending)).toEqual([
      true,
      true,
      true,
      true,
    ]);
    expect(['bad_request', 'upstream_error', null].map(passesOverBeforeSending)).toEqual([false, false, false]);
  });
});
