/**
 * A start that fails after the modules came up (here: the port is taken) stops their background work
 * before it reports the failure: nothing keeps running against the database behind the caller's back
 * (app.factory.ts closes the half-started application): the webhook sender's loop, which had begun, has
 * ended when the start rejects.
 */
import { createServer, type Server } from 'node:net';
import { jest } from '@jest/globals';
import { WebhookSender } from '../src/notifications/webhook-sender.service.js';
import type { SandboxServer } from '../src/sandbox/sandbox.server.js';
import { FakeShop } from './support/fake-shop.js';
import { openTestDatabase, startSandbox, startTestApp, type TestDatabase } from './support/test-app.js';

describe('a start that fails once the modules are up', () => {
  let db: TestDatabase;
  let sandbox: SandboxServer;
  const shop = new FakeShop();
  let taken: Server;

  beforeAll(async () => {
    db = await openTestDatabase();
    sandbox = await startSandbox({ catalog: { products: 1 } });
    await shop.start();
    taken = createServer();
    await new Promise<void>((resolve) => taken.listen(0, '127.0.0.1', resolve));
  });
  afterAll(async () => {
    await new Promise((resolve) => taken.close(resolve));
    await shop.stop();
    await sandbox.stop();
    await db.close();
  });

  it('leaves no background work running', async () => {
    const port = (taken.address() as { port: number }).port;
    // the half-started instance's webhook sender, as its loop starts
    const bootstrap = jest.spyOn(WebhookSender.prototype, 'onApplicationBootstrap');
    let senders: WebhookSender[];
    try {
      await expect(
        startTestApp(db, sandbox, { PORT: String(port), SHOP_WEBHOOK_URL: shop.url, SHOP_WEBHOOK_SECRET: 'sf-shop-secret' }),
      ).rejects.toThrow(/EADDRINUSE|address already in use/i);
    } finally {
      senders = [...(bootstrap.mock.contexts as WebhookSender[])];
      bootstrap.mockRestore();
    }
    expect(senders).toHaveLength(1);
    const [sender] = senders;
    // Its loop had begun delivery cycles, and it has ended by the time the start reports the failure:
    // no cycle in flight, none to come.
    expect(sender.cycles.begun).toBeGreaterThan(0);
    expect(sender.cycles.ended).toBe(sender.cycles.begun);
    expect(sender.looping).toBe(false);
    // an event the shop would be sent by a living webhook sender
    await db.query(
      `INSERT INTO outbox_events (event_type, subject, payload) VALUES ('sku.price_changed', 'SF-1', ` +
        `'{"event":"sku.price_changed"}'::jsonb)`,
    );
    expect(shop.received).toEqual([]);
    const [row] = await db.query<{ status: string; lease_token: string | null }>(
      `SELECT status, lease_token FROM outbox_events WHERE subject = 'SF-1'`,
    );
    expect(row).toEqual({ status: 'pending', lease_token: null });
    await db.query(`DELETE FROM outbox_events WHERE subject = 'SF-1'`);
  }, 30_000);
});
