/**
 * In-process signals of the orders module: an order's open attempt or cancel finished, so that what
 * waited for it (callbacks held in the inbox) can go on at once instead of at its next retry; an
 * order's items are due (a delivered state was reported without them), so that the poller reads it
 * at once instead of at its next tick; an order was queued for the request budget, so that the queue
 * takes it up.
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

  /** An order was queued (it waits for the request budget): the queue takes it up. */
  queued(orderId: string): void {
    this.emitter.emit('queued', orderId);
  }

  onQueued(listener: (orderId: string) => void): () => void {
    this.emitter.on('queued', listener);
    return () => this.emitter.off('queued', listener);
  }

  /** The order is due for a read now: a delivered state was reported without its items. */
  itemsDue(orderId: string): void {
    this.emitter.emit('items_due', orderId);
  }

  onItemsDue(listener: (orderId: string) => void): () => void {
    this.emitter.on('items_due', listener);
    return () => this.emitter.off('items_due', listener);
  }
}
