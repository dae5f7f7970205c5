/**
 * Placing an order through an offer (CONTRACT §11): the route (offer-route.ts `planRoute`) over the
 * offer's sources with their suppliers' state and the ceiling (`max_unit_cost`, else the offer's sale
 * price), then each source in turn through the relay's own placement (OrderRelayService), which records
 * every try as an attempt of the one order at that source's supplier. The next source is tried only
 * after a definitive refusal before any charge (offer-failover.ts `nextOfferStep`); a placed,
 * `submit_unknown` or queued order stays where it is, so that an order is placed at one supplier at most.
 */
import { Injectable, Logger } from '@nestjs/common';
import { DataSource } from 'typeorm';
import { AppError } from '../common/app-error.js';
import { Clock } from '../common/clock.js';
import { nextOfferStep } from '../offers/offer-failover.js';
import { planRoute, routeCeiling, type AttemptEnd, type RouteSource, type SupplierState } from '../offers/offer-route.js';
import { OfferRepository } from '../offers/offer.repository.js';
import { Metrics } from '../ops/metrics.service.js';
import { SupplierRegistry } from '../suppliers/supplier-registry.service.js';
import { OrderPresenter } from './order-presenter.service.js';
import { OrderRelayService, type PlaceResult } from './order-relay.service.js';
import type { PlaceOrderInput } from './order-request.js';
import { OrderRepository } from './order.repository.js';

@Injectable()
export class OfferPlacement {
  private readonly logger = new Logger('orders');

  constructor(
    private readonly dataSource: DataSource,
    private readonly clock: Clock,
    private readonly offers: OfferRepository,
    private readonly suppliers: SupplierRegistry,
    private readonly relay: OrderRelayService,
    private readonly repo: OrderRepository,
    private readonly presenter: OrderPresenter,
    private readonly metrics: Metrics,
  ) {}

  async place(input: PlaceOrderInput & { offer: string }): Promise<PlaceResult> {
    const offer = await this.offers.find(input.offer);
    if (offer === null) throw new AppError('offer_not_found', `no offer ${input.offer}`);
    const recorded = await this.repo.findByShopOrderNo(input.shop_order_no);
    // a recorded order that is not `rejected` answers as recorded (or 409 for another body), from its own supplier
    if (recorded && recorded.status !== 'rejected') {
      return this.relay.place({ ...input, supplier: recorded.supplier, sku_code: recorded.skuKey ?? recorded.skuCode });
    }
    const sources = (await this.offers.sourcesOf(this.dataSource.manager, [offer.code])).get(offer.code) ?? [];
    const states = new Map<string, SupplierState>();
    for (const name of new Set(sources.map((s) => s.supplier))) {
      const runtime = this.suppliers.find(name);
      if (!runtime) continue;
      const until = runtime.config.enabled ? await runtime.budget.blockedUntil() : null;
      states.set(name, { enabled: runtime.config.enabled, blockedUntil: until ? until.getTime() : null });
    }
    const ceiling = routeCeiling(input.max_unit_cost, offer.sale_price);
    const routeSources: RouteSource[] = sources.map((s) => ({
      position: s.position,
      supplier: s.supplier,
      sku_key: s.sku_key,
      cost_price: s.cost_price,
      available: s.available,
    }));
    const plan = planRoute(offer.routing, routeSources, states, ceiling, this.clock.nowMs());
    let last: AttemptEnd | null = null;
    let lastError: AppError | null = null;
    for (let tried = 0; ; tried++) {
      const step = nextOfferStep(plan.tries, tried, last);
      if (step.kind === 'stay') throw lastError!; // a refusal the route does not pass over
      if (step.kind === 'exhausted') throw await this.noSource(input, offer.code);
      const { source } = step;
      try {
        const result = await this.relay.place({
          ...input,
          supplier: source.supplier,
          sku_code: source.sku_key,
          ...(ceiling !== null && input.max_unit_cost === undefined ? { ceiling } : {}),
        });
        if (result.httpStatus !== 200) this.metrics.offerRouted.inc({ supplier: source.supplier });
        return result;
      } catch (e) {
        if (!(e instanceof AppError)) throw e;
        // an error carrying the order: the attempt was recorded, a create may have gone out
        const sent = e.extra.order !== undefined;
        last = { status: 'rejected', errorCode: e.code, sent };
        lastError = e;
        if (nextOfferStep(plan.tries, tried + 1, last).kind === 'try') this.metrics.offerFailovers.inc({ reason: e.code });
        this.logger.log({
          msg: `order ${input.shop_order_no}: offer ${offer.code}, source ${source.supplier} ${source.sku_key} refused (${e.code})`,
          shop_order_no: input.shop_order_no,
          supplier: source.supplier,
          error_code: e.code,
        });
      }
    }
  }

  /** 409 `no_source_available` with the order (when one was recorded) and its route. */
  private async noSource(input: PlaceOrderInput, offer: string): Promise<AppError> {
    const order = await this.repo.findByShopOrderNo(input.shop_order_no);
    const presented = order ? await this.presenter.presentRouted(order) : null;
    return new AppError('no_source_available', `offer ${offer}: no source could take order ${input.shop_order_no}`, {
      order: presented,
      route: presented?.route ?? [],
    });
  }
}
