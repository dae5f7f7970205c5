/**
 * The process-level entry to configuration: reads `.env` (without overriding what the real environment
 * sets; an empty variable counts as unset, as everywhere in the loader),
 * then validates. The only place that touches `process.env` (ESLint's no-restricted-syntax holds
 * every other file of src/ to it).
 */
import { existsSync, readFileSync } from 'node:fs';
import { parse as parseDotenv } from 'dotenv';
import { AppConfig, loadConfig } from './app-config.js';
import { FileSecretStore } from './secret-store.js';

export function loadProcessConfig(overrides: Record<string, string | undefined> = {}): AppConfig {
  // A variable the environment leaves empty is unset to the loader: the file's value fills it too.
  if (existsSync('.env')) {
    for (const [name, value] of Object.entries(parseDotenv(readFileSync('.env'))))
      if (!process.env[name]?.trim()) process.env[name] = value;
  }
  const env = { ...process.env, ...overrides };
  const dataDir = env['DATA_DIR']?.trim() || './data';
  return loadConfig(env, { secrets: new FileSecretStore(dataDir), tty: process.stdout.isTTY === true });
}

/**
 * The process's environment with `overrides` over it, for the few variables that are not the
 * service's configuration: the `relay` command's RELAY_URL, the standalone sandbox's
 * SANDBOX_RATE_LIMIT(_BLOCK_S). After loadProcessConfig it includes what `.env` filled in.
 */
export function processEnvironment(overrides: Record<string, string | undefined> = {}): Record<string, string | undefined> {
  return { ...process.env, ...overrides };
}
