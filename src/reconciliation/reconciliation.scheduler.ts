/**
 * The scheduled reconciliation of each instance (RECONCILE_AFTER): every tick it plans the orders that
 * finished since (their first read), then claims due reads (FOR UPDATE SKIP LOCKED and a lease on
 * `reconcile_at`, so replicas share the work and an order is read by one of them) and makes them, a
 * batch at a time, at the lowest class of the request budget. A full batch brings the next pass at
 * once; errors are logged and the next tick tries again. Off with RECONCILE_AFTER=off and in the
 * `relay` command's in-process instance (no background work).
 */
import { Injectable, Logger, type OnApplicationBootstrap, type OnModuleDestroy } from '@nestjs/common';
import { Clock } from '../common/clock.js';
import { LoopProgress, type LoopProgressView } from '../common/loop-progress.js';
import { WakeLoop } from '../common/wake-loop.js';
import { AppConfig } from '../config/app-config.js';
import { reconcileTickMs } from './reconcile-plan.js';
import { ReconciliationRepository } from './reconciliation.repository.js';
import { ReconciliationService } from './reconciliation.service.js';

/** Orders planned a statement. */
const PLAN_BATCH = 200;
/** Scheduled reads claimed and made together (they wait their turn in the budget). */
const READ_BATCH = 4;
/** Claims a pass makes at most before it gives the tick back. */
const READ_ROUNDS = 10;

@Injectable()
export class ReconciliationScheduler implements OnApplicationBootstrap, OnModuleDestroy {
  private readonly logger = new Logger('reconciliation');
  /** The passes: the next at once while more may be due, else a tick later. */
  private readonly loop = new WakeLoop(
    () => this.tick(),
    (backlog) => (backlog ? 0 : this.tickMs),
  );
  /** Aborted at shutdown: ends the reads in flight (their orders are due again at once). */
  private readonly shutdown = new AbortController();
  private readonly passCount = new LoopProgress();

  constructor(
    private readonly config: AppConfig,
    private readonly clock: Clock,
    private readonly service: ReconciliationService,
    private readonly repo: ReconciliationRepository,
  ) {}

  /** Passes (tick) begun and ended since the start: for tests and tools (see LoopProgress). */
  get passes(): LoopProgressView {
    return this.passCount;
  }

  get tickMs(): number {
    return reconcileTickMs(this.config.reconcile.afterMs ?? []);
  }

  onApplicationBootstrap(): void {
    if (!this.config.workers || this.config.reconcile.afterMs === null) return;
    this.loop.start();
  }

  async onModuleDestroy(): Promise<void> {
    const passEnded = this.loop.stop();
    this.shutdown.abort();
    await passEnded;
  }

  private get stopped(): boolean {
    return this.loop.stopped;
  }

  /**
   * One pass: plans the newly finished orders, then makes at most READ_ROUNDS batches of due reads.
   * True when more may be due (the last claim or plan was full). Public for tests and tools; errors are
   * logged, never thrown.
   */
  tick(): Promise<boolean> {
    return this.passCount.run(() => this.pass());
  }

  private async pass(): Promise<boolean> {
    try {
      let planned = PLAN_BATCH;
      for (let round = 0; round < READ_ROUNDS && planned === PLAN_BATCH && !this.stopped; round++)
        planned = await this.service.planFinished(PLAN_BATCH);
      let claimed = 0;
      for (let round = 0; round < READ_ROUNDS && !this.stopped; round++) {
        const now = this.clock.now();
        const claims = await this.repo.claimDue(now, new Date(now.getTime() + this.service.claimLeaseMs), READ_BATCH);
        claimed = claims.length;
        await Promise.all(
          claims.map((c) =>
            this.service.reconcileClaimed(c, this.shutdown.signal).catch((e: Error) => {
              if (!this.stopped)
                this.logger.error({ msg: `order ${c.shopOrderNo}: reconciliation failed: ${e.message}`, shop_order_no: c.shopOrderNo });
            }),
          ),
        );
        if (claimed < READ_BATCH) break;
      }
      return !this.stopped && (claimed === READ_BATCH || planned === PLAN_BATCH);
    } catch (e) {
      if (!this.stopped) this.logger.error({ msg: `reconciliation pass failed: ${(e as Error).message}` });
      return false;
    }
  }
}
