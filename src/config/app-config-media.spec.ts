import { ConfigError, loadConfig } from './app-config.js';

function problems(env: Record<string, string>): string[] {
  try {
    loadConfig(env);
  } catch (e) {
    if (e instanceof ConfigError) return e.problems;
    throw e;
  }
  return [];
}

describe('config: the supplier name and product images', () => {
  it('defaults: supplier `main`, images mirrored, relative /media, 5 MiB', () => {
    const c = loadConfig({});
    expect(c.upstream.name).toBe('main');
    expect(c.media).toEqual({ mirror: true, publicUrl: null, maxBytes: 5_242_880 });
  });

  it('reads UPSTREAM_NAME and MEDIA_* (a trailing slash of MEDIA_PUBLIC_URL dropped)', () => {
    const c = loadConfig({
      UPSTREAM_NAME: 'acme-2',
      MEDIA_MIRROR: 'false',
      MEDIA_PUBLIC_URL: 'https://cdn.example/media/',
      MEDIA_MAX_BYTES: '1000',
    });
    expect(c.upstream.name).toBe('acme-2');
    expect(c.media).toEqual({ mirror: false, publicUrl: 'https://cdn.example/media', maxBytes: 1000 });
  });

  it('names each bad value', () => {
    const p = problems({ UPSTREAM_NAME: 'Main', MEDIA_MIRROR: 'maybe', MEDIA_PUBLIC_URL: 'ftp://x/media', MEDIA_MAX_BYTES: '0' });
    for (const name of ['UPSTREAM_NAME', 'MEDIA_MIRROR', 'MEDIA_PUBLIC_URL', 'MEDIA_MAX_BYTES'])
      expect(p.some((x) => x.startsWith(name))).toBe(true);
    expect(problems({ UPSTREAM_NAME: `a${'b'.repeat(32)}` }).some((x) => x.startsWith('UPSTREAM_NAME'))).toBe(true);
  });
});
