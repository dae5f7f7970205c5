/** The orders' internal API (CONTRACT §5). Bearer token checked by the global InternalAuthGuard. */
import { Body, Controller, Get, HttpCode, Param, Post, Query, Res } from '@nestjs/common';
import {
  ApiBearerAuth,
  ApiBody,
  ApiExtraModels,
  ApiOperation,
  ApiParam,
  ApiQuery,
  ApiResponse,
  ApiTags,
  getSchemaPath,
} from '@nestjs/swagger';
import type { FastifyReply } from 'fastify';
import { AppError } from '../common/app-error.js';
import { pathKey } from '../common/validation.js';
import { ApiErrors, ApiPageQuery } from '../ops/api-docs.js';
import { OrderCancelService } from './order-cancel.service.js';
import { OrderOperatorService } from './order-operator.service.js';
import { OrderPresenter } from './order-presenter.service.js';
import { OrderQueryService } from './order-query.service.js';
import { OrderRelayService } from './order-relay.service.js';
import {
  CANCEL_ERRORS,
  CREATE_ORDER_ERRORS,
  CREATE_ORDER_EXAMPLES,
  LIST_ORDERS_ERRORS,
  ORDER_ACCEPTED,
  ORDER_ANSWER_SCHEMA,
  ORDER_CANCELED,
  ORDER_DELIVERED,
  ORDER_EVENTS_EXAMPLE,
  ORDER_EVENTS_SCHEMA,
  ORDER_LIST_EXAMPLE,
  ORDER_LIST_SCHEMA,
  ORDER_NOT_FOUND,
  ORDER_NOT_PLACED,
  ORDER_REFUNDED,
  ORDER_RESOLVED,
  ORDER_SUBMIT_UNKNOWN,
  REFRESH_ERRORS,
  REFUND_ERRORS,
  RESOLVE_ERRORS,
  RESOLVE_EXAMPLES,
  WALLET_ERRORS,
  WALLET_EXAMPLE,
  WALLET_SCHEMA,
} from './orders.api-examples.js';
import { CreateOrderDto, ListOrdersQuery, ResolveOrderDto, SHOP_ORDER_NO_RE } from './orders.dto.js';
import { WalletService } from './wallet.service.js';
import { OfferPlacement } from './offer-placement.service.js';

const ShopOrderNoParam = () => ApiParam({ name: 'shop_order_no', description: "the shop's order number", example: 'SO-20261122-0001' });

/**
 * A `shop_order_no` in a path that no order can have (not `[A-Za-z0-9._:-]{1,64}`, the only numbers
 * an order is placed with) is 404 `order_not_found` at once (see pathKey).
 */
const KnownShopOrderNo = pathKey(
  (no) => SHOP_ORDER_NO_RE.test(no),
  (no) => new AppError('order_not_found', `no order ${no}`),
);

@ApiTags('orders')
@ApiBearerAuth()
@ApiExtraModels(CreateOrderDto, ResolveOrderDto)
@Controller('internal')
export class OrdersController {
  constructor(
    private readonly relay: OrderRelayService,
    private readonly query: OrderQueryService,
    private readonly cancels: OrderCancelService,
    private readonly operator: OrderOperatorService,
    private readonly presenter: OrderPresenter,
    private readonly walletService: WalletService,
    private readonly offerPlacement: OfferPlacement,
  ) {}

  @Post('orders')
  @ApiOperation({
    summary: 'Place an order',
    description:
      '`shop_order_no` is the idempotency key: the same key with the same body answers the recorded order (200) and never places a ' +
      'second upstream order; another body is 409 `idempotency_conflict`; a `rejected` order may be submitted again (a new attempt). ' +
      'The SKU is checked locally, then its product is read fresh upstream; the order is accepted (201), refused by the upstream ' +
      '(its status and `error_code`, with the `rejected` order), or its outcome is unknown (202 `submit_unknown`, settled by a ' +
      'callback, a re-send where the upstream deduplicates, or an operator).',
  })
  @ApiBody({ schema: { $ref: getSchemaPath(CreateOrderDto) }, examples: CREATE_ORDER_EXAMPLES })
  @ApiResponse({ status: 201, description: 'accepted upstream', schema: ORDER_ANSWER_SCHEMA, example: { ok: true, order: ORDER_ACCEPTED } })
  @ApiResponse({
    status: 200,
    description:
      'the same `shop_order_no` and body again (or a request that waited for the attempt in flight): ' +
      'the recorded order; nothing is sent again',
    schema: ORDER_ANSWER_SCHEMA,
    example: { ok: true, order: ORDER_DELIVERED },
  })
  @ApiResponse({
    status: 202,
    description: 'sent, but the outcome is unknown (a timeout, a reset connection, a 5xx): `submit_unknown`',
    schema: ORDER_ANSWER_SCHEMA,
    example: { ok: true, order: ORDER_SUBMIT_UNKNOWN },
  })
  @ApiErrors(...CREATE_ORDER_ERRORS)
  async create(@Body() dto: CreateOrderDto, @Res({ passthrough: true }) reply: FastifyReply) {
    const result = dto.offer !== undefined ? await this.offerPlacement.place({ ...dto, offer: dto.offer }) : await this.relay.place(dto);
    void reply.status(result.httpStatus);
    return { ok: true, order: await this.presenter.presentRouted(result.order) };
  }

  @Get('orders')
  @ApiOperation({
    summary: 'List orders',
    description: 'A page of orders, newest first, optionally only those in one `status` or only the `stuck` ones.',
  })
  @ApiPageQuery()
  @ApiResponse({ status: 200, description: 'a page of orders', schema: ORDER_LIST_SCHEMA, example: ORDER_LIST_EXAMPLE })
  @ApiErrors(...LIST_ORDERS_ERRORS)
  list(@Query() q: ListOrdersQuery) {
    return this.query.list(q);
  }

  @Get('orders/:shop_order_no')
  @ApiOperation({ summary: 'Get an order', description: 'The order with its delivered `items` (decrypted) and its refund state.' })
  @ShopOrderNoParam()
  @ApiResponse({ status: 200, description: 'the order', schema: ORDER_ANSWER_SCHEMA, example: { ok: true, order: ORDER_DELIVERED } })
  @ApiErrors(ORDER_NOT_FOUND)
  async get(@Param('shop_order_no', KnownShopOrderNo) shopOrderNo: string) {
    return { ok: true, order: await this.presenter.presentRouted(await this.query.get(shopOrderNo)) };
  }

  @Get('orders/:shop_order_no/events')
  @ApiOperation({
    summary: 'The history of an order',
    description: 'Every status change and operator action, oldest first, with where it came from.',
  })
  @ShopOrderNoParam()
  @ApiResponse({ status: 200, description: 'the events', schema: ORDER_EVENTS_SCHEMA, example: ORDER_EVENTS_EXAMPLE })
  @ApiErrors(ORDER_NOT_FOUND)
  async events(@Param('shop_order_no', KnownShopOrderNo) shopOrderNo: string) {
    return { ok: true, events: await this.query.events(shopOrderNo) };
  }

  @Post('orders/:shop_order_no/cancel')
  @HttpCode(200)
  @ApiOperation({
    summary: 'Cancel an order',
    description:
      'Cancel-upstream-first: the upstream is asked whenever the order exists there, and only its yes cancels locally (`canceled`, ' +
      '`refundable`). A `rejected` order is canceled locally. Repeating it answers the same.',
  })
  @ShopOrderNoParam()
  @ApiResponse({ status: 200, description: 'canceled', schema: ORDER_ANSWER_SCHEMA, example: { ok: true, order: ORDER_CANCELED } })
  @ApiErrors(...CANCEL_ERRORS)
  async cancel(@Param('shop_order_no', KnownShopOrderNo) shopOrderNo: string) {
    return { ok: true, order: this.presenter.present(await this.cancels.cancel(shopOrderNo)) };
  }

  @Post('orders/:shop_order_no/refund')
  @HttpCode(200)
  @ApiOperation({
    summary: 'Refund an order',
    description:
      'Cancels upstream first (as cancel) unless the order is already `refundable`, then records the refund (`refund_state: refunded`). ' +
      'Repeating it answers the same (200).',
  })
  @ShopOrderNoParam()
  @ApiResponse({
    status: 200,
    description: 'the refund is recorded',
    schema: ORDER_ANSWER_SCHEMA,
    example: { ok: true, order: ORDER_REFUNDED },
  })
  @ApiErrors(...REFUND_ERRORS)
  async refund(@Param('shop_order_no', KnownShopOrderNo) shopOrderNo: string) {
    return { ok: true, order: this.presenter.present(await this.cancels.refund(shopOrderNo)) };
  }

  @Post('orders/:shop_order_no/refresh')
  @HttpCode(200)
  @ApiOperation({
    summary: 'Refresh an order from the upstream',
    description:
      'Reads the order with `GET /orders/{id}` and applies the answer (never moving it back); ' +
      'an order without an upstream id is answered as it is.',
  })
  @ShopOrderNoParam()
  @ApiResponse({
    status: 200,
    description: 'the order after the read',
    schema: ORDER_ANSWER_SCHEMA,
    example: { ok: true, order: ORDER_DELIVERED },
  })
  @ApiErrors(...REFRESH_ERRORS)
  async refresh(@Param('shop_order_no', KnownShopOrderNo) shopOrderNo: string) {
    return { ok: true, order: this.presenter.present(await this.operator.refresh(shopOrderNo)) };
  }

  @Post('orders/:shop_order_no/resolve')
  @HttpCode(200)
  @ApiOperation({
    summary: 'Settle a submit_unknown order',
    description:
      'The operator settles an order whose outcome is unknown: either `{upstream_order_id}` (checked with `GET /orders/{id}`: its ' +
      "`downstream_order_no` must be this attempt's, else 409 `resolve_mismatch`), or `{not_placed: true, reason}` (→ `rejected`). " +
      'Also a `rejected` order with the anomaly `upstream_order_exists` (the upstream showed an order for one of its attempts): ' +
      "`{upstream_order_id}` of that order (checked the same way) makes the order follow it, in the upstream's state. " +
      '409 `not_unknown` for any other status.',
  })
  @ShopOrderNoParam()
  @ApiBody({ schema: { $ref: getSchemaPath(ResolveOrderDto) }, examples: RESOLVE_EXAMPLES })
  @ApiResponse({
    status: 200,
    description: 'settled',
    schema: ORDER_ANSWER_SCHEMA,
    examples: {
      upstream_order_id: { summary: "found upstream: the order takes the upstream's state", value: { ok: true, order: ORDER_RESOLVED } },
      not_placed: { summary: 'never placed: `rejected`, refundable', value: { ok: true, order: ORDER_NOT_PLACED } },
    },
  })
  @ApiErrors(...RESOLVE_ERRORS)
  async resolve(@Param('shop_order_no', KnownShopOrderNo) shopOrderNo: string, @Body() dto: ResolveOrderDto) {
    const input =
      dto.not_placed === true
        ? { not_placed: true as const, reason: dto.reason ?? '' }
        : { upstream_order_id: dto.upstream_order_id as number };
    return { ok: true, order: this.presenter.present(await this.operator.resolve(shopOrderNo, input)) };
  }

  @Get('wallet')
  @ApiOperation({
    summary: 'The upstream wallet',
    description: "A supplier's balance, currency and member level, from a ping of its upstream (default: the `UPSTREAM_*` supplier).",
  })
  @ApiQuery({ name: 'supplier', required: false, description: 'the supplier (default: the `UPSTREAM_*` one)', example: 'main' })
  @ApiResponse({ status: 200, description: 'the wallet', schema: WALLET_SCHEMA, example: WALLET_EXAMPLE })
  @ApiErrors(...WALLET_ERRORS)
  wallet(@Query('supplier') supplier?: string) {
    return this.walletService.wallet(typeof supplier === 'string' && supplier !== '' ? supplier : undefined);
  }
}
