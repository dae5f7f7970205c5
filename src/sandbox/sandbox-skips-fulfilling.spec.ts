/**
 * The sandbox's `skipsFulfilling` option over real HTTP: an automatic order goes from paid straight to
 * delivered, as the orders bench needs to send the real upstream's two callbacks (paid, then delivered).
 */
import { signedRequest } from './sandbox-request.js';
import { SandboxServer } from './sandbox.server.js';
import type { SandboxCreatedOrder } from './sandbox.types.js';

function lines(payload: string): string[] {
  return payload.split(/\r?\n/).filter((l) => l.trim() !== '');
}

describe('sandbox upstream: skipsFulfilling', () => {
  let sandbox: SandboxServer;

  beforeAll(async () => {
    sandbox = new SandboxServer({ paysInCreate: true, skipsFulfilling: true, timetable: { deliveredMs: 30 } });
    await sandbox.start();
  });
  afterAll(() => sandbox.stop());

  const create = (skuId: number, extra: Record<string, unknown> = {}): Promise<SandboxCreatedOrder> =>
    signedRequest(sandbox.credentials, 'POST', '/orders', { body: { sku_id: skuId, quantity: 1, ...extra } }).then(
      (r) => r.json as SandboxCreatedOrder,
    );

  it('moves an auto order from paid straight to delivered, with its items', async () => {
    const auto = sandbox.catalog.findSku({ fulfillmentType: 'auto', stockStatus: 'unlimited' })!;
    const o = await create(auto.sku.id);
    expect(o.status).toBe('paid');
    const v = await sandbox.waitForOrderStatus(o.order_id, 'delivered');
    expect(v.history).toEqual(['pending_payment', 'paid', 'delivered']);
    expect(lines(v.payload!)).toHaveLength(1);
  });

  it('still stops a manual order at fulfilling', async () => {
    const manual = sandbox.catalog.findSku({ fulfillmentType: 'manual', stockStatus: 'unlimited' })!;
    const o = await create(manual.sku.id, { manual_form_data: { account: 'player-1' } });
    await sandbox.waitForOrderStatus(o.order_id, 'fulfilling');
    sandbox.advanceAll();
    expect(sandbox.order(o.order_id)!.history).toEqual(['pending_payment', 'paid', 'fulfilling']);
  });
});
