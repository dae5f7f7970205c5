/** Reading orders for the internal API: one order, a filtered page, its events. */
import { Injectable } from '@nestjs/common';
import { AppError } from '../common/app-error.js';
import { Clock } from '../common/clock.js';
import { listResponse, pageRequest, type ListResponse } from '../common/pagination.js';
import { AppConfig } from '../config/app-config.js';
import { stuckThresholds } from './order-state.js';
import { toOrderEventResponse, type OrderEventResponse, type OrderResponse } from './order.mapper.js';
import type { OrderRecord } from './order.records.js';
import { OrderReads } from './order-reads.repository.js';
import { OrderPresenter } from './order-presenter.service.js';
import type { ListOrdersQuery } from './orders.dto.js';

@Injectable()
export class OrderQueryService {
  constructor(
    private readonly config: AppConfig,
    private readonly clock: Clock,
    private readonly reads: OrderReads,
    private readonly presenter: OrderPresenter,
  ) {}

  async get(shopOrderNo: string): Promise<OrderRecord> {
    const order = await this.reads.findByShopOrderNo(shopOrderNo);
    if (!order) throw new AppError('order_not_found', `no order ${shopOrderNo}`);
    return order;
  }

  async list(q: ListOrdersQuery): Promise<ListResponse<OrderResponse>> {
    const page = pageRequest(q);
    const { items, total } = await this.reads.list(
      {
        status: q.status,
        supplier: q.supplier,
        stuck: q.stuck === true ? stuckThresholds(this.clock.now(), this.config.orders.stuckAlertS) : undefined,
      },
      page,
    );
    return listResponse(
      items.map((o) => this.presenter.present(o)),
      total,
      page,
    );
  }

  async events(shopOrderNo: string): Promise<OrderEventResponse[]> {
    const order = await this.get(shopOrderNo);
    return (await this.reads.events(order.id)).map(toOrderEventResponse);
  }
}
