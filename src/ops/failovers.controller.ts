/**
 * `GET /internal/offer-failovers`: the failovers of offer orders (CONTRACT §11) by reason over a
 * window, from the database (FailoversRepository), for the console's dashboard. Every `/internal/*`
 * call needs the bearer token.
 */
import { Controller, Get, Query } from '@nestjs/common';
import { ApiBearerAuth, ApiOperation, ApiPropertyOptional, ApiResponse, ApiTags } from '@nestjs/swagger';
import { IsOptional, IsRFC3339 } from 'class-validator';
import { badRequest } from '../common/app-error.js';
import { Clock } from '../common/clock.js';
import { parseRfc3339 } from '../catalog/catalog.dto.js';
import { apiError, ApiErrors, dateTimeSchema, objectSchema, okSchema } from './api-docs.js';
import { FailoversRepository } from './failovers.repository.js';

/** The window when the query names none: the last 14 days (the dashboard's). */
export const DEFAULT_FAILOVER_WINDOW_MS = 14 * 24 * 3600_000;

const SINCE_MESSAGE = 'since must be an RFC 3339 date-time, e.g. 2026-01-01T00:00:00Z';

export class FailoverQuery {
  @ApiPropertyOptional({
    type: String,
    format: 'date-time',
    description: 'RFC 3339: count the failovers from this instant on (default: the last 14 days)',
    example: '2026-11-22T00:00:00Z',
  })
  @IsOptional()
  @IsRFC3339({ message: SINCE_MESSAGE })
  since?: string;
}

const FAILOVERS_SCHEMA = okSchema({
  since: dateTimeSchema('the start of the window counted'),
  total: { type: 'integer', minimum: 0, description: 'every failover in the window' },
  reasons: {
    type: 'array',
    description: 'the failovers by the refusal that moved the order to its next source, the most frequent first',
    items: objectSchema({
      reason: {
        type: 'string',
        description: 'the refusal: `insufficient_stock`, `sku_unavailable`, `price_changed`, … (`unknown` when none was recorded)',
      },
      count: { type: 'integer', minimum: 1 },
    }),
  },
});

const FAILOVERS_EXAMPLE = {
  ok: true,
  since: '2026-11-22T00:00:00.000Z',
  total: 5,
  reasons: [
    { reason: 'insufficient_stock', count: 4 },
    { reason: 'price_changed', count: 1 },
  ],
};

@ApiTags('offers')
@ApiBearerAuth()
@Controller('internal/offer-failovers')
export class FailoversController {
  constructor(
    private readonly failovers: FailoversRepository,
    private readonly clock: Clock,
  ) {}

  @Get()
  @ApiOperation({
    summary: 'Failovers by reason',
    description:
      'The offer orders moved to their next source after a refusal (CONTRACT §11), counted by the refusal, from `since` ' +
      '(default: the last 14 days) to now. Read from the database: the same on every instance, and kept across restarts.',
  })
  @ApiResponse({ status: 200, description: 'the failovers by reason', schema: FAILOVERS_SCHEMA, example: FAILOVERS_EXAMPLE })
  @ApiErrors(apiError(400, 'bad_request', 'invalid request: since', { fields: { since: [SINCE_MESSAGE] } }))
  async get(@Query() q: FailoverQuery) {
    let since = new Date(this.clock.nowMs() - DEFAULT_FAILOVER_WINDOW_MS);
    if (q.since !== undefined) {
      const parsed = parseRfc3339(q.since);
      if (parsed === null) throw badRequest('invalid request: since', { since: ['since names no instant'] });
      since = parsed.date;
    }
    const reasons = await this.failovers.byReason(since);
    return { ok: true, since: since.toISOString(), total: reasons.reduce((n, r) => n + r.count, 0), reasons };
  }
}
