/**
 * Cancel and refund of an offer order go to the supplier holding it (CONTRACT §11, cancel-upstream-first
 * as §5 says): an order the first source refused and the second placed is canceled, refunded, or refused
 * a cancel at the second supplier's sandbox only; the first, which holds the refused attempt's history in
 * the route and an unrelated order with the same upstream id, gets no cancel. An offer order every source
 * refused is canceled locally, with no cancel sent anywhere.
 */
import type { SandboxServer } from '../src/sandbox/sandbox.server.js';
import type { SandboxRequestEvent } from '../src/sandbox/sandbox.types.js';
import { useAppSuite } from './support/app-suite.js';
import type { OfferOrder } from './support/offer-fixtures.js';
import { waitFor } from './support/wait.js';

interface CancelView extends OfferOrder {
  refund_state: string;
  refundable_amount: string | null;
}

const stockRefusal = { kind: 'coded_error' as const, operation: 'createOrder' as const, status: 409, errorCode: 'insufficient_stock' };
// orders stay in pending_payment, where the upstream lets them be canceled
const pending = { timetable: { paidMs: null } };
const API = '/api/v1/upstream';

describe('offer orders: cancel and refund go to the supplier holding the order', () => {
  const t = useAppSuite({ sandbox: pending, suppliers: { second: { sandbox: pending } }, seed: true });
  let second: SandboxServer;
  let key = '';
  let n = 0;
  const no = (tag: string) => `OFC-${tag}-${++n}`;
  const http = () => t.app.http;
  const place = (shopNo: string) => http().post('/internal/orders', { shop_order_no: shopNo, offer: 'OFF-C', quantity: 1 });
  const cancel = (shopNo: string) => http().post(`/internal/orders/${shopNo}/cancel`);
  const refund = (shopNo: string) => http().post(`/internal/orders/${shopNo}/refund`);
  const cancelsAsked = () => [t.sandbox.stats.requests.cancelOrder, second.stats.requests.cancelOrder];
  const cancelsDone = () => [t.sandbox.stats.cancelsExecuted, second.stats.cancelsExecuted];

  /** The paths of the cancels each sandbox receives while `work` runs. */
  const cancelPaths = async <T>(work: () => Promise<T>): Promise<{ result: T; main: string[]; second: string[] }> => {
    const seen = { main: [] as string[], second: [] as string[] };
    const on = (into: string[]) => (e: SandboxRequestEvent) => {
      if (e.phase === 'received' && e.operation === 'cancelOrder') into.push(e.path);
    };
    const [onMain, onSecond] = [on(seen.main), on(seen.second)];
    t.sandbox.events.on('request', onMain);
    second.events.on('request', onSecond);
    try {
      return { result: await work(), ...seen };
    } finally {
      t.sandbox.events.off('request', onMain);
      second.events.off('request', onSecond);
    }
  };

  /**
   * An order placed at the first source (so that the first sandbox holds an order of its own), then
   * one the first refuses and the second places; the two upstream ids are equal, as each sandbox
   * numbers its orders from the same base: a cancel sent to the wrong supplier would cancel the first's.
   */
  const failedOver = async (tag: string): Promise<{ order: CancelView; bystander: number }> => {
    const atMain = await place(no(`${tag}-MAIN`));
    expect(atMain.status).toBe(201);
    const bystander = (atMain.data as { order: CancelView }).order;
    expect(bystander.supplier).toBe('main');
    t.sandbox.faults.set({ rules: [{ ...stockRefusal, times: 1 }] });
    const r = await place(no(tag));
    expect(r.status).toBe(201);
    const order = (r.data as { order: CancelView }).order;
    expect(order).toMatchObject({ supplier: 'second', attempt: 2, status: 'pending_payment' });
    expect(order.route).toEqual([
      { attempt: 1, supplier: 'main', sku_key: key, outcome: 'rejected', error_code: 'insufficient_stock' },
      { attempt: 2, supplier: 'second', sku_key: key, outcome: 'accepted', error_code: null },
    ]);
    const id = order.upstream_order_id as number;
    expect(second.order(id)?.downstream_order_no).toBe(`${order.shop_order_no}-2`);
    // the same id at the first names its own order, not this one
    expect(bystander.upstream_order_id).toBe(id);
    expect(t.sandbox.order(id)?.downstream_order_no).toBe(bystander.shop_order_no);
    return { order, bystander: id };
  };

  beforeAll(async () => {
    second = t.supplier('second');
    const product = t.sandbox.catalog
      .listedProducts()
      .find((p) => p.fulfillment_type !== 'manual' && p.skus.some((s) => s.stock_status !== 'out_of_stock'))!;
    const chosen = product.skus.find((s) => s.stock_status !== 'out_of_stock')!;
    const started = await http().post('/internal/catalog/sync', { mode: 'full', supplier: 'second' });
    expect(started.status).toBe(202);
    const runId = (started.data as { run_id: string }).run_id;
    const run = await waitFor(
      async () => ((await http().get(`/internal/catalog/sync-runs/${runId}`)).data as { run: { status: string } }).run.status,
      (s) => s !== 'running',
      'the second supplier sync',
      60_000,
    );
    expect(run).toBe('succeeded');
    key = `${product.id}:${chosen.sku_code}`;
    const sources = [
      { supplier: 'main', sku_key: key },
      { supplier: 'second', sku_key: key },
    ];
    const put = await http().put('/internal/offers/OFF-C', { title: 'both', routing: 'priority', sources });
    expect(put.status).toBeLessThan(300);
  }, 120_000);

  afterEach(() => {
    t.sandbox.faults.reset();
    second.faults.reset();
  });

  it('a failed-over order canceled: the cancel goes to the second only, then the order is canceled and refundable', async () => {
    const { order, bystander } = await failedOver('CXL');
    const [asked, done] = [cancelsAsked(), cancelsDone()];
    const { result: r, ...seen } = await cancelPaths(() => cancel(order.shop_order_no));
    expect(r.status).toBe(200);
    expect((r.data as { order: CancelView }).order).toMatchObject({
      supplier: 'second',
      status: 'canceled',
      refund_state: 'refundable',
      upstream_order_id: order.upstream_order_id,
    });
    expect(seen).toEqual({ main: [], second: [`${API}/orders/${order.upstream_order_id}/cancel`] });
    expect(cancelsAsked()).toEqual([asked[0], asked[1] + 1]);
    expect(cancelsDone()).toEqual([done[0], done[1] + 1]);
    expect(second.order(order.upstream_order_id as number)?.status).toBe('canceled');
    expect(t.sandbox.order(bystander)?.status).toBe('pending_payment');
    // canceled again: the same answer, nothing more sent to either
    const again = await cancel(order.shop_order_no);
    expect([again.status, (again.data as { order: CancelView }).order.status]).toEqual([200, 'canceled']);
    expect(cancelsAsked()).toEqual([asked[0], asked[1] + 1]);
  });

  it('a failed-over order refunded: cancel at the second only, then the refund recorded once', async () => {
    const { order, bystander } = await failedOver('RFD');
    const [asked, done] = [cancelsAsked(), cancelsDone()];
    const { result: r, ...seen } = await cancelPaths(() => refund(order.shop_order_no));
    expect(r.status).toBe(200);
    expect((r.data as { order: CancelView }).order).toMatchObject({ supplier: 'second', status: 'canceled', refund_state: 'refunded' });
    expect(seen).toEqual({ main: [], second: [`${API}/orders/${order.upstream_order_id}/cancel`] });
    expect(cancelsAsked()).toEqual([asked[0], asked[1] + 1]);
    expect(cancelsDone()).toEqual([done[0], done[1] + 1]);
    expect(second.order(order.upstream_order_id as number)?.status).toBe('canceled');
    expect(t.sandbox.order(bystander)?.status).toBe('pending_payment');
    const refunds = await t.db.query<{ n: number }>(
      'SELECT count(*)::int AS n FROM order_refunds r JOIN orders o ON o.id = r.order_id WHERE o.shop_order_no = $1',
      [order.shop_order_no],
    );
    expect(refunds[0].n).toBe(1);
  });

  it('the second refuses the cancel (409 cancel_not_allowed): the order unchanged, the first never asked', async () => {
    const { order, bystander } = await failedOver('NOT');
    const asked = cancelsAsked();
    second.faults.set({
      rules: [{ kind: 'coded_error', operation: 'cancelOrder', status: 409, errorCode: 'cancel_not_allowed', times: 2 }],
    });
    for (const call of [cancel, refund]) {
      const { result: r, ...seen } = await cancelPaths(() => call(order.shop_order_no));
      expect(r.status).toBe(409);
      expect(r.data).toMatchObject({
        ok: false,
        error_code: 'cancel_not_allowed',
        order: { supplier: 'second', status: 'pending_payment', refund_state: 'not_refundable' },
      });
      expect(seen).toEqual({ main: [], second: [`${API}/orders/${order.upstream_order_id}/cancel`] });
    }
    expect(cancelsAsked()).toEqual([asked[0], asked[1] + 2]);
    expect(second.order(order.upstream_order_id as number)?.status).toBe('pending_payment');
    expect(t.sandbox.order(bystander)?.status).toBe('pending_payment');
  });

  it('an offer order every source refused is canceled locally: no cancel sent to either supplier', async () => {
    t.sandbox.faults.set({ rules: [{ ...stockRefusal, times: 1 }] });
    second.faults.set({ rules: [{ ...stockRefusal, times: 1 }] });
    const shopNo = no('REJ');
    const placed = await place(shopNo);
    expect(placed.status).toBe(409);
    expect(placed.data).toMatchObject({ error_code: 'no_source_available' });
    const asked = cancelsAsked();
    const { result: r, ...seen } = await cancelPaths(() => cancel(shopNo));
    expect(r.status).toBe(200);
    expect((r.data as { order: CancelView }).order).toMatchObject({
      status: 'canceled',
      refund_state: 'refundable',
      upstream_order_id: null,
    });
    expect(seen).toEqual({ main: [], second: [] });
    expect(cancelsAsked()).toEqual(asked);
  });
});
