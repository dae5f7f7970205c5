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
 */
@Injectable()
export class InternalAuthGuard implements CanActivate {
  constructor(private readonly config: AppConfig) {}

  canActivate(context: ExecutionContext): boolean {
    const req = context.switchToHttp().getRequest<FastifyRequest>();
    const route = req.routeOptions?.url;
    if (route !== undefined && route !== '/internal' && !route.startsWith('/internal/')) return true;
    const header = req.headers.authorization ?? '';
    const m = /^Bearer\s+(\S+)$/i.exec(header);
    if (!m || !constantTimeEqual(m[1], this.config.internalApiToken)) {
      throw new AppError('unauthorized', 401, 'missing or invalid bearer token');
    }
    return true;
  }
}
