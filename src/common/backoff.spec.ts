import { backoffMs, doubledMs } from './backoff.js';

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

describe('doubledMs', () => {
  const policy = { baseMs: 20, maxMs: 200 };

  it('doubles the last wait within the bounds, from the base when there is none', () => {
    expect([null, 5, 20, 40, 80, 150, 200, 1000].map((last) => doubledMs(last, policy))).toEqual([40, 20, 40, 80, 160, 200, 200, 200]);
  });

  it('follows the same waits as backoffMs from the base', () => {
    let last = policy.baseMs;
    const walk = [last];
    for (let n = 1; n < 6; n++) walk.push((last = doubledMs(last, policy)));
    expect(walk).toEqual([0, 1, 2, 3, 4, 5].map((n) => backoffMs(n, policy)));
  });
});
