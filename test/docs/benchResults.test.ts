import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, relative } from "node:path";
import { describe, expect, it } from "vitest";
import { appendRun, BENCH_RESULTS, formatRun } from "../../bench/results.js";

describe("the record make bench appends to bench/out/results.md, not to docs/benchmarks.md", () => {
  const run = {
    startedAt: new Date("2026-11-27T10:05:31Z"),
    commit: "abc1234",
    command: "make bench",
    machine: { cores: 2, cpuModel: "Some CPU @ 2.0GHz", memoryBytes: 24 * 1024 ** 3, loadAverage: 1.25 },
    scripts: [
      { script: "calls.bench.ts", status: 0, stdout: "\n\u001b[1mparts/s\u001b[0m 50,000\n\n" },
      { script: "otlp.bench.ts", status: 1, stdout: "```nested fence```\n" },
    ],
  };

  it("names the date, the commit and the machine, and holds each script's output in a fence of its own", () => {
    expect(formatRun(run)).toBe(
      [
        "",
        "### 2026-11-27 10:05 UTC · abc1234",
        "",
        "`make bench` on 2 cores (Some CPU @ 2.0GHz), 24.0 GiB of memory, load average 1.3 at the start.",
        "",
        "#### bench/calls.bench.ts",
        "",
        "```text",
        "parts/s 50,000",
        "```",
        "",
        "#### bench/otlp.bench.ts (exit status 1)",
        "",
        "````text",
        "```nested fence```",
        "````",
        "",
      ].join("\n"),
    );
  });

  it("is kept in bench/out/, which git ignores, so a run leaves the checkout as it was", () => {
    expect(relative(process.cwd(), BENCH_RESULTS)).toBe(join("bench", "out", "results.md"));
    expect(readFileSync(".gitignore", "utf8").split("\n")).toContain("bench/out/");
  });

  it("makes its folder, then appends each run after the last", () => {
    const dir = mkdtempSync(join(tmpdir(), "bench-record-"));
    try {
      const path = join(dir, "out", "results.md");
      appendRun(run, path);
      appendRun({ ...run, commit: "def5678" }, path);
      expect(readFileSync(path, "utf8")).toBe(formatRun(run) + formatRun({ ...run, commit: "def5678" }));
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
