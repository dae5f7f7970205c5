/**
 * The process-level entry to configuration: reads `.env` (without overriding the real environment),
 * then validates. The only place that touches `process.env`.
 */
import { existsSync } from 'node:fs';
import { config as readDotenv } from 'dotenv';
import { AppConfig, loadConfig } from './app-config.js';
import { FileSecretStore } from './secret-store.js';

export function loadProcessConfig(overrides: Record<string, string | undefined> = {}): AppConfig {
  if (existsSync('.env')) readDotenv({ path: '.env', override: false, quiet: true });
  const env = { ...process.env, ...overrides };
  const dataDir = env['DATA_DIR']?.trim() || './data';
  return loadConfig(env, { secrets: new FileSecretStore(dataDir) });
}
