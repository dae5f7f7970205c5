/**
 * Verification of an upstream callback (CONTRACT §4, §6), before anything else: method POST, the
 * configured template over CALLBACK_SIGNATURE_PATH (never the path the request arrived at), the raw
 * body bytes, our API key, a two-sided timestamp tolerance, a hex format check, a constant-time
 * comparison (all in src/signing).
 */
import { Injectable } from '@nestjs/common';
import type { IncomingHttpHeaders } from 'node:http';
import { Clock } from '../common/clock.js';
import { AppConfig } from '../config/app-config.js';
import { signatureHeaderNames, verifySignature, type VerifyResult } from '../signing/signing.js';

/** Where callbacks are received, and the path they are signed over when nothing else is configured. */
export const CALLBACK_ROUTE = '/callbacks/upstream';

@Injectable()
export class CallbackVerifier {
  constructor(
    private readonly config: AppConfig,
    private readonly clock: Clock,
  ) {}

  get signaturePath(): string {
    return this.config.callbacks.signaturePath ?? CALLBACK_ROUTE;
  }

  verify(headers: IncomingHttpHeaders, rawBody: Buffer): VerifyResult {
    const names = signatureHeaderNames(this.config.upstream.headerPrefix);
    // A repeated header is not a value we can trust: treated as missing.
    const header = (name: string): string | undefined => {
      const v = headers[name.toLowerCase()];
      return typeof v === 'string' ? v : undefined;
    };
    return verifySignature({
      secret: this.config.callbacks.secret,
      template: this.config.upstream.signatureTemplate,
      expectedApiKey: this.config.upstream.apiKey,
      method: 'POST',
      path: this.signaturePath,
      body: rawBody,
      apiKey: header(names.apiKey),
      timestamp: header(names.timestamp),
      signature: header(names.signature),
      nowSeconds: Math.floor(this.clock.nowMs() / 1000),
      toleranceSeconds: this.config.callbacks.toleranceS,
    });
  }
}
