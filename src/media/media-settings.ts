/** The media settings of the configuration (MEDIA_*, and the supplier's origin for relative URLs). */
import type { AppConfig } from '../config/app-config.js';
import type { MediaSettings } from './product-media.js';

/** The relative path mirrored images are served at (MEDIA_PUBLIC_URL replaces it in their URLs). */
export const MEDIA_PATH = '/media';

/** `baseUrl`: the supplier's whose images are shown (default: the `UPSTREAM_*` supplier's). */
export function mediaSettings(config: AppConfig, baseUrl: string | null = config.upstream.baseUrl): MediaSettings {
  const base = baseUrl;
  return {
    mirror: config.media.mirror,
    publicBase: config.media.publicUrl ?? MEDIA_PATH,
    // the built-in sandbox's URL is known once it listens, before any sync
    origin: base ? new URL(base).origin : 'http://upstream.invalid',
  };
}
