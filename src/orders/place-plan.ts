/**
 * The placement's decisions (CONTRACT §5, §10), pure: what `OrderRelayService.place` decides before it
 * records or sends anything, and what it answers once the send is recorded. No Nest, no I/O. In the
 * order the placement makes them:
 *
 * 1. the supplier (`pickSupplier`): with `supplier` given, the SKUs were read at that supplier only;
 *    without one, a reference (a sku_key or a sku_code) that SKUs of several suppliers answer to is
 *    refused, 409 `sku_ambiguous` with the candidates as `{supplier, sku_key}` (never a guess); one
 *    that a single supplier's SKUs answer to is that supplier's. As within one supplier, listed SKUs
 *    come first: a reference that one supplier's listed SKUs and only unlisted SKUs elsewhere answer to
 *    is the first supplier's. The resolution within one supplier is the catalog's (`resolveSkuRef`,
 *    catalog/sku-key.ts); a reference that several SKUs of one supplier carry is refused there
 *    (`CatalogService.skuForOrder`);
 * 2. a repeated request: another body is 409 `idempotency_conflict` (`checkSameRequest`, on the request
 *    fingerprints); only a `rejected` order with the same body gets a new attempt (`canResubmit`); a
 *    new attempt goes to an enabled supplier only, 409 `supplier_disabled` (`checkSupplierOpen`);
 * 3. the checks before sending, each a refusal (the error code, the message and the details the API
 *    answers with) or a pass: the quantity (`checkQuantity`, before any read), the local SKU
 *    (`checkLocalSku`: `sku_not_found`, `sku_unavailable`, a manual SKU's form: `manual_form_required`,
 *    or keys the form lacks: `bad_request`), the SKU on the product's fresh read (`checkFreshSku`:
 *    `sku_unavailable`), the price guard (`checkPrice`: `price_changed`); the relay throws the AppError
 *    a refusal names (`refuse`, `passed`), and nothing is recorded for a refused order;
 * 4. the money checks, exact decimal arithmetic with `Money` (decimal.js, see catalog/pricing.ts),
 *    never a JavaScript number for money: the price guard's ceiling (`priceCeiling`: the shop's
 *    `max_unit_cost`, else the sale price known before the fresh read) and check (`aboveCeiling`), the
 *    expected amount (`expectedAmount`: unit cost × quantity, at the unit cost's scale), the overcharge
 *    of a create's charge (`overcharge`), equal amounts whatever their scale (`sameAmount`);
 * 5. the price guard's route when its fresh read fails (`priceReadFailureRoute`): the upstream read
 *    nothing when the read waited for the request budget past the placement's wait, or was answered
 *    429: a placement that may be queued (a new one, with ORDER_QUEUE_WAIT_MS) is then queued as the
 *    local catalog knows the SKU, its price read when it is sent (`defer`); any other failure, or a read
 *    of a queued order being sent, is 503 `upstream_unavailable` (`unavailable`), nothing recorded;
 * 6. the HTTP answer (`placeAnswer`): from the order as the send's outcome left it, the status of a
 *    success or the error to answer with (its code, HTTP status and message; the order goes in the
 *    envelope); the relay turns an error into an AppError.
 *
 * | order after the send                 | answer                                                              |
 * |--------------------------------------|---------------------------------------------------------------------|
 * | `submit_unknown`, `queued`           | 202                                                                 |
 * | `rejected`, the upstream refused     | its code and status (below)                                         |
 * | `rejected`, nothing reached it       | 503 `upstream_unavailable`                                          |
 * | `submitting` (a status not known)    | 201 when the upstream accepted it, else 202                         |
 * | any upstream state                   | 201                                                                 |
 *
 * A refusal: 502 `upstream_auth_failed` for a 401/403 (`refusalCode`); else the upstream's code with
 * its status, or, for an `ok: false` answered 200, 402 `payment_failed` / 502.
 */
import { AppError } from '../common/app-error.js';
import type { ErrorCode } from '../common/error-codes.js';
import type { FoundSku } from '../catalog/catalog-read.repository.js';
import { Money } from '../catalog/pricing.js';
import { resolveSkuRef } from '../catalog/sku-key.js';
import type { UpstreamProduct, UpstreamSku } from '../upstream/upstream.types.js';
import { manualFormProblems } from './order-request.js';
import { UPSTREAM_ORDER_EXISTS, type OrderStatus } from './order-state.js';

// ------------------------------------------------------------------------------------- 1. the supplier

/** A SKU an order read, with the supplier that carries it. */
export type SupplierSku = FoundSku & { supplier: string };

export type SupplierPick =
  /** The supplier whose SKUs the reference names (null: none names it) and those SKUs. */
  | { kind: 'supplier'; supplier: string | null; found: SupplierSku[] }
  | { kind: 'ambiguous'; candidates: Array<{ supplier: string; sku_key: string }> };

export function pickSupplier(ref: string, found: readonly SupplierSku[]): SupplierPick {
  const bySupplier = new Map<string, SupplierSku[]>();
  for (const f of found) {
    const list = bySupplier.get(f.supplier);
    if (list) list.push(f);
    else bySupplier.set(f.supplier, [f]);
  }
  if (bySupplier.size <= 1) {
    const [only] = bySupplier.keys();
    return { kind: 'supplier', supplier: only ?? null, found: [...found] };
  }
  const answering = (rows: readonly SupplierSku[]) => rows.filter((r) => r.sku.sku_key === ref || r.sku.sku_code === ref);
  const naming = [...bySupplier.entries()].filter(
    ([, rows]) =>
      resolveSkuRef(
        ref,
        rows.map((r) => r.sku),
      ).kind !== 'not_found',
  );
  const listed = naming.filter(([, rows]) => answering(rows).some((r) => r.sku.listed));
  const among = listed.length > 0 ? listed : naming;
  if (among.length === 0) return { kind: 'supplier', supplier: null, found: [] };
  if (among.length === 1) return { kind: 'supplier', supplier: among[0][0], found: among[0][1] };
  const candidates = among.flatMap(([supplier, rows]) => {
    const matching = answering(rows);
    const shown = listed.length > 0 ? matching.filter((r) => r.sku.listed) : matching;
    return shown.map((r) => ({ supplier, sku_key: r.sku.sku_key }));
  });
  candidates.sort((a, b) => a.supplier.localeCompare(b.supplier) || a.sku_key.localeCompare(b.sku_key));
  return { kind: 'ambiguous', candidates };
}

// ------------------------------------------------------------------------------- 2. a repeated request

/**
 * Whether a shop's repeated request may make a new attempt of an order: only a `rejected` one (the
 * upstream has nothing of it), not once refunded, and not while the upstream showed an order placed
 * for an attempt closed here (UPSTREAM_ORDER_EXISTS: an operator settles it).
 */
export function canResubmit(o: { status: OrderStatus; refundRecorded: boolean; anomaly: string | null }): boolean {
  return o.status === 'rejected' && !o.refundRecorded && o.anomaly !== UPSTREAM_ORDER_EXISTS;
}

/** A request with a recorded order number: the same body (request fingerprint) or 409 `idempotency_conflict`. */
export function checkSameRequest(order: { shopOrderNo: string; requestFingerprint: string }, fingerprint: string): Refusal | null {
  if (order.requestFingerprint === fingerprint) return null;
  return { code: 'idempotency_conflict', message: `order ${order.shopOrderNo} was recorded with another request body`, extra: {} };
}

/**
 * A new attempt goes to an enabled supplier only (its unfinished orders are still followed): a disabled
 * one is 409 `supplier_disabled`. `refusedByRoute`: an offer order's source that its route refused
 * before any request is recorded as refused whatever its supplier's state (nothing is sent to it).
 */
export function checkSupplierOpen(supplier: string, enabled: boolean, refusedByRoute: boolean): Refusal | null {
  if (enabled || refusedByRoute) return null;
  return { code: 'supplier_disabled', message: `supplier ${supplier} is disabled: it takes no new orders`, extra: { supplier } };
}

// ------------------------------------------------------------------------ 3. the checks before sending

export interface Refusal {
  code: Extract<
    ErrorCode,
    | 'bad_request'
    | 'sku_not_found'
    | 'sku_unavailable'
    | 'manual_form_required'
    | 'price_changed'
    | 'idempotency_conflict'
    | 'supplier_disabled'
  >;
  message: string;
  extra: Record<string, unknown>;
}

/** A quantity above ORDER_MAX_QUANTITY is a bad request. */
export function checkQuantity(quantity: number, maxQuantity: number): Refusal | null {
  if (quantity <= maxQuantity) return null;
  return {
    code: 'bad_request',
    message: 'invalid request: quantity',
    extra: { fields: { quantity: [`quantity must not be greater than ${maxQuantity}`] } },
  };
}

/** What the local checks read of the SKU the reference names. */
export interface LocalSkuFacts {
  available: boolean;
  fulfillmentType: string | null;
  manualFormSchema: Record<string, unknown> | null | undefined;
}

/**
 * The local SKU: it exists and is available; a manually fulfilled SKU's form has its required fields
 * (only where the product's form has required fields) and no key the form lacks. The SKU when it passes.
 */
export function checkLocalSku<S extends LocalSkuFacts>(
  ref: string,
  sku: S | null,
  manualFormData: Record<string, unknown> | undefined,
): { refusal: Refusal } | { sku: S } {
  if (!sku) return { refusal: { code: 'sku_not_found', message: `no SKU ${ref}`, extra: {} } };
  if (!sku.available)
    return { refusal: { code: 'sku_unavailable', message: `SKU ${ref} is not available (unlisted, inactive or out of stock)`, extra: {} } };
  if (sku.fulfillmentType !== 'manual') return { sku };
  const { missing, unknown } = manualFormProblems(sku.manualFormSchema, manualFormData);
  if (missing.length) {
    const fields = Object.fromEntries(missing.map((k) => [`manual_form_data.${k}`, ['required']]));
    return {
      refusal: {
        code: 'manual_form_required',
        message: `SKU ${ref} is fulfilled manually: its form needs ${missing.join(', ')}`,
        extra: { fields },
      },
    };
  }
  if (unknown.length) {
    const fields = Object.fromEntries(unknown.map((k) => [`manual_form_data.${k}`, ["not a field of the product's form"]]));
    return {
      refusal: {
        code: 'bad_request',
        message: `invalid request: manual_form_data has keys the product's form does not have (${unknown.join(', ')})`,
        extra: { fields },
      },
    };
  }
  return { sku };
}

/** The SKU on the product's fresh read: found, with its product active, itself active and in stock; else `sku_unavailable`. */
export function checkFreshSku(
  ref: string,
  skuCode: string,
  product: UpstreamProduct | null,
): { refusal: Refusal } | { product: UpstreamProduct; sku: UpstreamSku } {
  const fresh = product?.skus.find((s) => s.sku_code === skuCode);
  if (!product || !fresh || !product.is_active || !fresh.is_active || fresh.stock_status === 'out_of_stock') {
    return { refusal: { code: 'sku_unavailable', message: `SKU ${ref} is no longer available upstream`, extra: {} } };
  }
  return { product, sku: fresh };
}

/** The price guard: a unit cost above the ceiling is refused (409 `price_changed`). */
export function checkPrice(unitCost: string, ceiling: string): Refusal | null {
  if (!aboveCeiling(unitCost, ceiling)) return null;
  return {
    code: 'price_changed',
    message: `the unit price is now ${unitCost}, above ${ceiling}`,
    extra: { unit_cost: unitCost, max_unit_cost: ceiling },
  };
}

/** Throws the AppError a pre-send check's refusal names; nothing when it passed. */
export function refuse(refusal: Refusal | null): void {
  if (refusal) throw new AppError(refusal.code, refusal.message, refusal.extra);
}

/** The value a pre-send check passed, or the AppError its refusal names thrown. */
export function passed<T extends object>(result: { refusal: Refusal } | T): T {
  if ('refusal' in result) throw new AppError(result.refusal.code, result.refusal.message, result.refusal.extra);
  return result;
}

// --------------------------------------------------------------------------------- 4. the money checks

/**
 * The price guard's ceiling: `maxUnitCost` (the shop's `max_unit_cost`) when given, else `knownPrice`
 * (the sale price known before the fresh read; for a queued order, the ceiling recorded when it was
 * accepted), else `0` (no SKU known: the checks refuse the order before any price is compared).
 */
export function priceCeiling(maxUnitCost: string | null | undefined, knownPrice: string | null | undefined): string {
  return maxUnitCost ?? knownPrice ?? '0';
}

/** The price guard: whether the fresh unit cost is above the ceiling (equal passes). */
export function aboveCeiling(unitCost: string, ceiling: string): boolean {
  return new Money(unitCost).gt(new Money(ceiling));
}

/** Decimal places written in a decimal string (`12.50` → 2, `12` → 0). */
function scaleOf(text: string): number {
  return text.split('.')[1]?.length ?? 0;
}

/**
 * The order's expected amount: `unitCost` × `quantity`, at `unitCost`'s scale (`10.00` × 2 is
 * `20.00`). Exact: a whole quantity adds no decimal places.
 */
export function expectedAmount(unitCost: string, quantity: number): string {
  return new Money(unitCost).mul(quantity).toFixed(scaleOf(unitCost));
}

/**
 * The overcharge check: the expected amount of `quantity` units at the checked `unitCost` when the
 * upstream's `charged` amount is above it; null when it is not, or when either is unknown.
 */
export function overcharge(charged: string | null | undefined, unitCost: string | null, quantity: number): { expected: string } | null {
  if (!charged || unitCost === null) return null;
  const expected = expectedAmount(unitCost, quantity);
  return new Money(charged).gt(new Money(expected)) ? { expected } : null;
}

/** Whether two amounts are equal as numbers (`20` and `20.00` are); two absent ones are the same, one absent is not. */
export function sameAmount(a: string | null | undefined, b: string | null | undefined): boolean {
  return a == null || b == null ? a == b : new Money(a).eq(new Money(b));
}

// --------------------------------------------------------------- 5. the price guard's read that failed

export type PriceReadFailureRoute = 'defer' | 'unavailable';

export interface PriceReadFailure {
  /** The wait for the budget ran out before the read was sent (BudgetWaitExceeded). */
  budgetWaitExceeded: boolean;
  /** The upstream answered 429. */
  rateLimited: boolean;
}

/** `canQueue`: the placement may be queued (a new one, with a deadline for its budget wait). */
export function priceReadFailureRoute(failure: PriceReadFailure, canQueue: boolean): PriceReadFailureRoute {
  return canQueue && (failure.budgetWaitExceeded || failure.rateLimited) ? 'defer' : 'unavailable';
}

// --------------------------------------------------------------------------------------- 6. the answer

/** What the answer needs of the send's outcome (order-submitter.service.ts SendOutcome). */
export type AnsweredOutcome =
  | { kind: 'accepted' | 'unavailable' | 'unknown' | 'queued' }
  | { kind: 'rejected'; errorCode: string; httpStatus: number; message: string };

export type PlaceAnswer =
  | { kind: 'ok'; httpStatus: 201 | 202 }
  /** one of our codes (error-codes.ts), with the status its table gives it */
  | { kind: 'error'; code: 'upstream_auth_failed' | 'upstream_unavailable'; httpStatus: 502 | 503; message: string; upstream: false }
  /** the upstream's own code and status, kept as they are (AppError.fromUpstream) */
  | { kind: 'error'; code: string; httpStatus: number; message: string; upstream: true };

/**
 * The code a refusal of the create is known by (CONTRACT §5, §11): `upstream_auth_failed` for a 401/403
 * (whatever the upstream named it), else the upstream's own code. An offer order's failover decides
 * on it, as the answer does.
 */
export function refusalCode(outcome: { errorCode: string; httpStatus: number }): string {
  return outcome.httpStatus === 401 || outcome.httpStatus === 403 ? 'upstream_auth_failed' : outcome.errorCode;
}

export function placeAnswer(order: { status: OrderStatus | string; errorMessage: string | null }, outcome: AnsweredOutcome): PlaceAnswer {
  switch (order.status) {
    case 'submit_unknown':
    case 'queued':
      return { kind: 'ok', httpStatus: 202 };
    case 'rejected': {
      if (outcome.kind === 'rejected') {
        const message = `the upstream refused the order: ${outcome.message}`;
        if (refusalCode(outcome) === 'upstream_auth_failed')
          return { kind: 'error', code: 'upstream_auth_failed', httpStatus: 502, message, upstream: false };
        // the upstream's own code, with its status (an `ok: false` answered 200: 402 for `payment_failed`, else 502)
        const status = outcome.httpStatus >= 400 ? outcome.httpStatus : outcome.errorCode === 'payment_failed' ? 402 : 502;
        return { kind: 'error', code: outcome.errorCode, httpStatus: status, message, upstream: true };
      }
      return {
        kind: 'error',
        code: 'upstream_unavailable',
        httpStatus: 503,
        message: order.errorMessage ?? 'the upstream could not be reached',
        upstream: false,
      };
    }
    case 'submitting':
      // accepted with a status we do not know (kept as an anomaly, followed): the upstream has it
      return { kind: 'ok', httpStatus: outcome.kind === 'accepted' ? 201 : 202 };
    default:
      return { kind: 'ok', httpStatus: 201 };
  }
}
