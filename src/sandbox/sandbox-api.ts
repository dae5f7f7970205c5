/**
 * The API's routes under `/api/v1/upstream` and what each operation does once the request has passed
 * the transport (faults, limiter, authentication): the catalog reads, the order calls (delegated to
 * the order world) and ping. A refusal (ApiError) becomes the `{ok:false, error_code, error_message}`
 * envelope here.
 */
import type { SandboxCatalog } from './sandbox-catalog.js';
import { listProductsAnswer, productAnswer } from './sandbox-catalog-api.js';
import type { SandboxConfig } from './sandbox-config.js';
import type { FaultRule, SandboxFaults } from './sandbox-faults.js';
import { ApiError, errorJson, okAnswer, parseId, type Answer } from './sandbox-http.js';
import type { SandboxOrders } from './sandbox-orders.js';
import type { SandboxOperation } from './sandbox.types.js';

export interface RouteMatch {
  operation: SandboxOperation;
  /** The path's id (product or order), unparsed. */
  id: string | null;
}

const ROUTES: ReadonlyArray<{ method: string; re: RegExp; operation: SandboxOperation }> = [
  { method: 'POST', re: /^\/ping$/, operation: 'ping' },
  { method: 'GET', re: /^\/categories$/, operation: 'categories' },
  { method: 'GET', re: /^\/products$/, operation: 'products' },
  { method: 'GET', re: /^\/products\/([^/]+)$/, operation: 'product' },
  { method: 'POST', re: /^\/orders$/, operation: 'createOrder' },
  { method: 'GET', re: /^\/orders\/([^/]+)$/, operation: 'getOrder' },
  { method: 'POST', re: /^\/orders\/([^/]+)\/cancel$/, operation: 'cancelOrder' },
];

/** The operation of `method` on `sub` (the path below the API prefix), or null. */
export function matchApiRoute(method: string, sub: string): RouteMatch | null {
  for (const r of ROUTES) {
    if (r.method !== method) continue;
    const m = r.re.exec(sub);
    if (m) return { operation: r.operation, id: m[1] ?? null };
  }
  return null;
}

export interface ApiContext {
  config: Readonly<SandboxConfig>;
  catalog: SandboxCatalog;
  faults: SandboxFaults;
  world: SandboxOrders;
}

export async function runOperation(
  ctx: ApiContext,
  match: RouteMatch,
  query: URLSearchParams,
  raw: Buffer,
  rule: FaultRule | undefined,
): Promise<Answer> {
  const { config, catalog, world } = ctx;
  try {
    switch (match.operation) {
      case 'ping':
        return okAnswer({
          ok: true,
          site_name: config.siteName,
          protocol_version: '1.0',
          user_id: config.userId,
          balance: world.walletBalance(),
          currency: config.currency,
          member_level: config.memberLevel,
        });
      case 'categories':
        return { status: 200, body: `{"ok":true,"categories":${catalog.categoriesJson()}}` };
      case 'products':
        return listProductsAnswer(catalog, ctx.faults, config, query);
      case 'product':
        return productAnswer(catalog, config, parseId(match.id, 'product id'));
      case 'createOrder':
        return await world.create(raw, rule);
      case 'getOrder':
        return world.read(parseId(match.id, 'order id'));
      case 'cancelOrder':
        return world.cancel(parseId(match.id, 'order id'));
    }
  } catch (err) {
    if (err instanceof ApiError) return { status: err.status, body: errorJson(err.code, err.message) };
    throw err;
  }
}
