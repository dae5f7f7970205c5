/** Builds internal API answers from records: decrypts the items (only here) and maps the order. */
import { Injectable, Logger } from '@nestjs/common';
import { Clock } from '../common/clock.js';
import { AppConfig } from '../config/app-config.js';
import { toOrderResponse, type OrderResponse } from './order.mapper.js';
import type { OrderRecord } from './order.records.js';
import { OrderReads } from './order-reads.repository.js';
import { PayloadCipher, type DeliveredData } from './payload-cipher.service.js';

@Injectable()
export class OrderPresenter {
  private readonly logger = new Logger('orders');

  constructor(
    private readonly config: AppConfig,
    private readonly clock: Clock,
    private readonly cipher: PayloadCipher,
    private readonly reads: OrderReads,
  ) {}

  /** The order with its `route` when it was placed through an offer (read from its attempts). */
  async presentRouted(order: OrderRecord): Promise<OrderResponse> {
    const answer = this.present(order);
    if (order.offer == null) return answer;
    return { ...answer, route: await this.reads.route(order.id) };
  }

  present(order: OrderRecord): OrderResponse {
    let delivered: DeliveredData | null = null;
    if (order.deliverySealed) {
      try {
        delivered = this.cipher.open(order.id, order.deliverySealed);
      } catch (e) {
        this.logger.error({
          msg: `order ${order.shopOrderNo}: stored items cannot be decrypted (${(e as Error).message})`,
          shop_order_no: order.shopOrderNo,
          trace_id: order.traceId,
        });
      }
    }
    return toOrderResponse(order, delivered, this.clock.now(), this.config.orders.stuckAlertS);
  }
}
