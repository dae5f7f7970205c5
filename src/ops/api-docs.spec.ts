import type { OpenAPIObject } from '@nestjs/swagger';
import { decorateDocument, errorCodeTable } from './api-docs.js';
import { ERROR_CODES } from './error-codes.js';

describe('API docs decoration', () => {
  it('adds the error envelope everywhere, and the bearer scheme and a 401 on /internal only', () => {
    const doc = decorateDocument({
      openapi: '3.0.0',
      info: { title: 't', version: '1' },
      paths: {
        '/internal/orders': { post: { responses: { '201': { description: 'created' } } } },
        '/health': { get: { responses: {} } },
        '/callbacks/upstream': { post: { responses: {}, tags: ['callbacks'] } },
      },
    } as unknown as OpenAPIObject);
    const orders = doc.paths['/internal/orders'].post!;
    expect(orders.security).toEqual([{ bearer: [] }]);
    expect(orders.tags).toEqual(['orders']);
    expect(Object.keys(orders.responses).sort()).toEqual(['201', '401', 'default']);
    expect(doc.paths['/health'].get!.security).toBeUndefined();
    expect(doc.paths['/health'].get!.tags).toEqual(['ops']);
    expect(doc.paths['/health'].get!.responses.default).toBeDefined();
    expect(doc.components!.schemas!.ErrorResponse).toBeDefined();
  });

  it('tabulates every error code once, with its status', () => {
    const table = errorCodeTable();
    const codes = ERROR_CODES.map((e) => e.code);
    expect(new Set(codes).size).toBe(codes.length);
    for (const e of ERROR_CODES) expect(table).toContain(`| \`${e.code}\` | ${e.status} |`);
  });
});
