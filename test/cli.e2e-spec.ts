/**
 * The `relay` command (CONTRACT §8) with the service's configuration: usage and exit codes,
 * migrations, and sync / wallet / order both in-process and against a running service (--url).
 */
import { runCli } from '../src/cli/relay-cli.js';
import type { SandboxServer } from '../src/sandbox/sandbox.server.js';
import { openTestDatabase, startSandbox, startTestApp, testEnv, type TestDatabase } from './support/test-app.js';

describe('relay command', () => {
  let db: TestDatabase;
  let sandbox: SandboxServer;
  let env: Record<string, string>;
  const run = async (...argv: string[]) => {
    const lines: string[] = [];
    const code = await runCli(argv, { out: (l) => lines.push(l), env });
    return { code, out: lines.join('\n') };
  };

  beforeAll(async () => {
    db = await openTestDatabase();
    sandbox = await startSandbox({ catalog: { products: 30 } });
    env = { ...testEnv(sandbox), DATABASE_URL: db.url, DATA_DIR: '/nonexistent-relay-data' };
  });
  afterAll(async () => {
    await sandbox.stop();
    await db.close();
  });

  it('prints usage and exits 2 on a bad command or option, before reading any configuration', async () => {
    expect((await run()).code).toBe(2);
    const bogus = await run('bogus');
    expect(bogus.code).toBe(2);
    expect(bogus.out).toContain('unknown command: bogus');
    expect((await run('sync', '--mode', 'sometimes')).code).toBe(2);
    expect((await run('order')).code).toBe(2);
    expect((await run('--help')).code).toBe(0);
  });

  it('exits 3 with the variable named when the configuration is bad', async () => {
    const lines: string[] = [];
    const code = await runCli(['wallet'], { out: (l) => lines.push(l), env: { ...env, SYNC_MODE: 'sometimes' } });
    expect(code).toBe(3);
    expect(lines.join('\n')).toContain('SYNC_MODE: must be one of auto, full, incremental');
  });

  it('migrates: up to date, then down one and up again', async () => {
    expect((await run('migrate')).out).toMatch(/^up to date/);
    const down = await run('migrate', '--down', '1');
    expect(down.code).toBe(0);
    expect(down.out).toMatch(/^reverted: \d+_/);
    const up = await run('migrate');
    expect(up.code).toBe(0);
    expect(up.out).toMatch(/^applied: \d+_/);
  });

  it('runs one sync in-process with progress and a summary, then shows the wallet and a missing order', async () => {
    const sync = await run('sync', '--mode', 'full');
    expect(sync.code).toBe(0);
    expect(sync.out).toMatch(/sync succeeded: mode full, pages \d+\/\d+, products 30, created \d+/);
    const [{ n }] = await db.query<{ n: number }>('SELECT count(*)::int AS n FROM catalog_skus');
    expect(n).toBeGreaterThan(30);

    const wallet = await run('wallet');
    expect(wallet.code).toBe(0);
    expect(JSON.parse(wallet.out)).toMatchObject({ ok: true, balance: sandbox.walletBalance(), currency: 'CNY' });

    const missing = await run('order', 'no-such-order');
    expect(missing.code).toBe(4);
    expect(missing.out).toContain('order_not_found');
  });

  it('uses a running service with --url', async () => {
    const app = await startTestApp(db, sandbox);
    try {
      const placed = await app.http.post('/internal/orders', {
        shop_order_no: 'cli-1',
        sku_code: sandbox.catalog.findSku({ fulfillmentType: 'auto', stockStatus: 'unlimited' })!.sku.sku_code,
        quantity: 1,
      });
      expect([200, 201]).toContain(placed.status);
      const shown = await run('order', 'cli-1', '--url', app.url);
      expect(shown.code).toBe(0);
      expect(JSON.parse(shown.out)).toMatchObject({ shop_order_no: 'cli-1', quantity: 1 });
      const sync = await run('sync', '--url', app.url);
      expect(sync.code).toBe(0);
      expect(sync.out).toContain('sync succeeded');
    } finally {
      await app.close();
    }
  });
});
