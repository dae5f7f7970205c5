/**
 * A new order with its first attempt being sent, written as the reservation writes it (one
 * statement, no upstream involved): for the specs of the orders repository's optimistic writes and
 * leases.
 */
import type { OrderSnapshot } from '../../src/orders/order-tx.js';
import type { OrderWrites } from '../../src/orders/order-writes.repository.js';

/** What the order is of, when it matters (a real SKU, the fingerprint of the body the shop would send). */
export interface ReservedOrderOf {
  supplier?: string;
  skuCode?: string;
  requestFingerprint?: string;
}

export async function reserveOrder(
  repo: OrderWrites,
  shopOrderNo: string,
  leaseMs = 60_000,
  of: ReservedOrderOf = {},
): Promise<OrderSnapshot> {
  const traceId = `t-${shopOrderNo}`;
  const created = await repo.autocommit((tx) =>
    tx.insertOrder(
      {
        shopOrderNo,
        supplier: of.supplier ?? 'main',
        skuCode: of.skuCode ?? 'SKU-1',
        skuKey: null,
        quantity: 1,
        requestFingerprint: of.requestFingerprint ?? 'f',
        maxUnitCost: null,
        priceCeiling: '1.00',
        traceId,
        productId: 1,
        skuId: 1,
        unitCost: '1.00',
        expectedAmount: '1.00',
        currency: 'CNY',
        fulfillmentType: 'auto',
      },
      { sku_id: 1, quantity: 1, trace_id: traceId, with_callback: false },
      new Date(),
      leaseMs,
    ),
  );
  if (!created) throw new Error(`order ${shopOrderNo} not inserted`);
  return created;
}
