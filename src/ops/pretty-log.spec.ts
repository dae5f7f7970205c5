import { Writable } from 'node:stream';
import { createPino, JsonLogger } from './json-logger.js';
import { formatPretty } from './pretty-log.js';

describe('pretty log lines', () => {
  it('writes time, level, context and message on one line, and nothing of the other fields', () => {
    const line = formatPretty({
      level: 'info',
      time: '2026-11-29T08:49:36.123Z',
      service: 'upstream-relay',
      context: 'database',
      msg: 'opening it',
      port: 5,
    });
    expect(line).toBe('08:49:36 INFO  [database] opening it\n');
    expect(formatPretty({ level: 'warn', time: '2026-11-29T08:49:36.123Z', msg: 'careful' })).toBe('08:49:36 WARN  careful\n');
  });

  it("adds an error's stack under its line", () => {
    const line = formatPretty({
      level: 'error',
      time: '2026-11-29T08:49:36.123Z',
      msg: 'boom',
      err: { message: 'boom', stack: 'Error: boom\n    at x' },
    });
    expect(line).toBe('08:49:36 ERROR boom\n    Error: boom\n        at x\n');
  });

  it('prints the ready record as a banner: one line for each URL present, and the development token', () => {
    const banner = formatPretty({
      level: 'info',
      event: 'ready',
      msg: 'upstream-relay listening on http://localhost:3000',
      internal_api: 'http://localhost:3000/internal',
      console: 'http://localhost:3000/console/',
      docs: 'http://localhost:3000/docs',
      callback_endpoint: 'http://localhost:3000/callbacks/upstream',
      upstream: null,
      dev_token: 'dev_abc',
    });
    expect(banner.split('\n')).toEqual([
      '',
      'upstream-relay listening on http://localhost:3000',
      '  API        http://localhost:3000/internal',
      '  console    http://localhost:3000/console/',
      '  API docs   http://localhost:3000/docs',
      '  callbacks  http://localhost:3000/callbacks/upstream',
      '  dev token  dev_abc',
      '             (send it as "Authorization: Bearer <token>" to /internal/*)',
      '',
      '',
    ]);
    expect(formatPretty({ level: 'info', event: 'ready', msg: 'ready', docs: 'http://h/docs' })).not.toContain('token');
  });
});

describe('the log at info', () => {
  const capture = (format: 'json' | 'pretty') => {
    let out = '';
    const sink = new Writable({
      write(chunk: Buffer, _enc, done) {
        out += chunk.toString('utf8');
        done();
      },
    });
    const logger = new JsonLogger(createPino('info', sink, format));
    return { logger, out: () => out };
  };

  it("leaves Nest's own start-up lines to debug, and writes the service's", () => {
    const { logger, out } = capture('json');
    logger.log('AppModule dependencies initialized', 'InstanceLoader');
    logger.log('Mapped {/health, GET} route', 'RouterExplorer');
    logger.log('Nest application successfully started', 'NestApplication');
    logger.log('catalog sync scheduled', 'catalog-sync');
    const lines = out()
      .split('\n')
      .filter(Boolean)
      .map((l) => JSON.parse(l) as Record<string, unknown>);
    expect(lines).toEqual([expect.objectContaining({ level: 'info', context: 'catalog-sync', msg: 'catalog sync scheduled' })]);
  });

  it('writes plain text with LOG_FORMAT=pretty, JSON otherwise', () => {
    const pretty = capture('pretty');
    pretty.logger.log('catalog sync scheduled', 'catalog-sync');
    expect(pretty.out()).toMatch(/^\d\d:\d\d:\d\d INFO {2}\[catalog-sync\] catalog sync scheduled\n$/);
  });
});
