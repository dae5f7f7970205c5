/**
 * The operator console (issue 6): a small Preact app under `console/`, built into `dist/console/`,
 * served at `/console/` by this module. It talks to the internal API only, with the bearer token.
 */
import { Logger, Module, type OnModuleInit } from '@nestjs/common';
import { HttpAdapterHost } from '@nestjs/core';
import type { FastifyInstance } from 'fastify';
import { CONSOLE_DIST_DIR, CONSOLE_PATH, registerConsole } from './console-static.js';

@Module({})
export class ConsoleModule implements OnModuleInit {
  private readonly logger = new Logger('console');

  constructor(private readonly adapterHost: HttpAdapterHost) {}

  onModuleInit(): void {
    const adapter = this.adapterHost.httpAdapter;
    if (!adapter || adapter.getType() !== 'fastify') return;
    const state = registerConsole(adapter.getInstance<FastifyInstance>(), CONSOLE_DIST_DIR);
    if (state === 'not_built') {
      this.logger.warn(
        `the operator console is not built (no ${CONSOLE_DIST_DIR}index.html): ${CONSOLE_PATH}/ answers 503; run npm run build`,
      );
    }
  }
}
