import {defineConfig, type Plugin} from 'vite';
import react from '@vitejs/plugin-react';
import {brotliCompressSync, constants, gzipSync} from 'node:zlib';

// precompress writes a .gz and a .br beside every file of the bundle that
// they make smaller, so the server sends them as they are (no compression
// per request). Both are deterministic: gzip's header carries no time, and
// a rebuild of unchanged sources gives the same bytes (make ui-check).
function precompress(): Plugin {
  return {
    name: 'beluga-precompress',
    apply: 'build',
    enforce: 'post',
    generateBundle(_options, bundle) {
      for (const file of Object.values(bundle)) {
        if (!/\.(js|css|html|svg)$/.test(file.fileName)) continue;
        const src = Buffer.from(file.type === 'chunk' ? file.code : file.source);
        const variants: [string, Buffer][] = [
          ['.gz', gzipSync(src, {level: 9})],
          ['.br', brotliCompressSync(src, {params: {[constants.BROTLI_PARAM_QUALITY]: 11, [constants.BROTLI_PARAM_SIZE_HINT]: src.length}})],
        ];
        for (const [ext, out] of variants) {
          if (out.length < src.length) this.emitFile({type: 'asset', fileName: file.fileName + ext, source: out});
        }
      }
    },
  };
}

// The bundle is committed (api/ui/dist) and embedded in the beluga binary.
// The script and style carry a hash of their content in their names, so the
// server lets browsers keep them for a year (a new build names new files);
// index.html names them and is revalidated every time. Content hashes keep
// the build deterministic (make ui-check).
export default defineConfig({
  base: '/ui/',
  plugins: [react(), precompress()],
  build: {
    outDir: process.env.BELUGA_UI_OUT || '../api/ui/dist',
    emptyOutDir: true,
    target: 'es2022',
    sourcemap: false,
    modulePreload: {polyfill: false},
    chunkSizeWarningLimit: 2000,
    rollupOptions: {
      output: {
        entryFileNames: 'assets/app-[hash].js',
        chunkFileNames: 'assets/[name]-[hash].js',
        assetFileNames: 'assets/[name]-[hash][extname]',
      },
    },
  },
  test: {
    environment: 'node',
    include: ['src/**/*.test.ts'],
  },
});
