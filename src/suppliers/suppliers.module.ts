import { Global, Module } from '@nestjs/common';
import { BudgetModule } from '../budget/budget.module.js';
import { UpstreamBudgetService } from '../budget/upstream-budget.service.js';
import { SupplierRegistry } from './supplier-registry.service.js';
import { MonitorSupplierStatus } from '../ops/monitor-supplier-status.js';
import { SupplierStatusSource } from './supplier-status.source.js';
import { SupplierRepository } from './supplier.repository.js';
import { SupplierService } from './supplier.service.js';
import { SuppliersController } from './suppliers.controller.js';

/**
 * The suppliers (CONTRACT §10): the registry of each one's configuration, budget and upstream client,
 * and their table. Global: every module that reaches an upstream asks the registry for the supplier's
 * parts. `UpstreamBudgetService` is bound to the env supplier's budget. `/internal/suppliers` adds,
 * changes and deletes them; what it shows of each one's state comes from `SupplierStatusSource`.
 */
@Global()
@Module({
  imports: [BudgetModule],
  controllers: [SuppliersController],
  providers: [
    SupplierRepository,
    SupplierRegistry,
    SupplierService,
    // (the operations module is global: its state of each supplier)
    { provide: SupplierStatusSource, useExisting: MonitorSupplierStatus },
    { provide: UpstreamBudgetService, inject: [SupplierRegistry], useFactory: (registry: SupplierRegistry) => registry.env.budget },
  ],
  exports: [SupplierRepository, SupplierRegistry, UpstreamBudgetService],
})
export class SuppliersModule {}
