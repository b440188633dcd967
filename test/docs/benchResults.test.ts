import { describe, expect, it } from "vitest";
import { formatRun } from "../../bench/results.js";

describe("the record make bench appends to docs/benchmarks.md", () => {
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
});
