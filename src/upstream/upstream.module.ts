import { Global, Module } from '@nestjs/common';
import { AppConfig } from '../config/app-config.js';
import { Metrics } from '../ops/metrics.js';
import { UpstreamHttpClient } from './upstream-http.adapter.js';
import { UpstreamClient } from './upstream.client.js';

/** Binds the upstream port to its HTTP adapter, configured from §3/§4. */
@Global()
@Module({
  providers: [
    {
      provide: UpstreamClient,
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
  ],
  exports: [UpstreamClient],
})
export class UpstreamModule {}
