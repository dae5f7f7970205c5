import { Clock } from '../../src/common/clock.js';

/** The wall clock plus an offset that only grows: a test moves the service's time forward (`advance`). */
export class TestClock extends Clock {
  private offsetMs = 0;

  now(): Date {
    return new Date(Date.now() + this.offsetMs);
  }

  advance(ms: number): void {
    this.offsetMs += ms;
  }
}
