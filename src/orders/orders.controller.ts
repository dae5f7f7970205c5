/** The orders' internal API (CONTRACT §5). Bearer token checked by the global InternalAuthGuard. */
import { Body, Controller, Get, HttpCode, Param, Post, Query, Res } from '@nestjs/common';
import type { FastifyReply } from 'fastify';
import { OrderCancelService } from './order-cancel.service.js';
import { OrderOperatorService } from './order-operator.service.js';
import { OrderPresenter } from './order-presenter.js';
import { OrderQueryService } from './order-query.service.js';
import { OrderRelayService } from './order-relay.service.js';
import { CreateOrderDto, ListOrdersQuery, ResolveOrderDto } from './orders.dto.js';
import { WalletService } from './wallet.service.js';

@Controller('internal')
export class OrdersController {
  constructor(
    private readonly relay: OrderRelayService,
    private readonly query: OrderQueryService,
    private readonly cancels: OrderCancelService,
    private readonly operator: OrderOperatorService,
    private readonly presenter: OrderPresenter,
    private readonly walletService: WalletService,
  ) {}

  @Post('orders')
  async create(@Body() dto: CreateOrderDto, @Res({ passthrough: true }) reply: FastifyReply) {
    const result = await this.relay.place(dto);
    void reply.status(result.httpStatus);
    return { ok: true, order: this.presenter.present(result.order) };
  }

  @Get('orders')
  list(@Query() q: ListOrdersQuery) {
    return this.query.list(q);
  }

  @Get('orders/:shop_order_no')
  async get(@Param('shop_order_no') shopOrderNo: string) {
    return { ok: true, order: this.presenter.present(await this.query.get(shopOrderNo)) };
  }

  @Get('orders/:shop_order_no/events')
  async events(@Param('shop_order_no') shopOrderNo: string) {
    return { ok: true, events: await this.query.events(shopOrderNo) };
  }

  @Post('orders/:shop_order_no/cancel')
  @HttpCode(200)
  async cancel(@Param('shop_order_no') shopOrderNo: string) {
    return { ok: true, order: this.presenter.present(await this.cancels.cancel(shopOrderNo)) };
  }

  @Post('orders/:shop_order_no/refund')
  @HttpCode(200)
  async refund(@Param('shop_order_no') shopOrderNo: string) {
    return { ok: true, order: this.presenter.present(await this.cancels.refund(shopOrderNo)) };
  }

  @Post('orders/:shop_order_no/refresh')
  @HttpCode(200)
  async refresh(@Param('shop_order_no') shopOrderNo: string) {
    return { ok: true, order: this.presenter.present(await this.operator.refresh(shopOrderNo)) };
  }

  @Post('orders/:shop_order_no/resolve')
  @HttpCode(200)
  async resolve(@Param('shop_order_no') shopOrderNo: string, @Body() dto: ResolveOrderDto) {
    const input = dto.not_placed === true ? { not_placed: true as const, reason: dto.reason ?? '' } : { upstream_order_id: dto.upstream_order_id as number };
    return { ok: true, order: this.presenter.present(await this.operator.resolve(shopOrderNo, input)) };
  }

  @Get('wallet')
  wallet() {
    return this.walletService.wallet();
  }
}
