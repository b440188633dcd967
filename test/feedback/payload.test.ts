import { describe, expect, it } from "vitest";
import { detone, flattenPayload, isSingleEmoji, MAX_PAYLOAD_BYTES, processPayload } from "../../services/store/feedback/payload.js";
import { discoverPaths } from "../../services/store/feedback/payloadSchema.js";
import { feedbackTarget } from "../../services/store/feedback/refs.js";
import { metricSlug, percentileKey } from "../../services/store/feedback/stats.js";
import { checkFeedback } from "../../services/store/feedback/validate.js";

describe("emoji rule", () => {
  it("takes one emoji of any composition", () => {
    for (const e of ["👍", "👍🏽", "❤️", "❤", "👨‍👩‍👧‍👦", "🏳️‍🌈", "🇯🇵", "#️⃣", "1️⃣", "©️", "🫠"]) expect(isSingleEmoji(e), e).toBe(true);
  });
  it("refuses several emojis, text, digits and whitespace around", () => {
    for (const e of ["", "👍👍", "👍 ", " 👍", "ok", "a", "1", "#", "👍a", "🇯", "\u200d"]) expect(isSingleEmoji(e), JSON.stringify(e)).toBe(false);
  });
  it("detones skin tones only", () => {
    expect(detone("👍🏽")).toBe("👍");
    expect(detone("🧑🏿‍🤝‍🧑🏻")).toBe("🧑‍🤝‍🧑");
    expect(detone("🎉")).toBe("🎉");
  });
});

describe("payload rules", () => {
  it("locates issues under the given prefix", () => {
    expect(processPayload("wandb.reaction.1", { emoji: "no" }, ["body", "batch", 2])).toEqual({
      ok: false, issues: [{ loc: ["body", "batch", 2, "payload", "emoji"], msg: "emoji must be exactly one emoji", type: "value_error" }],
    });
    expect(processPayload("wandb.runnable.judge", { score: 1 }, ["body"])).toMatchObject({ ok: false, issues: [{ loc: ["body", "payload", "output"] }] });
    expect(processPayload("wandb.annotation.tone", { value: null }, ["body"])).toEqual({ ok: true, payload: { value: null } });
    expect(processPayload("wandb.annotation.tone", {}, ["body"])).toMatchObject({ ok: false, issues: [{ loc: ["body", "payload", "value"] }] });
  });
  it("keeps extra reaction keys and adds detoned", () => {
    expect(processPayload("wandb.reaction.1", { emoji: "👍🏻", from: "ui" }, [])).toEqual({ ok: true, payload: { emoji: "👍🏻", from: "ui", detoned: "👍" } });
  });
  it("counts the size in UTF-8 bytes of the JSON", () => {
    const fits = "é".repeat((MAX_PAYLOAD_BYTES - 20) / 2);
    expect(processPayload("custom", { t: fits }, []).ok).toBe(true);
    expect(processPayload("custom", { t: fits + "éééééééééé" }, []).ok).toBe(false);
  });
  it("flattens like call JSON, rooted at payload", () => {
    expect(flattenPayload({ emoji: "👍", output: { score: 1.5, tags: ["a"], ok: true, none: null } })).toEqual({
      payload_paths: ["payload.emoji", "payload.output.score", "payload.output.tags.0", "payload.output.ok", "payload.output.none"],
      payload_values: ["👍", "1.5", "a", "true", "null"],
    });
    expect(flattenPayload({})).toEqual({ payload_paths: ["payload"], payload_values: ["{}"] });
  });
});

describe("refs", () => {
  it("parses project and call id", () => {
    expect(feedbackTarget("weave:///acme/p/call/abc")).toEqual({ projectId: "acme/p", kind: "call", callId: "abc" });
    expect(feedbackTarget("weave:///acme/p/call/a%2Fb")).toEqual({ projectId: "acme/p", kind: "call", callId: "a/b" });
    expect(feedbackTarget("weave:///acme/p/object/ds:v1/attr/rows")).toEqual({ projectId: "acme/p", kind: "object", callId: null });
    expect(feedbackTarget("weave:///acme/p/call/abc/attr/output")).toEqual({ projectId: "acme/p", kind: "call", callId: null });
    expect(feedbackTarget("weave:///acme/p/call/abc/output")).toBeNull();
    for (const bad of ["weave:///acme/p", "weave://acme/p/call/x", "weave:///acme//call/x", "weave:///acme/p/call/"]) expect(feedbackTarget(bad), bad).toBeNull();
  });
  it("checks every ref against the request's project", () => {
    const req = { project_id: "acme/p", weave_ref: "weave:///acme/p/call/x", feedback_type: "t", payload: {}, trigger_ref: "weave:///acme/q/object/m:v1" };
    expect(checkFeedback(req, ["body"])).toEqual([{ loc: ["body", "trigger_ref"], msg: "the ref belongs to project acme/q, not acme/p", type: "value_error" }]);
  });
});

describe("stats keys", () => {
  it("names keys from the json_path and the percentile", () => {
    expect(metricSlug("output.score")).toBe("output_score");
    expect(metricSlug("a-b c")).toBe("a_b_c");
    expect(percentileKey(95)).toBe("p95");
    expect(percentileKey(99.9)).toBe("p99_9");
  });
});

describe("payload schema discovery", () => {
  it("lists leaves through objects with their kinds, conflicts as categorical", () => {
    expect(discoverPaths([{ a: 1, b: { c: true, d: "x", e: [1] }, f: null }, { a: "1", b: { c: false } }, 7, null])).toEqual([
      { json_path: "a", value_type: "categorical" },
      { json_path: "b.c", value_type: "boolean" },
      { json_path: "b.d", value_type: "categorical" },
    ]);
  });
});
