import { verifySignature } from '../signing/signing.js';
import { WEBHOOK_API_KEY, WEBHOOK_SIGNATURE_TEMPLATE, buildWebhookRequest, webhookBody, webhookSignaturePath } from './webhook-request.js';

const event = {
  id: '42',
  eventType: 'order.status_changed',
  subject: 'SO-1',
  payload: { event: 'order.status_changed', shop_order_no: 'SO-1', status: 'delivered' },
  createdAt: new Date('2026-11-22T10:00:00Z'),
};

describe('webhook request', () => {
  it('is verifiable as in §4 with the shop secret, over the path of the URL', () => {
    const req = buildWebhookRequest(event, {
      url: 'https://shop.example/hooks/relay?x=1',
      secret: 's3cret',
      nowSeconds: 1_800_000_000,
      attempt: 2,
    });
    expect(JSON.parse(req.body)).toEqual({
      id: '42',
      event: 'order.status_changed',
      subject: 'SO-1',
      created_at: '2026-11-22T10:00:00.000Z',
      data: { shop_order_no: 'SO-1', status: 'delivered', sequence: 42 },
    });
    expect(req.headers).toMatchObject({
      'Relay-Event-Id': '42',
      'Relay-Event': 'order.status_changed',
      'Relay-Attempt': '2',
      'Relay-Timestamp': '1800000000',
    });
    const verify = (secret: string, path: string) =>
      verifySignature({
        secret,
        template: WEBHOOK_SIGNATURE_TEMPLATE,
        expectedApiKey: WEBHOOK_API_KEY,
        method: 'POST',
        path,
        body: Buffer.from(req.body),
        apiKey: req.headers['Relay-Api-Key'],
        timestamp: req.headers['Relay-Timestamp'],
        signature: req.headers['Relay-Signature'],
        nowSeconds: 1_800_000_010,
        toleranceSeconds: 60,
      });
    expect(verify('s3cret', '/hooks/relay')).toEqual({ ok: true });
    expect(verify('other', '/hooks/relay')).toEqual({ ok: false, reason: 'signature_mismatch' });
    expect(verify('s3cret', '/hooks/relay?x=1')).toEqual({ ok: false, reason: 'signature_mismatch' });
  });

  it('sends the same body on every attempt', () => {
    const a = buildWebhookRequest(event, { url: 'http://h/x', secret: 's', nowSeconds: 1, attempt: 1 });
    const b = buildWebhookRequest(event, { url: 'http://h/x', secret: 's', nowSeconds: 99, attempt: 7 });
    expect(a.body).toBe(b.body);
    expect(a.headers['Relay-Signature']).not.toBe(b.headers['Relay-Signature']);
  });

  it('orders the status changes of an order by data.sequence (the event id, a number); other events have none', () => {
    const later = JSON.parse(webhookBody({ ...event, id: '43' })) as { data: { sequence: number } };
    expect(later.data.sequence).toBe(43);
    expect(later.data.sequence).toBeGreaterThan((JSON.parse(webhookBody(event)) as { data: { sequence: number } }).data.sequence);
    const sku = JSON.parse(
      webhookBody({
        ...event,
        eventType: 'sku.price_changed',
        subject: 'SKU-1',
        payload: { event: 'sku.price_changed', sku_code: 'SKU-1' },
      }),
    );
    expect(sku.data).toEqual({ sku_code: 'SKU-1' });
  });

  it('signs over / when the URL has no path', () => {
    expect(webhookSignaturePath('http://shop.example')).toBe('/');
    expect(webhookSignaturePath('http://shop.example/a/b?c')).toBe('/a/b');
  });
});
