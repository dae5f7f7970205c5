/**
 * The operator console's build: Preact + htm, no JSX transform. `npm run build` writes it to
 * `dist/console/` (served by the service under `/console/`); `npm run console:dev` serves it with hot
 * reload and forwards `/internal` and `/health` to a service on http://127.0.0.1:3000 (RELAY_URL overrides).
 *
 * `dist/console/` also holds the compiled `src/console/` module, so the build never empties the folder:
 * it removes only what it wrote itself the last time (index.html, favicon.svg, assets/). The assets are
 * also written pre-compressed (.br, .gz), which the service sends to browsers that accept them.
 */
import { readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { brotliCompressSync, gzipSync } from 'node:zlib';
import { defineConfig, type Plugin } from 'vite';

const root = fileURLToPath(new URL('.', import.meta.url));
const outDir = fileURLToPath(new URL('../dist/console/', import.meta.url));

function cleanOwnOutput(): Plugin {
  return {
    name: 'relay-console-clean',
    apply: 'build',
    buildStart() {
      for (const p of ['index.html', 'favicon.svg', 'assets']) rmSync(`${outDir}${p}`, { recursive: true, force: true });
    },
  };
}

function precompressAssets(): Plugin {
  return {
    name: 'relay-console-precompress',
    apply: 'build',
    closeBundle() {
      const dir = `${outDir}assets/`;
      for (const name of readdirSync(dir)) {
        if (!/\.(js|css|svg)$/.test(name)) continue;
        const raw = readFileSync(`${dir}${name}`);
        writeFileSync(`${dir}${name}.br`, brotliCompressSync(raw));
        writeFileSync(`${dir}${name}.gz`, gzipSync(raw, { level: 9 }));
      }
    },
  };
}

export default defineConfig({
  root,
  base: '/console/',
  publicDir: 'public',
  plugins: [cleanOwnOutput(), precompressAssets()],
  build: {
    outDir,
    emptyOutDir: false,
    target: 'es2022',
    assetsDir: 'assets',
    sourcemap: false,
    reportCompressedSize: false,
    modulePreload: { polyfill: false },
  },
  server: {
    port: 5173,
    proxy: { '/internal': process.env.RELAY_URL ?? 'http://127.0.0.1:3000', '/health': process.env.RELAY_URL ?? 'http://127.0.0.1:3000' },
  },
});
