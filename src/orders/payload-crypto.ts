/**
 * Encryption of delivered items at rest (CONTRACT §3 `PAYLOAD_ENCRYPTION_KEY`): AES-256-GCM, the
 * order's id as associated data (a ciphertext moved to another order does not decrypt). Pure.
 *
 * Layout: version (1 byte, 0x01) | key id (8 bytes: the first 8 bytes of SHA-256 of the key) |
 * IV (12) | tag (16) | ciphertext. The key id lets keys rotate: the first key encrypts, every
 * configured key may decrypt.
 */
import { createCipheriv, createDecipheriv, createHash, randomBytes } from 'node:crypto';

const VERSION = 0x01;
const KEY_ID_BYTES = 8;
const IV_BYTES = 12;
const TAG_BYTES = 16;
const HEADER_BYTES = 1 + KEY_ID_BYTES + IV_BYTES + TAG_BYTES;

export function keyId(key: Buffer): Buffer {
  return createHash('sha256').update(key).digest().subarray(0, KEY_ID_BYTES);
}

function checkKey(key: Buffer): void {
  if (key.length !== 32) throw new RangeError('an AES-256 key is 32 bytes');
}

export function encryptPayload(key: Buffer, plaintext: Buffer | string, associatedData: string): Buffer {
  checkKey(key);
  const iv = randomBytes(IV_BYTES);
  const cipher = createCipheriv('aes-256-gcm', key, iv);
  cipher.setAAD(Buffer.from(associatedData, 'utf8'));
  const body = Buffer.concat([cipher.update(typeof plaintext === 'string' ? Buffer.from(plaintext, 'utf8') : plaintext), cipher.final()]);
  return Buffer.concat([Buffer.from([VERSION]), keyId(key), iv, cipher.getAuthTag(), body]);
}

export class PayloadDecryptError extends Error {
  constructor(reason: string) {
    super(`cannot decrypt stored payload: ${reason}`);
    this.name = 'PayloadDecryptError';
  }
}

/** Decrypts with the key named inside the ciphertext; throws PayloadDecryptError otherwise. */
export function decryptPayload(keys: readonly Buffer[], sealed: Buffer, associatedData: string): Buffer {
  if (sealed.length < HEADER_BYTES || sealed[0] !== VERSION) throw new PayloadDecryptError('unknown format');
  const id = sealed.subarray(1, 1 + KEY_ID_BYTES);
  const key = keys.find((k) => keyId(k).equals(id));
  if (!key) throw new PayloadDecryptError('no configured key has this key id');
  const iv = sealed.subarray(1 + KEY_ID_BYTES, 1 + KEY_ID_BYTES + IV_BYTES);
  const tag = sealed.subarray(1 + KEY_ID_BYTES + IV_BYTES, HEADER_BYTES);
  const decipher = createDecipheriv('aes-256-gcm', key, iv);
  decipher.setAAD(Buffer.from(associatedData, 'utf8'));
  decipher.setAuthTag(tag);
  try {
    return Buffer.concat([decipher.update(sealed.subarray(HEADER_BYTES)), decipher.final()]);
  } catch {
    throw new PayloadDecryptError('authentication failed');
  }
}
