/**
 * The operator's view of shop webhooks (CONTRACT §7): list deliveries by status, replay a dead one.
 *   GET  /internal/webhooks/deliveries?status=pending|delivered|dead&page&page_size
 *   POST /internal/webhooks/deliveries/{id}/replay
 */
import { Controller, Get, HttpCode, Param, Post, Query } from '@nestjs/common';
import { ApiBearerAuth, ApiOkResponse, ApiOperation, ApiParam, ApiQuery, ApiTags } from '@nestjs/swagger';
import { IsIn, IsOptional } from 'class-validator';
import { AppError } from '../common/app-error.js';
import { PageQuery, listResponse, pageRequest } from '../common/pagination.js';
import { pathKey } from '../common/validation.js';
import { ApiErrors, ApiPageQuery, apiError } from '../ops/api-docs.js';
import { DELIVERY_STATUSES, OutboxRepository, type DeliveryRecord, type DeliveryStatus } from './outbox.repository.js';
import { WebhookSender } from './webhook-sender.service.js';

export class DeliveriesQuery extends PageQuery {
  @IsOptional()
  @IsIn(DELIVERY_STATUSES as DeliveryStatus[])
  status?: DeliveryStatus;
}

export interface DeliveryResponse {
  id: string;
  event: string;
  subject: string;
  status: DeliveryStatus;
  attempts: number;
  next_attempt_at: string | null;
  last_attempt_at: string | null;
  last_status: number | null;
  last_error: string | null;
  replays: number;
  created_at: string;
  delivered_at: string | null;
  payload: Record<string, unknown>;
}

export function toDeliveryResponse(d: DeliveryRecord): DeliveryResponse {
  return {
    id: d.id,
    event: d.eventType,
    subject: d.subject,
    status: d.status,
    attempts: d.attempts,
    next_attempt_at: d.status === 'pending' ? d.nextAttemptAt.toISOString() : null,
    last_attempt_at: d.lastAttemptAt?.toISOString() ?? null,
    last_status: d.lastStatus,
    last_error: d.lastError,
    replays: d.replays,
    created_at: d.createdAt.toISOString(),
    delivered_at: d.deliveredAt?.toISOString() ?? null,
    payload: d.payload,
  };
}

const ID_RE = /^[1-9]\d{0,17}$/;

const DELIVERY_EXAMPLE = {
  id: '42',
  event: 'order.status_changed',
  subject: 'SO-1001',
  status: 'dead',
  attempts: 12,
  next_attempt_at: null,
  last_attempt_at: '2026-11-22T13:30:00.000Z',
  last_status: 503,
  last_error: 'HTTP 503',
  replays: 0,
  created_at: '2026-11-22T10:00:00.000Z',
  delivered_at: null,
  payload: { event: 'order.status_changed', shop_order_no: 'SO-1001', status: 'delivered', previous_status: 'fulfilling' },
};

@ApiTags('webhooks')
@ApiBearerAuth()
@Controller('internal/webhooks/deliveries')
export class WebhookDeliveriesController {
  constructor(
    private readonly outbox: OutboxRepository,
    private readonly sender: WebhookSender,
  ) {}

  @Get()
  @ApiOperation({
    summary: 'Shop webhook deliveries',
    description: 'The outbox of shop notifications, newest first; `status=dead` lists those given up after SHOP_WEBHOOK_MAX_ATTEMPTS.',
  })
  @ApiQuery({ name: 'status', required: false, enum: DELIVERY_STATUSES })
  @ApiPageQuery()
  @ApiOkResponse({
    description: 'a page of deliveries',
    schema: { example: { ok: true, items: [DELIVERY_EXAMPLE], total: 1, page: 1, page_size: 100 } },
  })
  @ApiErrors(
    apiError(400, 'bad_request', 'invalid request: status', {
      fields: { status: ['status must be one of the following values: pending, delivered, dead'] },
    }),
  )
  async list(@Query() query: DeliveriesQuery) {
    const page = pageRequest(query);
    const { items, total } = await this.outbox.list(query.status, page);
    return listResponse(items.map(toDeliveryResponse), total, page);
  }

  @Post(':id/replay')
  @HttpCode(200)
  @ApiOperation({
    summary: 'Replay a delivery',
    description:
      'Puts a `dead` (or already `delivered`) event back into delivery, due at once, with a fresh attempt count; the shop ' +
      'receives the same `Relay-Event-Id`. 404 `delivery_not_found`; 409 `delivery_pending` when it is still being delivered.',
  })
  @ApiParam({ name: 'id', description: 'the delivery id' })
  @ApiOkResponse({
    description: 'due again',
    schema: { example: { ok: true, delivery: { ...DELIVERY_EXAMPLE, status: 'pending', attempts: 0, replays: 1 } } },
  })
  @ApiErrors(
    apiError(404, 'delivery_not_found', 'no delivery 4242'),
    apiError(409, 'delivery_pending', 'delivery 42 is still pending (next attempt 2026-11-22T13:35:00.000Z)', {
      delivery: {
        ...DELIVERY_EXAMPLE,
        status: 'pending',
        next_attempt_at: '2026-11-22T13:35:00.000Z',
        last_error: 'HTTP 503',
        attempts: 3,
      },
    }),
  )
  // a delivery id is a positive integer within bigint, else 404 at once (see pathKey)
  async replay(
    @Param(
      'id',
      pathKey(
        (key) => ID_RE.test(key),
        (key) => new AppError('delivery_not_found', `no delivery ${key}`),
      ),
    )
    id: string,
  ) {
    const r = await this.outbox.replay(id);
    if (r.kind === 'not_found') throw new AppError('delivery_not_found', `no delivery ${id}`);
    if (r.kind === 'pending') {
      throw new AppError('delivery_pending', `delivery ${id} is still pending (next attempt ${r.delivery.nextAttemptAt.toISOString()})`, {
        delivery: toDeliveryResponse(r.delivery),
      });
    }
    this.sender.kick();
    return { ok: true, delivery: toDeliveryResponse(r.delivery) };
  }
}
