import { configDefaults, defineConfig } from "vitest/config";

/**
 * Two runs of the suite. `clickhouse-18.16`: every test file against a real ClickHouse 18.16
 * server (the production floor). `chdb-26.7`: the same files against ClickHouse 26.7 embedded
 * in each test process by the npm package `chdb`, except those below. `--project <name>` runs one.
 */
const NOT_ON_CHDB = [
  // Spawns services/main.ts and kills it, kills a cluster process, and restarts the local ClickHouse server.
  "test/durability/crash.test.ts",
  // Starts and stops a ClickHouse 18.16 server of its own.
  "test/store/localServer.test.ts",
  // The faults suite: stops and restarts its own ClickHouse, broker and service processes.
  "test/faults/**",
  // The web UI in a browser: a client of the HTTP API, whose SQL the other files prove on 26.7.
  "test/ui/**",
  // Worker threads alone, without SQL.
  "test/worker/writerThreads.test.ts",
  // The language model alone (services/lm): no SQL in these files, and their training is the slowest CPU work of the suite.
  "test/lm/**",
];

export default defineConfig({
  test: {
    testTimeout: 60_000,
    hookTimeout: 120_000,
    pool: "forks",
    poolOptions: { forks: { maxForks: 2, minForks: 1 } },
    projects: [
      {
        extends: true,
        test: { name: "clickhouse-18.16", include: ["test/**/*.test.ts"], globalSetup: ["test/globalSetup.ts"] },
      },
      {
        extends: true,
        // configDefaults.exclude keeps node_modules out (test/clients/*/node_modules holds packages' own tests).
        test: { name: "chdb-26.7", include: ["test/**/*.test.ts"], exclude: [...configDefaults.exclude, ...NOT_ON_CHDB], globalSetup: ["test/globalSetup.chdb.ts"] },
      },
    ],
  },
});
