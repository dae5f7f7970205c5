import { Controller, Get, Header, Logger } from '@nestjs/common';
import { ApiOkResponse, ApiOperation, ApiProduces, ApiTags } from '@nestjs/swagger';
import { Metrics } from './metrics.service.js';
import { METRICS_EXAMPLE } from './ops.api-examples.js';

/** `GET /metrics` (no token): Prometheus text exposition, every name prefixed `relay_`. */
@ApiTags('ops')
@Controller('metrics')
export class MetricsController {
  private readonly logger = new Logger('metrics');

  constructor(private readonly metrics: Metrics) {}

  @Get()
  @Header('content-type', 'text/plain; version=0.0.4; charset=utf-8')
  @Header('cache-control', 'no-store')
  @ApiOperation({ summary: 'Prometheus metrics', description: 'Text exposition format 0.0.4; every metric is named `relay_…`.' })
  @ApiProduces('text/plain')
  @ApiOkResponse({ description: 'the metrics', schema: { type: 'string' }, example: METRICS_EXAMPLE })
  async get(): Promise<string> {
    // Gauges read from tables (orders by status, the outbox backlog), on any instance, workers or not.
    for (const e of await this.metrics.beforeScrape()) this.logger.debug({ msg: `a gauge could not be refreshed: ${e.message}` });
    return this.metrics.registry.metrics();
  }
}
