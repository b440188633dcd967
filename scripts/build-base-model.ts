/**
 * Trains the base models the project ships (services/lm/baseModels.ts) on the corpus it ships
 * (services/lm/corpus.ts) and writes their weights to the cache (LM_CACHE_DIR, else .cache/lm).
 * Skips a model whose weights are already cached, unless run with --force.
 *
 *   npx tsx scripts/build-base-model.ts [--force]
 */
import { existsSync } from "node:fs";
import { BASE_MODEL_SPECS, buildBaseModel, cachedWeightsPath, writeCached } from "../services/lm/baseModels.js";

const force = process.argv.includes("--force");
for (const spec of BASE_MODEL_SPECS) {
  const path = cachedWeightsPath(spec);
  if (existsSync(path) && !force) {
    console.log(`${spec.info.id}: cached at ${path}`);
    continue;
  }
  console.log(`${spec.info.id}: training ${spec.steps} steps of ${spec.batchSize} dialogs`);
  const report = await buildBaseModel(spec, (line) => console.log(line));
  writeCached(path, report.weights);
  console.log(`${spec.info.id}: ${spec.steps} steps in ${report.seconds.toFixed(1)} s (${report.cpuSeconds.toFixed(1)} s CPU), final loss ${report.finalLoss.toFixed(3)}, written to ${path}`);
}
