import { nextOfferStep } from './offer-failover.js';
import type { RouteSource } from './offer-route.js';

const src = (position: number, supplier: string): RouteSource => ({
  position,
  supplier,
  sku_key: '1:A',
  cost_price: '1.00',
  available: true,
});
const tries = [src(0, 'main'), src(1, 'second')];

describe('nextOfferStep', () => {
  it('tries the first source first', () => {
    expect(nextOfferStep(tries, 0, null)).toEqual({ kind: 'try', source: tries[0] });
  });

  it('moves to the next source after a definitive refusal before any charge', () => {
    expect(nextOfferStep(tries, 1, { status: 'rejected', errorCode: 'insufficient_stock', sent: true })).toEqual({
      kind: 'try',
      source: tries[1],
    });
    expect(nextOfferStep(tries, 1, { status: 'rejected', errorCode: 'upstream_unavailable', sent: false })).toEqual({
      kind: 'try',
      source: tries[1],
    });
  });

  it('stays after submit_unknown, a placement, a queued attempt or a refusal it does not pass over', () => {
    expect(nextOfferStep(tries, 1, { status: 'submit_unknown' })).toEqual({ kind: 'stay' });
    expect(nextOfferStep(tries, 1, { status: 'placed' })).toEqual({ kind: 'stay' });
    expect(nextOfferStep(tries, 1, { status: 'queued' })).toEqual({ kind: 'stay' });
    expect(nextOfferStep(tries, 1, { status: 'rejected', errorCode: 'upstream_unavailable', sent: true })).toEqual({ kind: 'stay' });
    expect(nextOfferStep(tries, 1, { status: 'rejected', errorCode: 'bad_request', sent: false })).toEqual({ kind: 'stay' });
  });

  it('is exhausted when every source refused, or there is none to try', () => {
    expect(nextOfferStep(tries, 2, { status: 'rejected', errorCode: 'insufficient_stock', sent: true })).toEqual({ kind: 'exhausted' });
    expect(nextOfferStep([], 0, null)).toEqual({ kind: 'exhausted' });
  });
});
