/**
 * Each supplier's own callback address (CONTRACT §10), pure: `CALLBACK_PUBLIC_URL` + `/<name>`; the
 * `UPSTREAM_*` supplier keeps the bare URL. The routes are `POST /callbacks/upstream/{supplier}` and
 * `POST /callbacks/upstream` (the `UPSTREAM_*` supplier's).
 */
import { CALLBACK_ROUTE } from './callback-route.js';

export function callbackUrlFor(publicUrl: string, supplier: string, envSupplier: string): string {
  if (supplier === envSupplier) return publicUrl;
  const url = new URL(publicUrl);
  url.pathname = `${url.pathname.replace(/\/+$/, '')}/${supplier}`;
  return url.toString();
}

/**
 * The path a supplier's callbacks are signed over: the one its settings name (its profile's, or the
 * operator's), else its callback URL's own path (the `spec` profile), else the route's path.
 */
export function callbackSignaturePath(configured: string | null, publicUrl: string | null, supplier: string, envSupplier: string): string {
  if (configured !== null) return configured;
  if (publicUrl !== null) return new URL(callbackUrlFor(publicUrl, supplier, envSupplier)).pathname;
  return supplier === envSupplier ? CALLBACK_ROUTE : `${CALLBACK_ROUTE}/${supplier}`;
}
