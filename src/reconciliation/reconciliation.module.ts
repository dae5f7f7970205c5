import { Module } from '@nestjs/common';
import { OrdersModule } from '../orders/orders.module.js';
import { ReconciliationController } from './reconciliation.controller.js';
import { ReconciliationRepository } from './reconciliation.repository.js';
import { ReconciliationScheduler } from './reconciliation.scheduler.js';
import { ReconciliationService } from './reconciliation.service.js';

/** Reconciliation: finished orders read again from the upstream, on a schedule and on demand (issue 25). */
@Module({
  imports: [OrdersModule],
  controllers: [ReconciliationController],
  providers: [ReconciliationRepository, ReconciliationService, ReconciliationScheduler],
})
export class ReconciliationModule {}
