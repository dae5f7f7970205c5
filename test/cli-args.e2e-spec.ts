/**
 * A misspelt or unknown option, or a stray argument, is a usage error (README exit codes: "2 usage"),
 * never a different action: `relay migrate --dwon 1` (meant: revert the latest migration) used to
 * apply every pending migration (found by review). Nothing is opened before the check.
 */
import { existsSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { runCli } from '../src/cli/relay-cli.js';
import { TEST_PAYLOAD_KEY } from './support/test-app.js';

describe('relay: unknown options and arguments', () => {
  const dir = mkdtempSync(join(tmpdir(), 'relay-flags-'));
  const env = { DATA_DIR: dir, DATABASE_URL: `pglite://${join(dir, 'pglite')}`, INTERNAL_API_TOKEN: 't', PAYLOAD_ENCRYPTION_KEY: TEST_PAYLOAD_KEY };

  it('relay migrate --dwon 1 is refused with exit 2 and does nothing', async () => {
    const lines: string[] = [];
    const code = await runCli(['migrate', '--dwon', '1'], { out: (l) => lines.push(l), env });
    expect(code).toBe(2);
    expect(lines.join('\n')).toContain('unknown option --dwon for relay migrate');
    // nothing was opened: no data directory was created
    expect(existsSync(join(dir, 'pglite'))).toBe(false);
  }, 60_000);

  it.each([
    [['migrate', 'down', '1'], 'unexpected argument down'],
    [['sync', '--mdoe', 'full'], 'unknown option --mdoe'],
    [['wallet', '--ur', 'http://127.0.0.1:1'], 'unknown option --ur'],
    [['order', 'A', 'B'], 'unexpected argument B'],
    [['sandbox', '--prot', '1'], 'unknown option --prot'],
  ])('relay %j is refused with exit 2', async (argv, message) => {
    const lines: string[] = [];
    const code = await runCli(argv, { out: (l) => lines.push(l), env });
    expect([code, lines.join('\n')]).toEqual([2, expect.stringContaining(message)]);
  });
});
