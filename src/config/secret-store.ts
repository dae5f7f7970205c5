/**
 * Secrets generated outside production (internal token, payload key) are kept in one JSON file
 * under the data directory, so that a restart keeps reading what was encrypted before.
 *
 * The file is readable by its owner alone (0600) however it came to exist: a write goes to a new
 * 0600 file renamed over the old one (atomic: a crash leaves the old file or the new one, never half
 * of one), and a file found with looser permissions is narrowed when it is read. The data directory
 * is created 0700 when the store creates it; a directory that already exists (the operator's) keeps
 * its mode.
 */
import { randomBytes } from 'node:crypto';
import {
  chmodSync,
  closeSync,
  existsSync,
  fsyncSync,
  mkdirSync,
  openSync,
  readFileSync,
  renameSync,
  rmSync,
  statSync,
  writeSync,
} from 'node:fs';
import { dirname, join } from 'node:path';
import { ConfigError, type SecretStore } from './app-config.js';

export const SECRET_FILE_MODE = 0o600;
export const SECRET_DIR_MODE = 0o700;

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
      this.save(values);
    }
    return values[name];
  }

  private load(): Record<string, string> {
    if (this.values === undefined) {
      if (existsSync(this.file)) {
        this.narrow();
        this.values = this.parse(readFileSync(this.file, 'utf8'));
      } else {
        this.values = {};
      }
    }
    return this.values;
  }

  /**
   * The stored secrets: a JSON object of strings. A damaged file is a configuration error naming the
   * file, never a JSON error (whose message quotes the text around the fault: part of a secret).
   */
  private parse(text: string): Record<string, string> {
    let values: unknown;
    try {
      values = JSON.parse(text);
    } catch {
      values = undefined;
    }
    if (
      typeof values !== 'object' ||
      values === null ||
      Array.isArray(values) ||
      Object.values(values).some((v) => typeof v !== 'string')
    ) {
      throw new ConfigError([
        `DATA_DIR: ${this.file} is not a JSON object of secrets; fix it, or delete it to have new development secrets generated`,
      ]);
    }
    return values as Record<string, string>;
  }

  /** An existing file readable by others (an older version wrote it 0644, a copy, an editor) becomes 0600. */
  private narrow(): void {
    if ((statSync(this.file).mode & 0o077) === 0) return;
    try {
      chmodSync(this.file, SECRET_FILE_MODE);
    } catch {
      // Not the owner, or a read-only mount: the file is left as the operator keeps it.
    }
  }

  private save(values: Record<string, string>): void {
    const dir = dirname(this.file);
    // Only the directories created here get 0700 (mkdir applies the mode to those alone).
    mkdirSync(dir, { recursive: true, mode: SECRET_DIR_MODE });
    const tmp = `${this.file}.${process.pid}.${randomBytes(4).toString('hex')}.tmp`;
    // 'wx': a new file, created 0600 (the mode applies only at creation, hence never over an old one).
    const fd = openSync(tmp, 'wx', SECRET_FILE_MODE);
    try {
      try {
        writeSync(fd, JSON.stringify(values, null, 2) + '\n');
        fsyncSync(fd);
      } finally {
        closeSync(fd);
      }
      renameSync(tmp, this.file);
    } catch (e) {
      rmSync(tmp, { force: true });
      throw e;
    }
  }
}
