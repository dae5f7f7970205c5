/**
 * Secrets generated outside production (internal token, payload key) are kept in one JSON file
 * under the data directory, so that a restart keeps reading what was encrypted before.
 */
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import type { SecretStore } from './app-config.js';

export class FileSecretStore implements SecretStore {
  private readonly file: string;
  private values: Record<string, string> | undefined;

  constructor(dataDir: string) {
    this.file = join(dataDir, 'dev-secrets.json');
  }

  getOrCreate(name: string, make: () => string): string {
    const values = this.load();
    if (values[name] === undefined) {
      values[name] = make();
      mkdirSync(dirname(this.file), { recursive: true });
      writeFileSync(this.file, JSON.stringify(values, null, 2) + '\n', { mode: 0o600 });
    }
    return values[name];
  }

  private load(): Record<string, string> {
    if (this.values === undefined) {
      this.values = existsSync(this.file) ? (JSON.parse(readFileSync(this.file, 'utf8')) as Record<string, string>) : {};
    }
    return this.values;
  }
}
