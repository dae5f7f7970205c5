/**
 * Sending an attempt reserved `queued` (CONTRACT §5, §10, §11): one the request budget or a 429 held
 * back when the order was placed, or an offer order's next source that a failover reserved. OrderQueue
 * takes them in arrival order; the request that placed an offer order sends the attempts its failover
 * reserves (OfferPlacement). The attempt is sent under the number it was reserved with, with the
 * checks and the price guard made now (PriceGuard) against the ceiling recorded at acceptance; a
 * refusal closes the attempt `rejected` with its code, nothing charged, and what follows it (an offer
 * order's next source, OfferFailover) is reserved in the same transaction.
 */
import { Injectable, Logger } from '@nestjs/common';
import { AppError } from '../common/app-error.js';
import { Clock } from '../common/clock.js';
import { CatalogService } from '../catalog/catalog.service.js';
import { SupplierRegistry } from '../suppliers/supplier-registry.service.js';
import { DomainEvents } from './domain-events.js';
import { OfferFailover, type RefusalFollowUp } from './offer-failover.service.js';
import type { PlaceOrderInput } from './order-request.js';
import type { AttemptRecord, AttemptRequest, OrderRecord } from './order.records.js';
import type { OrderTx } from './order-tx.js';
import { OrderReads } from './order-reads.repository.js';
import { OrderWrites } from './order-writes.repository.js';
import { OrderSubmitter } from './order-submitter.service.js';
import { OrderUpdater } from './order-updater.service.js';
import { expectedAmount, priceCeiling } from './place-plan.js';
import { PriceGuard, waitLeft, type BudgetWait, type CheckedSku } from './price-guard.service.js';
import { mayCloseRejected } from './attempt-plan.js';

/** How a queued attempt is sent: by the queue (as long as it takes), or by a request (until its `deadline`). */
export interface QueuedSend {
  /** Ends the waits for the budget (the queue's, at shutdown). */
  signal?: AbortSignal;
  /** The request's: the budget is waited for until this performance.now() time, then the attempt is left to the queue. */
  deadline?: number;
  caller?: 'queue' | 'request';
}

@Injectable()
export class QueuedOrderSender {
  private readonly logger = new Logger('orders');

  constructor(
    private readonly clock: Clock,
    private readonly reads: OrderReads,
    private readonly writes: OrderWrites,
    private readonly catalog: CatalogService,
    private readonly guard: PriceGuard,
    private readonly submitter: OrderSubmitter,
    private readonly updater: OrderUpdater,
    private readonly events: DomainEvents,
    private readonly suppliers: SupplierRegistry,
    private readonly failover: OfferFailover,
  ) {}

  /**
   * Sends a queued attempt: the checks and the price guard are made now, against the ceiling recorded
   * when the order was accepted; a refusal closes the attempt (`rejected` with its code, nothing
   * charged). The price read and then the create's token are waited for as long as it takes (`signal`
   * ends the wait at shutdown), or, for a request, until its `deadline`; only with the token in hand
   * does the order move to `submitting`, so that it stays `queued` (cancelable here) while it waits. A
   * 429 on the create sends it back to the queue, keeping its place. Returns false when it could not be
   * tried now (the product could not be read, or the wait was cut or ran out): the queue tries again
   * later (a request that gives up on it hands it to the queue, woken).
   */
  async placeQueued(orderId: string, attemptNo: number, send: QueuedSend = {}): Promise<boolean> {
    const { signal, caller = 'queue' } = send;
    const wait: BudgetWait = { signal, ...(send.deadline !== undefined ? { deadline: send.deadline } : {}) };
    const order = await this.reads.findById(orderId);
    const attempt = order && (await this.reads.findAttempt(orderId, attemptNo));
    if (!order || !attempt || order.status !== 'queued' || attempt.status !== 'queued' || order.attempt !== attemptNo) return true;
    const { supplier } = order;
    // an offer order's failover: the same rule whoever sends the attempt (OfferFailover), planned when a
    // refusal is to be recorded
    const followUp = () =>
      this.failover.followUp(
        {
          offer: order.offer,
          orderId,
          passStart: attempt.request.route_from ?? attemptNo,
          current: { supplier, sku_key: order.skuKey },
          shopOrderNo: order.shopOrderNo,
          maxUnitCost: order.maxUnitCost,
          ...(attempt.request.manual_form_data !== undefined ? { manualFormData: attempt.request.manual_form_data } : {}),
        },
        (s) => this.submitter.withCallback(s),
      );
    // the order moved on to its next source's attempt: the queue of that supplier takes it up now
    // (the request that placed the order sends it itself)
    const movedOn = (recorded: OrderRecord | null): boolean => {
      if (recorded === null || recorded.attempt === attemptNo) return false;
      if (caller === 'queue' && recorded.status === 'queued') this.events.publish({ type: 'order_queued', orderId });
      return true;
    };
    // not tried now: still queued (a request that gives up on it hands it to the queue, woken)
    const leftQueued = (): boolean => {
      if (caller === 'request') this.events.publish({ type: 'order_queued', orderId });
      return false;
    };
    const input: PlaceOrderInput = {
      shop_order_no: order.shopOrderNo,
      supplier,
      sku_code: order.skuCode,
      quantity: order.quantity,
      ...(attempt.request.manual_form_data !== undefined ? { manual_form_data: attempt.request.manual_form_data } : {}),
      ...(order.maxUnitCost !== null ? { max_unit_cost: order.maxUnitCost } : {}),
    };
    // the SKU the order resolved to when it was accepted, at its supplier
    const ref = order.skuKey ?? order.skuCode;
    const { found } = await this.reads.findSkuForOrder(ref, order.shopOrderNo, supplier);
    const local = this.catalog.skuForOrder(ref, found, supplier).sku;
    let sku: CheckedSku;
    try {
      // the ceiling recorded when the order was accepted (the SKU's sale price now for an order recorded without one)
      const ceiling = priceCeiling(order.maxUnitCost, order.priceCeiling ?? local?.salePrice);
      const checked = await this.guard.check(input, supplier, local, null, ceiling, wait);
      // the read waited for the budget past the request's deadline (a wait without one is never deferred)
      if (checked.kind === 'deferred') return leftQueued();
      sku = checked.sku;
    } catch (e) {
      if (!(e instanceof AppError) || e.code === 'upstream_unavailable') return leftQueued();
      movedOn(await this.refuseQueued(order, attempt, e, await followUp()));
      return true;
    }
    const request: AttemptRequest = { ...attempt.request, sku_id: sku.skuId, with_callback: this.submitter.withCallback(supplier) };
    try {
      // the order's supplier's own budget: another supplier's queue never waits for it
      await this.suppliers.get(supplier).budget.take('create', { signal, operation: 'createOrder', maxWaitMs: waitLeft(wait) });
    } catch {
      return leftQueued(); // shutdown, the request's deadline, or the ledger could not be asked: still queued
    }
    const started = await this.writes.transaction(async (tx) => {
      const locked = await tx.lockOrderAndAttempt(orderId, attemptNo);
      if (!locked || locked.order.status !== 'queued' || locked.attempt.status !== 'queued') return null;
      const dbNow = await tx.databaseNow();
      await tx.updateAttempt(locked.attempt.id, {
        status: 'submitting',
        request,
        sends: locked.attempt.sends + 1,
        sending_until: new Date(dbNow.getTime() + this.submitter.sendLeaseMs),
      });
      return this.updater.moveLocal(
        tx,
        locked.order,
        'dequeue',
        'submitting',
        'api',
        {
          product_id: sku.productId,
          sku_id: sku.skuId,
          unit_cost: sku.unitCost,
          expected_amount: expectedAmount(sku.unitCost, order.quantity),
        },
        { attempt: attemptNo, downstream_order_no: locked.attempt.downstreamOrderNo },
      );
    });
    if (!started) return true;
    const outcome = await this.submitter.send(
      supplier,
      attempt.downstreamOrderNo,
      request,
      { shop_order_no: order.shopOrderNo },
      { granted: true },
    );
    this.guard.noteOutcome(supplier, sku, order.quantity, outcome);
    const onRefused = mayCloseRejected(outcome.kind) ? await followUp() : undefined;
    const recorded = await this.submitter.record(orderId, attemptNo, outcome, 'api', undefined, onRefused);
    this.failover.noteTaken(recorded, attemptNo);
    return movedOn(recorded) || recorded.status !== 'queued';
  }

  /**
   * The order's `queued` attempt closed `rejected` with the refusal `e` (nothing was sent), the order
   * with it, and what follows the refusal (an offer order's next source) reserved in this transaction.
   */
  async refuseInTx(tx: OrderTx, order: OrderRecord, attemptId: string, e: AppError, onRefused?: RefusalFollowUp): Promise<OrderRecord> {
    await tx.updateAttempt(attemptId, {
      status: 'rejected',
      finished_at: this.clock.now(),
      http_status: e.httpStatus,
      error_code: e.code,
      error_message: e.message,
    });
    const moved = await this.updater.moveLocal(
      tx,
      order,
      'dequeue',
      'rejected',
      'api',
      { error_code: e.code, error_message: e.message },
      { attempt: order.attempt, error_code: e.code },
    );
    return (onRefused ? await onRefused(tx, moved, e.code, false) : null) ?? moved;
  }

  /**
   * A queued order that its checks refused when it was to be sent: its attempt and the order `rejected`
   * with the code, and what follows the refusal (an offer order's next source). Returns the order as
   * it then is (null: no longer queued).
   */
  private async refuseQueued(
    order: OrderRecord,
    attempt: AttemptRecord,
    e: AppError,
    onRefused?: RefusalFollowUp,
  ): Promise<OrderRecord | null> {
    const recorded = await this.writes.transaction(async (tx) => {
      const locked = await tx.lockOrderAndAttempt(order.id, attempt.attemptNo);
      if (!locked || locked.order.status !== 'queued' || locked.attempt.status !== 'queued') return null;
      return this.refuseInTx(tx, locked.order, locked.attempt.id, e, onRefused);
    });
    this.logger.warn({
      msg: `order ${order.shopOrderNo}: refused when taken from the queue (${e.code}): ${e.message}`,
      shop_order_no: order.shopOrderNo,
      trace_id: order.traceId,
      error_code: e.code,
    });
    return recorded;
  }
}
