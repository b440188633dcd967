import { configDefaults, defineConfig } from "vitest/config";
import { OWN_SERVICES_ON_CLUSTER } from "./test/clusterRun.js";
import SlowestFirst from "./test/support/slowestFirst.js";

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
  // The Kafka queue against the broker (records, offsets, the consumer group): the worker's SQL behind it runs on 26.7 in the calls suites.
  "test/queue/kafka.test.ts",
  // Transports and processes whose storage is the same as a file's that runs here: OTLP over gRPC (OTLP/HTTP's
  // SQL), a worker's metrics port, the relay to an external trainer (the training jobs' SQL).
  "test/otlp/grpcExporters.test.ts",
  "test/observability/workerMetrics.test.ts",
  "test/training/externalTrainer.test.ts",
  // Monitors scored by two Kafka workers: the sweeps' and scores' SQL is test/monitors/monitors.test.ts's.
  "test/monitors/monitorsKafka.test.ts",
  // Worker threads alone, without SQL.
  "test/worker/writerThreads.test.ts",
  // The language model alone (services/lm): no SQL in these files, and their training is the slowest CPU work of the suite.
  "test/lm/**",
];

/**
 * The cluster run (`cluster-18.16`): the storage-touching API suites against a service whose
 * schema is spread over a ClickHouse 18.16 cluster (2 shards x 2 replicas, ZooKeeper:
 * scripts/clickhouse-cluster.sh), run as separate processes (2 ingest, 2 workers, 1 query on
 * a 3-broker Kafka mock: test/globalSetup.cluster.ts; the files that need a service of their
 * own start it in their process, on the same cluster: OWN_SERVICES_ON_CLUSTER). Not part of the two runs above.
 */
const ON_CLUSTER = [
  "test/cluster/**/*.test.ts",
  "test/calls/pipeline.test.ts",
  "test/calls/writesRightAfter.test.ts",
  "test/calls/window.test.ts",
  "test/otlp/httpExporters.test.ts",
  "test/otlp/spanResources.test.ts",
  "test/otlp/ioCopies.test.ts",
  "test/otlp/logs.test.ts",
  "test/threads/threadsPipeline.test.ts",
  "test/feedback/feedback.test.ts",
  "test/feedback/stats.test.ts",
  "test/costs/costsApi.test.ts",
  "test/costs/includeCosts.test.ts",
  "test/usage/usageApi.test.ts",
  "test/objects/objects.test.ts",
  "test/tables/tables.test.ts",
  "test/refs/expandColumns.test.ts",
  "test/v2/evalResults.test.ts",
  "test/annotationQueues/queues.test.ts",
  "test/annotationQueues/items.test.ts",
  ...OWN_SERVICES_ON_CLUSTER,
];

export default defineConfig({
  test: {
    testTimeout: 60_000,
    hookTimeout: 120_000,
    pool: "forks",
    poolOptions: { forks: { maxForks: 2, minForks: 1 } },
    sequence: { sequencer: SlowestFirst },
    projects: [
      {
        extends: true,
        test: { name: "clickhouse-18.16", include: ["test/**/*.test.ts"], exclude: [...configDefaults.exclude, "test/cluster/**", "test/faults/**"], globalSetup: ["test/globalSetup.ts"] },
      },
      {
        extends: true,
        // Against 18.16 too, but a run of its own (`make test` runs it last, one file at a time): it stops and starts
        // its own ClickHouse, broker, cluster and service processes, and its timings need the cores to itself.
        test: { name: "faults-18.16", include: ["test/faults/**/*.test.ts"], globalSetup: ["test/globalSetup.ts"] },
      },
      {
        extends: true,
        // configDefaults.exclude keeps node_modules out (test/clients/*/node_modules holds packages' own tests).
        test: { name: "chdb-26.7", include: ["test/**/*.test.ts"], exclude: [...configDefaults.exclude, ...NOT_ON_CHDB, "test/cluster/**"], globalSetup: ["test/globalSetup.chdb.ts"] },
      },
      {
        extends: true,
        test: { name: "cluster-18.16", include: ON_CLUSTER, globalSetup: ["test/globalSetup.cluster.ts"] },
      },
    ],
  },
});
