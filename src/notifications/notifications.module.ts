import { Module } from '@nestjs/common';
import { OutboxRepository } from './outbox.repository.js';
import { WebhookDeliveriesController } from './webhook-deliveries.controller.js';
import { WebhookSender } from './webhook-sender.service.js';

/**
 * Shop notifications: the outbox sender and the operator's deliveries API. `OutboxWriter`, which
 * the other modules use inside their transactions, is provided app-wide by the core module.
 */
@Module({
  controllers: [WebhookDeliveriesController],
  providers: [OutboxRepository, WebhookSender],
  exports: [WebhookSender],
})
export class NotificationsModule {}
