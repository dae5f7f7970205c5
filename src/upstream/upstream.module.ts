import { Global, Module } from '@nestjs/common';
import { BudgetModule } from '../budget/budget.module.js';
import { UpstreamBudgetService } from '../budget/upstream-budget.service.js';
import { AppConfig } from '../config/app-config.js';
import { Metrics } from '../ops/metrics.service.js';
import { BudgetedUpstreamClient } from './budgeted-upstream.client.js';
import { UpstreamHttpClient } from './upstream-http.adapter.js';
import { UpstreamClient } from './upstream.client.js';

/**
 * Binds the upstream port to the budgeted client (src/budget's request budget, UPSTREAM_RATE_LIMIT)
 * over the HTTP adapter, configured from §3/§4. The adapter is a provider of its own so that Nest runs
 * its shutdown hook (it closes the kept-alive sockets last).
 */
@Global()
@Module({
  imports: [BudgetModule],
  providers: [
    {
      provide: UpstreamHttpClient,
      inject: [AppConfig, Metrics],
      useFactory: (config: AppConfig, metrics: Metrics) => {
        if (!config.upstream.baseUrl) throw new Error('upstream base URL is not known (sandbox not started?)');
        return new UpstreamHttpClient({
          baseUrl: config.upstream.baseUrl,
          apiKey: config.upstream.apiKey,
          apiSecret: config.upstream.apiSecret,
          headerPrefix: config.upstream.headerPrefix,
          signatureTemplate: config.upstream.signatureTemplate,
          timeoutMs: config.upstream.timeoutMs,
          onCall: (e) => {
            metrics.upstreamCalls.inc({ operation: e.operation, outcome: e.outcome });
            metrics.upstreamLatency.observe({ operation: e.operation }, e.durationMs / 1000);
          },
        });
      },
    },
    {
      provide: UpstreamClient,
      inject: [UpstreamHttpClient, UpstreamBudgetService],
      useFactory: (http: UpstreamHttpClient, budget: UpstreamBudgetService) => new BudgetedUpstreamClient(http, budget),
    },
  ],
  exports: [UpstreamClient],
})
export class UpstreamModule {}
