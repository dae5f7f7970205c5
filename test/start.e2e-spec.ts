/**
 * Starting the service as a user does: with no configuration at all (embedded database, sandbox
 * upstream, generated development secrets), and in production with missing or malformed variables.
 */
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import axios from 'axios';
import { startChildApp, startRelayChild, type RelayChild } from './support/child-app.js';
import { startSandbox } from './support/test-app.js';
import { openTestDatabase } from './support/test-database.js';

const listening = (l: Record<string, unknown>) => typeof l.msg === 'string' && l.msg.startsWith('upstream-relay listening');

// A start with zero configuration creates its own embedded database whatever database the suite runs
// on: the PostgreSQL pass (TEST_DATABASE_URL) would run the very same again.
const onTheEmbeddedPass = process.env.TEST_DATABASE_URL ? it.skip : it;

describe('starting the service', () => {
  let dir: string;
  beforeAll(() => {
    dir = mkdtempSync(join(tmpdir(), 'relay-start-'));
  });
  afterAll(() => {
    rmSync(dir, { recursive: true, force: true });
  });

  onTheEmbeddedPass(
    'starts with zero configuration: embedded database, in-process sandbox, a logged dev token; keeps its secrets across a restart',
    async () => {
      // Only a free port is given, so that the test does not depend on 3000 being free.
      const first = startChildApp({ cwd: dir, cleanEnv: true, env: { PORT: '0' } });
      try {
        const line = await first.waitForLog(listening);
        const tokenLine = await first.waitForLog((l) => typeof l.dev_token === 'string');
        const url = String(line.url);
        expect(line).toMatchObject({ internal_api: expect.stringContaining('/internal'), docs: expect.stringContaining('/docs') });
        expect(String(line.upstream)).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/api\/v1\/upstream$/);
        expect(line.database).toBe('embedded PostgreSQL (PGlite)');
        const health = await axios.get(`${url}/health`);
        expect(health.status).toBe(200);
        expect(health.data).toMatchObject({ ok: true, database: 'up' });
        expect(existsSync(join(dir, 'data', 'pglite'))).toBe(true);
        const secrets = JSON.parse(readFileSync(join(dir, 'data', 'dev-secrets.json'), 'utf8')) as Record<string, string>;
        expect(secrets.INTERNAL_API_TOKEN).toBe(tokenLine.dev_token);
        expect(Buffer.from(secrets.PAYLOAD_ENCRYPTION_KEY, 'base64')).toHaveLength(32);

        // The generated secrets are announced in the log (by name and where they are kept), the
        // encryption key itself is never written there.
        const announced = await first.waitForLog((l) => Array.isArray(l.generated));
        expect(announced.generated).toEqual(expect.arrayContaining(['INTERNAL_API_TOKEN', 'PAYLOAD_ENCRYPTION_KEY']));
        expect(String(announced.msg)).toContain('generated development secrets');
        expect(announced.dir).toBe('./data');
        expect(first.output()).not.toContain(secrets.PAYLOAD_ENCRYPTION_KEY);

        // The callback endpoint's URL is logged, on the listener's port, and it is the callback endpoint:
        // an unsigned callback is refused there with invalid_signature.
        const callbackUrl = new URL(String(line.callback_endpoint));
        expect(callbackUrl.pathname).toBe('/callbacks/upstream');
        expect(callbackUrl.port).toBe(new URL(url).port);
        const unsigned = await axios.post(`${url}${callbackUrl.pathname}`, { event: 'order.fulfilled' }, { validateStatus: () => true });
        expect(unsigned.status).toBe(401);
        expect(unsigned.data).toMatchObject({ ok: false, error_code: 'invalid_signature' });

        // A first catalog sync runs at start (against the in-process sandbox's 40 products): logged, and
        // visible through the internal API with the logged dev token and in /health.
        const synced = await first.waitForLog((l) => typeof l.msg === 'string' && /^sync run \S+ of \S+ succeeded/.test(l.msg));
        const runId = /^sync run (\S+) of \S+ succeeded/.exec(String(synced.msg))![1];
        const auth = { headers: { authorization: `Bearer ${String(tokenLine.dev_token)}` } };
        const runs = await axios.get(`${url}/internal/catalog/sync-runs`, auth);
        expect(runs.status).toBe(200);
        // (Found by its id: a `*/15` cron tick during the test may add a scheduled run.)
        expect(runs.data.items.find((r: { run_id: string }) => r.run_id === runId)).toMatchObject({
          run_id: runId,
          trigger: 'start',
          mode: 'full',
          status: 'succeeded',
          products_seen: 40,
        });
        const skus = await axios.get(`${url}/internal/catalog/skus?page_size=1`, auth);
        expect(skus.data.total).toBeGreaterThan(40);
        expect((await axios.get(`${url}/health`)).data.last_sync).toMatchObject({ last_success_at: expect.any(String) });
        expect(await first.kill('SIGTERM')).toBe(0);

        // The restart only has to show the kept token: no catalog sync at its start (the first start's is checked above).
        const second = startChildApp({ cwd: dir, cleanEnv: true, env: { PORT: '0', SYNC_ON_START: 'false', SYNC_CRON: 'off' } });
        try {
          const again = await second.waitForLog((l) => typeof l.dev_token === 'string');
          expect(again.dev_token).toBe(tokenLine.dev_token);
        } finally {
          await second.kill('SIGTERM');
        }
      } finally {
        await first.kill('SIGKILL');
      }
    },
    180_000,
  ); // creates an embedded database from nothing and starts twice: beyond the default 60 s on a loaded machine

  it('refuses to start in production without the required variables, naming each one', async () => {
    const child = startChildApp({ cwd: dir, cleanEnv: true, env: { NODE_ENV: 'production' } });
    const code = await child.exited;
    expect(code).not.toBe(0);
    for (const name of [
      'DATABASE_URL',
      'UPSTREAM_BASE_URL',
      'UPSTREAM_API_KEY',
      'UPSTREAM_API_SECRET',
      'INTERNAL_API_TOKEN',
      'PAYLOAD_ENCRYPTION_KEY',
    ]) {
      expect(child.output()).toContain(`${name}: is required when NODE_ENV=production`);
    }
  });

  it('names a refused URL without printing its password', async () => {
    const child = startChildApp({
      cwd: dir,
      cleanEnv: true,
      env: {
        NODE_ENV: 'production',
        DATABASE_URL: 'mysql://u:s3cretpw@h/db',
        UPSTREAM_BASE_URL: 'https://u:s3cretpw@supplier.example/api',
        UPSTREAM_API_KEY: 'k',
        UPSTREAM_API_SECRET: 's',
        INTERNAL_API_TOKEN: 't',
        PAYLOAD_ENCRYPTION_KEY: Buffer.alloc(32).toString('base64'),
        SHOP_WEBHOOK_URL: 'ftp://hook:s3cretpw@shop.example/hook?token=s3cretpw',
        SHOP_WEBHOOK_SECRET: 'x',
      },
    });
    expect(await child.exited).not.toBe(0);
    const out = child.output();
    expect(out).toContain('DATABASE_URL: must be a postgres: or postgresql: URL, got "mysql://***@h/db"');
    expect(out).toContain('UPSTREAM_BASE_URL: must include the path prefix /api/v1/upstream, got "https://***@supplier.example/api"');
    expect(out).toContain('SHOP_WEBHOOK_URL: must be a http: or https: URL, got "ftp://***@shop.example/hook?token=***"');
    expect(out).not.toContain('s3cretpw');
  });

  it('logs the URLs it was given without their credentials or secret parameters', async () => {
    const db = await openTestDatabase();
    const sandbox = await startSandbox();
    let child: RelayChild | null = null;
    try {
      // Credentials in every URL (the database's and the sandbox's ignore them).
      const databaseUrl = new URL(db.url);
      databaseUrl.username = 'postgres';
      databaseUrl.password = 's3cretpw';
      const upstream = new URL(sandbox.baseUrl);
      upstream.username = 'relay';
      upstream.password = 's3cretpw';
      child = await startRelayChild({
        databaseUrl: databaseUrl.toString(),
        sandbox,
        env: {
          UPSTREAM_BASE_URL: upstream.toString(),
          CALLBACK_PUBLIC_URL: 'https://relay:s3cretpw@relay.example/callbacks/upstream?token=s3cretpw&v=1',
        },
      });
      const line = await child.waitForLog(listening);
      expect(line.upstream).toBe(`http://***@${upstream.host}${upstream.pathname}`);
      expect(line.callback_endpoint).toBe('https://***@relay.example/callbacks/upstream?token=***&v=1');
      expect(String(line.database)).toMatch(/^(PostgreSQL at \S+:\d+\/\S+|embedded PostgreSQL \(PGlite\))$/);
      expect((await child.http.get('/health')).status).toBe(200);
      expect(child.output()).not.toContain('s3cretpw');
    } finally {
      await child?.kill('SIGTERM');
      await sandbox.stop();
      await db.close();
    }
  });

  it('refuses malformed values: a non-numeric port, a malformed URL, a key that is not 32 bytes', async () => {
    const child = startChildApp({
      cwd: dir,
      cleanEnv: true,
      env: {
        NODE_ENV: 'production',
        PORT: 'http',
        DATABASE_URL: 'postgres//nohost',
        UPSTREAM_BASE_URL: 'https://supplier.example/api/v1/upstream',
        UPSTREAM_API_KEY: 'k',
        UPSTREAM_API_SECRET: 's',
        INTERNAL_API_TOKEN: 't',
        PAYLOAD_ENCRYPTION_KEY: Buffer.alloc(31).toString('base64'),
      },
    });
    expect(await child.exited).not.toBe(0);
    const out = child.output();
    expect(out).toContain('PORT: must be an integer');
    expect(out).toContain('DATABASE_URL: is not a valid URL');
    expect(out).toContain('PAYLOAD_ENCRYPTION_KEY: key 1 must be base64 of exactly 32 bytes (got 31 bytes)');
  });
});
