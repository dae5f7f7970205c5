import { backoffMs } from './backoff.js';

describe('backoffMs', () => {
  const policy = { baseMs: 20, maxMs: 200 };

  it('doubles from the base and stops at the max', () => {
    expect([0, 1, 2, 3, 4, 5].map((n) => backoffMs(n, policy))).toEqual([20, 40, 80, 160, 200, 200]);
  });

  it('takes a negative or fractional n as its floor at 0, and never overflows', () => {
    expect(backoffMs(-3, policy)).toBe(20);
    expect(backoffMs(1.9, policy)).toBe(40);
    expect(backoffMs(10_000, { baseMs: 1, maxMs: Number.MAX_SAFE_INTEGER })).toBe(2 ** 40);
  });
});
