/**
 * The console's tests in a real headless Chromium: where the browser is, its flags, where the
 * screenshots go, and the console's build (`dist/console/`) made when it is older than its sources.
 */
import { execFileSync } from 'node:child_process';
import { existsSync, readdirSync, statSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const DIST = `${ROOT}dist/console/`;
export const SHOTS = process.env.UPDATE_SCREENSHOTS === '1' ? `${ROOT}docs/screenshots/` : `${ROOT}test/.cache/screenshots/`;
/** The browser the console's tests drive: Debian's `chromium` package by default (CI installs it). */
export const CHROMIUM = process.env.CHROMIUM_PATH || '/usr/bin/chromium';
export const CHROMIUM_ARGS = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
];

/** Newest modification time under a path (files only). */
function newest(path: string): number {
  const st = statSync(path);
  if (!st.isDirectory()) return st.mtimeMs;
  return Math.max(0, ...readdirSync(path).map((n) => newest(`${path}/${n}`)));
}

/** Builds the console when `dist/console/` is missing or older than its sources. */
export function ensureConsoleBuilt(): void {
  const sources = ['console/index.html', 'console/src', 'console/public', 'console/vite.config.ts'].map((p) => `${ROOT}${p}`);
  const shell = `${DIST}index.html`;
  if (existsSync(shell) && statSync(shell).mtimeMs >= Math.max(...sources.map(newest))) return;
  const env = { ...process.env };
  delete env.NODE_OPTIONS; // Jest's --experimental-vm-modules is not for vite
  execFileSync(
    process.execPath,
    [`${ROOT}node_modules/vite/bin/vite.js`, 'build', '--config', 'console/vite.config.ts', '--logLevel', 'warn'],
    {
      cwd: ROOT,
      env,
      stdio: 'pipe',
      timeout: 120_000,
    },
  );
}
