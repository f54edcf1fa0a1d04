/// <reference types="vitest/config" />
import react from "@vitejs/plugin-react";
import { defineConfig } from "vite";

// Django serves the build: assets under /static/ (whitenoise), index.html for every SPA route.
// The dev server (`npx vite`) serves at / and sends /api, /ws and /admin to the studio on
// :8000, as if the page came from there (Django checks the Origin of session writes).
const STUDIO = process.env.ORCHESTRA_URL ?? "http://127.0.0.1:8000";
const sameOrigin = { target: STUDIO, changeOrigin: true, headers: { origin: STUDIO } };

export default defineConfig(({ command }) => ({
  base: command === "build" ? "/static/" : "/",
  plugins: [react()],
  build: { outDir: "dist", emptyOutDir: true, sourcemap: false, chunkSizeWarningLimit: 600 },
  server: {
    proxy: { "/api": sameOrigin, "/admin": sameOrigin, "/ws": { ...sameOrigin, ws: true } },
  },
  test: { environment: "jsdom", globals: true, include: ["tests/**/*.test.{ts,tsx}"], setupFiles: ["tests/setup.ts"] },
}));
