/**
 * How many passes of a background loop (the order poller, the callback inbox, the reconciliation
 * scheduler) have begun and ended since the start: for tests and tools, which wait for a loop to have
 * run a pass (a count, never a time) before they check what it did or did not do. Passes of one loop
 * run one at a time, so `ended >= begun-when-asked + n` means n whole passes begun after the question.
 */
export interface LoopProgressView {
  readonly begun: number;
  readonly ended: number;
}

export class LoopProgress implements LoopProgressView {
  private begunCount = 0;
  private endedCount = 0;

  get begun(): number {
    return this.begunCount;
  }

  get ended(): number {
    return this.endedCount;
  }

  /** Runs one pass, counted as begun now and as ended when it settles (resolved or rejected). */
  async run<T>(pass: () => Promise<T>): Promise<T> {
    this.begunCount++;
    try {
      return await pass();
    } finally {
      this.endedCount++;
    }
  }
}
