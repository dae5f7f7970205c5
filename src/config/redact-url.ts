/**
 * URLs from the environment as they may be printed (a configuration error, a log line): without the
 * user and password part (`postgres://***@db:5432/relay`) and with the value of every query (or
 * fragment) parameter whose name looks like a secret replaced (`?token=***`). Everything else is kept
 * as it was written, so that an operator still sees which scheme, host, port and path are meant.
 */

export const REDACTED = '***';

/** Parameter names whose value is not printed (matched anywhere in the name, any case). */
const SECRET_PARAM_RE = /pass|pwd|secret|token|key|sig|auth|credential|session|cookie|bearer/i;

/** `scheme:` and the slashes after it (`postgres://`, `http:\\`, `http:`), as a URL parser reads them. */
const SCHEME_RE = /^[a-z][a-z0-9+.-]*:[/\\]*/i;

export function redactUrl(raw: string): string {
  const text = redactCredentials(raw);
  const cut = text.search(/[?#]/);
  if (cut < 0) return text;
  const base = text.slice(0, cut);
  let rest = text.slice(cut);
  let query = '';
  if (rest.startsWith('?')) {
    const h = rest.indexOf('#');
    query = `?${redactParams(h < 0 ? rest.slice(1) : rest.slice(1, h))}`;
    rest = h < 0 ? '' : rest.slice(h);
  }
  const fragment = rest === '' ? '' : `#${redactParams(rest.slice(1))}`;
  return base + query + fragment;
}

/** `raw` without its user and password. */
function redactCredentials(raw: string): string {
  let parsed: URL | null;
  try {
    parsed = new URL(raw);
  } catch {
    parsed = null;
  }
  if (parsed !== null && parsed.hostname !== '') {
    if (parsed.username === '' && parsed.password === '') return raw;
    // What the parser took for the user and password: the authority up to its last '@'.
    return raw.replace(/^([a-z][a-z0-9+.-]*:[/\\]*)[^/?#\\]*@/i, `$1${REDACTED}@`);
  }
  // Not a URL, or one without a host (`postgres:u:pw@h`): a password may hold characters that end the
  // authority early (`/`, `?`, `#`), so everything between the scheme and the last '@' is taken for it.
  const at = raw.lastIndexOf('@');
  if (at < 0) return raw;
  const slashes = raw.indexOf('//');
  const start = Math.min(SCHEME_RE.exec(raw)?.[0].length ?? (slashes >= 0 ? slashes + 2 : 0), at);
  return `${raw.slice(0, start)}${REDACTED}${raw.slice(at)}`;
}

/** `a=1&token=x` → `a=1&token=***`. */
function redactParams(params: string): string {
  return params
    .split('&')
    .map((part) => {
      const eq = part.indexOf('=');
      if (eq < 0) return part;
      const name = part.slice(0, eq);
      let decoded = name;
      try {
        decoded = decodeURIComponent(name.replace(/\+/g, ' '));
      } catch {
        // a malformed escape: the name is judged as written
      }
      return SECRET_PARAM_RE.test(decoded) ? `${name}=${REDACTED}` : part;
    })
    .join('&');
}
