/**
 * The checks before sending and the price guard of one attempt (CONTRACT §5), for whoever sends it
 * (OrderRelayService.place for a new attempt, QueuedOrderSender.placeQueued for a queued one): the
 * local SKU's checks, then the SKU's cost judged against the ceiling on
 * - a head-start read of the product (`startEarlyRead`: started beside the order's local read when
 *   this process knows the SKU's product from an earlier order),
 * - else the cost a create for the SKU confirmed within ORDER_PRICE_FRESH_S (CatalogService.confirmedCost),
 * - else a fresh `GET /products/{id}` (CatalogService.refreshProduct, shared and reused).
 * Every verdict is place-plan.ts's (`checkLocalSku`, `checkFreshSku`, `checkPrice`, and
 * `priceReadFailureRoute` for a read that failed); a refusal is the AppError it names. `noteOutcome`
 * tells the guard's cache what a create's answer showed of the price.
 */
import { Injectable } from '@nestjs/common';
import { performance } from 'node:perf_hooks';
import { BudgetWaitExceeded } from '../budget/budget.errors.js';
import { AppError } from '../common/app-error.js';
import { Clock } from '../common/clock.js';
import { CatalogService, type CatalogSku, type ProductAnswer } from '../catalog/catalog.service.js';
import { SupplierRegistry } from '../suppliers/supplier-registry.service.js';
import { isRateLimited } from '../upstream/budgeted-upstream.client.js';
import type { UpstreamProduct } from '../upstream/upstream.types.js';
import { checkFreshSku, checkLocalSku, checkPrice, passed, priceReadFailureRoute, refuse } from './place-plan.js';
import type { PlaceOrderInput } from './order-request.js';
import type { SendOutcome } from './order-submitter.service.js';

/** A product read started before the local SKU read (see `startEarlyRead`). */
export interface EarlyRead {
  supplier: string;
  productId: number;
  read: Promise<ProductAnswer>;
}

export interface CheckedSku {
  productId: number;
  /** The SKU the order resolved to (`<product_id>:<sku_code>`). */
  skuKey: string;
  skuCode: string;
  skuId: number;
  unitCost: string;
  currency: string | null;
  fulfillmentType: string | null;
}

/** The local SKU with the sku_id and unit cost to order at (the fulfillment type the local catalog holds). */
export function localChecked(local: CatalogSku, skuId: number, unitCost: string): CheckedSku {
  const { productId, skuKey, skuCode, currency, fulfillmentType } = local;
  return { productId, skuKey, skuCode, skuId, unitCost, currency, fulfillmentType };
}

/**
 * The checks passed (`checked`), or the price read is left for when the queued order is sent
 * (place-plan.ts `priceReadFailureRoute`: `defer`).
 */
export type PriceCheck = { kind: 'checked'; sku: CheckedSku } | { kind: 'deferred'; local: CatalogSku };

/** How a placement waits for the request budget: until `deadline` (performance.now()), or as long as it takes. */
export interface BudgetWait {
  deadline?: number;
  signal?: AbortSignal;
}

/** The wait left before `deadline`, in milliseconds (undefined: no limit). */
export function waitLeft(wait: BudgetWait): number | undefined {
  return wait.deadline === undefined ? undefined : Math.max(0, wait.deadline - performance.now());
}

/** A head-start product read that answered longer ago than this when the checks need it is made again. */
const EARLY_READ_MAX_AGE_MS = 250;

@Injectable()
export class PriceGuard {
  constructor(
    private readonly clock: Clock,
    private readonly catalog: CatalogService,
    private readonly suppliers: SupplierRegistry,
  ) {}

  /**
   * The product's fresh read (the price guard's), started now, beside the order's local read, when this
   * process knows the SKU's product from an earlier order (hints are kept per supplier named, or none);
   * the checks use it only if the local read names the same product. None when the supplier is
   * disabled, or when a create confirmed the SKU's cost lately: the guard may need no read at all.
   */
  startEarlyRead(ref: string, supplier: string | undefined, wait: BudgetWait): EarlyRead | null {
    const hinted = this.catalog.productHint(ref, supplier);
    if (
      hinted === undefined ||
      !this.suppliers.find(hinted.supplier)?.config.enabled ||
      this.catalog.costConfirmedLately(hinted.productId, hinted.skuCode, hinted.supplier)
    )
      return null;
    return {
      supplier: hinted.supplier,
      productId: hinted.productId,
      read: this.catalog.readProduct(hinted.productId, { supplier: hinted.supplier, maxWaitMs: waitLeft(wait) }),
    };
  }

  /**
   * The checks before sending (CONTRACT §5) on the local SKU `sku`: nothing is recorded when one fails.
   * The fresh read is `early`'s when it is of the SKU's product (its answer, an error included, is then
   * taken only here, after the local checks), else one made now.
   */
  async check(
    input: PlaceOrderInput,
    supplier: string,
    local: CatalogSku | null,
    early: EarlyRead | null,
    ceiling: string,
    wait: BudgetWait,
  ): Promise<PriceCheck> {
    // the local checks (place-plan.ts): the SKU exists and is available, a manual SKU's form is complete
    const { sku } = passed(checkLocalSku(input.sku_code, local, input.manual_form_data));
    // A create for this SKU confirmed, within ORDER_PRICE_FRESH_S, the sku_id and cost the local
    // catalog holds (it was active and in stock then): the guard judges that cost without a read. A
    // head-start read of the product, when one was started, is used instead.
    const own = early?.supplier === supplier ? early : null;
    const confirmed = own?.productId === sku.productId ? null : this.catalog.confirmedCost({ ...sku, supplier });
    if (confirmed) {
      refuse(checkPrice(confirmed.unitCost, ceiling));
      return { kind: 'checked', sku: localChecked(sku, confirmed.skuId, confirmed.unitCost) };
    }
    let product: UpstreamProduct | null;
    try {
      product = await this.catalog.refreshProduct(sku.productId, sku.productFingerprint, await this.usable(own, sku.productId), {
        supplier,
        signal: wait.signal,
        maxWaitMs: waitLeft(wait),
      });
    } catch (e) {
      const failure = { budgetWaitExceeded: e instanceof BudgetWaitExceeded, rateLimited: isRateLimited(e) };
      if (priceReadFailureRoute(failure, wait.deadline !== undefined) === 'defer') return { kind: 'deferred', local: sku };
      throw new AppError('upstream_unavailable', `the product could not be read from the upstream: ${(e as Error).message}`);
    }
    const { product: read, sku: fresh } = passed(checkFreshSku(input.sku_code, sku.skuCode, product));
    refuse(checkPrice(fresh.price_amount, ceiling));
    return {
      kind: 'checked',
      sku: {
        productId: read.id,
        skuKey: sku.skuKey,
        skuCode: sku.skuCode,
        skuId: fresh.id,
        unitCost: fresh.price_amount,
        currency: sku.currency,
        fulfillmentType: read.fulfillment_type,
      },
    };
  }

  /**
   * What a create's outcome tells the price guard's cache, noted as soon as the answer is in (before it
   * is recorded, so that the next order of the SKU finds it): a refusal forgets the product's read; the
   * create's own answer (not an order detail read later) confirms the SKU's cost when it charged
   * exactly quantity × the checked cost, and forgets the product's read when it charged more
   * (chargeVerdict). The confirmation dates from the answer's arrival, as a read does (the create's
   * wait for its budget token comes before it and says nothing of the price).
   */
  noteOutcome(supplier: string, sku: CheckedSku, quantity: number, outcome: SendOutcome): void {
    if (outcome.kind === 'rejected') this.catalog.forgetRead(sku.productId, supplier);
    if (outcome.kind !== 'accepted' || outcome.reportKind !== 'answer') return;
    const { productId, skuCode, unitCost, currency } = sku;
    this.catalog.confirmCost(
      { supplier, productId, skuCode, skuId: outcome.request.sku_id, unitCost, quantity, currency },
      outcome.report,
      this.clock.nowMs(),
    );
  }

  /**
   * `early`'s read when it is of `productId` and answered within EARLY_READ_MAX_AGE_MS (the local read
   * may have waited, e.g. for a pooled connection: an older answer is read again).
   */
  private async usable(early: EarlyRead | null, productId: number): Promise<ProductAnswer | undefined> {
    if (early?.productId !== productId) return undefined;
    const answer = await early.read;
    return performance.now() - answer.settledAt <= EARLY_READ_MAX_AGE_MS ? answer : undefined;
  }
}
