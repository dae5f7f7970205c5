/**
 * In-process signals of the orders module: an order's open attempt or cancel finished, so that what
 * waited for it (callbacks held in the inbox) can go on at once instead of at its next retry.
 */
import { EventEmitter } from 'node:events';
import { Injectable } from '@nestjs/common';

@Injectable()
export class OrderSignals {
  private readonly emitter = new EventEmitter();

  constructor() {
    this.emitter.setMaxListeners(0);
  }

  /** The order has no attempt in flight and no cancel in progress any more. */
  settled(orderId: string): void {
    this.emitter.emit('settled', orderId);
  }

  onSettled(listener: (orderId: string) => void): () => void {
    this.emitter.on('settled', listener);
    return () => this.emitter.off('settled', listener);
  }
}
