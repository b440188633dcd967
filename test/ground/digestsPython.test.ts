/**
 * Python itself as the oracle: random values written as JSON text, read by our parser and by
 * `json.loads`, must come out of pythonJsonDumps exactly as `json.dumps(v, sort_keys=True)` writes
 * them. Python is spawned once for all values; skipped where python3 is missing.
 */
import { spawnSync } from "node:child_process";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { pythonJsonDumps } from "../../services/digests.js";
import { JsonFloat, JsonInteger, parseLossless, type LosslessValue } from "../../services/losslessJson.js";

const PYTHON_DUMPS = [
  "import json, sys",
  "lines = sys.stdin.buffer.read().decode('utf-8').split('\\n')",
  "sys.stdout.write('\\n'.join(json.dumps(json.loads(line), sort_keys=True) for line in lines))",
].join("\n");

const hasPython = spawnSync("python3", ["--version"]).status === 0;

/** Any code point, lone surrogates included, and a bias to the characters that need care. */
const char = fc.oneof(
  fc.string({ unit: "binary", minLength: 1, maxLength: 1 }),
  fc.integer({ min: 0xd800, max: 0xdfff }).map((u) => String.fromCharCode(u)),
  fc.constantFrom("\"", "\\", "\n", "\u007f", "\u2028", "\ue000", "\uffff", "😀", "é", "\u0000"),
);
const text = fc.string({ unit: char, maxLength: 8 });

const value: fc.Arbitrary<LosslessValue> = fc.letrec<{ value: LosslessValue }>((tie) => ({
  value: fc.oneof(
    { depthSize: "small", withCrossShrink: true },
    fc.constantFrom<LosslessValue>(null, true, false),
    text,
    fc.bigInt({ min: -(2n ** 200n), max: 2n ** 200n }).map((n) => new JsonInteger(n)),
    fc.double({ noNaN: true, noDefaultInfinity: true }).map((x) => new JsonFloat(x)),
    fc.constantFrom(1e16, 1e-5, 0.0001, 100, 5e-324, 1e22, -0, 123456789012345680000).map((x) => new JsonFloat(x)),
    fc.array(tie("value"), { maxLength: 4 }),
    fc.array(fc.tuple(text, tie("value")), { maxLength: 5 }).map((entries) => new Map(entries)),
  ),
})).value;

/** JSON text for a lossless value, written without pythonJsonDumps so that the two sides stay independent. */
function sourceText(v: LosslessValue): string {
  if (v instanceof JsonInteger) return v.value.toString();
  if (v instanceof JsonFloat) {
    if (Object.is(v.value, -0)) return "-0.0";
    const s = String(v.value);
    return /[.e]/.test(s) ? s : `${s}.0`;
  }
  if (Array.isArray(v)) return `[${v.map(sourceText).join(",")}]`;
  if (v instanceof Map) return `{${[...v].map(([k, item]) => `${JSON.stringify(k)}:${sourceText(item)}`).join(",")}}`;
  return JSON.stringify(v);
}

describe.skipIf(!hasPython)("pythonJsonDumps against Python's json.dumps", () => {
  it("writes 400 random values exactly as Python does", () => {
    const sources = fc.sample(value, { numRuns: 400, seed: 20240611 }).map(sourceText);
    sources.push('{"\\ud83d\\ude00": 1, "\\uffff": 2, "\\ud83d": 3, "\\ue000": 4}', "12345678901234567890123", "[1.0, -0.0, 1e400]");
    const run = spawnSync("python3", ["-c", PYTHON_DUMPS], { input: sources.join("\n"), encoding: "utf8" });
    expect(run.stderr).toBe("");
    const expected = run.stdout.split("\n");
    expect(expected).toHaveLength(sources.length);
    sources.forEach((source, i) => {
      expect({ source, ours: pythonJsonDumps(parseLossless(source)) }).toEqual({ source, ours: expected[i] });
    });
  });
});
