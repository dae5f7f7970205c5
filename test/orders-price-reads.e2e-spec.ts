/**
 * How many product reads the price guard makes (CONTRACT §5, ORDER_PRICE_FRESH_S), counted in the
 * sandbox's requests, on a clock the test moves: concurrent orders of one product share one read, and
 * orders of one SKU in a row read it once, each create's charge serving the next order. A create's
 * charge counts from when its answer arrived, as a read does: the time the create spent before its
 * answer (here the clock moves while the sandbox has it) does not age the confirmation.
 */
import type { SandboxRequestEvent } from '../src/sandbox/sandbox.types.js';
import { useAppSuite } from './support/app-suite.js';
import { TestClock } from './support/test-clock.js';

const FRESH_MS = 30_000;

describe('the price guard’s product reads (ORDER_PRICE_FRESH_S 30, on a clock the test moves)', () => {
  const clock = new TestClock();
  /** Moved forward by this much when the sandbox receives a create (the create takes that long). */
  let createTakesMs = 0;
  const onRequest = (e: SandboxRequestEvent) => {
    if (e.operation === 'createOrder' && e.phase === 'received' && createTakesMs > 0) clock.advance(createTakesMs);
  };
  const t = useAppSuite({
    sandbox: { catalog: { products: 2 } },
    prepare: (sandbox) => {
      sandbox.catalog.addProduct({ skus: [{ skuCode: 'PR-1', price: '3.00' }] });
      sandbox.catalog.addProduct({ skus: [{ skuCode: 'PR-2', price: '4.00' }] });
      sandbox.events.on('request', onRequest);
    },
    env: { ORDER_PRICE_FRESH_S: String(FRESH_MS / 1000) },
    clock,
    seed: true,
  });

  const reads = () => t.sandbox.stats.requests.product;
  const order = (no: string, sku: string) => t.app.http.post('/internal/orders', { shop_order_no: no, sku_code: sku, quantity: 1 });

  it('N concurrent orders of one product, then N more once its read is old: one read each time', async () => {
    const before = reads();
    const first = await Promise.all(['PC-1', 'PC-2', 'PC-3', 'PC-4', 'PC-5'].map((no) => order(no, 'PR-1')));
    for (const r of first) expect(r.status).toBe(201);
    expect(reads() - before).toBe(1);
    // the read and the creates' charges are old: the product is known now (its read starts early)
    clock.advance(FRESH_MS + 1);
    const second = await Promise.all(['PC-6', 'PC-7', 'PC-8', 'PC-9', 'PC-10'].map((no) => order(no, 'PR-1')));
    for (const r of second) expect(r.status).toBe(201);
    expect(reads() - before).toBe(2);
  });

  it('orders of one SKU in a row, each create answered in 10 s, the next order 25 s after that answer: one read in all', async () => {
    clock.advance(FRESH_MS + 1); // every read and charge so far is old
    const before = reads();
    createTakesMs = 10_000;
    try {
      for (const [i, no] of ['PW-1', 'PW-2', 'PW-3', 'PW-4'].entries()) {
        if (i > 0) clock.advance(25_000); // past the first read from the second order on; within the last charge's window
        const r = await order(no, 'PR-2');
        expect(r.status).toBe(201);
        expect(r.data.order).toMatchObject({ amount: '4.00' });
      }
    } finally {
      createTakesMs = 0;
    }
    expect(reads() - before).toBe(1);
  });
});
