/**
 * A damaged ./data/dev-secrets.json (hand-edited, truncated) is a configuration problem. README:
 * "Everything is validated at start; a bad value stops the service with a message naming it"; relay
 * exit codes "3 configuration": the file is named, exit 3, and no part of a secret is quoted (not a
 * bare JSON.parse SyntaxError, exit 1).
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { runCli } from '../src/cli/relay-cli.js';
import { loadProcessConfig } from '../src/config/load-env.js';
import { ConfigError } from '../src/config/app-config.js';

describe('a damaged dev-secrets.json', () => {
  const dir = mkdtempSync(join(tmpdir(), 'relay-secrets-'));
  const file = join(dir, 'dev-secrets.json');
  // hand-edited: the key lost its quotes
  writeFileSync(
    file,
    '{\n  "INTERNAL_API_TOKEN": "dev_0123456789abcdef",\n  "PAYLOAD_ENCRYPTION_KEY": q83vEjRWeJCrze8SNFZ4kKvN7xI0VniQq83vEjRWeJA=\n}\n',
    { mode: 0o600 },
  );
  const env = { DATA_DIR: dir, DATABASE_URL: 'pglite://memory', INTERNAL_API_TOKEN: '', PAYLOAD_ENCRYPTION_KEY: '' };

  it('is refused as configuration (ConfigError) naming the file', () => {
    let err: unknown;
    try {
      loadProcessConfig(env);
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(ConfigError);
    expect(String((err as Error).message)).toContain('dev-secrets.json');
    expect(String((err as Error).message)).not.toContain('q83vEj');
  });

  it.each([['null'], ['[]'], ['{"INTERNAL_API_TOKEN": 7}']])('a file holding %s is refused the same way', (text) => {
    const other = mkdtempSync(join(tmpdir(), 'relay-secrets-'));
    writeFileSync(join(other, 'dev-secrets.json'), text, { mode: 0o600 });
    expect(() => loadProcessConfig({ ...env, DATA_DIR: other })).toThrow(/dev-secrets\.json is not a JSON object of secrets/);
  });

  it('relay wallet exits 3 (configuration) naming the file, without echoing secret text', async () => {
    const lines: string[] = [];
    const code = await runCli(['wallet'], { out: (l) => lines.push(l), env });
    const out = lines.join('\n');
    expect(code).toBe(3);
    expect(out).toContain('dev-secrets.json');
    expect(out).not.toContain('q83vEj');
  });
});
