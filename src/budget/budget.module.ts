import { Global, Module } from '@nestjs/common';
import { UpstreamBudgetRepository } from './upstream-budget.repository.js';
import { UpstreamBudgetService } from './upstream-budget.service.js';

/**
 * The upstream request budget (UPSTREAM_RATE_LIMIT). Imported by the UpstreamModule, whose budgeted
 * client takes a token for every upstream call; global so that the services that need more than the
 * port (the upstream monitor, /health, the orders' queue) may inject `UpstreamBudgetService`. It
 * depends only on the core providers (config, clock, metrics) and the database.
 */
@Global()
@Module({
  providers: [UpstreamBudgetRepository, UpstreamBudgetService],
  exports: [UpstreamBudgetService],
})
export class BudgetModule {}
