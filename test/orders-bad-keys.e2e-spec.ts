/**
 * Order routes given keys no order can have: a path `shop_order_no` outside `[A-Za-z0-9._:-]{1,64}`
 * (here with a NUL byte, which the database cannot even compare) is 404 `order_not_found` on every
 * route, never a 500, and an `upstream_order_id` beyond what the service holds exactly is 400
 * `bad_request` naming it. Nothing is recorded or sent.
 */
import { useAppSuite } from './support/app-suite.js';

describe('order routes with impossible keys', () => {
  const suite = useAppSuite({ sandbox: { catalog: { products: 1 } }, workers: false });

  it.each([
    ['GET', '/internal/orders/A%00B'],
    ['GET', '/internal/orders/A%00B/events'],
    ['POST', '/internal/orders/A%00B/cancel'],
    ['POST', '/internal/orders/A%00B/refund'],
    ['POST', '/internal/orders/A%00B/refresh'],
    ['POST', '/internal/orders/A%00B/resolve'],
    ['GET', `/internal/orders/${'x'.repeat(65)}`],
  ])('%s %s → 404 order_not_found', async (method, path) => {
    const r = await suite.app.http.request({ method, url: path, data: method === 'POST' ? { not_placed: true, reason: 'x' } : undefined });
    expect([r.status, r.data.ok, r.data.error_code]).toEqual([404, false, 'order_not_found']);
  });

  it('an upstream_order_id beyond the exact integers is 400 bad_request naming it', async () => {
    const r = await suite.app.http.post('/internal/orders/SOME-ORDER/resolve', { upstream_order_id: 1e20 });
    expect([r.status, r.data.error_code, Object.keys(r.data.fields ?? {})]).toEqual([400, 'bad_request', ['upstream_order_id']]);
    expect(await suite.db.query('SELECT id FROM orders')).toEqual([]);
  });
});
