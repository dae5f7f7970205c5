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
import { CatalogService } from '../catalog/catalog.service.js';
import { backoffMs, LOOK_AGAIN } from '../common/backoff.js';
import { setTimeout as sleep } from 'node:timers/promises';
import { expectedAmount, priceCeiling } from './place-plan.js';
import { downstreamOrderNo } from './order-request.js';
import type { AttemptRequest, OrderRecord } from './order.records.js';
import { OrderSubmitter, type RefusalFollowUp } from './order-submitter.service.js';
import type { OrderTx } from './order-tx.js';
import { OrderUpdater } from './order-updater.service.js';

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
    private readonly catalog: CatalogService,
    private readonly submitter: OrderSubmitter,
    private readonly updater: OrderUpdater,
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
    // the order as a refusal left it, its next attempt reserved at plan.tries[tried] in that transaction
    let reserved: OrderRecord | null = null;
    for (let tried = 0; ; tried++) {
      let source: RouteSource;
      if (reserved === null) {
        const step = nextOfferStep(plan.tries, tried, last);
        if (step.kind === 'stay') throw lastError!; // a refusal the route does not pass over
        if (step.kind === 'exhausted') throw await this.noSource(input, offer.code);
        source = step.source;
      } else {
        source = plan.tries[tried];
      }
      const onRefused = await this.followUp(input, plan.tries, tried, ceiling);
      try {
        let result: PlaceResult;
        if (reserved === null) {
          result = await this.relay.place(
            {
              ...input,
              supplier: source.supplier,
              sku_code: source.sku_key,
              ...(ceiling !== null && input.max_unit_cost === undefined ? { ceiling } : {}),
            },
            onRefused,
          );
        } else {
          result = await this.sendReserved(reserved, onRefused);
        }
        const next = result.order;
        // refused here, the next source reserved in the same transaction: send it
        if (next.status === 'queued' && next.supplier !== source.supplier && tried + 1 < plan.tries.length) {
          this.metrics.offerFailovers.inc({ reason: await this.refusalOf(next) });
          reserved = next;
          continue;
        }
        if (result.httpStatus !== 200) this.metrics.offerRouted.inc({ supplier: next.supplier });
        return result;
      } catch (e) {
        if (!(e instanceof AppError)) throw e;
        // an error carrying the order: the attempt was recorded, a create may have gone out
        const sent = e.extra.order !== undefined;
        last = { status: 'rejected', errorCode: e.code, sent };
        lastError = e;
        reserved = null;
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

  /** The error code of the attempt before the order's current one (the refusal a failover followed). */
  private async refusalOf(order: OrderRecord): Promise<string> {
    const before = (await this.repo.route(order.id)).find((e) => e.attempt === order.attempt - 1);
    return before?.error_code ?? 'unknown';
  }

  /**
   * What follows a refused create at `tries[tried]`, in the transaction recording the refusal: when
   * the route moves on (nextOfferStep), the next source's attempt reserved `queued` at its supplier,
   * with the SKU as the local catalog knows it (its price guard is made when it is sent). Null when
   * there is no next source, or the local catalog lacks its SKU (the route then goes on as a new
   * request would).
   */
  private async followUp(
    input: PlaceOrderInput,
    tries: readonly RouteSource[],
    tried: number,
    ceiling: string | null,
  ): Promise<RefusalFollowUp | undefined> {
    const next = tries[tried + 1];
    if (next === undefined) return undefined;
    const { found } = await this.repo.findSkuForOrder(next.sku_key, input.shop_order_no, next.supplier);
    const sku = this.catalog.skuForOrder(next.sku_key, found, next.supplier).sku;
    if (!sku) return undefined;
    return async (tx: OrderTx, rejected: OrderRecord, code: string | null) => {
      const end: AttemptEnd = { status: 'rejected', errorCode: code, sent: true };
      if (nextOfferStep(tries, tried + 1, end).kind !== 'try') return null;
      const n = rejected.attempt + 1;
      const dno = downstreamOrderNo(rejected.shopOrderNo, n);
      const form = input.manual_form_data ?? (sku.fulfillmentType === 'manual' ? {} : undefined);
      const request: AttemptRequest = {
        sku_id: sku.upstreamSkuId,
        quantity: rejected.quantity,
        ...(form !== undefined ? { manual_form_data: form } : {}),
        trace_id: rejected.traceId,
        with_callback: this.submitter.withCallback(next.supplier),
      };
      const now = this.clock.now();
      await tx.insertAttempt(rejected.id, n, dno, request, now, this.submitter.sendLeaseMs, 'queued', {
        supplier: next.supplier,
        skuKey: sku.skuKey,
      });
      const patch = {
        attempt: n,
        downstream_order_no: dno,
        supplier: next.supplier,
        sku_key: sku.skuKey,
        product_id: sku.productId,
        sku_id: sku.upstreamSkuId,
        unit_cost: sku.costPrice,
        expected_amount: expectedAmount(sku.costPrice, rejected.quantity),
        price_ceiling: priceCeiling(input.max_unit_cost ?? ceiling ?? undefined, sku.salePrice),
        error_code: null,
        error_message: null,
      };
      return this.updater.moveLocal(tx, { ...rejected, attempt: n, supplier: next.supplier }, 'resubmit', 'queued', 'api', patch, {
        attempt: n,
        downstream_order_no: dno,
        failover_from: rejected.supplier,
        reason: code,
      });
    };
  }

  /** Sends an attempt a refusal reserved (the relay's queued send, its price guard included), then answers as the order settled. */
  private async sendReserved(order: OrderRecord, onRefused: RefusalFollowUp | undefined): Promise<PlaceResult> {
    await this.relay.placeQueued(order.id, order.attempt, undefined, onRefused);
    let current = (await this.repo.findById(order.id)) ?? order;
    // the queue may have taken it first: wait for its send to settle
    for (let n = 0; current.status === 'submitting' && n < 200; n++) {
      await sleep(backoffMs(n, LOOK_AGAIN));
      current = (await this.repo.findById(order.id)) ?? current;
    }
    if (current.status === 'rejected' && current.attempt === order.attempt) {
      const code = current.errorCode ?? 'upstream_unavailable';
      throw AppError.fromUpstream(code, 409, current.errorMessage ?? code, { order: this.presenter.present(current) });
    }
    const httpStatus = current.status === 'queued' || current.status === 'submit_unknown' || current.status === 'submitting' ? 202 : 201;
    return { httpStatus, order: current };
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
