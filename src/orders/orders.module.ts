import { Module } from '@nestjs/common';
import { CatalogModule } from '../catalog/catalog.module.js';
import { OrderCancelService } from './order-cancel.service.js';
import { OrderFollowService } from './order-follow.service.js';
import { OrderOperatorService } from './order-operator.service.js';
import { OrderPoller } from './order-poller.service.js';
import { OrderPresenter } from './order-presenter.service.js';
import { OrderQueue } from './order-queue.service.js';
import { OrderQueryService } from './order-query.service.js';
import { OrderRelayService } from './order-relay.service.js';
import { OrderRepository } from './order.repository.js';
import { OrderSignals } from './order-signals.service.js';
import { OrderSubmitter } from './order-submitter.service.js';
import { OrderUpdater } from './order-updater.service.js';
import { OrdersController } from './orders.controller.js';
import { PayloadCipher } from './payload-cipher.service.js';
import { WalletService } from './wallet.service.js';

/** Orders: placing, following (poller), cancel and refund, operator actions, the wallet. */
@Module({
  imports: [CatalogModule],
  controllers: [OrdersController],
  providers: [
    OrderRepository,
    PayloadCipher,
    OrderSignals,
    OrderUpdater,
    OrderSubmitter,
    OrderPresenter,
    OrderRelayService,
    OrderFollowService,
    OrderCancelService,
    OrderOperatorService,
    OrderQueryService,
    OrderPoller,
    OrderQueue,
    WalletService,
  ],
  exports: [OrderRepository, OrderFollowService, OrderSignals, OrderPoller, OrderUpdater],
})
export class OrdersModule {}
