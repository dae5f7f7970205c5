import { Global, Module } from '@nestjs/common';
import { NotificationsModule } from '../notifications/notifications.module.js';
import { AlertService } from './alert.service.js';
import { HealthController } from './health.controller.js';
import { HealthService } from './health.service.js';
import { MetricsController } from './metrics.controller.js';
import { UpstreamMonitor } from './upstream-monitor.service.js';

/**
 * Operations: health, metrics, the periodic upstream ping and alerts. Global so that the other
 * modules may inject `AlertService` (and `UpstreamMonitor` for the last ping) without importing it.
 */
@Global()
@Module({
  imports: [NotificationsModule],
  controllers: [HealthController, MetricsController],
  providers: [AlertService, UpstreamMonitor, HealthService],
  exports: [AlertService, UpstreamMonitor],
})
export class OpsModule {}
