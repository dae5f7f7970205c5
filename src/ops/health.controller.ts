import { Controller, Get, Res } from '@nestjs/common';
import { ApiOkResponse, ApiOperation, ApiServiceUnavailableResponse, ApiTags, type SchemaObject } from '@nestjs/swagger';
import type { FastifyReply } from 'fastify';
import { HEALTH_DEADLINE_MS, HealthService } from './health.service.js';
import {
  HEALTH_AUTH_FAILED_EXAMPLE,
  HEALTH_DOWN_EXAMPLE,
  HEALTH_EXAMPLE,
  HEALTH_RATE_LIMITED_EXAMPLE,
  HEALTH_SCHEMA,
  LIVE_SCHEMA,
  NOT_READY_EXAMPLE,
  READY_EXAMPLE,
  READY_SCHEMA,
} from './ops.api-examples.js';

const DATABASE_DETAIL: SchemaObject = {
  type: 'string',
  enum: ['busy', 'slow'],
  description:
    `present when the database did not answer within ${HEALTH_DEADLINE_MS} ms without refusing (it is then reported \`up\`, not down): ` +
    "`busy` every connection of the service's pool was in use by its own work; `slow` the database did not answer in time",
};

/** A health answer's schema with the optional `database_detail` (see health.service.ts). */
const withDatabaseDetail = (schema: SchemaObject): SchemaObject => ({
  ...schema,
  properties: { ...schema.properties, database_detail: DATABASE_DETAIL },
});

/**
 * `GET /health` (no token): `{ok, status, database, database_detail?, upstream, last_sync, wallet?, budget, queued, suppliers,
 * reconciliation}`,
 * 503 when the database is down (refused or failed, not merely slow); `GET /health/live` and
 * `GET /health/ready` for an orchestrator. Each answers within HEALTH_DEADLINE_MS (about 3 s).
 */
@ApiTags('ops')
@Controller('health')
export class HealthController {
  constructor(private readonly health: HealthService) {}

  @Get()
  @ApiOperation({
    summary: 'Health',
    description:
      'The database (503 when it is down); for every supplier (`suppliers.<name>`) its upstream as its last periodic ping saw ' +
      'it (`up`, `down`, `auth_failed` when it refused our credentials, `unknown`; `rate_limited` while a 429 keeps its key ' +
      'blocked; pinged every 30 s by instances running background work, never during this request), its request budget, its ' +
      'latest catalog sync run and its wallet from its last successful ping. The top-level `upstream` is the worst of the ' +
      "enabled suppliers' (and names it); `budget`, `last_sync` and `wallet` are the `UPSTREAM_*` supplier's. Then the number " +
      'of `queued` orders and the reconciliation backlog (due reads not made yet, and the age of the oldest). ' +
      '`ok` is the database: an unreachable upstream, or one refusing our credentials, does not make the service unhealthy. ' +
      `Answers within ${HEALTH_DEADLINE_MS / 1000} s: a database that did not answer by then without refusing is \`up\` with ` +
      '`database_detail` (`busy`, `slow`), and a sync run or a count not read by then is `null`.',
  })
  @ApiOkResponse({
    description: 'the database answers (or is busy)',
    schema: withDatabaseDetail(HEALTH_SCHEMA),
    examples: {
      ok: { summary: 'the database and the upstreams answer', value: HEALTH_EXAMPLE },
      auth_failed: { summary: 'a supplier refuses our credentials (a wrong key or secret)', value: HEALTH_AUTH_FAILED_EXAMPLE },
      rate_limited: {
        summary: 'the key blocked after a 429: upstream requests wait, new orders are queued',
        value: HEALTH_RATE_LIMITED_EXAMPLE,
      },
    },
  })
  @ApiServiceUnavailableResponse({
    description: 'the database is down (the same shape, `ok: false`)',
    schema: withDatabaseDetail(HEALTH_SCHEMA),
    example: HEALTH_DOWN_EXAMPLE,
  })
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
    description:
      'The database answers and every migration of this build is applied, and the instance is not shutting down; 503 otherwise. ' +
      `Answers within ${HEALTH_DEADLINE_MS / 1000} s; a database busy or slow (\`database_detail\`, as in /health) is not down, and ` +
      'the migrations are then the ones last read by this instance.',
  })
  @ApiOkResponse({ description: 'ready', schema: withDatabaseDetail(READY_SCHEMA), example: READY_EXAMPLE })
  @ApiServiceUnavailableResponse({
    description: 'not ready (the same shape, `ok: false`)',
    schema: withDatabaseDetail(READY_SCHEMA),
    example: NOT_READY_EXAMPLE,
  })
  async ready(@Res({ passthrough: true }) reply: FastifyReply) {
    const body = await this.health.ready();
    if (!body.ok) void reply.status(503);
    return body;
  }
}
