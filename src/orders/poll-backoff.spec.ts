import { loadConfig } from '../config/app-config.js';
import { CALLBACK_MOVE_SLACK, CALLBACK_POLL_FACTOR, callbackNextPoll, nextPollInterval, pollPace } from './poll-backoff.js';

/** The waits of `polls` polls in a row, each with the given progress, starting from no wait. */
function waits(progress: boolean[], orders: { pollBaseMs: number; pollMaxMs: number }): number[] {
  const out: number[] = [];
  let last: number | null = null;
  for (const p of progress) out.push((last = nextPollInterval(last, p, orders)));
  return out;
}

describe('polling backoff of an unfinished order (ORDER_POLL_BASE_MS / ORDER_POLL_MAX_MS)', () => {
  const defaults = loadConfig({ NODE_ENV: 'test' }).orders;

  it('defaults to 5 s and 10 min', () => {
    expect(defaults).toMatchObject({ pollBaseMs: 5000, pollMaxMs: 600000 });
  });

  it('doubles the wait after each poll without progress, up to the max', () => {
    expect(waits(Array(10).fill(false), defaults)).toEqual([10000, 20000, 40000, 80000, 160000, 320000, 600000, 600000, 600000, 600000]);
  });

  it('follows the configured base and max', () => {
    const orders = loadConfig({ NODE_ENV: 'test', ORDER_POLL_BASE_MS: '1000', ORDER_POLL_MAX_MS: '7000' }).orders;
    expect(waits([true, false, false, false, false], orders)).toEqual([1000, 2000, 4000, 7000, 7000]);
  });

  it('starts again from the base after a poll that brought progress', () => {
    expect(waits([false, false, false, true, false], defaults)).toEqual([10000, 20000, 40000, 5000, 10000]);
  });

  it('never waits less than the base, whatever was stored before', () => {
    expect(nextPollInterval(10, false, defaults)).toBe(5000);
    expect(nextPollInterval(10_000_000, false, defaults)).toBe(600000);
  });
});

describe('the poll pace of an order that expects callbacks', () => {
  const orders = { pollBaseMs: 5000, pollMaxMs: 600_000 };

  it('is the configured pace without callbacks', () => {
    expect(pollPace(orders, false)).toEqual(orders);
  });

  it('starts later and backs off further with callbacks', () => {
    const pace = pollPace(orders, true);
    expect(pace).toEqual({ pollBaseMs: 5000 * CALLBACK_POLL_FACTOR.base, pollMaxMs: 600_000 * CALLBACK_POLL_FACTOR.max });
    expect(nextPollInterval(null, true, pace)).toBeGreaterThan(nextPollInterval(null, true, orders));
    expect(nextPollInterval(10 ** 9, false, pace)).toBeGreaterThan(nextPollInterval(10 ** 9, false, orders));
  });
});

describe('the next poll after a callback applied as the upstream word', () => {
  const now = new Date('2026-01-01T00:00:00.000Z');
  const wait = 30_000;
  const at = (ms: number) => new Date(now.getTime() + ms);

  it('moves to the wait from now when none is set or it comes sooner than the slack allows', () => {
    expect(callbackNextPoll(null, now, wait)).toEqual(at(wait));
    expect(callbackNextPoll(at(0), now, wait)).toEqual(at(wait));
    expect(callbackNextPoll(at(wait * (1 - CALLBACK_MOVE_SLACK) - 1), now, wait)).toEqual(at(wait));
  });

  it('stays where it is (nothing to write) when it is already within the slack of that, or later', () => {
    expect(callbackNextPoll(at(wait * (1 - CALLBACK_MOVE_SLACK)), now, wait)).toBeNull();
    // a callback right behind the create's answer, which set the next poll a wait away
    expect(callbackNextPoll(at(wait - 15), now, wait)).toBeNull();
    expect(callbackNextPoll(at(wait * 4), now, wait)).toBeNull();
  });
});
