/**
 * A background loop whose passes run one at a time on a timer: the timer loop of the service's
 * periodic work (the order poller and its sweep, the order queue, the callback inbox, the webhook
 * sender's delivery cycles, retention, the periodic ping, the reconciliation schedule, the suppliers'
 * reload).
 * After each pass, `next(result, woken)` gives the delay before the following one; `woken` says that
 * `wake()` was called while the pass ran. `wake()` between passes runs the next one now. `stop()`
 * ends the loop (no pass starts after it) and resolves once the running pass, if any, has ended.
 * A pass must not reject: it reports its own errors.
 */
export class WakeLoop<R> {
  private timer: NodeJS.Timeout | null = null;
  private running: Promise<void> | null = null;
  private again = false;
  private ended = false;

  constructor(
    private readonly pass: () => Promise<R>,
    private readonly next: (result: R, woken: boolean) => number,
  ) {}

  /** stop() was called. */
  get stopped(): boolean {
    return this.ended;
  }

  /** The first pass after `ms`. */
  start(ms = 0): void {
    this.schedule(ms);
  }

  /**
   * The first pass now, begun within this call (for work that must be under way once its start hook
   * has returned); nothing when the loop has a pass running or scheduled, or has stopped.
   */
  startNow(): void {
    if (this.ended || this.running || this.timer) return;
    this.runPass();
  }

  wake(): void {
    if (this.ended) return;
    if (this.running) {
      this.again = true;
      return;
    }
    this.schedule(0);
  }

  stop(): Promise<void> {
    this.ended = true;
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    return this.running ?? Promise.resolve();
  }

  private schedule(ms: number): void {
    if (this.ended) return;
    if (this.timer) clearTimeout(this.timer);
    this.timer = setTimeout(() => {
      this.timer = null;
      this.runPass();
    }, ms);
    this.timer.unref?.();
  }

  private runPass(): void {
    this.running = this.pass().then((result) => {
      this.running = null;
      const woken = this.again;
      this.again = false;
      this.schedule(this.next(result, woken));
    });
  }
}
