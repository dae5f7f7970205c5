/**
 * The internal API, and nothing else: every call carries the bearer token kept in session storage
 * (it goes with the tab). A 401 forgets the token and sends the operator back to the login form.
 */
import type { ErrorBody } from './types.js';

/** The members of an error answer (CONTRACT §5), whatever its `ok`. */
export type ErrorFields = Omit<Partial<ErrorBody>, 'ok'>;

const TOKEN_KEY = 'upstream-relay.console.token';

export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    readonly body: ErrorFields | null,
  ) {
    super(message);
    this.name = 'ApiError';
  }

  /** `error_code: error_message`, as the contract words it. */
  get text(): string {
    return `${this.code}: ${this.message}`;
  }
}

type Listener = () => void;
const unauthorizedListeners = new Set<Listener>();

export function onUnauthorized(listener: Listener): () => void {
  unauthorizedListeners.add(listener);
  return () => unauthorizedListeners.delete(listener);
}

export function getToken(): string | null {
  try {
    return sessionStorage.getItem(TOKEN_KEY);
  } catch {
    return null;
  }
}

export function setToken(token: string | null): void {
  if (token === null) sessionStorage.removeItem(TOKEN_KEY);
  else sessionStorage.setItem(TOKEN_KEY, token);
}

export type Query = Record<string, string | number | boolean | null | undefined>;

export function withQuery(path: string, query: Query = {}): string {
  const params = new URLSearchParams();
  for (const [k, v] of Object.entries(query)) if (v !== undefined && v !== null && v !== '') params.set(k, String(v));
  const qs = params.toString();
  return qs ? `${path}?${qs}` : path;
}

async function call<T>(method: string, path: string, body?: unknown, token = getToken()): Promise<T> {
  const headers: Record<string, string> = { accept: 'application/json' };
  if (token) headers.authorization = `Bearer ${token}`;
  if (body !== undefined) headers['content-type'] = 'application/json';
  let res: Response;
  try {
    res = await fetch(path, { method, headers, body: body === undefined ? undefined : JSON.stringify(body), cache: 'no-store' });
  } catch (e) {
    throw new ApiError(0, 'network_error', `the service could not be reached (${(e as Error).message})`, null);
  }
  let json: unknown;
  try {
    json = await res.json();
  } catch {
    json = null;
  }
  const data = (json ?? {}) as ErrorFields & { ok?: boolean };
  if (res.status === 401) {
    setToken(null);
    for (const l of [...unauthorizedListeners]) l();
    throw new ApiError(401, data.error_code ?? 'unauthorized', data.error_message ?? 'missing or invalid bearer token', data);
  }
  if (!res.ok || data.ok !== true) {
    throw new ApiError(
      res.status,
      data.error_code ?? `http_${res.status}`,
      data.error_message ?? (res.statusText || 'request failed'),
      data,
    );
  }
  return json as T;
}

export const api = {
  get: <T>(path: string, query?: Query) => call<T>('GET', withQuery(path, query)),
  post: <T>(path: string, body: unknown = {}) => call<T>('POST', path, body),
  put: <T>(path: string, body: unknown) => call<T>('PUT', path, body),
  delete: <T>(path: string) => call<T>('DELETE', path),
  patch: <T>(path: string, body: unknown) => call<T>('PATCH', path, body),
  /** Checks a token without keeping it and without the 401 round trip to the login form. */
  async check(token: string): Promise<void> {
    const res = await fetch(withQuery('/internal/orders', { page_size: 1 }), {
      headers: { authorization: `Bearer ${token}`, accept: 'application/json' },
      cache: 'no-store',
    });
    if (res.status === 401) throw new ApiError(401, 'unauthorized', 'the service refused this token', null);
    if (!res.ok) {
      const data = (await res.json().catch(() => ({}))) as ErrorFields;
      throw new ApiError(res.status, data.error_code ?? `http_${res.status}`, data.error_message ?? res.statusText, data);
    }
  },
};

export const enc = encodeURIComponent;
