import fc from "fast-check";
import { describe, expect, it } from "vitest";
import type { JsonObject, JsonValue } from "../../services/json.js";
import { boundedAnswer, MAX_ANSWER_BYTES } from "../../services/mcp/bounded.js";
import { nestCalls, showTree, type ApiCall } from "../../services/mcp/callViews.js";

/**
 * The bound of every MCP answer (services/mcp/bounded.ts) and the trees of get_trace
 * (callViews.ts), without a service: answers that fit are whole, others are cut where
 * marked and say so, none is over 50 KB; a trace's calls each show once, whatever their
 * parents say.
 */

const bytes = (text: string) => Buffer.byteLength(text, "utf8");

describe("boundedAnswer", () => {
  it("answers what fits whole, without a note", () => {
    const value = { prompt: "p".repeat(30_000), list: Array.from({ length: 500 }, (_, i) => i) };
    const text = boundedAnswer((fit) => ({ value: fit.value(value), preview: fit.preview(value) }));
    const answer = JSON.parse(text) as JsonObject;
    expect(answer.value).toEqual(value);
    expect(answer.preview).toMatch(/^\{"prompt":"p{189}…\[cut\]$/);
    expect(answer.note).toBeUndefined();
  });

  it("cuts a value too long to fit where marked, and says so", () => {
    const value = { prompt: "p".repeat(200_000), tail: "end" };
    const answer = JSON.parse(boundedAnswer((fit) => ({ value: fit.value(value) }))) as { value: JsonObject; note: string };
    expect(answer.value).toEqual({ prompt: `${"p".repeat(4000)}…[cut: 200000 characters in all]`, tail: "end" });
    expect(answer.note).toMatch(/^Shortened to stay under 50 KB: values cut where marked …\[cut: …\] or \[left out: …\] \(strings past 4000 characters/);
  });

  it("shortens a list too long to fit, saying how many items it left out", () => {
    const items = Array.from({ length: 5000 }, (_, i) => ({ id: `call-${i}`, value: "v".repeat(100) }));
    const text = boundedAnswer((fit) => ({ calls: fit.list(items, "calls").map((c) => ({ id: c.id, value: fit.value(c.value) })) }));
    const answer = JSON.parse(text) as { calls: { id: string }[]; note: string };
    expect(bytes(text)).toBeLessThanOrEqual(MAX_ANSWER_BYTES);
    expect(answer.calls.map((c) => c.id)).toEqual(items.slice(0, answer.calls.length).map((c) => c.id));
    expect(answer.note).toContain(`${5000 - answer.calls.length} of 5000 calls left out`);
  });

  it("never answers more than 50 KB, always JSON, whatever the values", () => {
    const big = fc.oneof(fc.string({ minLength: 1000, maxLength: 20_000 }), fc.jsonValue({ maxDepth: 6 }));
    fc.assert(
      fc.property(fc.array(big, { maxLength: 60 }), fc.string({ unit: "binary", maxLength: 3000 }), (values, exception) => {
        const text = boundedAnswer((fit) => ({
          exception: fit.text(exception),
          calls: fit.list(values, "calls").map((v) => ({ value: fit.value(v as JsonValue), preview: fit.preview(v as JsonValue) })),
        }));
        expect(bytes(text)).toBeLessThanOrEqual(MAX_ANSWER_BYTES);
        expect(() => JSON.parse(text) as unknown).not.toThrow();
      }),
      { numRuns: 40 },
    );
  });
});

describe("the trees of get_trace", () => {
  const call = (id: string, parent: string | null): ApiCall => ({ id, parent_id: parent, op_name: id, inputs: {}, output: null, summary: {} });
  const ids = (nodes: readonly JsonObject[]): unknown[] => nodes.map((n) => (n.children ? { [String(n.id)]: ids(n.children as JsonObject[]) } : n.id));

  it("nests calls under their parents, in the order read; a call whose parent is missing is a root", () => {
    const roots = nestCalls([call("r", null), call("a", "r"), call("b", "r"), call("a1", "a"), call("orphan", "gone")]);
    const text = boundedAnswer((fit) => ({ calls: showTree(roots, fit) }));
    expect(ids((JSON.parse(text) as { calls: JsonObject[] }).calls)).toEqual([{ r: [{ a: ["a1"] }, "b"] }, "orphan"]);
  });

  it("shows every call of a loop of parents once, cutting the loop at its first call", () => {
    const roots = nestCalls([call("x", "z"), call("y", "x"), call("z", "y"), call("self", "self")]);
    const text = boundedAnswer((fit) => ({ calls: showTree(roots, fit) }));
    expect(ids((JSON.parse(text) as { calls: JsonObject[] }).calls)).toEqual(["self", { x: [{ y: ["z"] }] }]);
  });
});
