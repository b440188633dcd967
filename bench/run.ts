/**
 * `make bench`: runs every benchmark script in turn (`npx tsx bench/run.ts <part of a name>` runs
 * the matching ones). Each prints its own figures; what it printed is also appended, with the
 * date, the commit and the machine, to bench/out/results.md, ignored by git (bench/results.ts).
 * BENCH_RECORD=0 only prints. Each script runs on the node `make start` runs the service on, so that
 * what a script measures in its own process (the hot path's stages) is what ships.
 */
import { spawn } from "node:child_process";
import { readdirSync } from "node:fs";
import { relative } from "node:path";
import { appendRun, BENCH_RESULTS, currentCommit, thisMachine, type ScriptOutput } from "./results.js";
import { makeStartNode } from "../scripts/startFlags.js";

const node = makeStartNode(process.cwd());

/** Runs a script with its output shown as it comes and kept for the record. */
function runScript(script: string): Promise<ScriptOutput> {
  return new Promise((done) => {
    const child = spawn(node, ["--import", "tsx", `bench/${script}`], { stdio: ["inherit", "pipe", "inherit"] });
    const chunks: Buffer[] = [];
    child.stdout.on("data", (chunk: Buffer) => {
      chunks.push(chunk);
      process.stdout.write(chunk);
    });
    child.on("close", (status) => done({ script, status, stdout: Buffer.concat(chunks).toString("utf8") }));
  });
}

const only = process.argv[2];
const scripts = readdirSync("bench").filter((f) => f.endsWith(".bench.ts") && (!only || f.includes(only))).sort();
const startedAt = new Date();
const machine = thisMachine();
const commit = currentCommit();
const outputs: ScriptOutput[] = [];
for (const script of scripts) {
  console.log(`\n# bench/${script}`);
  outputs.push(await runScript(script));
}
if (outputs.length === 0) console.log(`\nno bench/*.bench.ts matches ${JSON.stringify(only)}: nothing run`);
else if (process.env.BENCH_RECORD === "0") console.log("\nnot recorded (BENCH_RECORD=0)");
else {
  appendRun({ startedAt, commit, command: only ? `npx tsx bench/run.ts ${only}` : "make bench", machine, scripts: outputs });
  console.log(`\nrecorded in ${relative(process.cwd(), BENCH_RESULTS)} (ignored by git; curated figures go to docs/benchmarks.md)`);
}
process.exit(outputs.some((o) => o.status !== 0) ? 1 : 0);
