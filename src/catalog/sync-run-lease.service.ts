/**
 * This process's claim on a catalog sync run, one run at a time per supplier across replicas (runs of
 * two suppliers share nothing: no lock, no timer). The run row is the
 * claim: it is taken by inserting it as running (after failing an abandoned one, see SyncRunRepository),
 * renewed by a heartbeat (the database's clock) and by every write of the run's counters, and the
 * run's end is recorded on it as its owner.
 *
 * A run that finds its row gone (another process recovered it as abandoned) or cannot renew it for
 * CLAIM_LOST_AFTER_MS loses its claim: its abort signal fires, it stops at once, unlists nothing more,
 * and is recorded failed with the reason.
 */
import { randomBytes } from 'node:crypto';
import { Injectable, Logger } from '@nestjs/common';
import { DataSource, type EntityManager } from 'typeorm';
import { AppError } from '../common/app-error.js';
import { backoffMs, type Backoff } from '../common/backoff.js';
import { Clock } from '../common/clock.js';
import { AlertService, type AfterCommit } from '../ops/alert.service.js';
import { AbortedError, sleep } from './product-pager.js';
import type { PassMode } from './sync-plan.js';
import { message } from './sync-run-state.js';
import { SyncRunRepository, type NewRun, type RunCounters } from './sync-run.repository.js';

/** A running row without a heartbeat for this long (by the database's clock) belongs to a process that stopped. */
export const STALE_RUN_MS = 60_000;
const HEARTBEAT_MS = 5_000;
/**
 * A run whose heartbeat has not been written for this long stops itself: from STALE_RUN_MS on, another
 * process may recover its row and start a run of its own, and two runs must never go on at once.
 */
export const CLAIM_LOST_AFTER_MS = STALE_RUN_MS / 2;

/** The waits between the tries of recording a run's end: 0.4 s, doubling to 3.2 s (five tries). */
const FINISH_RETRY: Backoff = { baseMs: 400, maxMs: 3200 };

/** This process's hold on one run (its row). */
export interface RunClaim {
  readonly runId: string;
  /** The run's stop signal: aborted when the claim is lost. */
  readonly abort: AbortController;
  /** The run's counters, written with every heartbeat. */
  readonly counters: RunCounters;
  /** Why this process no longer holds the run, once it knows: the run stops. */
  lost: string | null;
  /** When (performance.now()) the run row was last written as running by this process. */
  heldAt: number;
  /** A heartbeat of the timer is under way. */
  beating: boolean;
}

/** How a run ended, as recorded on its row. */
export interface RunEnd {
  status: 'succeeded' | 'failed';
  error: string | null;
}

@Injectable()
export class SyncRunLease {
  private readonly logger = new Logger('catalog-sync');
  /** This process, as the owner of the runs it starts. */
  readonly instanceId = `${process.pid}-${randomBytes(3).toString('hex')}`;
  /** The heartbeat of a run, and how long it may fail before the run stops (a test shortens them). */
  timing = { heartbeatMs: HEARTBEAT_MS, lostAfterMs: CLAIM_LOST_AFTER_MS };

  constructor(
    private readonly clock: Clock,
    private readonly dataSource: DataSource,
    private readonly runs: SyncRunRepository,
    private readonly alerts: AlertService,
  ) {}

  /**
   * Takes the run: inserts its row as running, owned by this process. A running row whose heartbeat
   * stopped is failed first (never `own`, the run this process is executing, however late its
   * heartbeat). Throws AppError 409 `sync_in_progress` (with `run_id`) when a run of the same supplier
   * is running anywhere.
   */
  async claim(row: Omit<NewRun, 'owner'>, own: string | null, run: { abort: AbortController; counters: RunCounters }): Promise<RunClaim> {
    for (let attempt = 0; ; attempt++) {
      if (await this.runs.tryInsertRunning({ ...row, owner: this.instanceId })) break;
      const recovered = await this.recoverAbandoned(row.supplier, row.startedAt, own);
      if (recovered) {
        this.logger.warn(`sync run ${recovered} was abandoned (no heartbeat for ${STALE_RUN_MS / 1000} s): marked failed`);
        continue;
      }
      const running = await this.runs.running(row.supplier);
      if (running) {
        throw new AppError('sync_in_progress', `a catalog sync of ${row.supplier} is already running (${running.run_id})`, {
          run_id: running.run_id,
        });
      }
      if (attempt >= 3) throw new AppError('sync_in_progress', `a catalog sync of ${row.supplier} is already running`, { run_id: null });
    }
    return { runId: row.runId, abort: run.abort, counters: run.counters, lost: null, heldAt: performance.now(), beating: false };
  }

  /** Starts the heartbeat of the run's timer; returns the function that stops it. */
  startHeartbeat(claim: RunClaim): () => void {
    const timer = setInterval(() => void this.beat(claim), this.timing.heartbeatMs);
    timer.unref();
    return () => clearInterval(timer);
  }

  /**
   * Writes the run's counters and heartbeat, as its owner, while it is running; throws AbortedError
   * (and stops the run) when this process no longer holds it.
   */
  async hold(claim: RunClaim): Promise<void> {
    if (claim.lost === null) {
      if ((await this.runs.heartbeat(claim.runId, this.instanceId, claim.counters)) > 0) claim.heldAt = performance.now();
      else this.lose(claim, 'another process recovered it as abandoned');
    }
    if (claim.lost !== null) throw new AbortedError(`lost its claim: ${claim.lost}`);
  }

  /**
   * Records the run's new pass mode (and why), as its owner; throws AbortedError (and stops the run)
   * when this process no longer holds it.
   */
  async setMode(claim: RunClaim, mode: PassMode, fallback: string | null): Promise<void> {
    if ((await this.runs.setMode(claim.runId, this.instanceId, mode, fallback)) === 0)
      this.lose(claim, 'another process recovered it as abandoned');
    if (claim.lost !== null) throw new AbortedError(`lost its claim: ${claim.lost}`);
  }

  /** The error a run that lost its claim is recorded with. */
  lostError(claim: RunClaim): string {
    const delisted = claim.counters.skusDelisted;
    return (
      `lost its claim on the run: ${claim.lost ?? 'unknown'}; stopped, ` +
      `${delisted === 0 ? 'nothing was unlisted' : `nothing unlisted after that (${delisted} SKUs before)`}`
    );
  }

  /**
   * Records the end of a run, even through a passing database hiccup (else it would block runs until
   * it is stale); a failure raises `sync_failed` (AlertService) in the same transaction, its log line
   * and metric once that has committed. Returns the end recorded: failed, whatever the run made of it,
   * when this process no longer held the run.
   */
  async finish(claim: RunClaim, end: RunEnd & { mode: PassMode; note: string }): Promise<RunEnd> {
    for (let attempt = 1; ; attempt++) {
      try {
        return await this.recordEnd(claim, end);
      } catch (e) {
        if (attempt >= 5) {
          this.logger.error(`could not record the end of sync run ${claim.runId}: ${message(e)}`);
          return { status: end.status, error: end.error };
        }
        await sleep(backoffMs(attempt - 1, FINISH_RETRY));
      }
    }
  }

  /**
   * The heartbeat of the timer. A failure is logged; once none has been written for
   * CLAIM_LOST_AFTER_MS (failing, or hanging), the run stops before another process may take it over.
   */
  private async beat(claim: RunClaim): Promise<void> {
    if (claim.lost !== null) return;
    const silentMs = performance.now() - claim.heldAt;
    if (silentMs >= this.timing.lostAfterMs) {
      this.lose(
        claim,
        `its heartbeat could not be written for ${Math.round(silentMs / 1000)} s (another process may recover it after ` +
          `${STALE_RUN_MS / 1000} s)`,
      );
      return;
    }
    if (claim.beating) return;
    claim.beating = true;
    try {
      if ((await this.runs.heartbeat(claim.runId, this.instanceId, claim.counters)) > 0) claim.heldAt = performance.now();
      else this.lose(claim, 'another process recovered it as abandoned');
    } catch (e) {
      this.logger.warn(`heartbeat of sync run ${claim.runId} failed: ${message(e)}`);
    } finally {
      claim.beating = false;
    }
  }

  /** This process no longer holds the run: it stops at once. */
  private lose(claim: RunClaim, why: string): void {
    if (claim.lost !== null) return;
    claim.lost = why;
    this.logger.error(`sync run ${claim.runId} lost its claim: ${why}; stopping it`);
    claim.abort.abort();
  }

  /**
   * Fails a running run that lost its heartbeat (its process stopped), never `own`, and raises
   * `sync_failed` for it in the same transaction (log line and metric after the commit), as for a run
   * that fails by itself. Returns its id, if there was one.
   */
  private async recoverAbandoned(supplier: string, now: Date, own: string | null): Promise<string | null> {
    const recovered = await this.withAfterCommit(async (em, afterCommit) => {
      const run = await this.runs.recoverStale(supplier, STALE_RUN_MS, now, own, em);
      if (run) await this.alerts.syncFailed({ runId: run.runId, mode: run.mode, error: run.error, failedAt: now }, em, afterCommit);
      return run;
    });
    return recovered?.runId ?? null;
  }

  /** One attempt of finish. */
  private async recordEnd(claim: RunClaim, { status, error, mode, note }: RunEnd & { mode: PassMode; note: string }): Promise<RunEnd> {
    const now = this.clock.now();
    return this.withAfterCommit(async (em, afterCommit) => {
      let end: RunEnd = { status, error };
      let recorded = await this.runs.finish(em, claim.runId, this.instanceId, { status, counters: claim.counters, error, note, now });
      if (recorded === 0) {
        // Another process recovered the row as abandoned (and may run its own run now): this run's end
        // is recorded on its row as a failure, without making it running or succeeded again.
        claim.lost ??= 'another process recovered it as abandoned before its end was recorded';
        const lost = this.lostError(claim);
        end = { status: 'failed', error: lost };
        recorded = await this.runs.finishLost(em, claim.runId, this.instanceId, { counters: claim.counters, error: lost, note });
      }
      if (end.status === 'failed' && recorded > 0) {
        await this.alerts.syncFailed({ runId: claim.runId, mode, error: end.error, failedAt: now }, em, afterCommit);
      }
      return end;
    });
  }

  /**
   * Runs `work` in a transaction; the effects it hands to `afterCommit` (an alert's log line and
   * metric) run once the transaction has committed, and not at all when it rolls back.
   */
  private async withAfterCommit<T>(work: (em: EntityManager, afterCommit: AfterCommit) => Promise<T>): Promise<T> {
    const effects: Array<() => void> = [];
    const result = await this.dataSource.transaction((em) => work(em, (effect) => effects.push(effect)));
    for (const effect of effects) effect();
    return result;
  }
}
