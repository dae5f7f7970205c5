/**
 * `POST /callbacks/upstream` (CONTRACT §6, public): verify the raw bytes first (every failure 401
 * `invalid_signature`, nothing touched), store the callback in the inbox (a failure to store is a 5xx,
 * so the upstream tries again), answer 200 `{ok:true}`, and process it after answering. Bodies over
 * 64 KiB are refused by the server's body limit (413 `payload_too_large`).
 */
import { createHash } from 'node:crypto';
import { Controller, HttpCode, Logger, Post, Req, type RawBodyRequest } from '@nestjs/common';
import { ApiBody, ApiHeader, ApiOkResponse, ApiOperation, ApiTags } from '@nestjs/swagger';
import type { FastifyRequest } from 'fastify';
import { AppError } from '../common/app-error.js';
import { Clock } from '../common/clock.js';
import { ApiErrors, okSchema } from '../ops/api-docs.js';
import { Metrics } from '../ops/metrics.js';
import { CALLBACK_BODY_SCHEMA, CALLBACK_ERRORS, CALLBACK_EXAMPLES, CALLBACK_HEADERS } from '../ops/ops.api-examples.js';
import { CallbackInboxRepository, type CallbackSummary } from './callback-inbox.repository.js';
import { CallbackProcessor } from './callback-processor.js';
import { CallbackVerifier } from './callback-verifier.js';
import { requestFields } from '../ops/request-context.js';

const str = (v: unknown, max: number): string | null => (typeof v === 'string' && v.length > 0 && v.length <= max ? v : null);

/** The fields of a callback the service keeps (never its fulfillment); null when it is malformed. */
export function summarizeCallback(rawBody: Buffer): CallbackSummary | null {
  let body: unknown;
  try {
    body = JSON.parse(rawBody.toString('utf8'));
  } catch {
    return null;
  }
  if (typeof body !== 'object' || body === null || Array.isArray(body)) return null;
  const b = body as Record<string, unknown>;
  if (typeof b.order_id !== 'number' || !Number.isSafeInteger(b.order_id) || b.order_id < 1) return null;
  const status = str(b.status, 64);
  if (status === null) return null;
  return {
    bodySha256: createHash('sha256').update(rawBody).digest('hex'),
    event: str(b.event, 64),
    upstreamOrderId: b.order_id,
    upstreamOrderNo: str(b.order_no, 128),
    downstreamOrderNo: str(b.downstream_order_no, 128),
    status,
    callbackTs: typeof b.timestamp === 'number' && Number.isSafeInteger(b.timestamp) ? b.timestamp : null,
  };
}

@ApiTags('callbacks')
@Controller('callbacks')
export class CallbacksController {
  private readonly logger = new Logger('callbacks');

  constructor(
    private readonly verifier: CallbackVerifier,
    private readonly inbox: CallbackInboxRepository,
    private readonly processor: CallbackProcessor,
    private readonly metrics: Metrics,
    private readonly clock: Clock,
  ) {}

  @Post('upstream')
  @HttpCode(200)
  @ApiOperation({
    summary: 'Order callback from the upstream',
    description:
      'Public, for the upstream: verified on the raw bytes before anything else (every failure 401 `invalid_signature`, nothing touched), ' +
      'stored in an inbox (duplicates recognised) and answered 200 `{ok: true}`; a 5xx only when it could not be stored, so that the ' +
      'upstream tries again. A hint: the order is read back with `GET /orders/{id}` and the upstream\'s answer applied; a callback for an ' +
      'unknown order is stored and acknowledged, never applied.',
  })
  // (listed in the docs in the reverse order of the decorators)
  @ApiHeader({ ...CALLBACK_HEADERS[2], required: true })
  @ApiHeader({ ...CALLBACK_HEADERS[1], required: true })
  @ApiHeader({ ...CALLBACK_HEADERS[0], required: true })
  @ApiBody({ schema: CALLBACK_BODY_SCHEMA, examples: CALLBACK_EXAMPLES })
  @ApiOkResponse({ description: 'stored (or a duplicate): acknowledged', schema: okSchema({}), example: { ok: true } })
  @ApiErrors(...CALLBACK_ERRORS)
  async receive(@Req() req: RawBodyRequest<FastifyRequest>): Promise<{ ok: true }> {
    const raw = req.rawBody ?? Buffer.alloc(0);
    const verdict = this.verifier.verify(req.headers, raw);
    if (!verdict.ok) {
      this.metrics.callbacksRejected.inc({ reason: verdict.reason });
      this.logger.warn({ msg: `callback refused: ${verdict.reason}`, reason: verdict.reason, ip: req.ip, ...requestFields(req) });
      throw new AppError('invalid_signature', 401, 'callback signature verification failed');
    }
    const summary = summarizeCallback(raw);
    if (!summary) {
      this.metrics.callbacksRejected.inc({ reason: 'malformed_body' });
      throw new AppError('bad_request', 400, 'a callback needs a JSON object with order_id (integer ≥ 1) and status');
    }
    const stored = await this.inbox.store(summary, this.clock.now());
    if (stored.duplicate) {
      this.metrics.callbackDuplicates.inc();
    } else {
      this.metrics.callbacksReceived.inc({ event: summary.event ?? 'none' });
      this.processor.kick();
    }
    return { ok: true };
  }
}
