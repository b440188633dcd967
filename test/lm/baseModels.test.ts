import { describe, expect, it } from "vitest";
import { baseModels, baseModelWeights } from "../../services/lm/index.js";

describe("base models", () => {
  it("lists the shipped base model with an OpenAI-style id", () => {
    expect(baseModels().map((m) => m.id)).toEqual(["tracehouse/bytelm-small"]);
    for (const m of baseModels()) {
      expect(Number.isInteger(m.created)).toBe(true);
      expect(m.description.length).toBeGreaterThan(0);
    }
  });

  it("answers null for an unknown id", async () => {
    expect(await baseModelWeights("gpt-4o")).toBeNull();
  });
});
