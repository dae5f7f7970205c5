import { Global, Module } from '@nestjs/common';
import { NotificationsModule } from '../notifications/notifications.module.js';
import { OrdersModule } from '../orders/orders.module.js';
import { ReconciliationRepository } from '../reconciliation/reconciliation.repository.js';
import { AlertService } from './alert.service.js';
import { FailoversController } from './failovers.controller.js';
import { FailoversRepository } from './failovers.repository.js';
import { HealthController } from './health.controller.js';
import { HealthService } from './health.service.js';
import { MetricsController } from './metrics.controller.js';
import { MonitorSupplierStatus } from './monitor-supplier-status.js';
import { HealthRepository } from './health.repository.js';
import { OpsStateRepository } from './ops-state.repository.js';
import { UpstreamMonitor } from './upstream-monitor.service.js';

/**
 * Operations: health, metrics, the periodic upstream ping and alerts. Global so that the other
 * modules may inject `AlertService` (and `UpstreamMonitor` for the last ping, `MonitorSupplierStatus` for
 * a supplier's state as the suppliers API shows it) without importing it.
 * It imports the orders for what /health reads of them (the queued orders) through their repository,
 * reads each supplier's last sync run itself (HealthRepository) and the reconciliation's backlog
 * through the reconciliation's repository (a provider of its own here: it holds no state). The offer
 * orders' failovers by reason (`GET /internal/offer-failovers`, for the dashboard) are read from their
 * events (FailoversRepository).
 */
@Global()
@Module({
  imports: [NotificationsModule, OrdersModule],
  controllers: [HealthController, MetricsController, FailoversController],
  providers: [
    AlertService,
    UpstreamMonitor,
    HealthService,
    OpsStateRepository,
    HealthRepository,
    ReconciliationRepository,
    MonitorSupplierStatus,
    FailoversRepository,
  ],
  exports: [AlertService, UpstreamMonitor, MonitorSupplierStatus],
})
export class OpsModule {}
