/**
 * `/internal/suppliers` (CONTRACT §10) with two sandboxes besides the env supplier's: credentials
 * pinged before anything is saved (a wrong secret 502, a server refusing connections 503), a
 * duplicate 409, bad input 400 with `fields`, the env supplier not editable, disable and enable,
 * delete refused while an order is unfinished and then done (its SKUs unlisted, its orders kept), no
 * answer or log line carrying a secret, and `relay suppliers` listing them.
 */
import { spawn } from 'node:child_process';
import { createServer } from 'node:net';
import { fileURLToPath } from 'node:url';
import { runCli } from '../src/cli/relay-cli.js';
import type { SandboxServer } from '../src/sandbox/sandbox.server.js';
import { SupplierRegistry } from '../src/suppliers/supplier-registry.service.js';
import type { UpstreamClient } from '../src/upstream/upstream.client.js';
import { useAppSuite } from './support/app-suite.js';
import { freePort, nodeEntry } from './support/child-app.js';
import { supplierCredentials } from './support/suppliers.js';
import { startSandbox, testEnv } from './support/test-app.js';
import { waitFor } from './support/wait.js';

const ROOT = fileURLToPath(new URL('../', import.meta.url));

const WRONG_SECRET = 'wrong-secret-1f8e2d';
const THIRD = supplierCredentials('third');

/** A port on which nothing listens (a server refusing connections). */
async function closedPort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const { port } = s.address() as { port: number };
      s.close(() => resolve(port));
    });
  });
}

describe('suppliers API', () => {
  const suite = useAppSuite({ suppliers: { second: {} }, workers: false, logs: true, seed: true, env: { LOG_LEVEL: 'debug' } });
  let third: SandboxServer;
  /** Every answer's body, to look for secrets in. */
  const answers: string[] = [];
  const call = async (method: 'get' | 'post' | 'patch' | 'delete', path: string, body?: unknown) => {
    const r = await suite.app.http.request({ method, url: path, data: body });
    answers.push(JSON.stringify(r.data));
    return r;
  };
  const stored = async () => (await suite.db.query<{ name: string }>(`SELECT name FROM suppliers ORDER BY name`)).map((r) => r.name);
  const registry = () => suite.app.relay.app.get(SupplierRegistry);
  const addThird = (extra: Record<string, unknown> = {}) =>
    call('post', '/internal/suppliers', {
      name: 'third',
      base_url: third.baseUrl,
      api_key: THIRD.apiKey,
      api_secret: THIRD.apiSecret,
      ...extra,
    });

  beforeAll(async () => {
    third = await startSandbox({ apiKey: THIRD.apiKey, apiSecret: THIRD.apiSecret, catalog: { seed: 3 } });
  });
  afterAll(async () => {
    await third.stop();
  });

  it('refuses a wrong secret with 502 upstream_auth_failed and saves nothing', async () => {
    const before = third.stats.totalRequests;
    const r = await addThird({ api_secret: WRONG_SECRET });
    expect(r.status).toBe(502);
    expect(r.data).toMatchObject({ ok: false, error_code: 'upstream_auth_failed' });
    expect(third.stats.totalRequests).toBe(before + 1);
    expect(await stored()).toEqual(['main', 'second']);
    expect(registry().find('third')).toBeUndefined();
  });

  it('refuses a server that refuses connections with 503 upstream_unavailable and saves nothing', async () => {
    const r = await addThird({ base_url: `http://127.0.0.1:${await closedPort()}/api/v1/upstream` });
    expect(r.status).toBe(503);
    expect(r.data).toMatchObject({ ok: false, error_code: 'upstream_unavailable' });
    expect(await stored()).toEqual(['main', 'second']);
  });

  it('refuses bad input with 400 and every field at fault, before any ping', async () => {
    const before = third.stats.totalRequests;
    const r = await call('post', '/internal/suppliers', {
      name: 'Third!',
      base_url: 'ftp://x/api/v1/upstream',
      api_key: THIRD.apiKey,
      settings: { page_size: 0, rate_limit: 'fast' },
    });
    expect(r.status).toBe(400);
    expect(r.data.error_code).toBe('bad_request');
    expect(Object.keys(r.data.fields).sort()).toEqual(['api_secret', 'base_url', 'name', 'settings.page_size', 'settings.rate_limit']);
    expect(third.stats.totalRequests).toBe(before);
    expect((await call('patch', '/internal/suppliers/second', { enabled: 'no' })).data).toMatchObject({
      error_code: 'bad_request',
      fields: { enabled: ['must be true or false'] },
    });
  });

  it('adds one after its ping: its answer shows the key hint, the settings and the ping’s wallet; a duplicate is 409', async () => {
    const r = await addThird({ profile: 'spec', settings: { page_size: 25, rate_limit: '30/60s' } });
    expect(r.status).toBe(201);
    const s = r.data.supplier;
    expect(s).toMatchObject({
      name: 'third',
      base_url: third.baseUrl,
      profile: 'spec',
      api_key_hint: THIRD.apiKey.slice(-4),
      enabled: true,
      managed_by_env: false,
      callback_url: null,
      health: { upstream: 'up', budget: { limit: '30/60s' } },
      wallet: { balance: third.walletBalance(), currency: 'CNY' },
      last_sync: null,
    });
    expect(s.settings).toMatchObject({ page_size: 25, rate_limit: '30/60s', header_prefix: 'Service', sync_mode: 'auto' });
    expect(await stored()).toEqual(['main', 'second', 'third']);
    expect(registry().get('third').config.settings.pageSize).toBe(25);

    const again = await addThird();
    expect(again.status).toBe(409);
    expect(again.data.error_code).toBe('supplier_exists');

    const list = await call('get', '/internal/suppliers');
    expect(list.data).toMatchObject({ ok: true, total: 3, page: 1 });
    expect(list.data.items.map((i: { name: string }) => i.name)).toEqual(['main', 'second', 'third']);
    expect((await call('get', '/internal/suppliers/third')).data.supplier.name).toBe('third');
    expect((await call('get', '/internal/suppliers/nobody')).data.error_code).toBe('supplier_not_found');
  });

  it('does not change or delete the env supplier, nor add one of its name', async () => {
    for (const r of [
      await call('patch', '/internal/suppliers/main', { enabled: false }),
      await call('delete', '/internal/suppliers/main'),
      await call('post', '/internal/suppliers', {
        name: 'main',
        base_url: third.baseUrl,
        api_key: THIRD.apiKey,
        api_secret: THIRD.apiSecret,
      }),
    ]) {
      expect(r.status).toBe(409);
      expect(r.data.error_code).toBe('supplier_managed_by_env');
    }
    expect(registry().env.config.enabled).toBe(true);
    expect((await call('get', '/internal/suppliers/main')).data.supplier).toMatchObject({ managed_by_env: true, enabled: true });
  });

  it('pings new credentials before it saves them, and not a change of enabled', async () => {
    const before = third.stats.totalRequests;
    const wrong = await call('patch', '/internal/suppliers/third', { api_secret: WRONG_SECRET });
    expect(wrong.status).toBe(502);
    expect(third.stats.totalRequests).toBe(before + 1);
    expect(registry().get('third').config.apiSecret).toBe(THIRD.apiSecret);

    const off = await call('patch', '/internal/suppliers/third', { enabled: false, settings: { page_size: null } });
    expect(off.status).toBe(200);
    expect(off.data.supplier).toMatchObject({ enabled: false, settings: { page_size: 100 } });
    expect(third.stats.totalRequests).toBe(before + 1);
    expect(registry().get('third').config.enabled).toBe(false);
    expect(
      registry()
        .enabled()
        .map((s) => s.config.name),
    ).toEqual(['main', 'second']);

    const on = await call('patch', '/internal/suppliers/third', { enabled: true });
    expect(on.data.supplier.enabled).toBe(true);
    expect(
      registry()
        .enabled()
        .map((s) => s.config.name),
    ).toEqual(['main', 'second', 'third']);
  });

  it('refuses to delete a supplier with an unfinished order, then deletes it: its SKUs unlisted, its orders kept', async () => {
    // An order of `second` (placed through the API, then named `second`'s: this file is about the
    // suppliers' rule, not about placing at a supplier) and three SKUs of `second`'s catalog.
    const placed = await suite.app.http.post('/internal/orders', { shop_order_no: 'SUP-DEL-1', sku_code: await someSku(), quantity: 1 });
    expect(placed.status).toBe(201);
    await suite.db.query(`UPDATE orders SET supplier = 'second', status = 'fulfilling' WHERE shop_order_no = 'SUP-DEL-1'`);
    const skus = await suite.db.query<{ sku_code: string }>(
      `UPDATE catalog_skus SET supplier = 'second' WHERE sku_code IN (SELECT sku_code FROM catalog_skus WHERE listed ORDER BY ` +
        `sku_code LIMIT 3) RETURNING sku_code`,
    );
    expect(skus).toHaveLength(3);
    const listedBefore = await countListed();

    const busy = await call('delete', '/internal/suppliers/second');
    expect(busy.status).toBe(409);
    expect(busy.data).toMatchObject({ error_code: 'supplier_busy', unfinished_orders: 1 });
    expect(await stored()).toContain('second');
    expect(registry().find('second')).toBeDefined();

    await suite.db.query(`UPDATE orders SET status = 'delivered' WHERE shop_order_no = 'SUP-DEL-1'`);
    const gone = await call('delete', '/internal/suppliers/second');
    expect(gone.status).toBe(200);
    expect(gone.data).toEqual({ ok: true, name: 'second', skus_unlisted: 3 });
    expect(await stored()).toEqual(['main', 'third']);
    expect(registry().find('second')).toBeUndefined();
    expect((await call('get', '/internal/suppliers/second')).status).toBe(404);
    const rows = await suite.db.query<{ listed: boolean }>(`SELECT listed FROM catalog_skus WHERE supplier = 'second'`);
    expect(rows.map((r) => r.listed)).toEqual([false, false, false]);
    expect(await countListed()).toBe(listedBefore - 3);
    // unlisted as every catalog change is: in each SKU's history (and announced, when a shop webhook is set)
    const history = await suite.db.query<{ n: number }>(
      `SELECT count(*)::int AS n FROM catalog_sku_changes WHERE supplier = 'second' AND source = 'supplier' AND kind = 'listing'`,
    );
    expect(history[0].n).toBe(3);
    const order = await suite.app.http.get('/internal/orders/SUP-DEL-1');
    expect(order.status).toBe(200);
    expect(order.data.order.status).toBe('delivered');
    expect((await call('delete', '/internal/suppliers/second')).data.error_code).toBe('supplier_not_found');
  });

  it('lists them with relay suppliers', async () => {
    const lines: string[] = [];
    const code = await runCli(['suppliers', '--url', suite.app.url], {
      out: (l) => lines.push(l),
      env: { ...testEnv(suite.sandbox), DATABASE_URL: suite.db.url, DATA_DIR: '/nonexistent-relay-data' },
    });
    expect(code).toBe(0);
    expect(await runCli(['sync', '--supplier', 'Not-A-Name'], { out: () => undefined })).toBe(2);
    expect(lines[0]).toMatch(/^NAME\s+BASE URL\s+ENABLED\s+HEALTH\s+LAST SYNC$/);
    expect(lines.slice(1).map((l) => l.split(/\s+/).slice(0, 3))).toEqual([
      ['main', suite.sandbox.baseUrl, 'enabled'],
      ['third', third.baseUrl, 'enabled'],
    ]);
  });

  it('relay sandbox --port --seed --api-key --api-secret runs another sandbox, added as a supplier', async () => {
    const port = await freePort();
    const relay = nodeEntry('cli/relay');
    const argv = ['sandbox', '--port', String(port), '--seed', '5', '--api-key', 'cli-key', '--api-secret', 'cli-secret-9d2'];
    const child = spawn(process.execPath, [...relay.nodeArgs, relay.file, ...argv], {
      cwd: ROOT,
      env: { PATH: process.env.PATH, HOME: process.env.HOME, ...relay.env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
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
      expect(out).toContain('API key:           cli-key');
      const base_url = `http://127.0.0.1:${port}/api/v1/upstream`;
      const added = await call('post', '/internal/suppliers', { name: 'cli', base_url, api_key: 'cli-key', api_secret: 'cli-secret-9d2' });
      expect(added.status).toBe(201);
      // its catalog is seed 5's, not the default seed's (the env supplier's sandbox)
      const products = async (client: UpstreamClient) => JSON.stringify((await client.listProducts({ page: 1, pageSize: 5 })).items);
      expect(await products(registry().get('cli').client)).not.toBe(await products(registry().env.client));
      expect((await call('delete', '/internal/suppliers/cli')).status).toBe(200);
      child.kill('SIGTERM');
      expect(await exited).toBe(0);
    } finally {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
      await exited;
    }
  });

  it('answered and logged no secret (only the key’s hint)', () => {
    const secrets = [
      'cli-secret-9d2',
      THIRD.apiSecret,
      WRONG_SECRET,
      supplierCredentials('second').apiSecret,
      'sandbox-api-secret',
      THIRD.apiKey,
    ];
    const logs = suite.app.logLines().map((l) => JSON.stringify(l));
    expect(logs.some((l) => l.includes('supplier third added'))).toBe(true);
    expect(answers.length).toBeGreaterThan(15);
    for (const secret of secrets) {
      expect(answers.filter((a) => a.includes(secret))).toEqual([]);
      expect(logs.filter((l) => l.includes(secret))).toEqual([]);
    }
  });

  const someSku = async () =>
    (
      await suite.db.query<{ sku_code: string }>(
        `SELECT sku_code FROM catalog_skus WHERE available AND fulfillment_type = 'auto' ORDER BY sku_code DESC LIMIT 1`,
      )
    )[0].sku_code;
  const countListed = async () => Number((await suite.db.query<{ n: string }>(`SELECT count(*) AS n FROM catalog_skus WHERE listed`))[0].n);
});
