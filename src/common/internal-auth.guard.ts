import { Injectable, type CanActivate, type ExecutionContext } from '@nestjs/common';
import type { FastifyRequest } from 'fastify';
import { AppConfig } from '../config/app-config.js';
import { constantTimeEqual } from '../signing/signing.js';
import { AppError } from './app-error.js';

/**
 * Every `/internal/*` call needs `Authorization: Bearer <INTERNAL_API_TOKEN>` (CONTRACT §5).
 * Decided by the route the request matched (`/internal/orders/:shop_order_no`), never by the path as
 * sent: the router decodes and normalises it (`/%69nternal/…`, `//internal/…` reach the same routes).
 * A request whose route is unknown here is treated as internal.
 *
 * A request that matches no route never reaches a guard (the not-found handler answers it), nor does
 * one whose body or path cannot be read: the exception filter (and the router's own errors) apply
 * `internalRequestNeedsToken` to them, so that an unknown path under `/internal/` is 401
 * `unauthorized` without the token and 404 `not_found` with it, and a known one with a body that is
 * not JSON 401 without the token and 400 with it.
 */
@Injectable()
export class InternalAuthGuard implements CanActivate {
  constructor(private readonly config: AppConfig) {}

  canActivate(context: ExecutionContext): boolean {
    const req = context.switchToHttp().getRequest<FastifyRequest>();
    const route = req.routeOptions?.url;
    if (route !== undefined && route !== '/internal' && !route.startsWith('/internal/')) return true;
    if (!hasInternalToken(req.headers.authorization, this.config.internalApiToken)) throw unauthorized();
    return true;
  }
}

export const unauthorized = (): AppError => new AppError('unauthorized', 'missing or invalid bearer token');

/** `Authorization: Bearer <token>` with the right token, compared in constant time. */
export function hasInternalToken(header: string | string[] | undefined, token: string): boolean {
  const m = typeof header === 'string' ? /^Bearer\s+(\S+)$/i.exec(header) : null;
  return m !== null && constantTimeEqual(m[1], token);
}

/**
 * Whether a path as sent (query string included or not) is `/internal` or under it, as written or
 * once decoded and normalised as a router or a proxy might: percent-decoding, repeated slashes, `.`
 * and `..` segments, and any letter case (erring on the side of asking for the token: either reading
 * makes it internal).
 */
export function isInternalPath(url: string): boolean {
  let path = url.split('?')[0];
  try {
    path = decodeURIComponent(path);
  } catch {
    // a malformed escape: judged as sent
  }
  const written = path.split(/[/\\]+/).filter((s) => s !== '' && s !== '.');
  const resolved: string[] = [];
  for (const s of written) {
    if (s === '..') resolved.pop();
    else resolved.push(s);
  }
  return written[0]?.toLowerCase() === 'internal' || resolved[0]?.toLowerCase() === 'internal';
}

/**
 * An internal path (see `isInternalPath`) asked without the bearer token (missing or wrong), whatever
 * route it matched: an error met where no guard ran (an unknown route, a body that is not JSON, a path
 * the router could not read) is answered 401 as the guard would have answered it, never with what it
 * says about the request.
 */
export function internalRequestNeedsToken(req: Pick<FastifyRequest, 'url' | 'headers'>, token: string): boolean {
  return isInternalPath(req.url) && !hasInternalToken(req.headers.authorization, token);
}
