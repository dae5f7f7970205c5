/**
 * The routes the HTTP server actually registered (Fastify's `onRoute`), for checks such as "the API
 * docs list every internal endpoint".
 */
import type { FastifyInstance } from 'fastify';

export interface RegisteredRoute {
  method: string;
  /** Fastify's form: `/internal/orders/:shop_order_no`. */
  path: string;
}

/** Starts recording; call before any route is registered. */
export function trackRoutes(fastify: FastifyInstance): RegisteredRoute[] {
  const routes: RegisteredRoute[] = [];
  fastify.addHook('onRoute', (r) => {
    for (const method of [r.method].flat()) routes.push({ method: String(method).toUpperCase(), path: r.url });
  });
  return routes;
}

/** `/a/:id/b` → `/a/{id}/b` (OpenAPI's form). */
export function toOpenApiPath(path: string): string {
  return path.replace(/:([A-Za-z0-9_]+)/g, '{$1}');
}
