import { Controller, Get, Res } from '@nestjs/common';
import type { FastifyReply } from 'fastify';
import { DataSource } from 'typeorm';

/** `GET /health` (no token): `{ok, database, upstream, last_sync}`; 503 when the database is down. */
@Controller()
export class HealthController {
  constructor(private readonly dataSource: DataSource) {}

  @Get('health')
  async health(@Res({ passthrough: true }) reply: FastifyReply) {
    let database: 'up' | 'down' = 'up';
    try {
      await this.dataSource.query('SELECT 1');
    } catch {
      database = 'down';
    }
    if (database === 'down') void reply.status(503);
    return { ok: database === 'up', status: database === 'up' ? 'ok' : 'unavailable', database, upstream: null, last_sync: null };
  }
}
