/**
 * The overcharge rule (CONTRACT §5): the `amount` the upstream charged is recorded, and a charge above
 * quantity × the checked unit price is counted in `relay_order_overcharge_total` (seen in `GET /metrics`,
 * which needs no token) and logged. An instance of its own, whose log output is captured.
 */
import axios from 'axios';
import { OrderPoller } from '../src/orders/order-poller.service.js';
import type { SandboxRequestEvent } from '../src/sandbox/sandbox.types.js';
import { useAppSuite } from './support/app-suite.js';
import { waitFor, type OrderView } from './support/child-app.js';
import { passesRun } from './support/wait.js';

describe('orders: an overcharge is counted in /metrics and logged', () => {
  const t = useAppSuite({
    sandbox: { catalog: { products: 1 }, timetable: { paidMs: 30, fulfillingMs: null, deliveredMs: null, completedMs: null } },
    prepare: (sandbox) => sandbox.catalog.addProduct({ skus: [{ skuCode: 'OC-AUTO', price: '10.00' }] }),
    env: { LOG_LEVEL: 'info', ORDER_POLL_BASE_MS: '50', ORDER_POLL_MAX_MS: '200' },
    seed: true,
    logs: true,
  });

  /** `relay_order_overcharge_total` as `GET /metrics` shows it, asked without a token. */
  const overchargeMetric = async (): Promise<number> => {
    const r = await axios.get(`${t.app.url}/metrics`, { validateStatus: () => true, responseType: 'text' });
    expect(r.status).toBe(200);
    const text = r.data as string;
    expect(text).toContain('# TYPE relay_order_overcharge_total counter');
    const m = /^relay_order_overcharge_total\{supplier="main"\} (\S+)$/m.exec(text);
    expect(m).not.toBeNull();
    return Number(m![1]);
  };
  const overchargeLines = (shopNo: string) =>
    t.app.logLines().filter((l) => l.shop_order_no === shopNo && typeof l.msg === 'string' && l.msg.includes('22.00'));

  it('a charge equal to quantity × the checked unit price is neither counted nor logged', async () => {
    expect(await overchargeMetric()).toBe(0);
    const reads = t.sandbox.stats.requests.getOrder;
    const r = await t.app.http.post('/internal/orders', { shop_order_no: 'OC-FAIR-1', sku_code: 'OC-AUTO', quantity: 2 });
    expect(r.status).toBe(201);
    expect((r.data as { order: OrderView }).order.amount).toBe('20.00');
    // the poller read the order back (its amount with it), and the pass that read it has ended
    await waitFor(
      () => t.sandbox.stats.requests.getOrder,
      (n) => n > reads,
      'a poll of the order',
    );
    await passesRun(t.app.relay.app.get(OrderPoller).passes, 1, 'poller passes');
    expect(await overchargeMetric()).toBe(0);
    expect(t.app.logLines().filter((l) => l.shop_order_no === 'OC-FAIR-1' && (l.level === 'warn' || l.level === 'error'))).toEqual([]);
  });

  it('a charge above it: the amount is recorded, relay_order_overcharge_total goes up by one, a line names order and amount', async () => {
    const before = await overchargeMetric();
    // the upstream raises its price between the relay's check (10.00) and the create call: it charges 2 × 11.00
    t.sandbox.faults.set({ latencyMs: 50 });
    const raise = (e: SandboxRequestEvent) => {
      if (e.operation === 'createOrder' && e.phase === 'received') t.sandbox.catalog.setPrice('OC-AUTO', '11.00');
    };
    t.sandbox.events.on('request', raise);
    try {
      const r = await t.app.http.post('/internal/orders', {
        shop_order_no: 'OC-OVER-1',
        sku_code: 'OC-AUTO',
        quantity: 2,
        trace_id: 'trace-OC-OVER-1',
      });
      expect(r.status).toBe(201);
      expect((r.data as { order: OrderView }).order.amount).toBe('22.00');
    } finally {
      t.sandbox.events.off('request', raise);
      t.sandbox.catalog.setPrice('OC-AUTO', '10.00');
    }
    const recorded = await t.app.http.get('/internal/orders/OC-OVER-1');
    expect((recorded.data as { order: OrderView }).order.amount).toBe('22.00');

    expect(await overchargeMetric()).toBe(before + 1);
    const logged = await waitFor(
      () => overchargeLines('OC-OVER-1'),
      (ls) => ls.length > 0,
      'the overcharge log line',
      5_000,
    );
    expect(logged).toHaveLength(1);
    expect(['warn', 'error']).toContain(logged[0].level);
    expect(logged[0]).toMatchObject({ service: 'upstream-relay', shop_order_no: 'OC-OVER-1', trace_id: 'trace-OC-OVER-1' });
    // the charge and what was expected (2 × 10.00)
    expect(logged[0].msg).toMatch(/22\.00/);
    expect(logged[0].msg).toMatch(/\b20(\.0+)?\b/);
  });
});
