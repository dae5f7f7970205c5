import { createHmac } from 'node:crypto';
import {
  DEFAULT_SIGNATURE_TEMPLATE,
  canonicalBytes,
  canonicalString,
  constantTimeEqual,
  parseSignatureTemplate,
  sign,
  signedHeaders,
  templatePlaceholders,
  templateWeaknesses,
  verifySignature,
  type VerifyInput,
} from './signing.js';

// Every expected signature below was computed outside this code with openssl, e.g.
//   printf 'POST\n/api/v1/upstream/ping\n1700000000\nd41d8cd98f00b204e9800998ecf8427e' \
//     | openssl dgst -sha256 -hmac test-secret
const SECRET = 'test-secret';
const ORDER_BODY = '{"sku_id":101,"quantity":2}';

describe('signing: fixed vectors', () => {
  it('signs the published Dujiao-Next form with an empty body (md5 of the empty string)', () => {
    const input = { apiKey: 'k', timestamp: 1700000000, method: 'post', path: '/api/v1/upstream/ping', body: '' };
    expect(canonicalString(DEFAULT_SIGNATURE_TEMPLATE, input)).toBe(
      'POST\n/api/v1/upstream/ping\n1700000000\nd41d8cd98f00b204e9800998ecf8427e',
    );
    expect(sign(SECRET, DEFAULT_SIGNATURE_TEMPLATE, input)).toBe('883a1bdd5a3d47165cd9236653085a9c2086aa2f4b38a4a4b2382fdea8bfcad7');
    // A missing body signs like an empty one.
    expect(sign(SECRET, DEFAULT_SIGNATURE_TEMPLATE, { ...input, body: undefined })).toBe(
      '883a1bdd5a3d47165cd9236653085a9c2086aa2f4b38a4a4b2382fdea8bfcad7',
    );
  });

  it('signs a JSON body through its md5', () => {
    const input = { apiKey: 'k', timestamp: '1700000123', method: 'POST', path: '/api/v1/upstream/orders', body: ORDER_BODY };
    expect(canonicalString(DEFAULT_SIGNATURE_TEMPLATE, input).split('\n')[3]).toBe('c858070a9e1a98a30d298ee7857e78d8');
    expect(sign(SECRET, DEFAULT_SIGNATURE_TEMPLATE, input)).toBe('6ee722d402d84dc58ba68d0a03e45f61c5619434279d408dc06e291a6e466125');
    // Bytes and text sign alike.
    expect(sign(SECRET, DEFAULT_SIGNATURE_TEMPLATE, { ...input, body: Buffer.from(ORDER_BODY) })).toBe(
      '6ee722d402d84dc58ba68d0a03e45f61c5619434279d408dc06e291a6e466125',
    );
  });

  it('fills every placeholder: api_key, timestamp, method, path, body, body_sha256', () => {
    const template = '{api_key}|{timestamp}|{method}|{path}|{body}|{body_sha256}';
    const input = { apiKey: 'key-1', timestamp: 1700000123, method: 'POST', path: '/api/v1/upstream/orders', body: ORDER_BODY };
    expect(canonicalString(template, input)).toBe(
      `key-1|1700000123|POST|/api/v1/upstream/orders|${ORDER_BODY}|80700bf2fb979195b1a7164831119214a476b9acbdc6c198b9e2c0abd2951397`,
    );
    expect(sign(SECRET, template, input)).toBe('0b4894e2a88233f7f8e1656549ecfc072747dd23112f16999ace34e6442da20c');
    expect(templatePlaceholders(template)).toEqual(['api_key', 'timestamp', 'method', 'path', 'body', 'body_sha256']);
  });

  it('reads \\n in an environment value as a newline', () => {
    expect(parseSignatureTemplate('{method}\\n{path}\\n{timestamp}\\n{body_md5}')).toBe(DEFAULT_SIGNATURE_TEMPLATE);
    expect(parseSignatureTemplate('a\\\\nb')).toBe('a\\nb');
  });

  it('never expands a placeholder that appears inside the body', () => {
    const input = { apiKey: 'k', timestamp: 1, method: 'POST', path: '/p', body: '{timestamp}{api_key}' };
    expect(canonicalString('{body}', input)).toBe('{timestamp}{api_key}');
  });

  it('signs exactly the canonical bytes, wherever the raw body sits and whatever its bytes', () => {
    // sign() feeds the HMAC the canonical string piece by piece (templates split once, the secret
    // imported once); the digest must be the one of the canonical bytes built whole
    const templates = [
      DEFAULT_SIGNATURE_TEMPLATE,
      '{body}',
      '{body}{body}',
      'x{body}y{timestamp}{body}',
      '{method} {path}?{body_sha256}|{body_md5}|{api_key}',
      'no placeholders at all',
      'ünï{path}ćødé{body}{unknown}',
    ];
    const bodies = [undefined, '', ORDER_BODY, 'ĉu €', Buffer.from([0, 255, 0xc3, 0x28, 10, 13]), new Uint8Array([1, 2, 3]).subarray(1)];
    for (const template of templates) {
      for (const body of bodies) {
        for (const secret of [SECRET, 'sécret-2']) {
          const input = { apiKey: 'key-ü', timestamp: 1700000000, method: 'get', path: '/api/v1/upstream/orders/12', body };
          const expected = createHmac('sha256', Buffer.from(secret, 'utf8')).update(canonicalBytes(template, input)).digest('hex');
          expect(sign(secret, template, input)).toBe(expected);
        }
      }
    }
  });

  it('builds the three headers under a prefix', () => {
    const h = signedHeaders('Dujiao-Next', 'dujiao-secret', DEFAULT_SIGNATURE_TEMPLATE, {
      apiKey: 'ak',
      timestamp: 1700000000,
      method: 'GET',
      path: '/api/v1/upstream/products',
    });
    expect(h).toEqual({
      'Dujiao-Next-Api-Key': 'ak',
      'Dujiao-Next-Timestamp': '1700000000',
      'Dujiao-Next-Signature': 'fece3b53d94c14ccfc065070216ed63507acb54b68030bd3bfc4377b1d499429',
    });
  });
});

describe('signing: what a template leaves unsigned', () => {
  it.each<[string, RegExp[]]>([
    [DEFAULT_SIGNATURE_TEMPLATE, []],
    ['{api_key}{timestamp}{body}', []],
    ['{timestamp}:{body_sha256}', []],
    ['{method}\n{path}\n{body_md5}', [/no \{timestamp\}/]],
    ['{method}{path}{timestamp}', [/no \{body\}, \{body_md5\} or \{body_sha256\}/]],
    ['{api_key}', [/no \{timestamp\}/, /no \{body\}/]],
  ])('%s', (template, expected) => {
    const found = templateWeaknesses(template);
    expect(found).toHaveLength(expected.length);
    expected.forEach((re, i) => expect(found[i]).toMatch(re));
  });
});

describe('signing: verification', () => {
  const now = 1700000000;
  const body = Buffer.from('{"order_id":7,"status":"delivered"}');
  const good = (): VerifyInput => ({
    secret: SECRET,
    template: DEFAULT_SIGNATURE_TEMPLATE,
    expectedApiKey: 'our-key',
    method: 'POST',
    path: '/callbacks/upstream',
    body,
    apiKey: 'our-key',
    timestamp: String(now),
    signature: sign(SECRET, DEFAULT_SIGNATURE_TEMPLATE, {
      apiKey: 'our-key',
      timestamp: now,
      method: 'POST',
      path: '/callbacks/upstream',
      body,
    }),
    nowSeconds: now,
    toleranceSeconds: 60,
  });

  it('accepts a good signature, in upper-case hex too', () => {
    expect(verifySignature(good())).toEqual({ ok: true });
    expect(verifySignature({ ...good(), signature: good().signature!.toUpperCase() })).toEqual({ ok: true });
  });

  it('accepts the tolerance edges inclusively, either way, and refuses one second beyond', () => {
    const at = (ts: number) => {
      const v = good();
      v.timestamp = String(ts);
      v.signature = sign(SECRET, v.template, { apiKey: 'our-key', timestamp: ts, method: 'POST', path: v.path, body });
      return verifySignature(v);
    };
    expect(at(now - 60)).toEqual({ ok: true });
    expect(at(now + 60)).toEqual({ ok: true });
    expect(at(now - 61)).toEqual({ ok: false, reason: 'timestamp_out_of_range' });
    expect(at(now + 61)).toEqual({ ok: false, reason: 'timestamp_out_of_range' });
  });

  it.each([
    ['missing api key', { apiKey: undefined }, 'missing_header'],
    ['missing timestamp', { timestamp: undefined }, 'missing_header'],
    ['missing signature', { signature: undefined }, 'missing_header'],
    ['another api key', { apiKey: 'their-key' }, 'wrong_api_key'],
    ['a non-numeric timestamp', { timestamp: '17e8' }, 'malformed_timestamp'],
    ['a negative timestamp', { timestamp: '-1700000000' }, 'malformed_timestamp'],
    ['short hex', { signature: 'abcdef' }, 'malformed_signature'],
    ['non-hex', { signature: 'z'.repeat(64) }, 'malformed_signature'],
    ['over-long hex', { signature: 'a'.repeat(66) }, 'malformed_signature'],
    ['empty signature', { signature: '' }, 'malformed_signature'],
    ['the wrong secret', { secret: 'other-secret' }, 'signature_mismatch'],
    ['a tampered body', { body: Buffer.from('{"order_id":7,"status":"canceled"}') }, 'signature_mismatch'],
    ['another path', { path: '/api/v1/upstream/callback' }, 'signature_mismatch'],
  ] as const)('refuses %s', (_name, patch, reason) => {
    expect(verifySignature({ ...good(), ...(patch as Partial<VerifyInput>) })).toEqual({ ok: false, reason });
  });

  it('compares strings in constant time without throwing on a length difference', () => {
    expect(constantTimeEqual('abc', 'abc')).toBe(true);
    expect(constantTimeEqual('abc', 'abcd')).toBe(false);
    expect(constantTimeEqual('', 'x')).toBe(false);
  });
});
