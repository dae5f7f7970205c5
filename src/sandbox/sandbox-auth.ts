/**
 * The authentication of an API request, as Dujiao-Next checks it (upstream_auth.go), in its order:
 * the three headers (an empty one counts as missing: 401 missing_auth_headers), the timestamp (401
 * invalid_timestamp / timestamp_expired), the API key (403 invalid_api_key), the signature (401
 * invalid_signature), then the API user: 403 user_disabled when it is disabled. Null: authenticated.
 */
import type http from 'node:http';
import { constantTimeEqual, signatureHeaderNames, verifySignature } from '../signing/signing.js';
import type { SandboxConfig } from './sandbox-config.js';
import { errorJson, type Answer } from './sandbox-http.js';

/** The value of a request header (the first, when repeated). */
export function headerValue(req: http.IncomingMessage, name: string): string | undefined {
  const v = req.headers[name.toLowerCase()];
  return Array.isArray(v) ? v[0] : v;
}

export function authenticate(
  config: Readonly<SandboxConfig>,
  nowMs: number,
  req: http.IncomingMessage,
  method: string,
  path: string,
  raw: Buffer,
  userDisabled = false,
): Answer | null {
  const names = signatureHeaderNames(config.headerPrefix);
  const apiKey = headerValue(req, names.apiKey);
  const timestamp = headerValue(req, names.timestamp);
  const signature = headerValue(req, names.signature);
  const refuse = (status: number, code: string, message: string): Answer => ({ status, body: errorJson(code, message) });
  if (!apiKey || !timestamp || !signature) return refuse(401, 'missing_auth_headers', 'missing authentication headers');
  // the key is judged after the timestamp: verify with the given one, then compare it with ours
  const result = verifySignature({
    secret: config.apiSecret,
    template: config.signatureTemplate,
    expectedApiKey: apiKey,
    method,
    path,
    body: raw,
    apiKey,
    timestamp,
    signature,
    nowSeconds: Math.floor(nowMs / 1000),
    toleranceSeconds: config.timestampToleranceS,
  });
  if (!result.ok && result.reason === 'malformed_timestamp') return refuse(401, 'invalid_timestamp', 'invalid timestamp');
  if (!result.ok && result.reason === 'timestamp_out_of_range') return refuse(401, 'timestamp_expired', 'timestamp expired');
  if (!constantTimeEqual(apiKey, config.apiKey)) return refuse(403, 'invalid_api_key', 'api key is invalid or disabled');
  // upstream-api.md §5: the signature is lower-case hex; one the upstream would refuse is refused here too
  if (!result.ok || /[A-F]/.test(signature)) return refuse(401, 'invalid_signature', 'signature verification failed');
  if (userDisabled) return refuse(403, 'user_disabled', 'the API user is disabled');
  return null;
}
