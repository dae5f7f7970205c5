/**
 * More suppliers for end-to-end tests (CONTRACT §10): each with a sandbox of its own, started with a
 * key and secret of its own (`<name>-api-key`, `<name>-api-secret`), stored in the database and read
 * into every instance's registry, as `POST /internal/suppliers` stores one (without its ping).
 */
import type { SandboxServer } from '../../src/sandbox/sandbox.server.js';
import { SupplierRegistry } from '../../src/suppliers/supplier-registry.service.js';
import { SupplierRepository } from '../../src/suppliers/supplier.repository.js';
import type { SupplierSettings } from '../../src/suppliers/supplier.types.js';
import { startSandbox, type StartSandboxOptions, type TestApp } from './test-app.js';

export interface TestSupplierOptions {
  sandbox?: StartSandboxOptions;
  /** What the operator sets (the rest from the profile, `spec` unless `sandbox.profile` says otherwise). */
  settings?: Partial<SupplierSettings>;
  enabled?: boolean;
}

/** The credentials a test supplier's sandbox takes. */
export const supplierCredentials = (name: string) => ({ apiKey: `${name}-api-key`, apiSecret: `${name}-api-secret` });

/** Starts a sandbox for `name` and adds the supplier to the instances' database and registries. */
export async function addTestSupplier(apps: readonly TestApp[], name: string, options: TestSupplierOptions = {}): Promise<SandboxServer> {
  const { apiKey, apiSecret } = supplierCredentials(name);
  const sandbox = await startSandbox({ apiKey, apiSecret, ...options.sandbox });
  await registerTestSupplier(apps, name, sandbox, options);
  return sandbox;
}

/** Stores `name` at a running sandbox (its key and secret from `supplierCredentials`) and reloads every instance's registry. */
export async function registerTestSupplier(
  apps: readonly TestApp[],
  name: string,
  sandbox: SandboxServer,
  options: TestSupplierOptions = {},
): Promise<void> {
  const { apiKey, apiSecret } = supplierCredentials(name);
  const repo = apps[0].relay.app.get(SupplierRepository);
  const inserted = await repo.insert({
    name,
    baseUrl: sandbox.baseUrl,
    apiKey,
    apiSecret,
    profile: options.sandbox?.profile ?? 'spec',
    settings: { rateLimit: null, ...options.settings },
    enabled: options.enabled ?? true,
  });
  if (!inserted) throw new Error(`a supplier named "${name}" exists already`);
  for (const app of apps) await app.relay.app.get(SupplierRegistry).reload();
}
