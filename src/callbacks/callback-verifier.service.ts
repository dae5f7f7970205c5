/**
 * Verification of an upstream callback (CONTRACT §4, §6, §10), before anything else, with the key,
 * secret and profile of the supplier whose URL it reached: method POST, its template over its
 * signature path (never the path the request arrived at), the raw body bytes, its API key, a
 * two-sided timestamp tolerance, a hex format check, a constant-time comparison (all in src/signing).
 * An unknown supplier fails as a wrong signature does.
 */
import { Injectable } from '@nestjs/common';
import type { IncomingHttpHeaders } from 'node:http';
import { Clock } from '../common/clock.js';
import { AppConfig } from '../config/app-config.js';
import { signatureHeaderNames, verifySignature, type VerifyResult } from '../signing/signing.js';
import { SupplierRegistry } from '../suppliers/supplier-registry.service.js';
import type { SupplierConfig } from '../suppliers/supplier.types.js';
import { callbackSignaturePath } from './callback-url.js';

export { CALLBACK_ROUTE } from './callback-route.js';

/** A callback's verification: the signature's verdict, or no such supplier. */
export type CallbackVerdict = VerifyResult | { ok: false; reason: 'unknown_supplier' };

@Injectable()
export class CallbackVerifier {
  constructor(
    private readonly config: AppConfig,
    private readonly clock: Clock,
    private readonly suppliers: SupplierRegistry,
  ) {}

  /** The path `supplier`'s callbacks are signed over (default: the `UPSTREAM_*` supplier's). */
  signaturePath(supplier: SupplierConfig = this.suppliers.env.config): string {
    return callbackSignaturePath(
      supplier.settings.callbackSignaturePath,
      this.config.callbacks.publicUrl,
      supplier.name,
      this.suppliers.envName,
    );
  }

  /** Verifies a callback that reached `supplier`'s URL (the bare URL: the `UPSTREAM_*` supplier). */
  verify(headers: IncomingHttpHeaders, rawBody: Buffer, supplierName: string = this.suppliers.envName): CallbackVerdict {
    const supplier = this.suppliers.find(supplierName)?.config;
    if (!supplier) return { ok: false, reason: 'unknown_supplier' };
    const names = signatureHeaderNames(supplier.settings.headerPrefix);
    // A repeated header is not a value we can trust: treated as missing.
    const header = (name: string): string | undefined => {
      const v = headers[name.toLowerCase()];
      return typeof v === 'string' ? v : undefined;
    };
    return verifySignature({
      secret: supplier.callbackSecret,
      template: supplier.settings.signatureTemplate,
      expectedApiKey: supplier.apiKey,
      method: 'POST',
      path: this.signaturePath(supplier),
      body: rawBody,
      apiKey: header(names.apiKey),
      timestamp: header(names.timestamp),
      signature: header(names.signature),
      nowSeconds: Math.floor(this.clock.nowMs() / 1000),
      toleranceSeconds: this.config.callbacks.toleranceS,
    });
  }
}
