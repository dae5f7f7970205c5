/**
 * The development secrets file (secret-store.ts) is readable by its owner alone, whether the store
 * creates it, rewrites an existing one or finds one with looser permissions; the data directory is
 * created 0700, and a directory that already exists keeps its mode. Each test works in a fresh
 * temporary directory.
 */
import { chmodSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { FileSecretStore } from './secret-store.js';

let dir: string;

beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'relay-secret-store-'));
});

afterEach(() => {
  rmSync(dir, { recursive: true, force: true });
});

const modeOf = (path: string): number => statSync(path).mode & 0o777;

describe('FileSecretStore', () => {
  it('creates the file 0600 and the data directories it makes 0700', () => {
    const dataDir = join(dir, 'nested', 'data');
    const value = new FileSecretStore(dataDir).getOrCreate('INTERNAL_API_TOKEN', () => 'dev_one');
    expect(value).toBe('dev_one');
    expect(modeOf(join(dataDir, 'dev-secrets.json'))).toBe(0o600);
    // (The umask may only take bits away.)
    expect(modeOf(dataDir) & 0o077).toBe(0);
    expect(modeOf(join(dir, 'nested')) & 0o077).toBe(0);
    expect(modeOf(dataDir) & 0o700).toBe(0o700);
  });

  it('narrows an existing 0644 file when it adds a secret to it, keeping what it held', () => {
    const file = join(dir, 'dev-secrets.json');
    writeFileSync(file, JSON.stringify({ INTERNAL_API_TOKEN: 'dev_kept' }));
    chmodSync(file, 0o644);
    const store = new FileSecretStore(dir);
    expect(store.getOrCreate('INTERNAL_API_TOKEN', () => 'dev_new')).toBe('dev_kept');
    expect(store.getOrCreate('PAYLOAD_ENCRYPTION_KEY', () => 'key')).toBe('key');
    expect(modeOf(file)).toBe(0o600);
    expect(JSON.parse(readFileSync(file, 'utf8'))).toEqual({ INTERNAL_API_TOKEN: 'dev_kept', PAYLOAD_ENCRYPTION_KEY: 'key' });
    // The write went through a temporary file renamed over the old one: nothing left beside it.
    expect(readdirSync(dir)).toEqual(['dev-secrets.json']);
  });

  it('narrows an existing 0644 file that already holds every secret (nothing to write)', () => {
    const file = join(dir, 'dev-secrets.json');
    writeFileSync(file, JSON.stringify({ INTERNAL_API_TOKEN: 'dev_kept' }));
    chmodSync(file, 0o644);
    expect(new FileSecretStore(dir).getOrCreate('INTERNAL_API_TOKEN', () => 'dev_new')).toBe('dev_kept');
    expect(modeOf(file)).toBe(0o600);
  });

  it("leaves the mode of a data directory that already exists (the operator's) alone", () => {
    const dataDir = join(dir, 'data');
    mkdirSync(dataDir);
    chmodSync(dataDir, 0o755);
    new FileSecretStore(dataDir).getOrCreate('INTERNAL_API_TOKEN', () => 'dev_one');
    expect(modeOf(dataDir)).toBe(0o755);
    expect(modeOf(join(dataDir, 'dev-secrets.json'))).toBe(0o600);
  });
});
