import type { OpenAPIObject } from '@nestjs/swagger';
import { ApiErrors, apiError, decorateDocument, errorCodeTable } from './api-docs.js';
import { ERROR_CODES } from '../common/error-codes.js';

type Media = { schema?: unknown; examples?: Record<string, { value: Record<string, unknown> }> };
type Responses = Record<string, { description?: string; content?: Record<string, Media> }>;

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

  it('gives operations with a body a 413 and a 415, and every response of the envelope examples', () => {
    const doc = decorateDocument({
      openapi: '3.0.0',
      info: { title: 't', version: '1' },
      paths: {
        '/internal/orders': { post: { requestBody: { content: {} }, responses: { '201': { description: 'created' } } } },
        '/health': { get: { responses: {} } },
      },
    } as unknown as OpenAPIObject);
    const orders = doc.paths['/internal/orders'].post!.responses as Responses;
    expect(Object.keys(orders).sort()).toEqual(['201', '400', '401', '413', 'default']);
    const codes = (r: Responses, status: string) =>
      Object.values(r[status].content!['application/json'].examples!).map((e) => e.value.error_code);
    expect(codes(orders, '401')).toEqual(['unauthorized']);
    expect(codes(orders, '413')).toEqual(['payload_too_large']);
    expect(codes(orders, '400')).toEqual(['bad_request']);
    expect(codes(orders, 'default')).toEqual(expect.arrayContaining(['internal_error', 'not_found']));
    expect(Object.keys(doc.paths['/health'].get!.responses).sort()).toEqual(['default']);
  });

  it('ApiErrors: one response per status, its codes in an enum over the envelope, one example each', () => {
    class Probe {
      handler(): void {}
    }
    const descriptor = Object.getOwnPropertyDescriptor(Probe.prototype, 'handler')!;
    ApiErrors(
      apiError(404, 'order_not_found', 'no order SO-1'),
      apiError(409, 'resolve_mismatch', 'upstream order 7 carries downstream_order_no A, not B'),
      apiError(409, 'not_unknown', 'order SO-1 is delivered, not submit_unknown', {}, 'only a submit_unknown order'),
      apiError(409, 'not_unknown', 'order SO-2 is rejected, not submit_unknown', {}, 'again', 'not_unknown_rejected'),
    )(Probe.prototype, 'handler', descriptor);
    const meta = Reflect.getMetadata('swagger/apiResponse', descriptor.value) as Record<
      string,
      {
        description: string;
        schema: { allOf: Array<{ properties?: { error_code: { enum: string[] } } }> };
        examples: Record<string, { value: unknown }>;
      }
    >;
    expect(Object.keys(meta).sort()).toEqual(['404', '409']);
    expect(meta['409'].schema.allOf[1].properties!.error_code.enum).toEqual(['resolve_mismatch', 'not_unknown']);
    expect(Object.keys(meta['409'].examples)).toEqual(['resolve_mismatch', 'not_unknown', 'not_unknown_rejected']);
    expect(meta['409'].examples.not_unknown.value).toEqual({
      ok: false,
      error_code: 'not_unknown',
      error_message: 'order SO-1 is delivered, not submit_unknown',
    });
    expect(meta['409'].description).toContain('`not_unknown`: only a submit_unknown order; or: again');
    expect(meta['404'].description).toContain('no order with this `shop_order_no`');
  });
});
