/**
 * The checks before sending (CONTRACT §5), pure: each returns the refusal it finds (the error code, the
 * message and the details the API answers with), or null when the order passes. In the order the
 * placement makes them: the quantity (before any read), the local SKU (`sku_not_found`,
 * `sku_unavailable`, a manual SKU's form: `manual_form_required`, or keys the form lacks:
 * `bad_request`), the SKU on the product's fresh read (`sku_unavailable`), the price guard
 * (`price_changed`). A reference that several SKUs carry is refused by the catalog's resolution
 * (`CatalogService.skuForOrder`, sku-key.ts). `OrderRelayService` throws the AppError a refusal names;
 * nothing is recorded for a refused order.
 */
import { AppError } from '../common/app-error.js';
import type { ErrorCode } from '../common/error-codes.js';
import type { UpstreamProduct, UpstreamSku } from '../upstream/upstream.types.js';
import { aboveCeiling } from './money-checks.js';
import { manualFormProblems } from './order-request.js';

export interface Refusal {
  code: Extract<ErrorCode, 'bad_request' | 'sku_not_found' | 'sku_unavailable' | 'manual_form_required' | 'price_changed'>;
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
