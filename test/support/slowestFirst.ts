import { BaseSequencer, type TestSpecification } from "vitest/node";

/**
 * The files that take longest in a run (a minute or more on the 2-core build machine), by
 * their durations in vitest's results cache (node_modules/.vite/vitest/…/results.json).
 * On a fresh clone vitest has no durations and starts the largest files first; a slow but
 * short file then starts late and runs alone at the end while the other worker idles. These
 * start first, in this order; the rest as vitest orders them.
 */
const SLOWEST = [
  "test/durability/crash.test.ts",
  "test/queue/kafka.test.ts",
  "test/faults/kafkaWorkers.test.ts",
  "test/faults/clickhouseDown.test.ts",
  "test/faults/cluster.test.ts",
  "test/ui/ui.test.ts",
  "test/http/roles.test.ts",
  "test/otlp/grpcExporters.test.ts",
  "test/hostile/corpus.test.ts",
  "test/jobs/takeover.test.ts",
  "test/monitors/monitors.test.ts",
  "test/monitors/monitorsKafka.test.ts",
  "test/ui/monitors.test.ts",
  "test/cluster/schema.test.ts",
  "test/projects/retention.test.ts",
  "test/otlp/httpErrors.test.ts",
  "test/tables/tables.test.ts",
];

const rank = (spec: TestSpecification): number => {
  const i = SLOWEST.findIndex((file) => spec.moduleId.endsWith(file));
  return i < 0 ? SLOWEST.length : i;
};

export default class SlowestFirst extends BaseSequencer {
  override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    const ordered = await super.sort(files);
    const position = new Map(ordered.map((spec, i) => [spec, i]));
    return ordered.sort((a, b) => rank(a) - rank(b) || position.get(a)! - position.get(b)!);
  }
}
