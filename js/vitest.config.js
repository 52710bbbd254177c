import { defineConfig } from "vitest/config";

// A busy machine gets time: a test that waits for a condition polls up to 30 s
// (returning as soon as it holds), within a test limit of 60 s.
export default defineConfig({ test: { environment: "jsdom", include: ["*.test.js"], testTimeout: 60_000 } });
