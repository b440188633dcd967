/**
 * The files of the cluster run (`cluster-18.16`, vitest.config.ts) that start services of
 * their own, in their process and on the run's cluster (`startTestService`, or
 * `serviceForFile` with settings), where the others share the topology that
 * test/globalSetup.cluster.ts starts.
 */
export const OWN_SERVICES_ON_CLUSTER = [
  // Migrates fresh databases and looks at each node's tables.
  "test/cluster/schema.test.ts",
  // The retention job with settings of their own (RETENTION_INTERVAL_MS, RETENTION_DAYS).
  "test/projects/retention.test.ts",
  "test/projects/retentionRefs.test.ts",
  // Two services on one database.
  "test/keys/adminKeys.test.ts",
];
