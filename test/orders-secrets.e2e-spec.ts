/**
 * Delivered items never appear in plain text: not in the log (captured at the most verbose level),
 * not in any text, json, jsonb or bytea column of any table; they come back only from the internal
 * API, decrypted.
 */
import { randomBytes } from 'node:crypto';
import type { AxiosInstance } from 'axios';
import type { SandboxServer } from '../src/sandbox/sandbox.server.js';
import { freePort, seedCatalog, startRelayChild, waitFor, waitForOrder, type RelayChild } from './support/child-app.js';
import { TEST_TOKEN, openTestDatabase, startSandbox, type TestDatabase } from './support/test-app.js';

describe('delivered items stay secret', () => {
  let db: TestDatabase;
  let sandbox: SandboxServer;
  let child: RelayChild;
  let http: AxiosInstance;
  const planted = `PLANTED-${randomBytes(8).toString('hex').toUpperCase()}`;
  const plantedData = `CARD-${randomBytes(8).toString('hex').toUpperCase()}`;

  beforeAll(async () => {
    db = await openTestDatabase();
    sandbox = await startSandbox({ catalog: { products: 2 }, callbackRetryDelaysMs: [100, 200] });
    sandbox.catalog.addProduct({ fulfillmentType: 'manual', manualFormSchema: null, skus: [{ skuCode: 'SEC-MAN', price: '5.00' }] });
    // the service as a process of its own: everything it writes (stdout and stderr) is captured
    const port = await freePort();
    child = await startRelayChild({
      databaseUrl: db.url,
      sandbox,
      port,
      env: {
        LOG_LEVEL: 'trace',
        CALLBACK_PUBLIC_URL: `http://127.0.0.1:${port}/callbacks/upstream`,
        ORDER_POLL_BASE_MS: '50',
        ORDER_POLL_MAX_MS: '200',
        SHOP_WEBHOOK_URL: 'http://127.0.0.1:9/shop-hook',
        SHOP_WEBHOOK_SECRET: 'shop-secret',
      },
    });
    http = child.http;
    await seedCatalog(http);
  });

  afterAll(async () => {
    await child?.kill('SIGTERM');
    await sandbox?.stop();
    await db?.close();
  });

  it('keeps a planted item code out of the log and out of every table, and returns it from the API', async () => {
    const r = await http.post('/internal/orders', {
      shop_order_no: 'SECRET-1',
      sku_code: 'SEC-MAN',
      quantity: 2,
      manual_form_data: { account: 'a' },
    });
    expect(r.status).toBe(201);
    const id = (r.data as { order: { upstream_order_id: number } }).order.upstream_order_id;
    await waitForOrder(http, 'SECRET-1', (o) => o.status === 'fulfilling');
    sandbox.deliverManual(id, `${planted}-1\r\n\r\n${planted}-2\r\n`, { card: plantedData });
    const order = await waitForOrder(http, 'SECRET-1', (o) => o.status === 'delivered');
    expect(order.items).toEqual([`${planted}-1`, `${planted}-2`]);
    expect(order.fulfillment).toMatchObject({ delivery_data: { card: plantedData } });
    // the callbacks carrying the payload were received and processed too
    await waitFor(
      () =>
        db.query<{ state: string }>("SELECT state FROM callback_inbox WHERE upstream_order_id = $1 AND reported_status = 'delivered'", [
          id,
        ]),
      (rows) => rows[0]?.state === 'applied',
    );
    await child.kill('SIGTERM'); // flush and close its log
    const text = child.output();
    expect(text.split('\n').length).toBeGreaterThan(20);
    expect(text).toContain('SECRET-1');
    for (const secret of [planted, plantedData, 'sandbox-api-secret', TEST_TOKEN, 'shop-secret']) expect(text).not.toContain(secret);

    const columns = await db.query<{ table_name: string; column_name: string; data_type: string }>(
      `SELECT table_name, column_name, data_type FROM information_schema.columns
        WHERE table_schema = 'public' AND data_type IN ('text', 'character varying', 'character', 'json', 'jsonb', 'bytea', ` +
        `'ARRAY', 'USER-DEFINED')`,
    );
    expect(columns.map((c) => c.table_name)).toEqual(
      expect.arrayContaining(['orders', 'order_attempts', 'order_events', 'callback_inbox', 'outbox_events']),
    );
    for (const c of columns) {
      const expr =
        c.data_type === 'bytea'
          ? `position(convert_to($1, 'UTF8') IN "${c.column_name}") > 0`
          : `"${c.column_name}"::text LIKE '%' || $1 || '%'`;
      for (const needle of [planted, plantedData]) {
        const [{ n }] = await db.query<{ n: number }>(`SELECT count(*)::int AS n FROM "${c.table_name}" WHERE ${expr}`, [needle]);
        expect({ column: `${c.table_name}.${c.column_name}`, found: n }).toEqual({ column: `${c.table_name}.${c.column_name}`, found: 0 });
      }
    }
    const [sealed] = await db.query<{ delivery_sealed: Buffer }>("SELECT delivery_sealed FROM orders WHERE shop_order_no = 'SECRET-1'");
    expect(sealed.delivery_sealed.length).toBeGreaterThan(40);
    const outbox = await db.query<{ n: number }>("SELECT count(*)::int AS n FROM outbox_events WHERE subject = 'SECRET-1'");
    expect(outbox[0].n).toBeGreaterThan(0);
  });
});
