/**
 * The sandbox upstream of `npm run bench:budget`, in a process of its own (a real upstream does not
 * share the relay's CPU time), under profile `dujiao-next` with its limiter on. Started by
 * bench/budget.bench.ts with BUDGET_BENCH_SANDBOX (JSON: {products, orderProducts, rateLimit,
 * callbackRetryDelaysMs}) and driven over IPC, one request at a time answered by id:
 *   → {type:'ready', baseUrl, skuCodes, products}
 *   ← {id, cmd:'stats'}          → {id, stats}                      SandboxStats as they are now
 *   ← {id, cmd:'resetStats'}     → {id}
 *   ← {id, cmd:'log', from}      → {id, entries, next}              the limiter's log from index `from`:
 *                                                                     [epoch ms, key, operation, admitted]
 *   ← {id, cmd:'orders'}         → {id, orders}                     [downstream_order_no, created epoch ms]
 *   ← {id, cmd:'requests', from} → {id, requests, next, orders}     the product reads from index `from`:
 *                                                                     [epoch ms, 'product', path]; every
 *                                                                     order: [created epoch ms, product_id,
 *                                                                     downstream_order_no]
 * The log's times are the sandbox's performance.now() moved onto the epoch (timeOrigin + at), so that
 * they compare with the bench's Date.now() on the same machine.
 */
import { performance } from 'node:perf_hooks';
import { SandboxServer, type SandboxRateLimit } from '../src/sandbox/sandbox.server.js';
import type { SandboxRequestEvent } from '../src/sandbox/sandbox.types.js';

interface Settings {
  /** Generated products (the seeded catalog), besides the orders' products. */
  products: number;
  /** Products of one auto-delivered SKU each, `BUDGET-<i>`, that the bench's orders buy. */
  orderProducts: number;
  rateLimit: SandboxRateLimit;
  callbackRetryDelaysMs: number[];
}

const settings = JSON.parse(process.env.BUDGET_BENCH_SANDBOX ?? '{}') as Settings;

const sandbox = new SandboxServer({
  profile: 'dujiao-next',
  catalog: { products: settings.products, seed: 1 },
  allowPrivateCallbackUrls: true,
  wallet: { balance: '100000000.00' },
  rateLimit: settings.rateLimit,
  callbackRetryDelaysMs: settings.callbackRetryDelaysMs,
  // auto orders: paid in the create (Dujiao-Next), fulfilling and delivered within a few hundred ms
  timetable: { paidMs: 50, fulfillingMs: 100, deliveredMs: 200, completedMs: null },
});
const skuCodes: string[] = [];
for (let i = 0; i < settings.orderProducts; i++) {
  const code = `BUDGET-${i}`;
  sandbox.catalog.addProduct({ fulfillmentType: 'auto', skus: [{ skuCode: code, price: '1.00' }] });
  skuCodes.push(code);
}
sandbox.catalog.warm();
/** The product reads received: [epoch ms, 'product', path]. */
const requests: Array<[number, string, string]> = [];
sandbox.events.on('request', (e: SandboxRequestEvent) => {
  if (e.phase === 'received' && e.operation === 'product') requests.push([performance.timeOrigin + performance.now(), e.operation, e.path]);
});
await sandbox.start(0, '127.0.0.1');

function answer(m: { id: number; cmd: string; from?: number }): Record<string, unknown> {
  switch (m.cmd) {
    case 'stats':
      return { stats: sandbox.stats };
    case 'resetStats':
      sandbox.resetStats();
      return {};
    case 'log': {
      const log = sandbox.rateLimitLog();
      const from = m.from ?? 0;
      const entries = log.slice(from).map((e) => [performance.timeOrigin + e.at, e.key, e.operation, e.admitted]);
      return { entries, next: log.length };
    }
    case 'requests': {
      const from = m.from ?? 0;
      return {
        requests: requests.slice(from),
        next: requests.length,
        orders: sandbox.orders().map((o) => [Date.parse(o.created_at), o.product_id, o.downstream_order_no]),
      };
    }
    case 'orders':
      return { orders: sandbox.orders().map((o) => [o.downstream_order_no, Date.parse(o.created_at)]) };
    default:
      throw new Error(`unknown command ${m.cmd}`);
  }
}

process.on('message', (m: { id: number; cmd: string; from?: number }) => {
  if (m.cmd === 'stop') {
    void sandbox.stop().then(() => process.exit(0));
    return;
  }
  try {
    process.send!({ id: m.id, ...answer(m) });
  } catch (e) {
    process.send!({ id: m.id, error: (e as Error)?.stack ?? String(e) });
  }
});
process.on('disconnect', () => void sandbox.stop().then(() => process.exit(0)));

process.send!({ type: 'ready', baseUrl: sandbox.baseUrl, skuCodes, products: sandbox.catalog.productCount });
