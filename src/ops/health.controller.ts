import { Controller, Get, Res } from '@nestjs/common';
import { ApiOkResponse, ApiOperation, ApiServiceUnavailableResponse, ApiTags } from '@nestjs/swagger';
import type { FastifyReply } from 'fastify';
import { HealthService } from './health.service.js';

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
  @ApiOkResponse({
    schema: {
      example: {
        ok: true,
        status: 'ok',
        database: 'up',
        upstream: { status: 'up', checked_at: '2026-11-22T10:00:00.000Z', latency_ms: 42, error: null },
        last_sync: {
          run_id: 'r_01',
          mode: 'full',
          status: 'succeeded',
          started_at: '2026-11-22T09:45:00.000Z',
          finished_at: '2026-11-22T09:45:12.000Z',
          error: null,
          last_success_at: '2026-11-22T09:45:12.000Z',
        },
        wallet: { balance: '1520.00', currency: 'CNY', checked_at: '2026-11-22T10:00:00.000Z' },
      },
    },
  })
  @ApiServiceUnavailableResponse({ description: 'the database is down' })
  async get(@Res({ passthrough: true }) reply: FastifyReply) {
    const body = await this.health.health();
    if (!body.ok) void reply.status(503);
    return body;
  }

  @Get('live')
  @ApiOperation({ summary: 'Liveness', description: 'The process answers. Always 200 `{ok: true}`.' })
  live() {
    return { ok: true };
  }

  @Get('ready')
  @ApiOperation({
    summary: 'Readiness',
    description: 'The database answers and every migration of this build is applied, and the instance is not shutting down; 503 otherwise.',
  })
  @ApiOkResponse({ schema: { example: { ok: true, database: 'up', migrations: { pending: [] }, shutting_down: false } } })
  @ApiServiceUnavailableResponse({ description: 'not ready' })
  async ready(@Res({ passthrough: true }) reply: FastifyReply) {
    const body = await this.health.ready();
    if (!body.ok) void reply.status(503);
    return body;
  }
}
