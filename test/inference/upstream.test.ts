import OpenAI from "openai";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { baseModels, baseModelWeights } from "../../services/lm/index.js";
import { client, KEY_ACME, startTestService } from "../support/service.js";

/**
 * Routing to an OpenAI-compatible upstream (INFERENCE_UPSTREAM_*): a second instance of our
 * own server plays the upstream, over real HTTP. It knows only the gateway's key, so an
 * answer through the gateway proves the request was forwarded with that key.
 */
const UPSTREAM_KEY = "gateway-key-0123456789abcdef";
const PROJECT = "acme/routed";
type Service = Awaited<ReturnType<typeof startTestService>>;

let upstream: Service;
let gateway: Service;
let model: string;

beforeAll(async () => {
  model = baseModels()[0]!.id;
  await baseModelWeights(model);
  upstream = await startTestService({ AUTH_KEYS: JSON.stringify([{ key: UPSTREAM_KEY, username: "gateway", entities: ["gateway"] }]) });
  gateway = await startTestService({
    INFERENCE_UPSTREAM_URL: `${upstream.url}/v1`,
    INFERENCE_UPSTREAM_KEY: UPSTREAM_KEY,
    INFERENCE_UPSTREAM_MODELS: `${model},remote/*,vllm/served-model`,
  });
}, 1_200_000);
afterAll(async () => {
  await gateway.stop();
  await upstream.stop();
});

describe("upstream routing", () => {
  const ask = [{ role: "user" as const, content: "Hello there" }];
  const params = { messages: ask, max_tokens: 6, temperature: 0, logprobs: true };

  it("forwards a routed model's request and answers what the upstream answered, recorded as a call", async () => {
    const direct = new OpenAI({ apiKey: UPSTREAM_KEY, baseURL: `${upstream.url}/v1`, maxRetries: 0 });
    const viaGateway = new OpenAI({ apiKey: KEY_ACME, baseURL: `${gateway.url}/v1`, maxRetries: 0, project: PROJECT });
    const expected = await direct.chat.completions.create({ model, ...params });
    const routed = await viaGateway.chat.completions.create({ model, ...params });
    expect(routed.choices).toEqual(expected.choices);
    expect(routed.usage).toEqual(expected.usage);

    const calls = await client(gateway.url).lines<{ attributes: { inference: { served_by: string } }; output: { id: string }; summary: { usage: unknown } }>("/calls/stream_query", { project_id: PROJECT });
    expect(calls).toHaveLength(1);
    expect(calls[0]!.attributes.inference.served_by).toBe("upstream");
    expect(calls[0]!.output.id).toBe(routed.id);
    expect(calls[0]!.summary.usage).toEqual({ [model]: { requests: 1, ...routed.usage } });
  });

  it("streams the upstream's chunks through as they come, and records what they add up to", async () => {
    const viaGateway = new OpenAI({ apiKey: KEY_ACME, baseURL: `${gateway.url}/v1`, maxRetries: 0, project: PROJECT });
    const whole = await viaGateway.chat.completions.create({ model, ...params });
    const stream = await viaGateway.chat.completions.create({ model, ...params, stream: true, stream_options: { include_usage: true } });
    let text = "";
    let usage: unknown = null;
    for await (const chunk of stream) {
      text += chunk.choices[0]?.delta.content ?? "";
      if (chunk.usage) usage = chunk.usage;
    }
    expect(text).toBe(whole.choices[0]!.message.content);
    expect(usage).toEqual(whole.usage);
    const calls = await client(gateway.url).lines<{ output: { choices: { message: { content: string } }[]; usage: unknown } }>("/calls/stream_query", {
      project_id: PROJECT,
      sort_by: [{ field: "started_at", direction: "desc" }],
      limit: 1,
    });
    expect(calls[0]!.output.choices[0]!.message.content).toBe(text);
    expect(calls[0]!.output.usage).toEqual(usage);
  });

  it("passes the upstream's refusals through (a prefix rule routes a model the upstream does not know)", async () => {
    const viaGateway = new OpenAI({ apiKey: KEY_ACME, baseURL: `${gateway.url}/v1`, maxRetries: 0 });
    const err = await viaGateway.chat.completions.create({ model: "remote/unknown", messages: ask }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(OpenAI.NotFoundError);
    expect((err as Error).message).toBe("404 The model `remote/unknown` does not exist or you do not have access to it.");
  });

  it("lists the routed models that are not prefixes", async () => {
    const viaGateway = new OpenAI({ apiKey: KEY_ACME, baseURL: `${gateway.url}/v1`, maxRetries: 0 });
    const listed = [];
    for await (const entry of viaGateway.models.list()) listed.push(entry);
    expect(listed.map((m) => m.id)).toEqual([...baseModels().map((m) => m.id), "vllm/served-model"]);
    expect(listed.at(-1)).toEqual({ id: "vllm/served-model", object: "model", created: 0, owned_by: "tracehouse-upstream", root: "vllm/served-model" });
  });

  it("answers 503 when the upstream cannot be reached", async () => {
    const unreachable = await startTestService({ INFERENCE_UPSTREAM_URL: "http://127.0.0.1:1/v1", INFERENCE_UPSTREAM_MODELS: "remote/*" });
    try {
      const res = await fetch(`${unreachable.url}/v1/chat/completions`, {
        method: "POST",
        headers: { authorization: `Bearer ${KEY_ACME}`, "content-type": "application/json" },
        body: JSON.stringify({ model: "remote/x", messages: ask }),
      });
      expect(res.status).toBe(503);
      const body = (await res.json()) as { error: { type: string }; message: string };
      expect(body.error.type).toBe("server_error");
      expect(body.message).toMatch(/^the inference upstream could not be reached/);
    } finally {
      await unreachable.stop();
    }
  });
});
