/**
 * `POST /callbacks/upstream/{supplier}` and `POST /callbacks/upstream` (the `UPSTREAM_*` supplier's)
 * (CONTRACT §6, §10, public): verify the raw bytes first with that supplier's key, secret and profile,
 * whatever the content type (every failure, an unknown supplier included, 401 `invalid_signature`,
 * nothing touched), store the callback in the inbox (a
 * failure to store is a 5xx, so the upstream tries again), answer 200 `{ok:true}`, and process it after
 * answering. A verified callback the service cannot use (not a JSON object, no `order_id` or
 * `status`) is stored too, as `ignored`, acknowledged (the upstream would only send it again) and
 * logged as a warning: it never touches an order. Bodies over 64 KiB are refused by the server's body
 * limit (413 `payload_too_large`); the raw bytes are kept for any content type by the body parsing of
 * app.factory.ts.
 */
import { createHash } from 'node:crypto';
import { Controller, HttpCode, Logger, Param, Post, Req, type RawBodyRequest } from '@nestjs/common';
import { ApiBody, ApiHeader, ApiOkResponse, ApiOperation, ApiParam, ApiTags } from '@nestjs/swagger';
import type { FastifyRequest } from 'fastify';
import { AppError } from '../common/app-error.js';
import { Clock } from '../common/clock.js';
import { ApiErrors, okSchema } from '../ops/api-docs.js';
import { Metrics } from '../ops/metrics.service.js';
import { CALLBACK_BODY_SCHEMA, CALLBACK_ERRORS, CALLBACK_EXAMPLES, CALLBACK_HEADERS } from '../ops/ops.api-examples.js';
import { CallbackInboxRepository, type CallbackSummary, type UnusableCallback } from './callback-inbox.repository.js';
import { CallbackProcessor } from './callback-processor.service.js';
import { CallbackVerifier } from './callback-verifier.service.js';
import { SupplierRegistry } from '../suppliers/supplier-registry.service.js';
import { requestFields } from '../ops/request-context.js';
import { storableText } from '../common/validation.js';
import type { UpstreamFulfillment } from '../upstream/upstream.types.js';

/**
 * A kept text field: a non-empty string of at most `max` characters. One with a NUL character counts as
 * absent (no such value is meaningful, and the database's text refuses it: storing it would fail the
 * callback for good, every retry with a 5xx).
 */
const str = (v: unknown, max: number): string | null =>
  typeof v === 'string' && v.length > 0 && v.length <= max && storableText(v) ? v : null;

/**
 * What a verified callback's body gives: a usable summary (and its fulfillment, never kept in the
 * inbox), or what it carried and why it is unusable; and the body read.
 */
export type ReadCallback =
  | { usable: CallbackSummary; fulfillment: UpstreamFulfillment | null; body: Record<string, unknown> }
  | { unusable: UnusableCallback; body: Record<string, unknown> | null };

/**
 * The body's `fulfillment` when it is usable as a delivery: an object with a string `payload` (the
 * items); its other fields as the upstream's order detail carries them. Null otherwise.
 */
export function readFulfillment(v: unknown): UpstreamFulfillment | null {
  if (typeof v !== 'object' || v === null || Array.isArray(v)) return null;
  const f = v as Record<string, unknown>;
  if (typeof f.payload !== 'string') return null;
  const data = f.delivery_data;
  return {
    type: typeof f.type === 'string' ? f.type : '',
    status: typeof f.status === 'string' ? f.status : '',
    payload: f.payload,
    delivery_data: typeof data === 'object' && data !== null && !Array.isArray(data) ? (data as Record<string, unknown>) : null,
    delivered_at: typeof f.delivered_at === 'string' ? f.delivered_at : '',
  };
}

/** The fields of a callback the service keeps (never its fulfillment), and its fulfillment apart. */
export function readCallback(rawBody: Buffer, supplier: string): ReadCallback {
  const bodySha256 = createHash('sha256').update(rawBody).digest('hex');
  const none = {
    supplier,
    bodySha256,
    event: null,
    upstreamOrderId: null,
    upstreamOrderNo: null,
    downstreamOrderNo: null,
    status: null,
    callbackTs: null,
  };
  let parsed: unknown;
  try {
    parsed = JSON.parse(rawBody.toString('utf8'));
  } catch {
    return { unusable: { ...none, reason: 'not valid JSON' }, body: null };
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed))
    return { unusable: { ...none, reason: 'not a JSON object' }, body: null };
  const b = parsed as Record<string, unknown>;
  const upstreamOrderId = typeof b.order_id === 'number' && Number.isSafeInteger(b.order_id) && b.order_id >= 1 ? b.order_id : null;
  const kept = {
    supplier,
    bodySha256,
    event: str(b.event, 64),
    upstreamOrderNo: str(b.order_no, 128),
    downstreamOrderNo: str(b.downstream_order_no, 128),
    status: str(b.status, 64),
    callbackTs: typeof b.timestamp === 'number' && Number.isSafeInteger(b.timestamp) ? b.timestamp : null,
  };
  if (upstreamOrderId === null || kept.status === null) {
    const missing = [
      upstreamOrderId === null ? 'order_id (an integer ≥ 1)' : null,
      kept.status === null ? 'status (a string of 1 to 64 characters)' : null,
    ];
    return { unusable: { ...kept, upstreamOrderId, reason: `no ${missing.filter((m) => m !== null).join(' and no ')}` }, body: b };
  }
  return { usable: { ...kept, upstreamOrderId, status: kept.status }, fulfillment: readFulfillment(b.fulfillment), body: b };
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
    private readonly suppliers: SupplierRegistry,
  ) {}

  @Post('upstream')
  @HttpCode(200)
  @ApiOperation({
    summary: 'Order callback from the upstream',
    description:
      'Public, for the upstream: verified on the raw bytes before anything else (every failure 401 `invalid_signature`, ' +
      'nothing touched), ' +
      'stored in an inbox (duplicates recognised) and answered 200 `{ok: true}`; a 5xx only when it could not be stored, so that the ' +
      "upstream tries again. With `CALLBACK_TRUST=verified` (the default) a verified callback is the upstream's word: a delivering state " +
      'with its `fulfillment`, and `pending_payment`, `paid`, `fulfilling`, `canceled`, are applied with no read; a ' +
      'delivering state without ' +
      'its fulfillment or a refund state costs one `GET /orders/{id}`. With `confirm` every callback only triggers that ' +
      'read. A callback for ' +
      "an unknown order, or naming another attempt than the order's current one, is stored and acknowledged, never applied.",
  })
  // (listed in the docs in the reverse order of the decorators)
  @ApiHeader({ ...CALLBACK_HEADERS[2], required: true })
  @ApiHeader({ ...CALLBACK_HEADERS[1], required: true })
  @ApiHeader({ ...CALLBACK_HEADERS[0], required: true })
  @ApiBody({ schema: CALLBACK_BODY_SCHEMA, examples: CALLBACK_EXAMPLES })
  @ApiOkResponse({ description: 'stored (or a duplicate): acknowledged', schema: okSchema({}), example: { ok: true } })
  @ApiErrors(...CALLBACK_ERRORS)
  async receive(@Req() req: RawBodyRequest<FastifyRequest>): Promise<{ ok: true }> {
    return this.receiveFor(req, this.suppliers.envName);
  }

  @Post('upstream/:supplier')
  @HttpCode(200)
  @ApiOperation({
    summary: "Order callback from one supplier, at that supplier's own URL",
    description:
      'As `POST /callbacks/upstream`, verified with the key, secret and profile of the supplier the path names (CONTRACT ' +
      "§10): a callback signed by another supplier's secret, or for an unknown supplier, is 401 `invalid_signature` and " +
      "stored nowhere; it applies only to that supplier's orders.",
  })
  @ApiParam({ name: 'supplier', description: 'the supplier whose callback URL this is', example: 'second' })
  @ApiHeader({ ...CALLBACK_HEADERS[2], required: true })
  @ApiHeader({ ...CALLBACK_HEADERS[1], required: true })
  @ApiHeader({ ...CALLBACK_HEADERS[0], required: true })
  @ApiBody({ schema: CALLBACK_BODY_SCHEMA, examples: CALLBACK_EXAMPLES })
  @ApiOkResponse({ description: 'stored (or a duplicate): acknowledged', schema: okSchema({}), example: { ok: true } })
  @ApiErrors(...CALLBACK_ERRORS)
  async receiveAt(@Req() req: RawBodyRequest<FastifyRequest>, @Param('supplier') supplier: string): Promise<{ ok: true }> {
    return this.receiveFor(req, supplier);
  }

  private async receiveFor(req: RawBodyRequest<FastifyRequest>, supplier: string): Promise<{ ok: true }> {
    const raw = req.rawBody ?? Buffer.alloc(0);
    const verdict = this.verifier.verify(req.headers, raw, supplier);
    // (a name from the path is a label only when it is a supplier's: no series for whatever a caller sends)
    const label = this.suppliers.find(supplier) ? supplier : 'unknown';
    if (!verdict.ok) {
      this.metrics.callbacksRejected.inc({ reason: verdict.reason, supplier: label });
      this.logger.warn({
        msg: `callback refused: ${verdict.reason}`,
        reason: verdict.reason,
        supplier: supplier.slice(0, 64),
        ip: req.ip,
        ...requestFields(req),
      });
      throw new AppError('invalid_signature', 'callback signature verification failed');
    }
    const read = readCallback(raw, supplier);
    // read once verified: the request's log line names its downstream_order_no, as for any JSON body
    if (read.body) req.body = read.body;
    const c = 'unusable' in read ? read.unusable : read.usable;
    // a usable callback goes to the processor: stored, and applied in the same transaction where its plan allows
    const stored =
      'unusable' in read
        ? await this.inbox.store(read.unusable, this.clock.now())
        : await this.processor.receive(read.usable, read.fulfillment);
    if (stored.duplicate) this.metrics.callbackDuplicates.inc({ supplier: label });
    else this.metrics.callbacksReceived.inc({ event: 'reason' in c ? 'unusable' : (c.event ?? 'none'), supplier: label });
    if ('reason' in c) {
      // what is wrong and the ids it carries, never the body (it may carry delivered items)
      this.logger.warn({
        msg: `verified callback cannot be used (${c.reason}): stored as ignored, not applied`,
        reason: c.reason,
        inbox_id: stored.id,
        duplicate: stored.duplicate,
        body_sha256: c.bodySha256,
        ...(c.upstreamOrderId !== null ? { upstream_order_id: c.upstreamOrderId } : {}),
        ...(c.downstreamOrderNo !== null ? { downstream_order_no: c.downstreamOrderNo } : {}),
        ...requestFields(req),
      });
    }
    return { ok: true };
  }
}
