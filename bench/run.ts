/** `make bench`: runs every benchmark script in turn; each prints its own figures. */
import { spawnSync } from "node:child_process";
import { readdirSync } from "node:fs";

const only = process.argv[2];
const scripts = readdirSync("bench").filter((f) => f.endsWith(".bench.ts") && (!only || f.includes(only))).sort();
let failed = 0;
for (const script of scripts) {
  console.log(`\n# bench/${script}`);
  const r = spawnSync(process.execPath, ["--import", "tsx", `bench/${script}`], { stdio: "inherit" });
  if (r.status !== 0) failed++;
}
process.exit(failed > 0 ? 1 : 0);
