/**
 * A yardstick for `bench:orders` (BENCH_RELAY_ENTRY=bench/minimal-relay.mjs): the least a relay must
 * do for one order, in plain Node with no framework: `POST /internal/orders` over HTTP with the bearer
 * token, a signed `GET /products/{id}` (the fresh read), a durable reservation (one INSERT, committed),
 * the signed create, the durable outcome (one UPDATE, committed), the answer. No validation library,
 * no idempotency read, no catalog lookup in the database (the SKUs are read once at start into
 * memory), no event rows, no following to delivery, no metrics, no logs. It is NOT a relay (it keeps
 * none of the contract's promises); it shows, in the same run and on the same machine, how close to
 * the floor any implementation could come, and so how much of the gap is ours.
 *
 * MINIMAL_FOLLOW=1 adds the following to delivery that every relay must do for each order, as the
 * service does it by default: ORDER_POLL_BASE_MS (5 s) after the outcome, a signed `GET /orders/{id}`
 * and, once delivered, the items stored durably (one UPDATE, AES-256-GCM), read again later while not
 * yet delivered. Three upstream calls and three durable writes an order: the least the contract asks
 * (a reservation before the create, its outcome, the delivered items), still with no framework,
 * validation, idempotency read, event rows, claims among replicas, metrics or logs.
 */
import http from 'node:http';
import { setTimeout } from 'node:timers';
import { createHash, createHmac } from 'node:crypto';
import pg from 'pg';

const env = process.env;
const base = new URL(env.UPSTREAM_BASE_URL);
const basePath = base.pathname.replace(/\/$/, '');
const agent = new http.Agent({ keepAlive: true, maxSockets: 64 });
const pool = new pg.Pool({ connectionString: env.DATABASE_URL, max: 10 });
const EMPTY_MD5 = createHash('md5').update('').digest('hex');

await pool.query(`CREATE TABLE IF NOT EXISTS minimal_orders (
  id bigserial PRIMARY KEY, shop_order_no text NOT NULL UNIQUE, downstream_order_no text NOT NULL UNIQUE,
  sku_code text NOT NULL, status text NOT NULL, upstream_order_id bigint, amount numeric,
  delivery_sealed bytea, delivered_at timestamptz,
  created_at timestamptz NOT NULL DEFAULT now(), updated_at timestamptz NOT NULL DEFAULT now())`);
const FOLLOW = env.MINIMAL_FOLLOW === '1';
const POLL_MS = Number(env.ORDER_POLL_BASE_MS ?? 5000);
const KEY = Buffer.from(env.PAYLOAD_ENCRYPTION_KEY, 'base64');
const { encryptPayload } = FOLLOW ? await import('../dist/orders/payload-crypto.js') : {};

/** One signed upstream call; resolves with the status and the parsed JSON body. */
function call(method, path, payload) {
  const body = payload === undefined ? null : Buffer.from(JSON.stringify(payload));
  const signedPath = basePath + path.split('?')[0];
  const ts = Math.floor(Date.now() / 1000);
  const md5 = body ? createHash('md5').update(body).digest('hex') : EMPTY_MD5;
  const signature = createHmac('sha256', env.UPSTREAM_API_SECRET).update(`${method}\n${signedPath}\n${ts}\n${md5}`).digest('hex');
  const headers = { 'Service-Api-Key': env.UPSTREAM_API_KEY, 'Service-Timestamp': String(ts), 'Service-Signature': signature };
  if (body) Object.assign(headers, { 'content-type': 'application/json', 'content-length': body.length });
  return new Promise((resolve, reject) => {
    const req = http.request({ host: base.hostname, port: base.port, method, path: basePath + path, agent, headers }, (res) => {
      const chunks = [];
      res.on('data', (c) => chunks.push(c));
      res.on('end', () => {
        try {
          resolve({ status: res.statusCode, body: JSON.parse(Buffer.concat(chunks).toString('utf8')) });
        } catch (e) {
          reject(e);
        }
      });
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end(body ?? undefined);
  });
}

const skus = new Map();
for (let page = 1; ; page++) {
  const { body } = await call('GET', `/products?page=${page}&page_size=50`);
  for (const p of body.items) for (const s of p.skus) skus.set(s.sku_code, { productId: p.id, skuId: s.id });
  if (body.items.length === 0) break;
}

function send(res, status, payload) {
  const b = JSON.stringify(payload);
  res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(b) });
  res.end(b);
}

async function placeOrder(input) {
  const sku = skus.get(input.sku_code);
  if (!sku) return [404, { error: { code: 'sku_not_found' } }];
  const product = await call('GET', `/products/${sku.productId}`);
  const fresh = product.body.product?.skus.find((s) => s.id === sku.skuId);
  if (!fresh || !fresh.is_active) return [409, { error: { code: 'sku_unavailable' } }];
  const reserved = await pool.query({
    name: 'reserve',
    text: 'INSERT INTO minimal_orders (shop_order_no, downstream_order_no, sku_code, status) VALUES ($1, $1, $2, $3) RETURNING id',
    values: [input.shop_order_no, input.sku_code, 'submitting'],
  });
  const created = await call('POST', '/orders', { sku_id: sku.skuId, quantity: input.quantity, downstream_order_no: input.shop_order_no });
  if (created.status !== 200 || !created.body.ok) return [502, { error: { code: 'upstream_refused' } }];
  const o = created.body;
  await pool.query({
    name: 'outcome',
    text: 'UPDATE minimal_orders SET status = $2, upstream_order_id = $3, amount = $4, updated_at = now() WHERE id = $1',
    values: [reserved.rows[0].id, o.status, o.order_id, o.amount],
  });
  if (FOLLOW) followLater(reserved.rows[0].id, o.order_id);
  return [201, { order: { shop_order_no: input.shop_order_no, status: o.status, upstream_order_id: o.order_id } }];
}

/** Reads the order upstream ORDER_POLL_BASE_MS from now; once delivered, stores its items durably (encrypted), else again later. */
function followLater(id, upstreamOrderId) {
  setTimeout(() => {
    follow(id, upstreamOrderId).then(
      (delivered) => delivered || followLater(id, upstreamOrderId),
      () => followLater(id, upstreamOrderId),
    );
  }, POLL_MS);
}

async function follow(id, upstreamOrderId) {
  const { status, body: order } = await call('GET', `/orders/${upstreamOrderId}`);
  if (status !== 200 || (order.status !== 'delivered' && order.status !== 'completed')) return false;
  // sealed as the service seals them (src/orders/payload-crypto.ts, compiled by the bench before it starts this)
  const sealed = encryptPayload(KEY, JSON.stringify(order.fulfillment ?? null), String(id));
  await pool.query({
    name: 'delivered',
    text: 'UPDATE minimal_orders SET status = $2, delivery_sealed = $3, delivered_at = now(), updated_at = now() WHERE id = $1',
    values: [id, order.status, sealed],
  });
  return true;
}

http
  .createServer((req, res) => {
    const chunks = [];
    req.on('data', (c) => chunks.push(c));
    req.on('end', () => {
      // what the bench asks before it starts: the service is up and its first sync has run
      if (req.url === '/health') return send(res, 200, { status: 'ok' });
      if (req.url.startsWith('/internal/catalog/sync-runs')) return send(res, 200, { items: [{ status: 'succeeded' }] });
      if (req.headers.authorization !== `Bearer ${env.INTERNAL_API_TOKEN}`) return send(res, 401, { error: { code: 'unauthorized' } });
      if (req.method !== 'POST' || req.url !== '/internal/orders') return send(res, 404, { error: { code: 'not_found' } });
      placeOrder(JSON.parse(Buffer.concat(chunks).toString('utf8'))).then(
        ([status, payload]) => send(res, status, payload),
        (e) => send(res, 500, { error: { code: 'internal_error', message: String(e) } }),
      );
    });
  })
  .listen(Number(env.PORT), env.HOST);

// a clean exit on the bench's SIGTERM (so that `--cpu-prof` writes its profile)
process.on('SIGTERM', () => process.exit(0));
