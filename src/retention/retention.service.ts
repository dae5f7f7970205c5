/**
 * The retention job (README, "Retention"): when `config.workers` is on and RETENTION_DAYS is not
 * `off`, once RETENTION_FIRST_RUN_DELAY_MS after the start and then every RETENTION_INTERVAL_MS, it
 * deletes the final rows older than RETENTION_DAYS of the tables in retention-policy.ts, then the
 * mirrored product images no product uses any more (after MEDIA_UNUSED_GRACE_MS).
 *
 * One run at a time across replicas: a run first takes the job's claim (RetentionRepository); an
 * instance that does not get it skips the run. The cutoff is read once from the database's clock. Each
 * table is then emptied of its old rows in batches of RETENTION_BATCH_SIZE, each one statement (its
 * own short transaction, no lock held between batches), the claim renewed before each; the run ends
 * when a batch deletes fewer rows than its size. Orders and everything attached to them are never
 * touched.
 *
 * Shutdown (onModuleDestroy, before TypeORM closes the pool at application shutdown): no new run, the
 * run in flight stops after its current batch and gives its claim back, and the hook waits for it, so
 * no query is sent once the pool is closed.
 */
import { Injectable, Logger, type OnApplicationBootstrap, type OnModuleDestroy } from '@nestjs/common';
import { randomUUID } from 'node:crypto';
import { WakeLoop } from '../common/wake-loop.js';
import { AppConfig } from '../config/app-config.js';
import { MediaRepository } from '../media/media.repository.js';
import { mediaSettings } from '../media/media-settings.js';
import { Metrics } from '../ops/metrics.service.js';
import {
  RETENTION_BATCH_SIZE,
  RETENTION_CLAIM_STALE_MS,
  RETENTION_FIRST_RUN_DELAY_MS,
  RETENTION_INTERVAL_MS,
  RETENTION_TABLES,
  describeDeleted,
  drain,
  noneDeleted,
  retentionCutoff,
  totalDeleted,
  type RetentionCounts,
} from './retention-policy.js';
import { RetentionRepository } from './retention.repository.js';

/**
 * How a run ended: `done` (every table drained), `skipped` (another instance holds the claim),
 * `disabled` (RETENTION_DAYS=off), `stopped` (the service is shutting down), `claim_lost` (its claim
 * was taken over as stale: it stopped before its next batch).
 */
export type RetentionOutcome = 'done' | 'skipped' | 'disabled' | 'stopped' | 'claim_lost';

export interface RetentionReport {
  outcome: RetentionOutcome;
  /** Rows older than this were deleted; null when the run did not start. */
  cutoff: Date | null;
  deleted: RetentionCounts;
  /** Mirrored images no product uses any more: their URLs and files deleted (a run that got that far). */
  media?: { sources: number; files: number };
}

/**
 * A mirrored image no product uses is deleted once it is this old: an image fetched while its product
 * is being written is never taken from under it.
 */
export const MEDIA_UNUSED_GRACE_MS = 3_600_000;

@Injectable()
export class RetentionService implements OnApplicationBootstrap, OnModuleDestroy {
  private readonly logger = new Logger('retention');
  /** Names this instance in its claims (for an operator looking at relay_state). */
  private readonly owner = `retention-${randomUUID()}`;
  /** The schedule: a run, then RETENTION_INTERVAL_MS until the next (WakeLoop). */
  private readonly loop = new WakeLoop<void>(
    () => {
      this.next = null;
      return this.runOnce().then(
        () => undefined,
        () => undefined, // logged by the run
      );
    },
    () => this.dueIn(RETENTION_INTERVAL_MS),
  );
  private next: Date | null = null;
  private stopping = false;
  private current: Promise<RetentionReport> | null = null;
  /** See MEDIA_UNUSED_GRACE_MS (a test sets 0). */
  mediaGraceMs = MEDIA_UNUSED_GRACE_MS;

  constructor(
    private readonly config: AppConfig,
    private readonly repo: RetentionRepository,
    private readonly metrics: Metrics,
    private readonly media: MediaRepository,
  ) {
    // every table's series from the start, at 0
    for (const table of RETENTION_TABLES) metrics.retentionDeletedRows.inc({ table }, 0);
  }

  /** True when this process runs the job on its schedule. */
  get enabled(): boolean {
    return this.config.workers && this.config.retention.days !== null;
  }

  /** When the next scheduled run is due; null when none is scheduled. */
  get nextRunAt(): Date | null {
    return this.next;
  }

  onApplicationBootstrap(): void {
    if (this.enabled) this.loop.start(this.dueIn(RETENTION_FIRST_RUN_DELAY_MS));
  }

  async onModuleDestroy(): Promise<void> {
    this.stopping = true;
    this.next = null;
    await Promise.all([this.loop.stop(), this.current?.catch(() => undefined)]);
  }

  /** Notes when the scheduled run after `ms` is due (`nextRunAt`) and gives the loop its delay. */
  private dueIn(ms: number): number {
    this.next = this.stopping ? null : new Date(Date.now() + ms);
    return ms;
  }

  /**
   * One run now (the schedule's, or a test's): resolves with what it deleted, or how it ended without
   * deleting. A call while this instance's run is in flight gets that run's report.
   */
  runOnce(): Promise<RetentionReport> {
    this.current ??= this.run().finally(() => {
      this.current = null;
    });
    return this.current;
  }

  private async run(): Promise<RetentionReport> {
    const days = this.config.retention.days;
    if (days === null) return { outcome: 'disabled', cutoff: null, deleted: noneDeleted() };
    if (this.stopping) return { outcome: 'stopped', cutoff: null, deleted: noneDeleted() };
    const token = randomUUID();
    let claimed: boolean;
    try {
      claimed = await this.repo.claim(token, this.owner, RETENTION_CLAIM_STALE_MS);
    } catch (e) {
      this.logger.warn({ msg: `retention run could not start: ${(e as Error).message}` });
      throw e;
    }
    if (!claimed) {
      this.logger.debug({ msg: 'retention run skipped: another instance is running it' });
      return { outcome: 'skipped', cutoff: null, deleted: noneDeleted() };
    }
    const started = performance.now();
    const deleted = noneDeleted();
    /** Why the run stopped before it was done, if it did. */
    const halt: { outcome: RetentionOutcome | null } = { outcome: null };
    const proceed = async (): Promise<boolean> => {
      if (this.stopping) halt.outcome = 'stopped';
      else if (!(await this.repo.renew(token))) halt.outcome = 'claim_lost';
      return halt.outcome === null;
    };
    let cutoff: Date | null = null;
    let media: RetentionReport['media'];
    try {
      const databaseNow = await this.repo.databaseNow();
      const runCutoff = retentionCutoff(databaseNow, days);
      cutoff = runCutoff;
      for (const table of RETENTION_TABLES) {
        const end = await drain((limit) => this.repo.deleteBatch(table, runCutoff, limit), {
          limit: RETENTION_BATCH_SIZE,
          proceed,
          onBatch: (n) => {
            deleted[table] += n;
            this.metrics.retentionDeletedRows.inc({ table }, n);
          },
        });
        if (end === 'stopped') break;
      }
      // Images no product and no category icon uses any more (their URLs, then the files no URL names).
      if (halt.outcome === null && (await proceed())) {
        media = await this.media.deleteUnused(new Date(databaseNow.getTime() - this.mediaGraceMs), mediaSettings(this.config).origin);
        this.metrics.retentionDeletedRows.inc({ table: 'media_sources' }, media.sources);
        this.metrics.retentionDeletedRows.inc({ table: 'media_files' }, media.files);
      }
    } catch (e) {
      this.logger.warn({
        msg: `retention run failed after deleting ${describeDeleted(deleted)}: ${(e as Error).message}`,
        deleted,
        cutoff: cutoff?.toISOString() ?? null,
      });
      await this.releaseClaim(token);
      throw e;
    }
    if (halt.outcome !== 'claim_lost') await this.releaseClaim(token);
    const report: RetentionReport = { outcome: halt.outcome ?? 'done', cutoff, deleted, ...(media ? { media } : {}) };
    this.log(report, Math.round(performance.now() - started));
    return report;
  }

  /** Gives the claim up; when that fails, it goes stale and another run takes it over later. */
  private async releaseClaim(token: string): Promise<void> {
    try {
      await this.repo.release(token);
    } catch (e) {
      this.logger.warn({
        msg: `retention: could not give the claim back (another run takes it over once it is stale): ${(e as Error).message}`,
      });
    }
  }

  private log(r: RetentionReport, durationMs: number): void {
    const fields = { outcome: r.outcome, cutoff: r.cutoff?.toISOString() ?? null, deleted: r.deleted, duration_ms: durationMs };
    const images = r.media && r.media.files + r.media.sources > 0 ? `; ${r.media.files} unused images (${r.media.sources} image URLs)` : '';
    const what = `retention run ${r.outcome}: deleted ${describeDeleted(r.deleted)} older than ${fields.cutoff}${images}`;
    if (r.outcome === 'claim_lost') this.logger.warn({ ...fields, msg: `${what}; its claim was taken over by another instance` });
    else if (totalDeleted(r.deleted) > 0 || images) this.logger.log({ ...fields, msg: what });
    else this.logger.debug({ ...fields, msg: what });
  }
}
