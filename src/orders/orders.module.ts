import { Logger, Module } from '@nestjs/common';
import { CatalogModule } from '../catalog/catalog.module.js';
import { OffersModule } from '../offers/offers.module.js';
import { OfferFailover } from './offer-failover.service.js';
import { OfferPlacement } from './offer-placement.service.js';
import { DomainEvents } from './domain-events.js';
import { OrderCancelService } from './order-cancel.service.js';
import { OrderFollowService } from './order-follow.service.js';
import { OrderOperatorService } from './order-operator.service.js';
import { OrderPoller } from './order-poller.service.js';
import { OrderPresenter } from './order-presenter.service.js';
import { OrderQueue } from './order-queue.service.js';
import { OrderQueryService } from './order-query.service.js';
import { OrderRelayService } from './order-relay.service.js';
import { PriceGuard } from './price-guard.service.js';
import { QueuedOrderSender } from './queued-order-sender.service.js';
import { OrderReads } from './order-reads.repository.js';
import { OrderWrites } from './order-writes.repository.js';
import { OrderSubmitter } from './order-submitter.service.js';
import { OrderUpdater } from './order-updater.service.js';
import { OrdersController } from './orders.controller.js';
import { PayloadCipher } from './payload-cipher.service.js';
import { WalletService } from './wallet.service.js';

/** The bus of the orders' domain events (domain-events.ts); a handler's failure is logged. */
function domainEvents(): DomainEvents {
  const logger = new Logger('domain-events');
  return new DomainEvents((error, event, handler) =>
    logger.error({
      msg: `${handler} failed on ${event.type} of order ${event.orderId}: ${error instanceof Error ? error.message : String(error)}`,
      event: event.type,
      handler,
    }),
  );
}

/** Orders: placing, following (poller), cancel and refund, operator actions, the wallet. */
@Module({
  imports: [CatalogModule, OffersModule],
  controllers: [OrdersController],
  providers: [
    OrderReads,
    OrderWrites,
    PayloadCipher,
    { provide: DomainEvents, useFactory: domainEvents },
    OrderUpdater,
    OrderSubmitter,
    OrderPresenter,
    OfferFailover,
    PriceGuard,
    QueuedOrderSender,
    OrderRelayService,
    OfferPlacement,
    OrderFollowService,
    OrderCancelService,
    OrderOperatorService,
    OrderQueryService,
    OrderPoller,
    OrderQueue,
    WalletService,
  ],
  exports: [OrderReads, OrderWrites, OrderFollowService, DomainEvents, OrderUpdater],
})
export class OrdersModule {}
