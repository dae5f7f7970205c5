/**
 * Placing an order through an offer (CONTRACT §11), for the request that places it: the route planned
 * now (OfferFailover.plan, offer-route.ts `planRoute`), its first source placed through the relay's own
 * placement (OrderRelayService.place; a first source the route refuses without a request is recorded
 * there as an attempt rejected before sending). Every refusal before any charge, whoever sends the
 * attempt, reserves the next untried source's attempt in the transaction recording it (OfferFailover);
 * this request then sends each such attempt (QueuedOrderSender.placeQueued) until one is placed,
 * unknown or queued for a budget, or none is left: 409 `no_source_available` with the `rejected` order
 * and its route. A placed, `submit_unknown` or queued order stays where it is, so that an order is
 * placed at one supplier at most.
 *
 * The route always meets a source: when it meets none that could take the order, each source is a
 * refusal of the route (offer-route.ts), so the order is recorded `rejected` with one route entry per
 * source and nothing is sent anywhere. A source whose supplier's key is blocked is met after the
 * others; its attempt waits for the budget as a placement does (ORDER_QUEUE_WAIT_MS from the request's
 * start, in all), then is answered 202 `queued` and sent by the queue when the block ends.
 */
import { Injectable } from '@nestjs/common';
import { performance } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import { AppError } from '../common/app-error.js';
import { backoffMs, LOOK_AGAIN } from '../common/backoff.js';
import { AppConfig } from '../config/app-config.js';
import { nextOfferStep } from '../offers/offer-failover.js';
import { passesOverBeforeSending, refusalMessage } from '../offers/offer-route.js';
import { OfferRepository } from '../offers/offer.repository.js';
import { OfferFailover } from './offer-failover.service.js';
import { OrderPresenter } from './order-presenter.service.js';
import { OrderRelayService, type PlaceResult } from './order-relay.service.js';
import type { PlaceOrderInput } from './order-request.js';
import type { OrderRecord } from './order.records.js';
import { OrderReads } from './order-reads.repository.js';
import { QueuedOrderSender } from './queued-order-sender.service.js';

/** How long this request looks for the outcome of a reserved attempt that the queue took first. */
const SETTLE_LOOKS = 200;

@Injectable()
export class OfferPlacement {
  constructor(
    private readonly offers: OfferRepository,
    private readonly failover: OfferFailover,
    private readonly relay: OrderRelayService,
    private readonly sender: QueuedOrderSender,
    private readonly reads: OrderReads,
    private readonly presenter: OrderPresenter,
    private readonly config: AppConfig,
  ) {}

  async place(input: PlaceOrderInput & { offer: string }): Promise<PlaceResult> {
    // the sends of this request wait for the request budget this long in all (as a placement does)
    const deadline = performance.now() + this.config.budget.orderQueueWaitMs;
    const offer = await this.offers.find(input.offer);
    if (offer === null) throw new AppError('offer_not_found', `no offer ${input.offer}`);
    const recorded = await this.reads.findByShopOrderNo(input.shop_order_no);
    // a recorded order that is not `rejected` answers as recorded (or 409 for another body), from its own supplier
    if (recorded && recorded.status !== 'rejected') {
      return this.relay.place({ ...input, supplier: recorded.supplier, sku_code: recorded.skuKey ?? recorded.skuCode });
    }
    // a new order, or a rejected one submitted again: routed from the first source
    const route = await this.failover.plan(offer, input.max_unit_cost);
    const first = nextOfferStep(route.steps, [], null);
    if (first.kind === 'stay') throw new Error('a route with no attempt yet cannot stay');
    const refused = first.refused[0];
    const source = refused?.source ?? (first.kind === 'try' ? first.source : null);
    // an offer without a source (none is stored without one): nothing to record
    if (source === null) throw await this.noSource(input, offer.code, recorded);
    const refusal = refused ? new AppError(refused.code, refusalMessage(refused)) : undefined;
    let result: PlaceResult;
    try {
      result = await this.relay.place(
        {
          ...input,
          supplier: source.supplier,
          sku_code: source.sku_key,
          ...(route.ceiling !== null && input.max_unit_cost === undefined ? { ceiling: route.ceiling } : {}),
        },
        refusal,
      );
    } catch (e) {
      // refused with no source left after it: 409 no_source_available with the order
      const order = e instanceof AppError ? await this.orderOf(e) : null;
      if (order?.status === 'rejected' && passesOverBeforeSending(order.errorCode)) throw await this.noSource(input, offer.code, order);
      throw e;
    }
    // each refusal reserved the next source's attempt: send it here, until the order stays somewhere
    while (await this.reservedByFailover(result.order)) {
      const sent = await this.sendReserved(result.order, deadline);
      // not tried now (its product could not be read, or its budget not had in time): left to the
      // queue, answered 202 as this request left it
      if (sent === null) return { httpStatus: 202, order: result.order };
      result = sent;
    }
    const order = result.order;
    if (order.status !== 'rejected') return result;
    if (passesOverBeforeSending(order.errorCode)) throw await this.noSource(input, offer.code, order);
    const code = order.errorCode ?? 'upstream_unavailable';
    throw AppError.fromUpstream(code, 409, order.errorMessage ?? code, { order: this.presenter.present(order) });
  }

  /** The order an error of the relay carries (recorded), read again. */
  private async orderOf(e: AppError): Promise<OrderRecord | null> {
    const carried = e.extra.order as { shop_order_no?: string } | undefined;
    return carried?.shop_order_no ? this.reads.findByShopOrderNo(carried.shop_order_no) : null;
  }

  /** Whether the order's current attempt is a failover's, reserved and not sent yet. */
  private async reservedByFailover(order: OrderRecord): Promise<boolean> {
    if (order.status !== 'queued') return false;
    const attempt = await this.reads.findAttempt(order.id, order.attempt);
    return attempt?.status === 'queued' && attempt.request.route_from !== undefined;
  }

  /**
   * Sends an attempt a refusal reserved (the queued send, its price guard included), its waits for the
   * budget until `deadline`, then answers as the order settled; null when it could not be tried now
   * (left to the queue).
   */
  private async sendReserved(order: OrderRecord, deadline: number): Promise<PlaceResult | null> {
    if (!(await this.sender.placeQueued(order.id, order.attempt, { caller: 'request', deadline }))) return null;
    let current = (await this.reads.findById(order.id)) ?? order;
    // the queue may have taken it first: wait for its send to settle
    for (let n = 0; current.status === 'submitting' && n < SETTLE_LOOKS; n++) {
      await sleep(backoffMs(n, LOOK_AGAIN));
      current = (await this.reads.findById(order.id)) ?? current;
    }
    const httpStatus = current.status === 'queued' || current.status === 'submit_unknown' || current.status === 'submitting' ? 202 : 201;
    return { httpStatus, order: current };
  }

  /** 409 `no_source_available` with the `rejected` order and its route. */
  private async noSource(input: PlaceOrderInput, offer: string, order: OrderRecord | null): Promise<AppError> {
    const presented = order ? await this.presenter.presentRouted(order) : null;
    return new AppError('no_source_available', `offer ${offer}: no source could take order ${input.shop_order_no}`, {
      order: presented,
      route: presented?.route ?? [],
    });
  }
}
