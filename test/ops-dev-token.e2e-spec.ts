/**
 * README "Logs": "API keys, tokens, signatures, secrets and delivered items are never logged"; only a
 * development token the service generated itself is printed in sandbox mode (CONTRACT §2). An
 * operator's own INTERNAL_API_TOKEN on an instance against the built-in sandbox stays out of the log:
 * it is never printed as the "development token" (start.e2e-spec.ts covers the generated one).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePort, startChildApp } from './support/child-app.js';
import { openTestDatabase, testEnv, type TestDatabase } from './support/test-app.js';

describe('the internal token in the log, sandbox mode', () => {
  let db: TestDatabase;
  beforeAll(async () => {
    db = await openTestDatabase();
  });
  afterAll(async () => {
    await db.close();
  });

  it('never writes a configured INTERNAL_API_TOKEN to the log', async () => {
    const token = 'rv-operator-chosen-token-5f1e2d3c4b5a69788796a5b4c3d2e1f0';
    const dataDir = mkdtempSync(join(tmpdir(), 'relay-rv-token-'));
    const port = await freePort();
    // no UPSTREAM_* : the built-in sandbox
    const child = startChildApp({
      env: {
        ...testEnv(null, { LOG_LEVEL: 'info', INTERNAL_API_TOKEN: token }),
        DATABASE_URL: db.url,
        DATA_DIR: dataDir,
        PORT: String(port),
        HOST: '127.0.0.1',
      },
    });
    try {
      await child.waitForLog((l) => typeof l.msg === 'string' && l.msg.startsWith('upstream-relay listening'));
      // stopped and gone: the output is the whole log of its life, start to shutdown
      expect(await child.kill('SIGTERM')).toBe(0);
      expect(child.output()).toContain('upstream-relay listening');
      const leaked = child
        .output()
        .split('\n')
        .filter((l) => l.includes(token));
      expect(leaked).toEqual([]);
    } finally {
      await child.kill('SIGTERM');
      rmSync(dataDir, { recursive: true, force: true });
    }
  }, 60_000);
});
