import {defineConfig} from 'vite';
import react from '@vitejs/plugin-react';

// The bundle is committed (api/ui/dist) and embedded in the beluga binary,
// so file names carry no hash: the Go server revalidates by ETag, and a
// rebuild of unchanged sources must give the same bytes (make ui-check).
export default defineConfig({
  base: '/ui/',
  plugins: [react()],
  build: {
    outDir: process.env.BELUGA_UI_OUT || '../api/ui/dist',
    emptyOutDir: true,
    target: 'es2022',
    sourcemap: false,
    modulePreload: {polyfill: false},
    chunkSizeWarningLimit: 2000,
    rollupOptions: {
      output: {
        entryFileNames: 'assets/app.js',
        chunkFileNames: 'assets/[name].js',
        assetFileNames: 'assets/[name][extname]',
      },
    },
  },
  test: {
    environment: 'node',
    include: ['src/**/*.test.ts'],
  },
});
