import { describe, expect, it } from "vitest";
import { PriceBook, usageOfSummary } from "../../services/store/costs/pricing.js";
import type { PriceRow } from "../../services/store/costs/priceRows.js";
import { rollUpUsage, type OwnUsage, type UsageCall } from "../../services/store/usage/usageRollup.js";

/** The roll-up of own usages and the usage rules of one summary, without storage. */

type Figures = Partial<Pick<OwnUsage, "requests" | "prompt_tokens" | "completion_tokens" | "total_tokens">>;
interface Spec { call: UsageCall; own: OwnUsage[] }

/** A call and its own usage rows (figures default to 0, total to prompt + completion). */
const call = (id: string, parent: string | null, usage: Record<string, Figures> | null, ended = true, at = 100): Spec => ({
  call: { id, parent_id: parent, ended_at: ended ? at + 1 : null },
  own: Object.entries(usage ?? {}).map(([model, u]) => {
    const prompt = u.prompt_tokens ?? 0;
    const completion = u.completion_tokens ?? 0;
    return { id, model, started_at: at, requests: u.requests ?? 0, prompt_tokens: prompt, completion_tokens: completion, total_tokens: u.total_tokens ?? prompt + completion };
  }),
});
const rollUp = (specs: Spec[], roots: string[], book: PriceBook | null) =>
  rollUpUsage(specs.map((s) => s.call), specs.flatMap((s) => s.own), roots, book);
const price = (project: string, llm: string, at: number, cost: number, id = `${project}-${llm}-${at}`, createdAt = 0): PriceRow => ({
  project_id: project, id, llm_id: llm, provider_id: "p", prompt_token_cost: cost, completion_token_cost: 2 * cost, prompt_token_cost_unit: "USD",
  completion_token_cost_unit: "USD", cache_read_input_token_cost: 0, cache_creation_input_token_cost: 0, effective_date: at, created_at: createdAt, created_by: "t",
});

describe("usageOfSummary", () => {
  it("reads prompt_tokens else input_tokens, completion_tokens else output_tokens, total else their sum; numbers or numeric text", () => {
    const u = usageOfSummary({ usage: { a: { prompt_tokens: 3, input_tokens: 9, output_tokens: "4", requests: 1 }, b: { input_tokens: 2, completion_tokens: null, output_tokens: 5, total_tokens: 99 }, c: {}, d: 7 } });
    expect(Object.fromEntries(u)).toEqual({
      a: { requests: 1, prompt_tokens: 3, completion_tokens: 4, total_tokens: 7 },
      b: { requests: 0, prompt_tokens: 2, completion_tokens: 5, total_tokens: 99 },
    });
    expect(usageOfSummary(null).size).toBe(0);
    expect(usageOfSummary({ usage: [] }).size).toBe(0);
  });
});

describe("PriceBook", () => {
  it("takes the project's latest price in force, else the default's, ties to the latest created, then greatest id", () => {
    const book = new PriceBook("e/p", [
      price("", "m", 0, 1), price("", "m", 50, 2),
      price("e/p", "m", 100, 3), price("e/p", "m", 200, 4, "x1", 1), price("e/p", "m", 200, 5, "x2", 2), price("e/p", "m", 300, 6, "y1", 9), price("e/p", "m", 300, 7, "y2", 9),
      price("e/other", "m", 0, 100),
    ]);
    expect([10, 60, 100, 250, 300].map((t) => book.priceAt("m", t)?.prompt_token_cost)).toEqual([1, 2, 3, 5, 7]);
    expect(book.priceAt("m", -1)).toBeNull();
    expect(book.priceAt("other", 1000)).toBeNull();
  });
});

describe("rollUpUsage", () => {
  const calls = [
    call("r", null, { m: { prompt_tokens: 1, completion_tokens: 1, requests: 1 } }),
    call("a", "r", { m: { prompt_tokens: 10, completion_tokens: 10 }, n: { prompt_tokens: 5 } }),
    call("a1", "a", { n: { prompt_tokens: 50, completion_tokens: 1 } }, false),
    call("b", "r", null),
    call("x", "elsewhere", { m: { requests: 0 } }),
  ];

  it("adds each call's descendants, leaves models without usage out, and lists unfinished calls below the roots", () => {
    const res = rollUp(calls, ["r", "a", "b", "x", "missing"], null);
    expect(res.call_usage).toEqual({
      r: { m: { requests: 1, prompt_tokens: 11, completion_tokens: 11, total_tokens: 22 }, n: { requests: 0, prompt_tokens: 55, completion_tokens: 1, total_tokens: 56 } },
      a: { m: { requests: 0, prompt_tokens: 10, completion_tokens: 10, total_tokens: 20 }, n: { requests: 0, prompt_tokens: 55, completion_tokens: 1, total_tokens: 56 } },
      b: {},
      x: {},
    });
    expect(res.unfinished_call_ids).toEqual(["a1"]);
    expect(rollUp(calls, ["b"], null).unfinished_call_ids).toEqual([]);
  });

  it("adds a root's whole subtree even when one of its descendants is listed before it", () => {
    const forward = rollUp(calls, ["r", "a", "a1"], null).call_usage;
    const backward = rollUp(calls, ["a1", "a", "r"], null).call_usage;
    expect(backward).toEqual(forward);
    expect(backward.r!.n!.prompt_tokens).toBe(55);
  });

  it("prices each call's own usage at the call's start and sums the costs (0 without a price)", () => {
    const book = new PriceBook("e/p", [price("e/p", "m", 0, 0.5), price("e/p", "m", 150, 2)]);
    const late = [call("r", null, { m: { prompt_tokens: 1, completion_tokens: 1 } }, true, 100), call("k", "r", { m: { prompt_tokens: 10, completion_tokens: 3 } }, true, 200)];
    expect(rollUp(late, ["r"], book).call_usage.r!.m).toEqual({
      requests: 0, prompt_tokens: 11, completion_tokens: 4, total_tokens: 15,
      prompt_tokens_total_cost: 1 * 0.5 + 10 * 2, completion_tokens_total_cost: 1 * 1 + 3 * 4,
    });
  });

  it("prices each call at its own start and sums the costs (0 without a price)", () => {
    const book = new PriceBook("e/p", [price("e/p", "m", 0, 0.5)]);
    const res = rollUp(calls, ["r"], book);
    expect(res.call_usage.r!.m).toMatchObject({ prompt_tokens_total_cost: 11 * 0.5, completion_tokens_total_cost: 11 * 1 });
    expect(res.call_usage.r!.n).toMatchObject({ prompt_tokens_total_cost: 0, completion_tokens_total_cost: 0 });
  });

  it("survives a parent cycle", () => {
    const loop = [call("p", "q", { m: { requests: 1 } }), call("q", "p", { m: { requests: 1 } })];
    expect(rollUp(loop, ["p"], null).call_usage.p!.m!.requests).toBe(2);
  });
});
