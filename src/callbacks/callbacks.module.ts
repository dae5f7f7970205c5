import { Module } from '@nestjs/common';
import { OrdersModule } from '../orders/orders.module.js';
import { CallbackInboxRepository } from './callback-inbox.repository.js';
import { CallbackProcessor } from './callback-processor.service.js';
import { CallbackVerifier } from './callback-verifier.service.js';
import { CallbacksController } from './callbacks.controller.js';

/** The public callback endpoint: verify, store in the inbox, hand the hint to orders. */
@Module({
  imports: [OrdersModule],
  controllers: [CallbacksController],
  providers: [CallbackVerifier, CallbackInboxRepository, CallbackProcessor],
})
export class CallbacksModule {}
