/**
 * The unauthenticated control API under /__sandbox/ (for shop developers) and runSandbox().
 */
import { signedRequest } from './sandbox-request.js';
import { runSandbox } from './sandbox.main.js';
import { SandboxServer } from './sandbox.server.js';
import type { SandboxCreatedOrder, SandboxOrderDetail, SandboxOrderView, SandboxProduct } from './sandbox.types.js';

interface ControlAnswer {
  status: number;
  body: Record<string, unknown>;
}

describe('sandbox control API', () => {
  let sandbox: SandboxServer;

  async function control(method: 'GET' | 'POST', path: string, body?: unknown): Promise<ControlAnswer> {
    const res = await fetch(`${sandbox.url}/__sandbox${path}`, {
      method,
      headers: body === undefined ? {} : { 'content-type': 'application/json' },
      body: body === undefined ? undefined : typeof body === 'string' ? body : JSON.stringify(body),
    });
    return { status: res.status, body: (await res.json()) as Record<string, unknown> };
  }

  async function createOrder(): Promise<SandboxCreatedOrder> {
    const sku = sandbox.catalog.findSku({ fulfillmentType: 'auto', stockStatus: 'unlimited' })!.sku.id;
    return (await signedRequest(sandbox.credentials, 'POST', '/orders', { body: { sku_id: sku, quantity: 2 } }))
      .json as SandboxCreatedOrder;
  }

  beforeAll(async () => {
    sandbox = new SandboxServer({ catalog: { products: 12 }, timetable: { paidMs: null } });
    await sandbox.start();
  });
  afterAll(() => sandbox.stop());
  beforeEach(() => sandbox.reset());

  it('reports the state', async () => {
    const r = await control('GET', '/state');
    expect(r.status).toBe(200);
    expect(r.body).toMatchObject({
      ok: true,
      wallet: { balance: '1000000.00', currency: 'CNY' },
      counts: { products: 12, listed_products: 12, orders: 0 },
      faults: { latencyMs: 0, rules: [] },
    });
  });

  it('sets and resets faults, refusing invalid ones', async () => {
    const r = await control('POST', '/faults', { latencyMs: 5, rules: [{ operation: 'ping', kind: 'error_before', status: 500 }] });
    expect(r.status).toBe(200);
    expect(sandbox.faults.latencyMs).toBe(5);
    expect((await signedRequest(sandbox.credentials, 'POST', '/ping')).status).toBe(500);
    const invalid = await control('POST', '/faults', { rules: [{ kind: 'explode' }] });
    expect(invalid.status).toBe(400);
    expect(invalid.body.error_code).toBe('bad_request');
    await control('POST', '/faults/reset');
    expect(sandbox.faults.snapshot().rules).toEqual([]);
    expect((await control('POST', '/faults', 'not json')).status).toBe(400);
  });

  it('releases the requests held by hold_before, and counts them in the state', async () => {
    sandbox.faults.set({ rules: [{ operation: 'ping', kind: 'hold_before', times: 2 }] });
    const pings = [signedRequest(sandbox.credentials, 'POST', '/ping'), signedRequest(sandbox.credentials, 'POST', '/ping')];
    while (sandbox.heldRequests < 2) await new Promise<void>((resolve) => sandbox.events.once('request', () => resolve()));
    expect((await control('GET', '/state')).body.counts).toMatchObject({ held_requests: 2 });
    expect((await control('POST', '/held/release', { n: -1 })).status).toBe(400);
    expect((await control('POST', '/held/release', { n: 1 })).body).toEqual({ ok: true, released: 1, held_requests: 1 });
    expect((await control('POST', '/held/release')).body).toEqual({ ok: true, released: 1, held_requests: 0 });
    expect((await Promise.all(pings)).map((r) => r.status)).toEqual([200, 200]);
  });

  it('delivers, refunds and sets the status of orders', async () => {
    const o = await createOrder();
    const delivered = await control('POST', `/orders/${o.order_id}/deliver`, { payload: 'CODE-1\nCODE-2' });
    expect(delivered.status).toBe(200);
    expect((delivered.body.order as SandboxOrderView).status).toBe('delivered');
    const detail = (await signedRequest(sandbox.credentials, 'GET', `/orders/${o.order_id}`)).json as SandboxOrderDetail;
    expect(detail.fulfillment!.payload).toBe('CODE-1\nCODE-2');

    const refunded = await control('POST', `/orders/${o.order_id}/refund`, { amount: '0.01' });
    expect(refunded.body.order as SandboxOrderView).toMatchObject({ status: 'partially_refunded', refunded_amount: '0.01' });
    expect((await control('POST', `/orders/${o.order_id}/refund`, { amount: '999999999.00' })).status).toBe(400);
    // `callback` must be true or false; a refused body changes nothing
    expect((await control('POST', `/orders/${o.order_id}/refund`, { amount: '0.01', callback: 'yes' })).status).toBe(400);
    expect(sandbox.orders().find((x) => x.id === o.order_id)).toMatchObject({ refunded_amount: '0.01' });

    const other = await createOrder();
    const set = await control('POST', `/orders/${other.order_id}/status`, { status: 'fulfilling' });
    expect((set.body.order as SandboxOrderView).status).toBe('fulfilling');
    expect((await control('POST', `/orders/${other.order_id}/status`, { status: 'lost' })).status).toBe(400);
    expect((await control('POST', '/orders/1/deliver', {})).status).toBe(400);

    const listed = await control('GET', '/orders');
    expect((listed.body.orders as SandboxOrderView[]).map((x) => x.id)).toEqual([o.order_id, other.order_id]);
  });

  it('changes stock without moving updated_at, and serves a product with a null title until fixed', async () => {
    const found = sandbox.catalog.findSku({ stockStatus: 'in_stock' })!;
    const before = found.product.updated_at;
    await control('POST', '/catalog/stock', {
      sku_code: found.sku.sku_code,
      stock_status: 'in_stock',
      stock_quantity: 77,
      keep_updated_at: true,
    });
    const after = sandbox.catalog.getProduct(found.product.id)!;
    expect(after.updated_at).toBe(before);
    expect(after.skus.find((s) => s.id === found.sku.id)!.stock_quantity).toBe(77);
    expect(
      (await control('POST', '/catalog/stock', { sku_code: found.sku.sku_code, stock_status: 'in_stock', keep_updated_at: 'yes' })).status,
    ).toBe(400);

    const id = found.product.id;
    expect((await control('POST', '/catalog/title-null', { product_id: id })).status).toBe(200);
    const served = (await signedRequest(sandbox.credentials, 'GET', `/products/${id}`)).json as { product: SandboxProduct };
    expect(served.product.title).toBeNull();
    const listed = (await signedRequest(sandbox.credentials, 'GET', '/products', { query: { page: 1, page_size: 50 } })).json as {
      items: SandboxProduct[];
    };
    expect(listed.items.find((p) => p.id === id)!.title).toBeNull();
    expect(sandbox.catalog.getProduct(id)!.updated_at > before).toBe(true); // an admin's edit
    await control('POST', '/catalog/title-null', { product_id: id, null: false });
    expect(sandbox.catalog.getProduct(id)!.title).toEqual(found.product.title);
    expect((await control('POST', '/catalog/title-null', { product_id: 99_999 })).status).toBe(400);
  });

  it('changes the catalog', async () => {
    const code = sandbox.catalog.findSku({ stockStatus: 'in_stock' })!.sku.sku_code;
    expect((await control('POST', '/catalog/price', { sku_code: code, price: '42.00' })).status).toBe(200);
    expect(sandbox.catalog.getSku(code)!.sku.price_amount).toBe('42.00');
    await control('POST', '/catalog/stock', { sku_code: code, stock_status: 'out_of_stock' });
    expect(sandbox.catalog.getSku(code)!.sku).toMatchObject({ stock_status: 'out_of_stock', stock_quantity: 0 });
    await control('POST', '/catalog/sku-active', { sku_code: code, is_active: false });
    expect(sandbox.catalog.getSku(code)!.sku.is_active).toBe(false);
    const newId = (await control('POST', '/catalog/sku-id', { sku_code: code })).body.sku_id;
    expect(sandbox.catalog.getSku(code)!.sku.id).toBe(newId);
    const front = (await control('POST', '/catalog/insert-at-front', {})).body.product as SandboxProduct;
    expect(sandbox.catalog.listedProducts()[0].id).toBe(front.id);
    const added = (await control('POST', '/catalog/products', { skus: [{ price: '3.00' }] })).body.product as SandboxProduct;
    expect(added.price_amount).toBe('3.00');
    await control('POST', '/catalog/delist', { product_id: added.id });
    expect(sandbox.catalog.getProduct(added.id)!.is_active).toBe(false);
    await control('POST', '/catalog/relist', { product_id: added.id });
    const pair = (await control('POST', '/catalog/products', { skus: [{ price: '1.00' }, { price: '2.00' }] })).body
      .product as SandboxProduct;
    expect((await control('POST', '/catalog/remove-sku', { sku_code: pair.skus[1].sku_code })).status).toBe(200);
    expect(sandbox.catalog.getProduct(pair.id)!.skus.map((s) => s.sku_code)).toEqual([pair.skus[0].sku_code]);
    expect((await control('POST', '/catalog/remove-sku', { sku_code: pair.skus[0].sku_code })).status).toBe(400); // its last SKU
    const touched = (await control('POST', '/catalog/touch', { n: 2 })).body.product_ids as number[];
    expect(touched).toHaveLength(2);
    const dup = await control('POST', '/catalog/duplicate-sku-code', { sku_code: code });
    expect(dup.body.product_id).toEqual(expect.any(Number));
    expect((await control('POST', '/catalog/price', { sku_code: 'NOPE', price: '1.00' })).status).toBe(400);
  });

  it('sets the wallet, advances the timetable, resets everything', async () => {
    await control('POST', '/wallet', { balance: '50.00' });
    expect(sandbox.walletBalance()).toBe('50.00');
    await control('POST', '/wallet', { balance: '1000.00' });
    await control('POST', '/timetable', { paidMs: 100_000, fulfillingMs: 100_000, deliveredMs: 100_000 });
    const o = await createOrder();
    await control('POST', '/advance');
    expect(sandbox.order(o.order_id)!.status).toBe('delivered');
    await control('POST', '/reset');
    expect(sandbox.orders()).toEqual([]);
    expect(sandbox.walletBalance()).toBe('1000000.00');
    expect(sandbox.timetable.paidMs).toBeNull();
  });

  it('answers 404 for unknown control routes', async () => {
    expect((await control('GET', '/nothing')).status).toBe(404);
  });
});

describe('runSandbox', () => {
  it('starts, prints the base URL and credentials, and stops (removing its signal handlers)', async () => {
    const lines: string[] = [];
    const before = process.listenerCount('SIGTERM');
    const running = await runSandbox({
      port: 0,
      log: (l) => lines.push(l),
      apiKey: 'dev-key',
      apiSecret: 'dev-secret',
      catalog: { products: 5 },
    });
    expect(process.listenerCount('SIGTERM')).toBe(before + 1);
    const text = lines.join('\n');
    expect(text).toContain(running.sandbox.baseUrl);
    expect(text).toContain('dev-key');
    expect(text).toContain('dev-secret');
    expect((await signedRequest(running.sandbox.credentials, 'POST', '/ping')).status).toBe(200);
    await running.stop();
    await running.stopped;
    expect(process.listenerCount('SIGTERM')).toBe(before);
  });
});
