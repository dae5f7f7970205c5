/**
 * Graceful shutdown of the webhook sender: the service as a child process (`src/main.ts`) receives
 * SIGTERM while its deliveries hang at the shop. It stops claiming, finishes the deliveries in
 * flight, records them and exits 0; what it had not claimed stays due, and the next instance
 * delivers it. Every event reaches the shop exactly once.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer, type Server, type ServerResponse } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import axios from 'axios';
import { WebhookSender, WEBHOOK_CONCURRENCY } from '../src/notifications/webhook-sender.service.js';
import type { SandboxServer } from '../src/sandbox/sandbox.server.js';
import { startChildApp } from './support/child-app.js';
import { openTestDatabase, startSandbox, startTestApp, testEnv, type TestDatabase } from './support/test-app.js';
import { waitFor } from './support/wait.js';

const SHOP_SECRET = 'shop-webhook-secret-for-shutdown';

describe('shop webhooks: SIGTERM during delivery', () => {
  let db: TestDatabase;
  let sandbox: SandboxServer;
  let shop: Server;
  let shopUrl: string;
  let dataDir: string;
  /** Event ids the shop acknowledged with a 2xx. */
  const acknowledged: string[] = [];
  /** Requests held open until the test lets them go. */
  const held: Array<{ id: string; res: ServerResponse }> = [];
  let hold = true;

  beforeAll(async () => {
    db = await openTestDatabase();
    sandbox = await startSandbox();
    dataDir = mkdtempSync(join(tmpdir(), 'relay-webhooks-sigterm-'));
    shop = createServer((req, res) => {
      req.resume();
      req.on('end', () => {
        const id = String(req.headers['relay-event-id']);
        if (hold) held.push({ id, res });
        else {
          acknowledged.push(id);
          res.writeHead(200).end('{"ok":true}');
        }
      });
    });
    await new Promise<void>((resolve) => shop.listen(0, '127.0.0.1', resolve));
    shopUrl = `http://127.0.0.1:${(shop.address() as { port: number }).port}/hooks`;
  });
  afterAll(async () => {
    shop.closeAllConnections();
    await new Promise((r) => shop.close(r));
    await sandbox.stop();
    await db.close();
    rmSync(dataDir, { recursive: true, force: true });
  });

  it('finishes the deliveries in flight, leaves the rest due, and loses nothing', async () => {
    const total = WEBHOOK_CONCURRENCY + 2;
    for (let i = 0; i < total; i++) {
      await db.query(`INSERT INTO outbox_events (event_type, subject, payload) VALUES ('order.status_changed', $1, $2::jsonb)`, [
        `SO-TERM-${i}`,
        JSON.stringify({ event: 'order.status_changed', shop_order_no: `SO-TERM-${i}`, status: 'delivered' }),
      ]);
    }
    const env = testEnv(sandbox, {
      LOG_LEVEL: 'debug',
      DATABASE_URL: db.url,
      DATA_DIR: dataDir,
      SHOP_WEBHOOK_URL: shopUrl,
      SHOP_WEBHOOK_SECRET: SHOP_SECRET,
    });
    const child = startChildApp({ env });
    try {
      await child.waitForLog((l) => typeof l.msg === 'string' && l.msg.startsWith('upstream-relay listening'));
      // One claim's worth of deliveries hangs at the shop.
      await waitFor(
        () => held.length,
        (n) => n === WEBHOOK_CONCURRENCY,
        'deliveries in flight',
      );
      const exited = child.kill('SIGTERM');
      // the sender stops claiming (its shutdown hook began) before the deliveries in flight are let go:
      // what it then leaves unclaimed is its own doing, not a race with the shop's answers
      await child.waitForLog((l) => typeof l.msg === 'string' && l.msg.startsWith('webhook delivery stopping'));
      hold = false;
      for (const h of held) {
        acknowledged.push(h.id);
        h.res.writeHead(200).end('{"ok":true}');
      }
      expect(await exited).toBe(0);
    } finally {
      await child.kill('SIGKILL');
    }

    const afterStop = await db.query<{ id: string; status: string; attempts: number; lease_token: string | null; due: boolean }>(
      `SELECT id::text, status, attempts, lease_token, next_attempt_at <= now() AS due FROM outbox_events ORDER BY id`,
    );
    const delivered = afterStop.filter((r) => r.status === 'delivered');
    const waiting = afterStop.filter((r) => r.status === 'pending');
    expect(delivered.map((r) => r.id).sort()).toEqual(held.map((h) => h.id).sort());
    expect(waiting).toHaveLength(total - WEBHOOK_CONCURRENCY);
    // Never claimed, nothing leased: due at once for the next instance.
    for (const r of waiting) expect(r).toMatchObject({ attempts: 0, lease_token: null, due: true });

    const next = await startTestApp(db, sandbox, { SHOP_WEBHOOK_URL: shopUrl, SHOP_WEBHOOK_SECRET: SHOP_SECRET });
    try {
      next.relay.app.get(WebhookSender).kick();
      await waitFor(
        () => db.query<{ n: number }>(`SELECT count(*)::int AS n FROM outbox_events WHERE status = 'delivered'`),
        (rows) => rows[0].n === total,
        'every event delivered',
      );
      expect((await axios.get(`${next.url}/health`)).data).toMatchObject({ ok: true });
    } finally {
      await next.close();
    }
    expect(acknowledged).toHaveLength(total);
    expect(new Set(acknowledged).size).toBe(total);
  });
});
