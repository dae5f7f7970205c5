/**
 * The operator console in a headless Chromium for end-to-end tests: the console built when its
 * sources are newer than `dist/console/`, and a page logged in with the internal token (kept in
 * session storage, as the login form keeps it), with the page's script errors collected.
 */
import { execFileSync } from 'node:child_process';
import { existsSync, readdirSync, statSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import playwright from 'playwright-core';
import type { Browser, Page } from 'playwright-core';
import { TEST_TOKEN } from './test-app.js';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const DIST = `${ROOT}dist/console/`;
/** Where the console tests' screenshots go (`UPDATE_SCREENSHOTS=1`: the docs' own). */
export const SHOTS = process.env.UPDATE_SCREENSHOTS === '1' ? `${ROOT}docs/screenshots/` : `${ROOT}test/.cache/screenshots/`;
/** The browser: Debian's `chromium` package by default (CI installs it). */
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
const TOKEN_KEY = 'upstream-relay.console.token';

// The one browser global used here (this file is type-checked without the DOM lib).
declare const sessionStorage: { setItem(k: string, v: string): void };

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

export interface ConsoleBrowser {
  browser: Browser;
  page: Page;
  /** Script errors and failed console messages other than a 4xx answer the page expects. */
  errors: string[];
  close(): Promise<void>;
}

/** A page of a browser whose console sessions are logged in with the internal token. */
export async function openConsole(): Promise<ConsoleBrowser> {
  const browser = await playwright.chromium.launch({ executablePath: CHROMIUM, args: CHROMIUM_ARGS });
  const context = await browser.newContext({ viewport: { width: 1280, height: 800 }, locale: 'en-US', timezoneId: 'UTC' });
  await context.addInitScript(([key, token]) => sessionStorage.setItem(key, token), [TOKEN_KEY, TEST_TOKEN] as const);
  const page = await context.newPage();
  page.setDefaultTimeout(15_000);
  const errors: string[] = [];
  page.on('pageerror', (e) => errors.push(e.message));
  page.on('console', (m) => {
    if (m.type() === 'error' && !/status of 4\d\d/.test(m.text())) errors.push(m.text());
  });
  return { browser, page, errors, close: () => browser.close() };
}
