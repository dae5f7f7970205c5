import {
  FAILOVER_CODES,
  failoverStep,
  planRoute,
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
    ['a blocked key', src(0, 'a', '10.00'), { a: { enabled: true, blockedUntil: NOW + 1 } }, null, 'key_blocked'],
    // the first reason that holds
    ['disabled and unavailable', src(0, 'a', '10.00', false), { a: { enabled: false, blockedUntil: null } }, null, 'supplier_disabled'],
    ['unavailable and above the ceiling', src(0, 'a', '30.00', false), {}, '20.00', 'unavailable'],
    ['above the ceiling and blocked', src(0, 'a', '30.00'), { a: { enabled: true, blockedUntil: NOW + 1 } }, '20.00', 'above_ceiling'],
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
        ? [{ kind: 'refuse', source: first, code: 'price_changed' }]
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
    ['a refusal without a code', { status: 'rejected', errorCode: null, sent: true }, 'wait'],
    ['an unknown refusal', { status: 'rejected', errorCode: 'upstream_error', sent: true }, 'wait'],
  ];
  it.each(table)('%s → %s', (_what, end, step) => {
    expect(failoverStep(end)).toBe(step);
  });
});
