/**
 * The `relay` command (CONTRACT §8) with the service's configuration: usage and exit codes,
 * migrations, and sync / wallet / order both in-process and against a running service (--url).
 */
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import axios from 'axios';
import { runCli } from '../src/cli/relay-cli.js';
import type { SandboxServer } from '../src/sandbox/sandbox.server.js';
import { DEFAULT_SIGNATURE_TEMPLATE, signedHeaders } from '../src/signing/signing.js';
import { freePort, nodeEntry } from './support/child-app.js';
import { openTestDatabase, startSandbox, startTestApp, testEnv, type TestDatabase } from './support/test-app.js';
import { waitFor } from './support/wait.js';

const ROOT = fileURLToPath(new URL('../', import.meta.url));

describe('relay command', () => {
  let db: TestDatabase;
  let sandbox: SandboxServer;
  let env: Record<string, string>;
  const run = async (...argv: string[]) => {
    const lines: string[] = [];
    // Progress goes to `out` line by line when stdout is not a terminal (as under `npm test`); a
    // terminal running this file alone in-band must not turn it into in-place updates on its screen.
    const tty = Object.getOwnPropertyDescriptor(process.stdout, 'isTTY');
    Object.defineProperty(process.stdout, 'isTTY', { value: false, configurable: true, writable: true });
    try {
      const code = await runCli(argv, { out: (l) => lines.push(l), env });
      return { code, out: lines.join('\n') };
    } finally {
      if (tty) Object.defineProperty(process.stdout, 'isTTY', tty);
      else delete (process.stdout as { isTTY?: boolean }).isTTY;
    }
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

  it('names a refused URL without printing its password', async () => {
    const lines: string[] = [];
    const code = await runCli(['migrate'], {
      out: (l) => lines.push(l),
      env: { ...env, DATABASE_URL: 'mysql://relay:s3cretpw@db.example/relay' },
    });
    expect(code).toBe(3);
    expect(lines.join('\n')).toContain('DATABASE_URL: must be a postgres: or postgresql: URL, got "mysql://***@db.example/relay"');
    expect(lines.join('\n')).not.toContain('s3cretpw');
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
    // Progress besides the summary: at least one line of pages done of the total, products and SKUs
    // seen, before the summary, the last of them complete.
    const lines = sync.out.split('\n');
    const summaryAt = lines.findIndex((l) => l.startsWith('sync succeeded'));
    const progress = lines
      .slice(0, summaryAt)
      .filter((l) => /^sync \S+ \[[#.]+\] pages \d+\/(\d+|\?) {2}products \d+ {2}SKUs \d+$/.test(l));
    expect(progress.length).toBeGreaterThanOrEqual(1);
    const [, done, total, seen, skusSeen] = /pages (\d+)\/(\d+) {2}products (\d+) {2}SKUs (\d+)$/.exec(progress[progress.length - 1])!;
    expect(Number(done)).toBe(Number(total));
    expect(Number(total)).toBeGreaterThan(0);
    expect(Number(seen)).toBe(30);
    const [{ n }] = await db.query<{ n: number }>('SELECT count(*)::int AS n FROM catalog_skus');
    expect(n).toBeGreaterThan(30);
    expect(Number(skusSeen)).toBe(n);

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

  it('relay sandbox serves the sandbox upstream alone on the port, with the products and profile asked, until stopped', async () => {
    const port = await freePort();
    // The command's entry (src/cli/relay.ts → runCli) as a process, as a shop developer runs it.
    const relay = nodeEntry('cli/relay');
    const child = spawn(
      process.execPath,
      [...relay.nodeArgs, relay.file, 'sandbox', '--port', String(port), '--products', '7', '--profile', 'dujiao-next'],
      { cwd: ROOT, env: { PATH: process.env.PATH, HOME: process.env.HOME, ...relay.env }, stdio: ['ignore', 'pipe', 'pipe'] },
    );
    let out = '';
    child.stdout.on('data', (c: Buffer) => (out += c.toString('utf8')));
    child.stderr.on('data', (c: Buffer) => (out += c.toString('utf8')));
    const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
    try {
      await waitFor(
        () => out,
        (o) => o.includes('control API:') || child.exitCode !== null,
        'the sandbox banner',
        30_000,
      );
      const base = `http://127.0.0.1:${port}`;
      expect(out).toContain('Sandbox upstream (dujiao-next profile) listening');
      expect(out).toContain(`base URL:          ${base}/api/v1/upstream`);
      expect(out).toContain('headers:           Dujiao-Next-Api-Key, Dujiao-Next-Timestamp, Dujiao-Next-Signature');
      expect(out).toMatch(/catalog: +7 products, \d+ SKUs/);

      const state = await axios.get(`${base}/__sandbox/state`);
      expect(state.data).toMatchObject({
        ok: true,
        counts: { products: 7 },
        api: { profile: 'dujiao-next', header_prefix: 'Dujiao-Next' },
      });

      // A request signed under the profile's header prefix is served (the page size capped at 50 and
      // echoed); the default profile's headers are refused.
      const path = '/api/v1/upstream/products';
      const signed = (prefix: string) =>
        signedHeaders(prefix, 'sandbox-api-secret', DEFAULT_SIGNATURE_TEMPLATE, {
          apiKey: 'sandbox-api-key',
          timestamp: Math.floor(Date.now() / 1000),
          method: 'GET',
          path,
          body: '',
        });
      const products = await axios.get(`${base}${path}?page=1&page_size=100`, {
        headers: signed('Dujiao-Next'),
        validateStatus: () => true,
      });
      expect(products.status).toBe(200);
      expect(products.data).toMatchObject({ ok: true, total: 7, page_size: 50 });
      expect(products.data.items).toHaveLength(7);
      const wrongPrefix = await axios.get(`${base}${path}`, { headers: signed('Service'), validateStatus: () => true });
      expect(wrongPrefix.status).toBe(401);

      child.kill('SIGTERM');
      expect(await exited).toBe(0);
      expect(out).toContain('SIGTERM, stopping');
      await expect(axios.get(`${base}/__sandbox/state`)).rejects.toMatchObject({ code: 'ECONNREFUSED' });
    } finally {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
      await exited;
    }
  });
});
