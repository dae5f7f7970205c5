import { Global, Module } from '@nestjs/common';
import { UpstreamBudgetRepository } from './upstream-budget.repository.js';

/**
 * The ledger of the upstream request budgets (every supplier's key, shared by the replicas). The
 * budgets themselves are built per supplier by the SupplierRegistry (src/suppliers); the env
 * supplier's is bound to `UpstreamBudgetService` by the SuppliersModule.
 */
@Global()
@Module({
  providers: [UpstreamBudgetRepository],
  exports: [UpstreamBudgetRepository],
})
export class BudgetModule {}
