/**
 * The record `make bench` keeps: each run appends a section to bench/out/results.md (ignored by
 * git, so a run leaves the checkout clean) with the date, the commit, the machine and what every
 * script printed. Figures worth keeping are copied from there into docs/benchmarks.md by hand,
 * with their date and command; never into comments or the README.
 */
import { execFileSync } from "node:child_process";
import { appendFileSync, mkdirSync } from "node:fs";
import { cpus, loadavg, totalmem } from "node:os";
import { dirname } from "node:path";
import { fileURLToPath } from "node:url";

export const BENCH_RESULTS = fileURLToPath(new URL("./out/results.md", import.meta.url));

export interface Machine {
  readonly cores: number;
  readonly cpuModel: string;
  readonly memoryBytes: number;
  /** The 1-minute load average when the run started: figures from a loaded machine say less. */
  readonly loadAverage: number;
}

export interface ScriptOutput {
  readonly script: string;
  readonly status: number | null;
  readonly stdout: string;
}

export interface BenchRun {
  readonly startedAt: Date;
  readonly commit: string;
  readonly command: string;
  readonly machine: Machine;
  readonly scripts: readonly ScriptOutput[];
}

export function thisMachine(): Machine {
  const all = cpus();
  return { cores: all.length, cpuModel: all[0]?.model.trim() ?? "unknown", memoryBytes: totalmem(), loadAverage: loadavg()[0] ?? 0 };
}

/** The short hash of HEAD, marked when the tree has changes not committed (the figures are then of no commit). */
export function currentCommit(): string {
  try {
    const hash = execFileSync("git", ["rev-parse", "--short", "HEAD"], { encoding: "utf8" }).trim();
    const dirty = execFileSync("git", ["status", "--porcelain", "--untracked-files=no"], { encoding: "utf8" }).trim() !== "";
    return dirty ? `${hash} + uncommitted changes` : hash;
  } catch {
    return "unknown";
  }
}

const ANSI = /\u001b\[[0-9;]*[A-Za-z]/g;

/** A fence longer than any run of backticks in the text, so that printed output cannot close it. */
function fenceFor(text: string): string {
  const longest = Math.max(2, ...[...text.matchAll(/`+/g)].map((m) => m[0].length));
  return "`".repeat(longest + 1);
}

export function formatRun(run: BenchRun): string {
  const { machine } = run;
  const gib = (machine.memoryBytes / 1024 ** 3).toFixed(1);
  const lines = [
    "",
    `### ${run.startedAt.toISOString().slice(0, 16).replace("T", " ")} UTC · ${run.commit}`,
    "",
    `\`${run.command}\` on ${machine.cores} cores (${machine.cpuModel}), ${gib} GiB of memory, load average ${machine.loadAverage.toFixed(1)} at the start.`,
  ];
  for (const s of run.scripts) {
    const text = s.stdout.replace(ANSI, "").replace(/^\s*\n/, "").trimEnd();
    const fence = fenceFor(text);
    lines.push("", `#### bench/${s.script}${s.status === 0 ? "" : ` (exit status ${s.status ?? "killed"})`}`, "", fence + "text", text, fence);
  }
  return `${lines.join("\n")}\n`;
}

/** Appends the run to the record at `path`, making its folder if need be. */
export function appendRun(run: BenchRun, path: string = BENCH_RESULTS): void {
  mkdirSync(dirname(path), { recursive: true });
  appendFileSync(path, formatRun(run));
}
