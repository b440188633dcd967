import { describe, expect, it } from "vitest";
import { DEFAULTS, loadConfig, rolesOf } from "../../services/config.js";

/** The inference settings, one test per rule. */
describe("inference configuration", () => {
  it("has defaults: CHAT_MAX_TOKENS, the model cache bound, no upstream, no catalog URLs", () => {
    expect(loadConfig({})).toMatchObject({
      CHAT_MAX_TOKENS: DEFAULTS.CHAT_MAX_TOKENS,
      INFERENCE_MODEL_CACHE_BYTES: DEFAULTS.INFERENCE_MODEL_CACHE_BYTES,
      INFERENCE_UPSTREAM_MODELS: [],
      INFERENCE_CATALOG_URLS: {},
      INFERENCE_CATALOG_REFRESH_MS: DEFAULTS.INFERENCE_CATALOG_REFRESH_MS,
    });
    expect(loadConfig({}).INFERENCE_UPSTREAM_URL).toBeUndefined();
  });

  it("runs inference in `all` and alone", () => {
    expect(rolesOf("all").has("inference")).toBe(true);
    expect([...rolesOf(loadConfig({ ROLE: "inference,query" }).ROLE)]).toEqual(["inference", "query"]);
  });

  it("reads the upstream's model list comma-separated", () => {
    const config = loadConfig({ INFERENCE_UPSTREAM_URL: "http://vllm:8000/v1", INFERENCE_UPSTREAM_MODELS: "a, meta-llama/*", INFERENCE_UPSTREAM_KEY: "k" });
    expect(config).toMatchObject({ INFERENCE_UPSTREAM_URL: "http://vllm:8000/v1", INFERENCE_UPSTREAM_MODELS: ["a", "meta-llama/*"], INFERENCE_UPSTREAM_KEY: "k" });
  });

  it("refuses a catalog URL map that is not JSON, names an unknown catalog or holds a non-URL, naming the variable", () => {
    expect(loadConfig({ INFERENCE_CATALOG_URLS: '{"hardware": "https://example.org/gpus.json"}' }).INFERENCE_CATALOG_URLS).toEqual({ hardware: "https://example.org/gpus.json" });
    expect(() => loadConfig({ INFERENCE_CATALOG_URLS: "{" })).toThrow(/INFERENCE_CATALOG_URLS/);
    expect(() => loadConfig({ INFERENCE_CATALOG_URLS: '{"gpus": "https://example.org"}' })).toThrow(/INFERENCE_CATALOG_URLS/);
    expect(() => loadConfig({ INFERENCE_CATALOG_URLS: '{"hardware": "not a url"}' })).toThrow(/INFERENCE_CATALOG_URLS/);
  });

  it("refuses a CHAT_MAX_TOKENS below 1 and an upstream URL that is not one", () => {
    expect(() => loadConfig({ CHAT_MAX_TOKENS: "0" })).toThrow(/CHAT_MAX_TOKENS/);
    expect(() => loadConfig({ INFERENCE_UPSTREAM_URL: "vllm" })).toThrow(/INFERENCE_UPSTREAM_URL/);
  });
});
