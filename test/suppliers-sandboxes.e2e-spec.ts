/**
 * The zero-config start with several built-in sandboxes (`main.ts --sandboxes 2`, README): without
 * UPSTREAM_BASE_URL, a second sandbox with its own key, secret and catalog runs beside the first and is
 * the stored supplier `sandbox-2`, reached through its own client; a second start keeps it (at its
 * new address) without a duplicate.
 */
import { sandboxSupplierCredentials, type RelayApp } from '../src/app.factory.js';
import { SupplierRegistry } from '../src/suppliers/supplier-registry.service.js';
import { SupplierRepository } from '../src/suppliers/supplier.repository.js';
import { openTestDatabase, startTestApp, type TestDatabase } from './support/test-app.js';

describe('zero-config start with two sandboxes', () => {
  let db: TestDatabase;
  beforeAll(async () => {
    db = await openTestDatabase();
  });
  afterAll(async () => {
    await db.close();
  });

  /** Starts the service without UPSTREAM_BASE_URL and with two built-in sandboxes, runs `fn` on it, and stops it. */
  const start = async (fn: (relay: RelayApp) => Promise<void>) => {
    const app = await startTestApp(db, null, {}, { workers: false, sandboxes: 2 });
    try {
      expect(app.config.sandbox).toBe(true);
      await fn(app.relay);
    } finally {
      await app.close();
    }
  };

  it('runs sandbox-2 beside the first as a supplier with its own key, kept across a start at the address of that start', async () => {
    await start(async (relay) => {
      expect(relay.sandboxSuppliers).toHaveLength(1);
      const second = relay.sandboxSuppliers[0];
      expect(second.config.apiKey).toBe(sandboxSupplierCredentials(2).apiKey);
      expect(second.baseUrl).not.toBe(relay.sandbox!.baseUrl);
      const registry = relay.app.get(SupplierRegistry);
      expect(registry.list().map((s) => s.config.name)).toEqual(['main', 'sandbox-2']);
      const before = [relay.sandbox!.stats.totalRequests, second.stats.totalRequests];
      await registry.get('sandbox-2').client.ping();
      expect([relay.sandbox!.stats.totalRequests, second.stats.totalRequests]).toEqual([before[0], before[1] + 1]);
    });
    await start(async (relay) => {
      const stored = await relay.app.get(SupplierRepository).list();
      expect(stored.map((s) => [s.name, s.baseUrl])).toEqual([
        ['main', relay.sandbox!.baseUrl],
        ['sandbox-2', relay.sandboxSuppliers[0].baseUrl],
      ]);
      await relay.app.get(SupplierRegistry).get('sandbox-2').client.ping();
    });
  });
});
