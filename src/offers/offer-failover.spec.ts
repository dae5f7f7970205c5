import { nextOfferStep } from './offer-failover.js';
import { REFUSAL_CODES, type RefuseStep, type RouteSource, type RouteStep, type SkipReason } from './offer-route.js';

const src = (position: number, supplier: string): RouteSource => ({
  position,
  supplier,
  sku_key: '1:A',
  cost_price: '1.00',
  available: true,
});
const [a, b, c] = [src(0, 'main'), src(1, 'second'), src(2, 'third')];
const tryAt = (source: RouteSource): RouteStep => ({ kind: 'try', source });
const refuseAt = (source: RouteSource, reason: SkipReason = 'above_ceiling'): RefuseStep => ({
  kind: 'refuse',
  source,
  reason,
  code: REFUSAL_CODES[reason],
});
const steps = [tryAt(a), tryAt(b), tryAt(c)];
const ref = (s: RouteSource) => ({ supplier: s.supplier, sku_key: s.sku_key });
const refusal = { status: 'rejected' as const, errorCode: 'insufficient_stock', sent: true };

describe('nextOfferStep', () => {
  it('tries the first source first', () => {
    expect(nextOfferStep(steps, [], null)).toEqual({ kind: 'try', source: a, refused: [] });
  });

  it('moves to the next untried source after a definitive refusal before any charge', () => {
    expect(nextOfferStep(steps, [ref(a)], refusal)).toEqual({ kind: 'try', source: b, refused: [] });
    expect(nextOfferStep(steps, [ref(a), ref(b)], refusal)).toEqual({ kind: 'try', source: c, refused: [] });
    expect(nextOfferStep(steps, [ref(a)], { status: 'rejected', errorCode: 'upstream_unavailable', sent: false })).toEqual({
      kind: 'try',
      source: b,
      refused: [],
    });
  });

  it('goes by the sources tried, not their positions: a route planned again in another order skips them all', () => {
    // cheapest, costs swapped since: the third is now first, the first (tried) second
    expect(nextOfferStep([tryAt(c), tryAt(a), tryAt(b)], [ref(a)], refusal)).toEqual({ kind: 'try', source: c, refused: [] });
    expect(nextOfferStep([tryAt(c), tryAt(a), tryAt(b)], [ref(a), ref(c)], refusal)).toEqual({ kind: 'try', source: b, refused: [] });
  });

  it('names the untried sources the price guard refuses before the next one to try, in route order', () => {
    expect(nextOfferStep([refuseAt(a), tryAt(b)], [], null)).toEqual({
      kind: 'try',
      source: b,
      refused: [refuseAt(a)],
    });
    expect(nextOfferStep([tryAt(a), refuseAt(b), tryAt(c)], [ref(a)], refusal)).toEqual({
      kind: 'try',
      source: c,
      refused: [refuseAt(b)],
    });
    // recorded once: a refused source already in the attempts is not refused again
    expect(nextOfferStep([refuseAt(a), tryAt(b), tryAt(c)], [ref(a), ref(b)], refusal)).toEqual({ kind: 'try', source: c, refused: [] });
  });

  it('stays after submit_unknown, a placement, a queued attempt or a refusal it does not pass over', () => {
    expect(nextOfferStep(steps, [ref(a)], { status: 'submit_unknown' })).toEqual({ kind: 'stay' });
    expect(nextOfferStep(steps, [ref(a)], { status: 'placed' })).toEqual({ kind: 'stay' });
    expect(nextOfferStep(steps, [ref(a)], { status: 'queued' })).toEqual({ kind: 'stay' });
    expect(nextOfferStep(steps, [ref(a)], { status: 'rejected', errorCode: 'upstream_unavailable', sent: true })).toEqual({ kind: 'stay' });
    expect(nextOfferStep(steps, [ref(a)], { status: 'rejected', errorCode: 'bad_request', sent: false })).toEqual({ kind: 'stay' });
  });

  it('is exhausted when every source was tried or refused, or there is none', () => {
    expect(nextOfferStep(steps, [ref(a), ref(b), ref(c)], refusal)).toEqual({ kind: 'exhausted', refused: [] });
    expect(nextOfferStep([tryAt(a), refuseAt(b)], [ref(a)], refusal)).toEqual({
      kind: 'exhausted',
      refused: [refuseAt(b)],
    });
    expect(nextOfferStep([refuseAt(a), refuseAt(b)], [], null)).toEqual({
      kind: 'exhausted',
      refused: [refuseAt(a), refuseAt(b)],
    });
    expect(nextOfferStep([], [], null)).toEqual({ kind: 'exhausted', refused: [] });
  });

  it("passes over the route's own refusals before sending, each recorded with its code", () => {
    const all = [refuseAt(a, 'supplier_disabled'), refuseAt(b, 'unavailable'), refuseAt(c, 'supplier_unknown')];
    expect(nextOfferStep(all, [], null)).toEqual({ kind: 'exhausted', refused: all });
    const afterFirst = { status: 'rejected' as const, errorCode: 'supplier_disabled', sent: false };
    expect(nextOfferStep(all, [ref(a)], afterFirst)).toEqual({ kind: 'exhausted', refused: all.slice(1) });
    expect(all.map((s) => s.code)).toEqual(['supplier_disabled', 'sku_unavailable', 'supplier_not_found']);
  });
});
