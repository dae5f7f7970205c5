import { randomBytes } from 'node:crypto';
import { PayloadDecryptError, decryptPayload, encryptPayload, keyId } from './payload-crypto.js';

describe('payload encryption (AES-256-GCM)', () => {
  const k1 = randomBytes(32);
  const k2 = randomBytes(32);
  const secret = 'PLANTED-ITEM-CODE-0001';

  it('round-trips, and the ciphertext holds neither the text nor the key', () => {
    const sealed = encryptPayload(k1, secret, 'order:1');
    expect(sealed.includes(Buffer.from(secret))).toBe(false);
    expect(sealed.includes(k1)).toBe(false);
    expect(decryptPayload([k1], sealed, 'order:1').toString()).toBe(secret);
  });

  it('uses a fresh IV each time', () => {
    expect(encryptPayload(k1, secret, 'order:1').equals(encryptPayload(k1, secret, 'order:1'))).toBe(false);
  });

  it('names its key, so that keys can rotate: any configured key decrypts what it sealed', () => {
    const old = encryptPayload(k1, secret, 'order:7');
    expect(old.subarray(1, 9).equals(keyId(k1))).toBe(true);
    expect(decryptPayload([k2, k1], old, 'order:7').toString()).toBe(secret);
    expect(() => decryptPayload([k2], old, 'order:7')).toThrow(PayloadDecryptError);
  });

  it('binds the ciphertext to its order (associated data)', () => {
    const sealed = encryptPayload(k1, secret, 'order:1');
    expect(() => decryptPayload([k1], sealed, 'order:2')).toThrow(PayloadDecryptError);
  });

  it('refuses a tampered or truncated ciphertext', () => {
    const sealed = encryptPayload(k1, secret, 'order:1');
    const tampered = Buffer.from(sealed);
    tampered[tampered.length - 1] ^= 1;
    expect(() => decryptPayload([k1], tampered, 'order:1')).toThrow(PayloadDecryptError);
    expect(() => decryptPayload([k1], sealed.subarray(0, 20), 'order:1')).toThrow(PayloadDecryptError);
    expect(() => encryptPayload(Buffer.alloc(16), secret, 'order:1')).toThrow(RangeError);
  });
});
