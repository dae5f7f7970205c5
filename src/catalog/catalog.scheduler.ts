/**
 * Scheduled syncs: `SYNC_CRON` (a runtime expression, so a `cron` CronJob registered in the
 * SchedulerRegistry; `off` = none) and `SYNC_ON_START` (one run once the HTTP server listens, never
 * delaying startup). Each tick starts a run of every enabled supplier, each in its own slot: a
 * supplier whose run is still running anywhere is skipped, and no supplier's start waits for another's
 * (they are started one after the other without waiting for the runs, and a failure to start one is
 * logged and does not stop the others).
 */
import { Injectable, Logger, type OnApplicationBootstrap, type OnModuleDestroy } from '@nestjs/common';
import { HttpAdapterHost } from '@nestjs/core';
import { SchedulerRegistry } from '@nestjs/schedule';
import { CronJob } from 'cron';
import { AppError } from '../common/app-error.js';
import { AppConfig } from '../config/app-config.js';
import { SupplierRegistry } from '../suppliers/supplier-registry.service.js';
import { CatalogSyncService, type SyncTrigger } from './catalog-sync.service.js';

export const SYNC_CRON_JOB = 'catalog-sync';

@Injectable()
export class CatalogScheduler implements OnApplicationBootstrap, OnModuleDestroy {
  private readonly logger = new Logger('catalog-sync');
  private stopped = false;
  private startTimer: NodeJS.Immediate | null = null;
  private detachListening: (() => void) | null = null;

  constructor(
    private readonly config: AppConfig,
    private readonly registry: SchedulerRegistry,
    private readonly sync: CatalogSyncService,
    private readonly adapterHost: HttpAdapterHost,
    private readonly suppliers: SupplierRegistry,
  ) {}

  onApplicationBootstrap(): void {
    if (!this.config.workers) return; // the relay command's in-process instance schedules nothing
    const cron = this.config.sync.cron;
    if (cron !== null) {
      const job = CronJob.from({ cronTime: cron, onTick: () => this.trigger('schedule'), start: false });
      this.registry.addCronJob(SYNC_CRON_JOB, job);
      job.start();
      this.logger.log(`catalog sync scheduled: ${cron}`);
    }
    if (this.config.sync.onStart) this.afterListening(() => this.trigger('start'));
  }

  onModuleDestroy(): void {
    this.stopped = true;
    if (this.startTimer) clearImmediate(this.startTimer);
    this.detachListening?.();
    if (this.registry.doesExist('cron', SYNC_CRON_JOB)) {
      void this.registry.getCronJob(SYNC_CRON_JOB).stop();
      this.registry.deleteCronJob(SYNC_CRON_JOB);
    }
  }

  private afterListening(fn: () => void): void {
    const server = this.adapterHost.httpAdapter?.getHttpServer() as import('node:http').Server | undefined;
    const later = () => {
      this.startTimer = setImmediate(fn);
    };
    if (!server || server.listening) return later();
    server.once('listening', later);
    this.detachListening = () => server.off('listening', later);
  }

  private trigger(trigger: SyncTrigger): void {
    if (this.stopped) return;
    for (const { config } of this.suppliers.enabled()) this.triggerOne(trigger, config.name);
  }

  private triggerOne(trigger: SyncTrigger, supplier: string): void {
    this.sync.start({ trigger, supplier }).catch((e: unknown) => {
      if (e instanceof AppError && e.code === 'sync_in_progress') {
        this.logger.debug(`${trigger} sync of ${supplier} skipped: run ${String(e.extra.run_id)} is running`);
      } else {
        this.logger.warn(`${trigger} sync of ${supplier} could not start: ${e instanceof Error ? e.message : String(e)}`);
      }
    });
  }
}
