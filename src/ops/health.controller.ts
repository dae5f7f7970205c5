import { Controller, Get, Res } from '@nestjs/common';
import { ApiOkResponse, ApiOperation, ApiServiceUnavailableResponse, ApiTags } from '@nestjs/swagger';
import type { FastifyReply } from 'fastify';
import { HealthService } from './health.service.js';
import { HEALTH_DOWN_EXAMPLE, HEALTH_EXAMPLE, HEALTH_SCHEMA, LIVE_SCHEMA, NOT_READY_EXAMPLE, READY_EXAMPLE, READY_SCHEMA } from './ops.api-examples.js';

/**
 * `GET /health` (no token): `{ok, status, database, upstream, last_sync, wallet?}`, 503 when the
 * database is down; `GET /health/live` and `GET /health/ready` for an orchestrator.
 */
@ApiTags('ops')
@Controller('health')
export class HealthController {
  constructor(private readonly health: HealthService) {}

  @Get()
  @ApiOperation({
    summary: 'Health',
    description:
      'The database (503 when it is down), the upstream as the last periodic ping saw it (`up`, `down`, `unknown`; pinged ' +
      'every 30 s by instances running background work, never during this request), the latest catalog sync run, and the ' +
      'wallet from the last successful ping. `ok` is the database: an unreachable upstream does not make the service unhealthy.',
  })
  @ApiOkResponse({ description: 'the database answers', schema: HEALTH_SCHEMA, example: HEALTH_EXAMPLE })
  @ApiServiceUnavailableResponse({ description: 'the database is down (the same shape, `ok: false`)', schema: HEALTH_SCHEMA, example: HEALTH_DOWN_EXAMPLE })
  async get(@Res({ passthrough: true }) reply: FastifyReply) {
    const body = await this.health.health();
    if (!body.ok) void reply.status(503);
    return body;
  }

  @Get('live')
  @ApiOperation({ summary: 'Liveness', description: 'The process answers. Always 200 `{ok: true}`.' })
  @ApiOkResponse({ description: 'alive', schema: LIVE_SCHEMA, example: { ok: true } })
  live() {
    return { ok: true };
  }

  @Get('ready')
  @ApiOperation({
    summary: 'Readiness',
    description: 'The database answers and every migration of this build is applied, and the instance is not shutting down; 503 otherwise.',
  })
  @ApiOkResponse({ description: 'ready', schema: READY_SCHEMA, example: READY_EXAMPLE })
  @ApiServiceUnavailableResponse({ description: 'not ready (the same shape, `ok: false`)', schema: READY_SCHEMA, example: NOT_READY_EXAMPLE })
  async ready(@Res({ passthrough: true }) reply: FastifyReply) {
    const body = await this.health.ready();
    if (!body.ok) void reply.status(503);
    return body;
  }
}
