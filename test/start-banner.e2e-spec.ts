/**
 * A quiet, useful start (README "Logs"): at `info`, at most 10 lines before the banner, the
 * embedded database's creation among them, none of Nest's module and route lines; then one banner
 * with the API, console, docs and callback URLs and the development token. JSON when standard output
 * is not a terminal (as here), plain text with LOG_FORMAT=pretty.
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import axios from 'axios';
import { startChildApp } from './support/child-app.js';

/** The most lines a start prints before its banner at `info`. */
const MOST_LINES_BEFORE_BANNER = 10;

describe('the start, as a person sees it', () => {
  let dir: string;
  beforeAll(() => {
    dir = mkdtempSync(join(tmpdir(), 'relay-banner-'));
  });
  afterAll(() => {
    rmSync(dir, { recursive: true, force: true });
  });

  it('creates its database, saying so, then a banner with every URL and the dev token; in plain text with LOG_FORMAT=pretty', async () => {
    // Zero configuration (embedded database created now, built-in sandbox, generated token), at info.
    const first = startChildApp({ cwd: dir, cleanEnv: true, env: { PORT: '0', LOG_LEVEL: 'info' } });
    try {
      const banner = await first.waitForLog((l) => l.event === 'ready', 170_000);
      const lines = first.output().split('\n').filter(Boolean);
      const before = lines.slice(
        0,
        lines.findIndex((l) => l.includes('"event":"ready"')),
      );
      expect(before.length).toBeLessThanOrEqual(MOST_LINES_BEFORE_BANNER);
      const records = before.map((l) => JSON.parse(l) as Record<string, unknown>);
      const messages = records.map((r) => String(r.msg));
      expect(messages).toEqual(
        expect.arrayContaining([
          expect.stringMatching(/^creating the embedded database in /),
          expect.stringMatching(/^created the embedded database in [\d.]+ s$/),
        ]),
      );
      expect(
        records.filter((r) =>
          ['NestFactory', 'InstanceLoader', 'RoutesResolver', 'RouterExplorer', 'NestApplication'].includes(String(r.context)),
        ),
      ).toEqual([]);

      const secrets = JSON.parse(readFileSync(join(dir, 'data', 'dev-secrets.json'), 'utf8')) as Record<string, string>;
      const base = String(banner.url).replace('127.0.0.1', 'localhost');
      expect(banner).toMatchObject({
        level: 'info',
        internal_api: `${base}/internal`,
        console: `${base}/console/`,
        docs: `${base}/docs`,
        callback_endpoint: `${base}/callbacks/upstream`,
        dev_token: secrets.INTERNAL_API_TOKEN,
      });
      // Each URL is what it says: the console's page, the docs, the API with the token, the callbacks' endpoint.
      expect((await axios.get(String(banner.console))).headers['content-type']).toMatch(/^text\/html/);
      expect((await axios.get(String(banner.docs))).status).toBe(200);
      const wallet = await axios.get(`${String(banner.internal_api)}/wallet`, {
        headers: { authorization: `Bearer ${secrets.INTERNAL_API_TOKEN}` },
        validateStatus: () => true,
      });
      expect(wallet.status).toBe(200);
      const unsigned = await axios.post(String(banner.callback_endpoint), {}, { validateStatus: () => true });
      expect(unsigned.data).toMatchObject({ error_code: 'invalid_signature' });
    } finally {
      await first.kill('SIGTERM');
    }

    // The same data directory again, in plain text: no JSON, the same few lines, the same banner.
    const second = startChildApp({ cwd: dir, cleanEnv: true, env: { PORT: '0', LOG_LEVEL: 'info', LOG_FORMAT: 'pretty' } });
    try {
      await second.waitForLog((l) => typeof l.msg === 'string' && /^ {2}dev token {2}dev_/.test(l.msg), 120_000);
      const lines = second.output().split('\n');
      const heading = lines.findIndex((l) => l.startsWith('upstream-relay listening on http://localhost:'));
      const before = lines.slice(0, heading).filter(Boolean);
      expect(before.length).toBeLessThanOrEqual(MOST_LINES_BEFORE_BANNER);
      for (const line of before) expect(line).toMatch(/^\d\d:\d\d:\d\d (INFO |WARN ) /);
      expect(before).toEqual(expect.arrayContaining([expect.stringMatching(/INFO {2}\[database\] opening the embedded database in /)]));
      const base = lines[heading].slice('upstream-relay listening on '.length);
      const secrets = JSON.parse(readFileSync(join(dir, 'data', 'dev-secrets.json'), 'utf8')) as Record<string, string>;
      expect(lines.slice(heading + 1, heading + 5)).toEqual([
        `  API        ${base}/internal`,
        `  console    ${base}/console/`,
        `  API docs   ${base}/docs`,
        `  callbacks  ${base}/callbacks/upstream`,
      ]);
      expect(lines).toContain(`  dev token  ${secrets.INTERNAL_API_TOKEN}`);
    } finally {
      await second.kill('SIGTERM');
    }
  }, 300_000);
});
