/**
 * The suppliers' registry (CONTRACT §10): the env supplier's row written at start without its secret,
 * another supplier's secret sealed at rest, and each supplier reached through its own client, under
 * a budget of its own key.
 */
import { SupplierRegistry } from '../src/suppliers/supplier-registry.service.js';
import { SupplierRepository } from '../src/suppliers/supplier.repository.js';
import { useAppSuite } from './support/app-suite.js';
import { supplierCredentials } from './support/suppliers.js';

describe('supplier registry', () => {
  const suite = useAppSuite({ suppliers: { second: {} }, workers: false });

  it('writes the env supplier without its secret, and seals the other one', async () => {
    const rows = await suite.db.query<{ name: string; managed_by_env: boolean; sealed: string | null }>(
      `SELECT name, managed_by_env, encode(api_secret_sealed, 'hex') AS sealed FROM suppliers ORDER BY name`,
    );
    expect(rows.map((r) => [r.name, r.managed_by_env, r.sealed === null])).toEqual([
      ['main', true, true],
      ['second', false, false],
    ]);
    const secret = Buffer.from(supplierCredentials('second').apiSecret).toString('hex');
    expect(rows[1].sealed).not.toContain(secret);
    const stored = await suite.app.relay.app.get(SupplierRepository).find('second');
    expect(stored?.apiSecret).toBe(supplierCredentials('second').apiSecret);
  });

  it('reaches each supplier through its own client and budget key', async () => {
    const registry = suite.app.relay.app.get(SupplierRegistry);
    expect(registry.list().map((s) => s.config.name)).toEqual(['main', 'second']);
    const before = [suite.sandbox.stats.totalRequests, suite.supplier('second').stats.totalRequests];
    await registry.get('second').client.ping();
    expect(suite.sandbox.stats.totalRequests).toBe(before[0]);
    expect(suite.supplier('second').stats.totalRequests).toBe(before[1] + 1);
    expect(registry.get('second').budget.keyId).not.toBe(registry.env.budget.keyId);
    expect(() => registry.get('nobody')).toThrow(expect.objectContaining({ code: 'supplier_not_found' }));
  });
});
