/**
 * CONTRACT §6: "A verified callback is stored in an inbox … and answered 200 {ok: true}; a 5xx only
 * when it could not be stored". During the shutdown's drain the database is still open, so a
 * callback is still verified and stored (applied after the restart); the drain used to answer it 503
 * like any other request, and the upstream, which retries a callback at most 5 times, could lose it
 * on its last try. (Found by review.)
 */
import axios from 'axios';
import type { SandboxServer } from '../src/sandbox/sandbox.server.js';
import { callbackHeaders, seedCatalog, waitFor } from './support/child-app.js';
import { FakeShop } from './support/fake-shop.js';
import { openTestDatabase, startSandbox, startTestApp, type TestApp, type TestDatabase } from './support/test-app.js';

describe('a callback during the shutdown drain', () => {
  let db: TestDatabase;
  let sandbox: SandboxServer;
  const shop = new FakeShop();

  beforeAll(async () => {
    db = await openTestDatabase();
    sandbox = await startSandbox({ catalog: { products: 1 } });
    await shop.start();
  });
  afterAll(async () => {
    await shop.stop();
    await sandbox.stop();
    await db.close();
  });

  it('is stored and acknowledged while the database is still open', async () => {
    const app: TestApp = await startTestApp(db, sandbox, { SHOP_WEBHOOK_URL: shop.url, SHOP_WEBHOOK_SECRET: 'rv-shop-secret' });
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    shop.respond = async () => {
      await gate;
      return 200;
    };
    let closing: Promise<void> | null = null;
    try {
      await seedCatalog(app.http);
      await db.query(`INSERT INTO outbox_events (event_type, subject, payload) VALUES ('sku.price_changed', 'RV-HOLD', '{"event":"sku.price_changed"}'::jsonb)`);
      await waitFor(async () => (await db.query<{ n: number }>(`SELECT count(*)::int AS n FROM outbox_events WHERE subject = 'RV-HOLD' AND lease_token IS NOT NULL`))[0].n, (n) => n === 1, 'the delivery in flight');
      closing = app.close();
      await new Promise((r) => setTimeout(r, 500));
      const body = JSON.stringify({ event: 'order.status_changed', order_id: 987654, order_no: 'UP-RV', status: 'paid', timestamp: Math.floor(Date.now() / 1000) });
      const answer = await axios
        .post(`${app.url}/callbacks/upstream`, body, { headers: callbackHeaders(body), validateStatus: () => true, transformRequest: [(d: unknown) => d], timeout: 5000 })
        .catch((e: Error) => ({ status: `refused: ${e.message}`, data: null }));
      release();
      await closing;
      closing = null;
      expect([answer.status, answer.data]).toEqual([200, { ok: true }]);
    } finally {
      release();
      if (closing) await closing;
    }
  }, 60_000);
});
