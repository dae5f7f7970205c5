/**
 * The control API under `/__sandbox/` (no authentication; JSON in, JSON `{ok, …}` out), for shop
 * developers driving a standalone sandbox with curl. The server reads and parses the body and writes
 * the answer; `controlRoute()` maps a method and path to the SandboxServer call and returns the
 * fields of the answer (null: no such route). A RangeError thrown here, or by the call, is a 400
 * bad_request. The routes:
 *   GET  /__sandbox/state                      wallet, counts, stats, faults, timetable, rate_limit
 *   GET  /__sandbox/orders                     every order (see SandboxOrderView)
 *   GET  /__sandbox/callbacks                  the callback log (every try)
 *   POST /__sandbox/reset                      everything back to the start (catalog, wallet, orders, faults, limiter, stats)
 *   POST /__sandbox/faults                     body: Partial<FaultSettings> → faults.set(); answers the faults
 *                                              (besides rules and latency, listing behaviours: e.g.
 *                                              {"updatedAfterFilter":"inclusive_seconds"|"ignored"},
 *                                              {"withdrawWhilePaging":{"afterPage":1}}: see sandbox-faults.ts)
 *   POST /__sandbox/faults/reset               no faults
 *   POST /__sandbox/faults/rules               body: FaultRule → faults.add()
 *   POST /__sandbox/held/release               body: {n?}: the oldest n requests held by `hold_before` (default all) go on
 *   GET  /__sandbox/rate-limit                 the limiter's rule ({requests, window_ms, block_ms} | null) and live keys
 *   POST /__sandbox/rate-limit                 body: {requests, window_ms, block_ms?} or {off: true}: the limiter
 *                                              (Dujiao-Next's: see sandbox-rate-limit.ts), counters emptied
 *   POST /__sandbox/connections/refuse         body: {ms?}: refuse connections, reopen after ms (default 5000)
 *   POST /__sandbox/timetable                  body: Partial<SandboxTimetable> (new orders)
 *   POST /__sandbox/advance                    run every pending timetable step now
 *   POST /__sandbox/callbacks/flush            send the snapshots held by the `reorder` fault
 *   POST /__sandbox/wallet                     body: {balance}
 *   POST /__sandbox/user                       body: {disabled}: a disabled API user is answered 403 user_disabled
 *   POST /__sandbox/orders/{id}/deliver        body: {payload?, delivery_data?}
 *   POST /__sandbox/orders/{id}/refund         body: {amount?, callback?} (callback: default by profile, none under dujiao-next)
 *   POST /__sandbox/orders/{id}/status         body: {status, payload?}
 *   POST /__sandbox/catalog/price              body: {sku_code, price}
 *   POST /__sandbox/catalog/stock              body: {sku_code, stock_status, stock_quantity?, keep_updated_at?}
 *                                              (keep_updated_at: cards added or sold, `updated_at` unmoved)
 *   POST /__sandbox/catalog/title-null         body: {product_id, null?}: served with `title: null` (null: false, fixed)
 *   POST /__sandbox/catalog/sku-active         body: {sku_code, is_active}
 *   POST /__sandbox/catalog/sku-id             body: {sku_code}             → {sku_id}
 *   POST /__sandbox/catalog/remove-sku         body: {sku_code}: the product keeps its other SKUs
 *   POST /__sandbox/catalog/delist             body: {product_id}
 *   POST /__sandbox/catalog/relist             body: {product_id}
 *   POST /__sandbox/catalog/delete             body: {product_id}: gone (404 product_not_found, in no listing)
 *   POST /__sandbox/catalog/products           body: AddProductInput        → {product}
 *   POST /__sandbox/catalog/insert-at-front    body: AddProductInput?       → {product}
 *   POST /__sandbox/catalog/duplicate-sku-code body: {sku_code}             → {product_id, sku_id}
 *   POST /__sandbox/catalog/touch              body: {n}                    → {product_ids}
 */
import type { AddProductInput } from './sandbox-catalog.js';
import type { FaultRule, FaultSettings } from './sandbox-faults.js';
import { isPlainObject } from './sandbox-http.js';
import type { SandboxServer } from './sandbox.server.js';
import type { SandboxOrderStatus, SandboxStockStatus, SandboxTimetable } from './sandbox.types.js';

/** The server, with the few of its internals the control API reads or drives. */
export interface SandboxControlTarget {
  server: SandboxServer;
  orderCount(): number;
  heldCallbacks(): number;
  /** Refuses connections now and listens again after `ms`. */
  refuseFor(ms: number): void;
}

function rateLimitJson(server: SandboxServer): { requests: number; window_ms: number; block_ms: number } | null {
  const r = server.rateLimit;
  return r ? { requests: r.requests, window_ms: r.windowMs, block_ms: r.blockMs } : null;
}

export function controlRoute(
  target: SandboxControlTarget,
  method: string,
  sub: string,
  body: Record<string, unknown>,
): Record<string, unknown> | null {
  const { server } = target;
  const { catalog, faults } = server;
  const str = (key: string): string => {
    const v = body[key];
    if (typeof v !== 'string') throw new RangeError(`${key} must be a string`);
    return v;
  };
  const int = (key: string): number => {
    const v = body[key];
    if (typeof v !== 'number' || !Number.isInteger(v)) throw new RangeError(`${key} must be an integer`);
    return v;
  };
  const orderRoute = /^\/orders\/(\d+)\/(deliver|refund|status)$/.exec(sub);
  if (method === 'POST' && orderRoute) {
    const id = Number(orderRoute[1]);
    switch (orderRoute[2]) {
      case 'deliver': {
        const payload = body.payload === undefined ? server.autoPayload(id) : str('payload');
        const data = isPlainObject(body.delivery_data) ? body.delivery_data : null;
        return { order: server.deliverManual(id, payload, data) };
      }
      case 'refund':
        if (body.callback !== undefined && typeof body.callback !== 'boolean') throw new RangeError('callback must be true or false');
        return { order: server.refundOrder(id, body.amount === undefined ? undefined : str('amount'), { callback: body.callback }) };
      default:
        return {
          order: server.setOrderStatus(
            id,
            str('status') as SandboxOrderStatus,
            body.payload === undefined ? {} : { payload: str('payload') },
          ),
        };
    }
  }
  switch (`${method} ${sub}`) {
    case 'GET /state':
      return {
        wallet: { balance: server.walletBalance(), currency: server.config.currency },
        counts: {
          products: catalog.productCount,
          listed_products: catalog.listedCount,
          skus: catalog.skuCount,
          orders: target.orderCount(),
          callbacks: server.callbackLog.length,
          held_callbacks: target.heldCallbacks(),
          held_requests: server.heldRequests,
        },
        stats: server.stats,
        faults: faults.snapshot(),
        timetable: server.timetable,
        api: { base_url: server.baseUrl, header_prefix: server.config.headerPrefix, profile: server.config.profile },
        rate_limit: rateLimitJson(server),
      };
    case 'GET /rate-limit':
      return {
        rate_limit: rateLimitJson(server),
        keys: server.rateLimitState().map((k) => ({ key: k.key, count: k.count, limited: k.limited })),
      };
    case 'POST /rate-limit':
      if (body.off === true) server.setRateLimit(null);
      else
        server.setRateLimit({
          requests: int('requests'),
          windowMs: int('window_ms'),
          blockMs: body.block_ms === undefined ? 0 : int('block_ms'),
        });
      return { rate_limit: rateLimitJson(server) };
    case 'GET /orders':
      return { orders: server.orders() };
    case 'GET /callbacks':
      return { callbacks: server.callbackLog };
    case 'POST /reset':
      server.reset();
      return {};
    case 'POST /faults':
      faults.set(body as Partial<FaultSettings>);
      return { faults: faults.snapshot() };
    case 'POST /faults/reset':
      faults.reset();
      return { faults: faults.snapshot() };
    case 'POST /faults/rules':
      faults.add(body as unknown as FaultRule);
      return { faults: faults.snapshot() };
    case 'POST /held/release': {
      const n = body.n === undefined ? undefined : int('n');
      if (n !== undefined && n < 0) throw new RangeError('n must not be negative');
      const released = server.releaseHeld(n);
      return { released, held_requests: server.heldRequests };
    }
    case 'POST /connections/refuse': {
      const ms = body.ms === undefined ? 5000 : int('ms');
      target.refuseFor(ms);
      return { reopen_in_ms: ms };
    }
    case 'POST /timetable':
      server.setTimetable(body as Partial<SandboxTimetable>);
      return { timetable: server.timetable };
    case 'POST /advance':
      server.advanceAll();
      return {};
    case 'POST /callbacks/flush':
      server.flushHeldCallbacks();
      return {};
    case 'POST /wallet':
      server.setWalletBalance(str('balance'));
      return { balance: server.walletBalance() };
    case 'POST /user':
      if (typeof body.disabled !== 'boolean') throw new RangeError('disabled must be true or false');
      server.userDisabled = body.disabled;
      return { disabled: server.userDisabled };
    case 'POST /catalog/price':
      catalog.setPrice(str('sku_code'), str('price'));
      return { sku: catalog.getSku(str('sku_code'))?.sku };
    case 'POST /catalog/stock':
      if (body.keep_updated_at !== undefined && typeof body.keep_updated_at !== 'boolean')
        throw new RangeError('keep_updated_at must be a boolean');
      catalog.setStock(
        str('sku_code'),
        str('stock_status') as SandboxStockStatus,
        body.stock_quantity === undefined ? undefined : int('stock_quantity'),
        {
          keepUpdatedAt: body.keep_updated_at === true,
        },
      );
      return { sku: catalog.getSku(str('sku_code'))?.sku };
    case 'POST /catalog/title-null':
      if (body.null !== undefined && typeof body.null !== 'boolean') throw new RangeError('null must be a boolean');
      catalog.setTitleNull(int('product_id'), body.null !== false);
      return { product_id: int('product_id'), title_null: body.null !== false };
    case 'POST /catalog/sku-active':
      if (typeof body.is_active !== 'boolean') throw new RangeError('is_active must be a boolean');
      catalog.setSkuActive(str('sku_code'), body.is_active);
      return { sku: catalog.getSku(str('sku_code'))?.sku };
    case 'POST /catalog/sku-id':
      return { sku_id: catalog.changeSkuId(str('sku_code')) };
    case 'POST /catalog/remove-sku':
      catalog.removeSku(str('sku_code'));
      return {};
    case 'POST /catalog/delist':
      catalog.delistProduct(int('product_id'));
      return {};
    case 'POST /catalog/delete':
      catalog.deleteProduct(int('product_id'));
      return {};
    case 'POST /catalog/relist':
      catalog.relistProduct(int('product_id'));
      return {};
    case 'POST /catalog/products':
      return { product: catalog.addProduct(body as AddProductInput) };
    case 'POST /catalog/insert-at-front':
      return { product: catalog.insertAtFront(body as AddProductInput) };
    case 'POST /catalog/duplicate-sku-code': {
      const r = catalog.duplicateSkuCode(str('sku_code'));
      return { product_id: r.productId, sku_id: r.skuId };
    }
    case 'POST /catalog/touch':
      return { product_ids: catalog.touchProducts(int('n')) };
    default:
      return null;
  }
}
