/**
 * The source files the architecture rules read (test/architecture-rules.spec.ts,
 * test/architecture-walkthrough.spec.ts), and what a pure file may not import.
 */
import { readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

export const ROOT = fileURLToPath(new URL('../../', import.meta.url));
export const SRC = join(ROOT, 'src');

export function sourceFiles(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) return sourceFiles(path);
    return name.endsWith('.ts') && !name.endsWith('.spec.ts') ? [path] : [];
  });
}

/** What a pure file may not import: the framework, the database, the network, the file system. */
const IMPURE_MODULES = [
  String.raw`@nestjs\/[^']*`,
  'typeorm',
  'pg',
  'pg-copy-streams',
  'axios',
  'fastify',
  String.raw`node:(fs|fs\/promises|http|https|net|child_process|worker_threads)`,
].join('|');
export const IMPURE_IMPORT = new RegExp(String.raw`^import\s[^;]*?from\s+'(${IMPURE_MODULES})'`, 'gm');
