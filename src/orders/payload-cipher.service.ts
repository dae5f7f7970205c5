/**
 * Seals delivered items with the configured payload keys (first encrypts, all decrypt), the order's
 * id as associated data. The only place the plain items exist is between `open()` and the response.
 */
import { Injectable } from '@nestjs/common';
import { AppConfig } from '../config/app-config.js';
import { decryptPayload, encryptPayload } from './payload-crypto.js';

export interface DeliveredData {
  items: string[];
  delivery_data: Record<string, unknown> | null;
}

const aad = (orderId: string): string => `order:${orderId}`;

@Injectable()
export class PayloadCipher {
  constructor(private readonly config: AppConfig) {
    if (config.payloadKeys.length === 0) throw new Error('PAYLOAD_ENCRYPTION_KEY: no key configured');
  }

  seal(orderId: string, data: DeliveredData): Buffer {
    return encryptPayload(this.config.payloadKeys[0], JSON.stringify(data), aad(orderId));
  }

  open(orderId: string, sealed: Buffer): DeliveredData {
    return JSON.parse(decryptPayload(this.config.payloadKeys, sealed, aad(orderId)).toString('utf8')) as DeliveredData;
  }
}
