/**
 * Serving the operator console's built files (`dist/console/`, written by `vite build --config
 * console/vite.config.ts`) under `/console/`. The HTML shell needs no token: every piece of data comes
 * from `/internal/*` with the bearer token the browser keeps. Only the console's own files are served
 * (the folder also holds this module compiled); hashed assets are cached for good, the shell never.
 * Without a build, `/console/` answers 503 with a page that says how to build it.
 */
import { existsSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import fastifyStatic from '@fastify/static';
import type { FastifyInstance, FastifyReply } from 'fastify';

export const CONSOLE_PATH = '/console';

/** `<repo>/dist/console/`: two levels up from both `src/console/` and `dist/console/`. */
export const CONSOLE_DIST_DIR = fileURLToPath(new URL('../../dist/console/', import.meta.url));

/** The shell's and the assets' security headers: same-origin everything, no framing, no inline code. */
export const CONSOLE_CSP = [
  "default-src 'self'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self' data:",
  "connect-src 'self'",
  "font-src 'self'",
  "object-src 'none'",
  "base-uri 'none'",
  "form-action 'self'",
  "frame-ancestors 'none'",
].join('; ');

function securityHeaders(reply: FastifyReply): void {
  void reply.header('content-security-policy', CONSOLE_CSP);
  void reply.header('x-content-type-options', 'nosniff');
  void reply.header('x-frame-options', 'DENY');
  void reply.header('referrer-policy', 'no-referrer');
}

/** Files (paths relative to the folder) served as they are; the shell has routes of its own. */
export function isConsoleFile(pathName: string): boolean {
  // `preCompressed` asks about `x.br` and `x.gz` before `x`.
  const p = pathName.replace(/^\/+/, '/').replace(/\.(br|gz)$/, '');
  return p === '/favicon.svg' || /^\/assets\/[\w.-]+$/.test(p);
}

export const NOT_BUILT_HTML = `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Console not built · upstream-relay</title>
<style>body{font-family:system-ui,sans-serif;max-width:40rem;margin:4rem auto;padding:0 1rem;color:#1b2430}
code{background:#eef0f3;padding:1px 4px;border-radius:3px}</style>
</head><body><h1>The operator console is not built</h1>
<p>This service has no <code>dist/console/</code>. Build it with <code>npm run build</code>
(or <code>npx vite build --config console/vite.config.ts</code>) and start the service again.</p>
<p>The internal API under <code>/internal</code> works without it.</p></body></html>`;

export type ConsoleState = 'served' | 'not_built';

export function consoleBuilt(root: string): boolean {
  return existsSync(`${root.replace(/\/?$/, '/')}index.html`);
}

/** Registers the console's routes on the Fastify instance (before it is ready). */
export function registerConsole(fastify: FastifyInstance, root: string = CONSOLE_DIST_DIR): ConsoleState {
  if (!consoleBuilt(root)) {
    void fastify.register(async (instance) => {
      const notBuilt = async (_req: unknown, reply: FastifyReply) => {
        securityHeaders(reply);
        void reply.header('cache-control', 'no-store');
        void reply.header('content-security-policy', "default-src 'none'; style-src 'unsafe-inline'");
        return reply.code(503).type('text/html; charset=utf-8').send(NOT_BUILT_HTML);
      };
      instance.get(CONSOLE_PATH, notBuilt);
      instance.get(`${CONSOLE_PATH}/*`, notBuilt);
    });
    return 'not_built';
  }
  const shell = `${root.replace(/\/?$/, '/')}index.html`;
  void fastify.register(async (instance) => {
    instance.get(CONSOLE_PATH, async (req, reply) => {
      const q = req.url.indexOf('?');
      return reply.redirect(`${CONSOLE_PATH}/${q < 0 ? '' : req.url.slice(q)}`, 301);
    });
    // The shell: read per request (it is small, and a rebuild needs no restart), never cached.
    const sendShell = async (_req: unknown, reply: FastifyReply) => {
      securityHeaders(reply);
      void reply.header('cache-control', 'no-cache');
      return reply.type('text/html; charset=utf-8').send(await readFile(shell));
    };
    instance.get(`${CONSOLE_PATH}/`, sendShell);
    instance.get(`${CONSOLE_PATH}/index.html`, sendShell);
    await instance.register(fastifyStatic, {
      root,
      prefix: CONSOLE_PATH,
      decorateReply: false,
      index: false,
      list: false,
      dotfiles: 'deny',
      preCompressed: true,
      cacheControl: false,
      allowedPath: (pathName) => isConsoleFile(pathName),
      setHeaders: (reply: FastifyReply, path: string) => {
        securityHeaders(reply);
        void reply.header('cache-control', path.includes('/assets/') ? 'public, max-age=31536000, immutable' : 'no-cache');
      },
    });
  });
  return 'served';
}
