/**
 * Serving the console's files: the shell and the assets with their headers, nothing else from the
 * folder, and a 503 page that says how to build when there is no build. A bare Fastify on port 0.
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import axios from 'axios';
import Fastify, { type FastifyInstance } from 'fastify';
import { CONSOLE_CSP, isConsoleFile, registerConsole } from './console-static.js';

async function serve(root: string): Promise<{ fastify: FastifyInstance; url: string; state: string }> {
  const fastify = Fastify();
  const state = registerConsole(fastify, root);
  await fastify.listen({ port: 0, host: '127.0.0.1' });
  const { port } = fastify.server.address() as { port: number };
  return { fastify, url: `http://127.0.0.1:${port}`, state };
}

const get = (url: string) => axios.get(url, { validateStatus: () => true, maxRedirects: 0, responseType: 'text' });

describe('console static files', () => {
  let dir: string;
  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'relay-console-'));
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  it('serves the shell and the hashed assets with their headers, and nothing else from the folder', async () => {
    writeFileSync(join(dir, 'index.html'), '<!doctype html><div id="app"></div>');
    writeFileSync(join(dir, 'favicon.svg'), '<svg xmlns="http://www.w3.org/2000/svg"/>');
    writeFileSync(join(dir, 'console.module.js'), 'export const server = 1;');
    mkdirSync(join(dir, 'assets'));
    writeFileSync(join(dir, 'assets', 'index-abc123.js'), 'console.log(1)');
    const { fastify, url, state } = await serve(dir);
    try {
      expect(state).toBe('served');
      for (const path of ['/console/', '/console/index.html']) {
        const shell = await get(`${url}${path}`);
        expect(shell.status).toBe(200);
        expect(shell.data).toContain('<div id="app">');
        expect(shell.headers['content-type']).toMatch(/^text\/html/);
        expect(shell.headers['cache-control']).toBe('no-cache');
        expect(shell.headers['content-security-policy']).toBe(CONSOLE_CSP);
        expect(shell.headers['x-frame-options']).toBe('DENY');
      }
      const asset = await get(`${url}/console/assets/index-abc123.js`);
      expect(asset.status).toBe(200);
      expect(asset.headers['cache-control']).toBe('public, max-age=31536000, immutable');
      expect((await get(`${url}/console/favicon.svg`)).status).toBe(200);

      const bare = await get(`${url}/console?x=1`);
      expect(bare.status).toBe(301);
      expect(bare.headers.location).toBe('/console/?x=1');

      expect((await get(`${url}/console/console.module.js`)).status).toBe(404);
      expect((await get(`${url}/console/assets/missing.js`)).status).toBe(404);
      expect((await get(`${url}/console/%2e%2e/%2e%2e/etc/passwd`)).status).toBeGreaterThanOrEqual(400);
    } finally {
      await fastify.close();
    }
  });

  it('answers 503 with a page that says how to build when there is no build', async () => {
    const { fastify, url, state } = await serve(join(dir, 'nothing-here'));
    try {
      expect(state).toBe('not_built');
      for (const path of ['/console', '/console/', '/console/assets/index-abc123.js']) {
        const res = await get(`${url}${path}`);
        expect(res.status).toBe(503);
        expect(res.headers['content-type']).toMatch(/^text\/html/);
        expect(res.data).toContain('npm run build');
      }
    } finally {
      await fastify.close();
    }
  });

  it('knows the files of a build', () => {
    expect(isConsoleFile('/assets/index-abc123.js')).toBe(true);
    expect(isConsoleFile('/assets/index-abc123.js.br')).toBe(true);
    expect(isConsoleFile('/favicon.svg')).toBe(true);
    expect(isConsoleFile('/console.module.js')).toBe(false);
    expect(isConsoleFile('/assets/../console.module.js')).toBe(false);
    expect(isConsoleFile('/assets/sub/x.js')).toBe(false);
  });
});
