/**
 * The shop end of CONTRACT §7 in tests: a local HTTP server that records every webhook the relay sends
 * and answers what `respond` says (200 by default), and checks a webhook's signature as a shop would.
 */
import { createServer, type IncomingMessage, type Server } from 'node:http';
import { WEBHOOK_API_KEY, WEBHOOK_SIGNATURE_TEMPLATE } from '../../src/notifications/webhook-request.js';
import { verifySignature } from '../../src/signing/signing.js';

export interface ReceivedWebhook {
  id: string;
  event: string;
  attempt: number;
  subject: string;
  status: number;
  headers: IncomingMessage['headers'];
  body: string;
  path: string;
}

export class FakeShop {
  readonly received: ReceivedWebhook[] = [];
  respond: (r: Omit<ReceivedWebhook, 'status'>) => number | Promise<number> = () => 200;
  private server: Server | null = null;
  url = '';

  async start(path = '/hooks/relay'): Promise<void> {
    this.server = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        const body = Buffer.concat(chunks).toString('utf8');
        const parsed = JSON.parse(body) as { subject: string };
        const r = {
          id: String(req.headers['relay-event-id']),
          event: String(req.headers['relay-event']),
          attempt: Number(req.headers['relay-attempt']),
          subject: parsed.subject,
          headers: req.headers,
          body,
          path: req.url ?? '',
        };
        void Promise.resolve(this.respond(r)).then((status) => {
          this.received.push({ ...r, status });
          res.writeHead(status, { 'content-type': 'application/json' }).end(status < 300 ? '{"ok":true}' : '{"ok":false}');
        });
      });
    });
    await new Promise<void>((resolve) => this.server!.listen(0, '127.0.0.1', resolve));
    const { port } = this.server.address() as { port: number };
    this.url = `http://127.0.0.1:${port}${path}`;
  }

  /** The 2xx answers given to event `id` about `subject` (ids repeat across test databases). */
  delivered(id: string, subject: string): ReceivedWebhook[] {
    return this.received.filter((r) => r.status >= 200 && r.status < 300 && r.id === id && r.subject === subject);
  }

  /** `verifySignature` on a received webhook, as the shop checks it with `secret`. */
  verify(
    r: ReceivedWebhook,
    secret: string,
    opts: { nowSeconds?: number; toleranceSeconds?: number } = {},
  ): ReturnType<typeof verifySignature> {
    return verifySignature({
      secret,
      template: WEBHOOK_SIGNATURE_TEMPLATE,
      expectedApiKey: WEBHOOK_API_KEY,
      method: 'POST',
      path: r.path,
      body: Buffer.from(r.body),
      apiKey: r.headers['relay-api-key'] as string,
      timestamp: r.headers['relay-timestamp'] as string,
      signature: r.headers['relay-signature'] as string,
      nowSeconds: opts.nowSeconds ?? Math.floor(Date.now() / 1000),
      toleranceSeconds: opts.toleranceSeconds ?? 300,
    });
  }

  async stop(): Promise<void> {
    this.server?.closeAllConnections();
    await new Promise<void>((resolve) => (this.server ? this.server.close(() => resolve()) : resolve()));
  }
}
