import { Global, Module } from '@nestjs/common';
import { CatalogModule } from '../catalog/catalog.module.js';
import { NotificationsModule } from '../notifications/notifications.module.js';
import { OrdersModule } from '../orders/orders.module.js';
import { AlertService } from './alert.service.js';
import { HealthController } from './health.controller.js';
import { HealthService } from './health.service.js';
import { MetricsController } from './metrics.controller.js';
import { OpsStateRepository } from './ops-state.repository.js';
import { UpstreamMonitor } from './upstream-monitor.service.js';

/**
 * Operations: health, metrics, the periodic upstream ping and alerts. Global so that the other
 * modules may inject `AlertService` (and `UpstreamMonitor` for the last ping) without importing it.
 * It imports the orders and the catalog for what /health reads of them (the queued orders, the last
 * sync run), through their repositories.
 */
@Global()
@Module({
  imports: [NotificationsModule, OrdersModule, CatalogModule],
  controllers: [HealthController, MetricsController],
  providers: [AlertService, UpstreamMonitor, HealthService, OpsStateRepository],
  exports: [AlertService, UpstreamMonitor],
})
export class OpsModule {}
