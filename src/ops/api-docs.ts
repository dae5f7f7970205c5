/**
 * OpenAPI documentation of the service: the UI at `/docs`, the JSON at `/docs-json` (CONTRACT §5).
 */
import type { INestApplication } from '@nestjs/common';
import { DocumentBuilder, SwaggerModule, type OpenAPIObject } from '@nestjs/swagger';

export function buildApiDocument(app: INestApplication): OpenAPIObject {
  const config = new DocumentBuilder()
    .setTitle('upstream-relay')
    .setDescription(
      [
        'Internal API for the shop backend (bearer token), the public callback endpoint of the upstream,',
        'health and metrics. Every response is JSON with a boolean `ok`; an error is',
        '`{ ok: false, error_code, error_message }` (plus `order` where an order was recorded and `fields`',
        'for `bad_request`). Money is a decimal string, never a number.',
      ].join(' '),
    )
    .setVersion('1.0.0')
    .addBearerAuth({ type: 'http', scheme: 'bearer', description: 'INTERNAL_API_TOKEN' })
    .build();
  return SwaggerModule.createDocument(app, config);
}

export function setupApiDocs(app: INestApplication): void {
  SwaggerModule.setup('docs', app, () => buildApiDocument(app), {
    jsonDocumentUrl: 'docs-json',
    customSiteTitle: 'upstream-relay API',
  });
}
