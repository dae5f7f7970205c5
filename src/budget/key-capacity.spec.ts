import { keyCapacity } from './key-capacity.js';
import { budgetRule } from './request-budget.js';

describe('keyCapacity', () => {
  const rule = budgetRule({ requests: 60, windowMs: 60_000 }, 0.5, 0.2); // N' 57 in 61.2 s, reconcile 11

  it('an order at the current mix: its creates, delivering reads, price reads and polls over its creates', () => {
    const c = keyCapacity(rule, { create: 10, deliver: 8, price: 3, poll: 2, sync: 4, reconcile: 11 }, 3);
    expect(c.requestsPerOrder).toBe(2.3);
    // (57 − 4 − 11) / 2.3 per 61.2 s
    expect(c.ordersPerMinute).toBe(Math.round((42 / 2.3) * (60 / 61.2) * 10) / 10);
    expect(c.requestsPerMinute).toBe(55.9);
  });

  it('what reconciliation takes: its grants of the window, its share, and the finished orders a day it keeps the full schedule of', () => {
    const c = keyCapacity(rule, { reconcile: 7 }, 3);
    expect(c.reconcile).toEqual({
      lastWindow: 7,
      limitPerWindow: 11,
      limitPerMinute: 10.8,
      ordersPerDayFullSchedule: Math.floor((11 * 86_400_000) / 61_200 / 3),
    });
    expect(keyCapacity(rule, {}, null).reconcile.ordersPerDayFullSchedule).toBeNull();
    // one step: three times the orders of three
    expect(keyCapacity(rule, {}, 1).reconcile.ordersPerDayFullSchedule).toBe(Math.floor((11 * 86_400_000) / 61_200));
  });

  it('without a create in the window the cost is not known', () => {
    expect(keyCapacity(rule, { poll: 5, reconcile: 3 }, 3)).toMatchObject({ requestsPerOrder: null, ordersPerMinute: null });
  });

  it('a window that sync and reconciliation fill leaves no room', () => {
    expect(keyCapacity(rule, { create: 1, sync: 46, reconcile: 11 }, 3).ordersPerMinute).toBe(0);
  });
});
