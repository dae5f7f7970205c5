import { Injectable, type CanActivate, type ExecutionContext } from '@nestjs/common';
import type { FastifyRequest } from 'fastify';
import { AppConfig } from '../config/app-config.js';
import { constantTimeEqual } from '../signing/signing.js';
import { AppError } from './app-error.js';

/** Every `/internal/*` call needs `Authorization: Bearer <INTERNAL_API_TOKEN>` (CONTRACT §5). */
@Injectable()
export class InternalAuthGuard implements CanActivate {
  constructor(private readonly config: AppConfig) {}

  canActivate(context: ExecutionContext): boolean {
    const req = context.switchToHttp().getRequest<FastifyRequest>();
    const path = req.url.split('?')[0];
    if (path !== '/internal' && !path.startsWith('/internal/')) return true;
    const header = req.headers.authorization ?? '';
    const m = /^Bearer\s+(\S+)$/i.exec(header);
    if (!m || !constantTimeEqual(m[1], this.config.internalApiToken)) {
      throw new AppError('unauthorized', 401, 'missing or invalid bearer token');
    }
    return true;
  }
}
