/**
 * The sandbox upstream of `npm run bench:sync`, in a process of its own (a real upstream does not
 * share the relay's CPU time or memory). Driven over IPC by bench/sync.bench.ts:
 *   → {type:'ready', baseUrl, products, skus}
 *   ← {cmd:'regenerate'} → {type:'done'}        the seeded catalog again (every change thrown away)
 *   ← {cmd:'touch', n}   → {type:'done', ids}   n products get a new price and updated_at
 */
import { SandboxServer } from '../src/sandbox/sandbox.server.js';

const products = Number(process.env.BENCH_PRODUCTS ?? 20_000);
const pageSizeCap = Number(process.env.BENCH_PAGE_CAP ?? 50);

const sandbox = new SandboxServer({ pageSizeCap, catalog: { products, seed: 1 }, allowPrivateCallbackUrls: true });
await sandbox.start(0, '127.0.0.1');

process.on('message', (m: { cmd: string; n?: number }) => {
  if (m.cmd === 'regenerate') {
    sandbox.catalog.regenerate();
    process.send!({ type: 'done' });
  } else if (m.cmd === 'touch') {
    process.send!({ type: 'done', ids: sandbox.catalog.touchProducts(m.n ?? 100) });
  } else if (m.cmd === 'stop') {
    void sandbox.stop().then(() => process.exit(0));
  }
});
process.on('disconnect', () => void sandbox.stop().then(() => process.exit(0)));

process.send!({ type: 'ready', baseUrl: sandbox.baseUrl, products: sandbox.catalog.productCount, skus: sandbox.catalog.skuCount });
