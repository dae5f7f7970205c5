import {
  WEBHOOK_BACKOFF,
  attemptOutcome,
  backoffDelayMs,
  failedCyclesAfter,
  isDelivered,
  nextCycleMs,
  type CycleCadence,
} from './webhook-backoff.js';

describe('webhook backoff', () => {
  it('doubles from the base up to the cap, without jitter', () => {
    const none = () => 0;
    const delays = Array.from({ length: 12 }, (_, i) => backoffDelayMs(i + 1, WEBHOOK_BACKOFF, none));
    expect(delays.slice(0, 6)).toEqual([10_000, 20_000, 40_000, 80_000, 160_000, 320_000]);
    expect(delays.slice(9)).toEqual([3_600_000, 3_600_000, 3_600_000]);
  });

  it('takes off at most the jitter fraction, at random', () => {
    expect(backoffDelayMs(1, WEBHOOK_BACKOFF, () => 1)).toBe(7_500);
    expect(backoffDelayMs(3, WEBHOOK_BACKOFF, () => 0.5)).toBe(35_000);
    const seen = new Set(Array.from({ length: 50 }, () => backoffDelayMs(2)));
    expect(seen.size).toBeGreaterThan(1);
    for (const d of seen) {
      expect(d).toBeGreaterThanOrEqual(15_000);
      expect(d).toBeLessThanOrEqual(20_000);
    }
  });

  it('grows strictly until the cap, whatever the jitter draws', () => {
    for (let n = 1; n < 9; n++) {
      const longestNow = backoffDelayMs(n, WEBHOOK_BACKOFF, () => 0);
      const shortestNext = backoffDelayMs(n + 1, WEBHOOK_BACKOFF, () => 1);
      expect(shortestNext).toBeGreaterThan(longestNow);
    }
  });

  it('treats a nonsense failure count as the first failure', () => {
    expect(backoffDelayMs(0, WEBHOOK_BACKOFF, () => 0)).toBe(10_000);
    expect(backoffDelayMs(-3, WEBHOOK_BACKOFF, () => 0)).toBe(10_000);
  });

  it('delivers on a 2xx, retries below the limit, gives up at it', () => {
    expect(attemptOutcome(true, 5, 5)).toEqual({ status: 'delivered' });
    expect(attemptOutcome(false, 1, 3, WEBHOOK_BACKOFF, () => 0)).toEqual({ status: 'pending', retryInMs: 10_000 });
    expect(attemptOutcome(false, 2, 3, WEBHOOK_BACKOFF, () => 0)).toEqual({ status: 'pending', retryInMs: 20_000 });
    expect(attemptOutcome(false, 3, 3)).toEqual({ status: 'dead' });
    expect(attemptOutcome(false, 1, 1)).toEqual({ status: 'dead' });
  });

  it('counts only 2xx as delivered', () => {
    expect(isDelivered(200)).toBe(true);
    expect(isDelivered(204)).toBe(true);
    expect(isDelivered(299)).toBe(true);
    expect(isDelivered(301)).toBe(false);
    expect(isDelivered(500)).toBe(false);
    expect(isDelivered(null)).toBe(false);
  });

  describe("the sender's wait between cycles", () => {
    const cadence: CycleCadence = { idleMs: 1_000, batch: 4, pause: { baseMs: 1_000, maxMs: 60_000 } };

    it('follows a full claim at once, a partial or empty one after the idle wait', () => {
      expect(nextCycleMs({ claimed: 4, delivered: 4 }, 0, false, cadence)).toBe(0);
      expect(nextCycleMs({ claimed: 2, delivered: 1 }, 0, false, cadence)).toBe(1_000);
      expect(nextCycleMs({ claimed: 0, delivered: 0 }, 0, false, cadence)).toBe(1_000);
    });

    it('rests 1 s, 2 s, 4 s, … 60 s while every delivery fails, and counts again from a cycle that delivered', () => {
      const failed = { claimed: 4, delivered: 0 };
      let inARow = 0;
      const waits: number[] = [];
      for (let i = 0; i < 8; i++) {
        inARow = failedCyclesAfter(inARow, failed);
        waits.push(nextCycleMs(failed, inARow, false, cadence));
      }
      expect(waits).toEqual([1_000, 2_000, 4_000, 8_000, 16_000, 32_000, 60_000, 60_000]);
      expect(failedCyclesAfter(inARow, { claimed: 0, delivered: 0 })).toBe(0);
      expect(failedCyclesAfter(inARow, { claimed: 3, delivered: 1 })).toBe(0);
    });

    it('runs the next cycle at once after a kick, even while resting a failing shop', () => {
      expect(nextCycleMs({ claimed: 4, delivered: 0 }, 5, true, cadence)).toBe(0);
      expect(nextCycleMs({ claimed: 0, delivered: 0 }, 0, true, cadence)).toBe(0);
    });
  });
});
