// The console's build: one hashed bundle and stylesheet under assets/, no
// source maps, no inline script (the module is loaded by src=, as the
// Content-Security-Policy requires). The output goes straight to the Go
// package that embeds it; scripts/console-assets.mjs then compresses every
// file (gzip and brotli, with Node's zlib) and records the hash of the
// inputs that the Go test compares.
import { defineConfig } from "vite";

export default defineConfig({
  base: "/",
  esbuild: { jsx: "automatic", jsxImportSource: "preact" },
  build: {
    outDir: "../internal/webapp/dist",
    emptyOutDir: true,
    sourcemap: false,
    // Never inline assets as data: URLs into the script (CSP img-src allows
    // data:, but a file keeps the bundle small and cacheable).
    assetsInlineLimit: 0,
    modulePreload: { polyfill: false },
    target: "es2022",
  },
});
