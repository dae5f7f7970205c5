/** The login form: the internal API token, checked once, then kept in session storage. */
import { useState } from 'preact/hooks';
import { api } from '../api.js';
import { html } from '../html.js';
import { ErrorBox } from '../ui.js';

export function LoginPage({ onLogin, expired }: { onLogin: (token: string) => void; expired: boolean }) {
  const [token, setToken] = useState('');
  const [error, setError] = useState<unknown>(null);
  const [busy, setBusy] = useState(false);
  const submit = async (ev: Event) => {
    ev.preventDefault();
    const t = token.trim();
    if (!t) return;
    setBusy(true);
    setError(null);
    try {
      await api.check(t);
      onLogin(t);
    } catch (e) {
      setError(e);
    } finally {
      setBusy(false);
    }
  };
  return html`<div class="login-wrap">
    <form class="card login" onSubmit=${submit} aria-label="log in">
      <h1><img src="/console/favicon.svg" alt="" width="28" height="28" /> upstream-relay</h1>
      <p class="muted">
        Operator console. Log in with the internal API token (<code>INTERNAL_API_TOKEN</code>; in sandbox mode, the development token
        printed at start).
      </p>
      ${expired ? html`<div class="alert warn" role="status">The service refused the token: log in again.</div>` : null}
      <label
        >Internal API token
        <input
          name="token"
          type="password"
          autocomplete="current-password"
          autofocus
          required
          value=${token}
          onInput=${(e: Event) => setToken((e.target as HTMLInputElement).value)}
        />
      </label>
      <${ErrorBox} error=${error} />
      <button class="btn primary" type="submit" disabled=${busy || !token.trim()}>${busy ? 'Checking…' : 'Log in'}</button>
      <p class="muted small">
        The token is kept in this tab's session storage only, and sent to this service's <code>/internal</code> API alone.
      </p>
    </form>
  </div>`;
}
