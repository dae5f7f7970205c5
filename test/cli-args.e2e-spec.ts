/**
 * The `relay` command's arguments (README "The `relay` command": exit 2 for a usage error): an option
 * that needs a value and has none (`--url` last, `--url=`) is a usage error, not a call to a URL made
 * of the word `true` (exit 1) or to another instance; `--` ends the options, so that an order number
 * starting with `--` (valid: `[A-Za-z0-9._:-]{1,64}`) can be shown; `--k=v` keeps every `=` of `v`.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { EXIT, parseArgs, runCli } from '../src/cli/relay-cli.js';

describe('relay command: arguments', () => {
  let dir: string;
  beforeAll(() => {
    dir = mkdtempSync(join(tmpdir(), 'relay-review-'));
  });
  afterAll(() => {
    rmSync(dir, { recursive: true, force: true });
  });

  it('refuses `--url` given without a value as a usage error (exit 2), not as a failed call (exit 1)', async () => {
    for (const argv of [
      ['wallet', '--url'],
      ['wallet', '--url='],
      ['order', 'SO-1', '--url', '--x'],
      ['wallet', '--url', 'ftp://h'],
      ['sync', '--mode'],
    ]) {
      const lines: string[] = [];
      const code = await runCli(argv, { out: (l) => lines.push(l), env: { DATA_DIR: join(dir, 'data') } });
      expect({ argv, code, invalidUrl: lines.join('\n').includes('Invalid URL') }).toEqual({ argv, code: EXIT.usage, invalidUrl: false });
    }
  });

  it('an unknown command is a usage error, --help or not', async () => {
    const lines: string[] = [];
    expect(await runCli(['bogus', '--help'], { out: (l) => lines.push(l), env: { DATA_DIR: join(dir, 'data') } })).toBe(EXIT.usage);
    expect(lines.join('\n')).toContain('unknown command: bogus');
    expect(await runCli(['--help'], { out: () => undefined, env: { DATA_DIR: join(dir, 'data') } })).toBe(EXIT.ok);
    expect(await runCli(['wallet', '--help'], { out: () => undefined, env: { DATA_DIR: join(dir, 'data') } })).toBe(EXIT.ok);
  });

  it('parses --k=v with every = of the value, a bare --down and --help, and positionals after --', () => {
    expect(parseArgs(['wallet', '--url=http://h:1/?a=b=c']).flags).toEqual({ url: 'http://h:1/?a=b=c' });
    expect(parseArgs(['migrate', '--down'])).toMatchObject({ command: 'migrate', flags: { down: 'true' } });
    expect(parseArgs(['order', '--url', 'http://h', '--', '--x1', '--y'])).toMatchObject({
      command: 'order',
      positional: ['--x1', '--y'],
      flags: { url: 'http://h' },
    });
  });

  it('can show an order whose shop_order_no starts with "--" (valid per CONTRACT §5: [A-Za-z0-9._:-]{1,64})', async () => {
    const lines: string[] = [];
    // the argument is taken: the call to the (closed) port below fails, exit 1 (not a usage error)
    const code = await runCli(['order', '--url', 'http://127.0.0.1:9', '--', '--x1'], {
      out: (l) => lines.push(l),
      env: { DATA_DIR: join(dir, 'data') },
    });
    expect(lines.join('\n')).not.toContain('unknown option');
    expect(code).not.toBe(EXIT.usage);
  });
});
