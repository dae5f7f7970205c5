/**
 * A supplier's secret across a rotation of PAYLOAD_ENCRYPTION_KEY (CONTRACT §3, §10): sealed under
 * key A, it is opened and sealed again under B when the service starts with `B,A`, and is then read
 * with B alone; the supplier is reached with it each time.
 */
import { keyId } from '../src/orders/payload-crypto.js';
import type { SandboxServer } from '../src/sandbox/sandbox.server.js';
import { SupplierRegistry } from '../src/suppliers/supplier-registry.service.js';
import { registerTestSupplier, supplierCredentials } from './support/suppliers.js';
import { openTestDatabase, startSandbox, startTestApp, type TestDatabase } from './support/test-app.js';

const KEY_A = Buffer.alloc(32, 0xa1);
const KEY_B = Buffer.alloc(32, 0xb2);
const b64 = (k: Buffer) => k.toString('base64');

describe('supplier secrets across a key rotation', () => {
  let db: TestDatabase;
  let main: SandboxServer;
  let second: SandboxServer;

  beforeAll(async () => {
    db = await openTestDatabase();
    main = await startSandbox();
    second = await startSandbox(supplierCredentials('second'));
  });
  afterAll(async () => {
    await main.stop();
    await second.stop();
    await db.close();
  });

  const sealedKeyId = async () => {
    const rows = await db.query<{ sealed: string }>(
      `SELECT encode(api_secret_sealed, 'hex') AS sealed FROM suppliers WHERE name = 'second'`,
    );
    return Buffer.from(rows[0].sealed, 'hex').subarray(1, 9);
  };
  /** Starts the service with these keys, pings `second` through its registry, and stops it. */
  const startPingStop = async (keys: string) => {
    const app = await startTestApp(db, main, { PAYLOAD_ENCRYPTION_KEY: keys }, { workers: false });
    try {
      const pings = second.stats.totalRequests;
      await app.relay.app.get(SupplierRegistry).get('second').client.ping();
      expect(second.stats.totalRequests).toBe(pings + 1);
    } finally {
      await app.close();
    }
  };

  it('seals under A, reseals under B at a start with B,A, and reads it with B alone', async () => {
    const first = await startTestApp(db, main, { PAYLOAD_ENCRYPTION_KEY: b64(KEY_A) }, { workers: false });
    try {
      await registerTestSupplier([first], 'second', second);
    } finally {
      await first.close();
    }
    expect((await sealedKeyId()).equals(keyId(KEY_A))).toBe(true);

    await startPingStop(`${b64(KEY_B)},${b64(KEY_A)}`);
    expect((await sealedKeyId()).equals(keyId(KEY_B))).toBe(true);

    await startPingStop(b64(KEY_B));
    expect((await sealedKeyId()).equals(keyId(KEY_B))).toBe(true);
  });
});
