/**
 * Starting the service as a user does: with no configuration at all (embedded database, sandbox
 * upstream, generated development secrets), and in production with missing or malformed variables.
 */
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import axios from 'axios';
import { startChildApp } from './support/child-app.js';

const listening = (l: Record<string, unknown>) => typeof l.msg === 'string' && l.msg.startsWith('upstream-relay listening');

describe('starting the service', () => {
  let dir: string;
  beforeAll(() => {
    dir = mkdtempSync(join(tmpdir(), 'relay-start-'));
  });
  afterAll(() => {
    rmSync(dir, { recursive: true, force: true });
  });

  it('starts with zero configuration: embedded database, in-process sandbox, a logged dev token; keeps its secrets across a restart', async () => {
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
      expect(await first.kill('SIGTERM')).toBe(0);

      const second = startChildApp({ cwd: dir, cleanEnv: true, env: { PORT: '0' } });
      try {
        const again = await second.waitForLog((l) => typeof l.dev_token === 'string');
        expect(again.dev_token).toBe(tokenLine.dev_token);
      } finally {
        await second.kill('SIGTERM');
      }
    } finally {
      await first.kill('SIGKILL');
    }
  });

  it('refuses to start in production without the required variables, naming each one', async () => {
    const child = startChildApp({ cwd: dir, cleanEnv: true, env: { NODE_ENV: 'production' } });
    const code = await child.exited;
    expect(code).not.toBe(0);
    for (const name of ['DATABASE_URL', 'UPSTREAM_BASE_URL', 'UPSTREAM_API_KEY', 'UPSTREAM_API_SECRET', 'INTERNAL_API_TOKEN', 'PAYLOAD_ENCRYPTION_KEY']) {
      expect(child.output()).toContain(`${name}: is required when NODE_ENV=production`);
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
