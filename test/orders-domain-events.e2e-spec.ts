/**
 * The domain events of an order's flow in the running service (orders/domain-events.ts; the table in
 * docs/architecture.md, "Domain events"): each event has its one handler subscribed, and the real
 * paths publish it and reach that handler:
 * - a placed order publishes `order_settled` once its outcome is recorded, before its 201;
 * - a callback whose confirming read fails publishes `order_read_due`, which wakes the poller;
 * - a callback that waited for a cancel is released by the cancel's `order_settled`;
 * - a create answered 429 publishes `order_queued`, which wakes the queue, and the order is sent later
 *   (last: the upstream's block holds back the orders placed during it).
 */
import { jest } from '@jest/globals';
import axios from 'axios';
import { CallbackInboxRepository } from '../src/callbacks/callback-inbox.repository.js';
import { DomainEvents, type DomainEventType } from '../src/orders/domain-events.js';
import { OrderCancelService } from '../src/orders/order-cancel.service.js';
import { OrderPoller } from '../src/orders/order-poller.service.js';
import { OrderQueue } from '../src/orders/order-queue.service.js';
import { useAppSuite } from './support/app-suite.js';
import { callbackHeaders, freePort, waitForOrder, type OrderView } from './support/child-app.js';
import { waitFor } from './support/wait.js';

describe('domain events of an order, in the running service', () => {
  const t = useAppSuite({
    // orders rest at pending_payment: cancelable, and no status change of the upstream's own
    sandbox: { timetable: { paidMs: null } },
    prepare: (sandbox) => sandbox.catalog.addProduct({ skus: [{ skuCode: 'DE-1', price: '2.00' }] }),
    env: async () => {
      const port = await freePort();
      return {
        PORT: String(port),
        CALLBACK_PUBLIC_URL: `http://127.0.0.1:${port}/callbacks/upstream`,
        CALLBACK_TOLERANCE_S: '60',
        UPSTREAM_RATE_LIMIT: 'off',
        UPSTREAM_RATE_LIMIT_BLOCK_S: '1',
        ORDER_QUEUE_WAIT_MS: '100',
      };
    },
    seed: true,
  });
  let n = 0;
  const get = <T>(cls: abstract new (...args: never[]) => T): T => t.app.relay.app.get(cls as never) as T;
  const events = () => get(DomainEvents);
  const published = (type: DomainEventType) => events().published(type);
  const place = (tag: string) => t.app.http.post('/internal/orders', { shop_order_no: `DE-${tag}-${++n}`, sku_code: 'DE-1', quantity: 1 });
  const placed = async (tag: string): Promise<OrderView> => {
    const r = await place(tag);
    expect(r.status).toBe(201);
    return (r.data as { order: OrderView }).order;
  };
  /** A signed callback from the upstream claiming `status` for `o` (no fulfillment). */
  const callBack = async (o: OrderView, status: string) => {
    const up = t.sandbox.order(o.upstream_order_id!)!;
    const ts = Math.floor(Date.now() / 1000);
    const body = JSON.stringify({
      event: 'order.status_changed',
      order_id: up.id,
      order_no: up.order_no,
      downstream_order_no: o.downstream_order_no,
      status,
      timestamp: ts,
    });
    const r = await axios.post(`${t.app.url}/callbacks/upstream`, body, {
      headers: callbackHeaders(body, { timestamp: ts }),
      validateStatus: () => true,
      transformRequest: [(d: unknown) => d],
    });
    expect([r.status, r.data]).toEqual([200, { ok: true }]);
  };
  const inbox = (upstreamId: number) =>
    t.db.query<{ state: string; outcome: string | null }>('SELECT state, outcome FROM callback_inbox WHERE upstream_order_id = $1', [
      upstreamId,
    ]);

  it('each event has its one handler subscribed, named by what it does', () => {
    expect({
      order_settled: events().handlerNames('order_settled'),
      order_queued: events().handlerNames('order_queued'),
      order_read_due: events().handlerNames('order_read_due'),
    }).toEqual({
      order_settled: ['releaseWaitingCallbacks'],
      order_queued: ['takeUpQueuedOrders'],
      order_read_due: ['readDueOrdersNow'],
    });
  });

  it('a placed order publishes order_settled once, before its 201', async () => {
    t.sandbox.faults.set({ callbacks: 'drop' });
    const before = published('order_settled');
    await placed('PLACED');
    expect(published('order_settled') - before).toBe(1);
  });

  it('a callback whose confirming read fails publishes order_read_due, which wakes the poller', async () => {
    t.sandbox.faults.set({ callbacks: 'drop' });
    const o = await placed('READ-DUE');
    const poller = get(OrderPoller);
    const wake = jest.spyOn(poller, 'wake');
    try {
      const before = published('order_read_due');
      t.sandbox.faults.set({ callbacks: 'drop', rules: [{ operation: 'getOrder', kind: 'error_before', status: 503, times: 1 }] });
      // a delivered claim without its fulfillment is read
      await callBack(o, 'delivered');
      await waitFor(
        () => inbox(o.upstream_order_id!),
        (rows) => rows.length === 1 && rows[0].state === 'read_failed',
        'the failed read',
      );
      await waitFor(
        () => wake.mock.calls.length,
        (calls) => calls >= 1,
        "the poller's wake",
      );
      expect(published('order_read_due') - before).toBe(1);
    } finally {
      wake.mockRestore();
    }
  });

  it("a callback left waiting for a cancel is released by the cancel's order_settled", async () => {
    t.sandbox.faults.set({ callbacks: 'drop' });
    const o = await placed('SETTLED');
    const cancels = get(OrderCancelService) as unknown as { askUpstream: (order: unknown) => Promise<unknown> };
    const inboxRepo = get(CallbackInboxRepository);
    let reached!: () => void;
    const atUpstream = new Promise<void>((r) => (reached = r));
    let go!: () => void;
    const gate = new Promise<void>((r) => (go = r));
    const real = cancels.askUpstream.bind(cancels);
    // the cancel holds its mark at its upstream call until the callback has been deferred
    const ask = jest.spyOn(cancels, 'askUpstream').mockImplementationOnce(async (order) => {
      reached();
      await gate;
      return real(order);
    });
    const release = jest.spyOn(inboxRepo, 'release');
    try {
      const cancel = t.app.http.post(`/internal/orders/${o.shop_order_no}/cancel`);
      await atUpstream;
      await callBack(o, 'paid');
      await waitFor(
        () => inbox(o.upstream_order_id!),
        (rows) => rows.length === 1 && rows[0].state === 'pending' && rows[0].outcome === 'operation_in_progress',
        'the callback deferred behind the cancel',
      );
      expect(release).not.toHaveBeenCalled();
      const before = published('order_settled');
      go();
      expect((await cancel).status).toBe(200);
      expect(published('order_settled') - before).toBe(1);
      await waitFor(
        () => release.mock.calls.length,
        (calls) => calls >= 1,
        'the release of the waiting callback',
      );
      const [{ id }] = await t.db.query<{ id: string }>('SELECT id FROM orders WHERE shop_order_no = $1', [o.shop_order_no]);
      expect(release.mock.calls[0][0]).toBe(id);
      await waitFor(
        () => inbox(o.upstream_order_id!),
        (rows) => rows[0].state !== 'pending',
        'the released callback processed',
      );
    } finally {
      ask.mockRestore();
      release.mockRestore();
    }
  });

  it('a create answered 429 publishes order_queued, which wakes the queue; the order is sent after the block', async () => {
    t.sandbox.faults.set({ callbacks: 'drop', rules: [{ operation: 'createOrder', kind: 'rate_limit', retryAfterS: 1, times: 1 }] });
    const queue = get(OrderQueue);
    const wake = jest.spyOn(queue, 'wake');
    try {
      const before = published('order_queued');
      const r = await place('QUEUED');
      expect([r.status, (r.data as { order: OrderView }).order.status]).toEqual([202, 'queued']);
      expect(published('order_queued') - before).toBe(1);
      expect(wake).toHaveBeenCalledTimes(1);
      const shopNo = (r.data as { order: OrderView }).order.shop_order_no;
      await waitForOrder(t.app.http, shopNo, (o) => o.status === 'pending_payment');
    } finally {
      wake.mockRestore();
    }
  });
});
