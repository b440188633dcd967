import OpenAI from "openai";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { baseModels, baseModelWeights } from "../../services/lm/index.js";
import { client, KEY_ACME, KEY_OTHER, startTestService } from "../support/service.js";

/**
 * Chat completions and the model list as users reach them: the OpenAI Node SDK against our
 * server, over real HTTP, on the built-in base model; each completion recorded as a call.
 */
const PROJECT = "acme/chat";
type Service = Awaited<ReturnType<typeof startTestService>>;

let service: Service;
let openai: OpenAI;
let model: string;
const ask = [{ role: "user" as const, content: "Say something about the sea." }];

// The first use of a base model trains its weights once (cached under .cache/lm): minutes.
beforeAll(async () => {
  model = baseModels()[0]!.id;
  await baseModelWeights(model);
  service = await startTestService({ CHAT_MAX_TOKENS: "24" });
  openai = new OpenAI({ apiKey: KEY_ACME, baseURL: `${service.url}/v1`, maxRetries: 0 });
}, 1_200_000);
afterAll(async () => {
  await service.stop();
});

describe("POST /v1/chat/completions, not streamed", () => {
  it("answers one choice in the OpenAI shape with usage", async () => {
    const res = await openai.chat.completions.create({ model, messages: ask, max_tokens: 8, seed: 1 });
    expect(res).toMatchObject({ object: "chat.completion", model, system_fingerprint: null });
    expect(res.id).toMatch(/^chatcmpl-/);
    expect(res.choices).toHaveLength(1);
    const [choice] = res.choices;
    expect(choice).toMatchObject({ index: 0, message: { role: "assistant", refusal: null }, logprobs: null });
    expect(typeof choice!.message.content).toBe("string");
    expect(["stop", "length"]).toContain(choice!.finish_reason);
    expect(res.usage!.prompt_tokens).toBeGreaterThan(0);
    expect(res.usage!.completion_tokens).toBeLessThanOrEqual(8);
    expect(res.usage!.total_tokens).toBe(res.usage!.prompt_tokens + res.usage!.completion_tokens);
  });

  it("reports each token's logprob and its top alternatives, adding up to the text", async () => {
    const res = await openai.chat.completions.create({ model, messages: ask, max_tokens: 6, temperature: 0, logprobs: true, top_logprobs: 3 });
    const choice = res.choices[0]!;
    const tokens = choice.logprobs!.content!;
    expect(tokens).toHaveLength(res.usage!.completion_tokens);
    expect(Buffer.from(tokens.flatMap((t) => t.bytes!)).toString("utf8")).toBe(choice.message.content);
    for (const token of tokens) {
      expect(token.logprob).toBeLessThanOrEqual(0);
      expect(Array.isArray(token.bytes)).toBe(true);
      expect(token.top_logprobs).toHaveLength(3);
      // Greedy: the chosen token is the most likely one.
      expect(token.top_logprobs[0]!.logprob).toBeCloseTo(token.logprob, 5);
      const sorted = [...token.top_logprobs].sort((a, b) => b.logprob - a.logprob);
      expect(token.top_logprobs).toEqual(sorted);
    }
  });

  it("answers n choices, each with its index; usage counts the prompt once and every completion", async () => {
    const res = await openai.chat.completions.create({ model, messages: ask, max_tokens: 5, n: 2, seed: 7, logprobs: true });
    expect(res.choices.map((c) => c.index)).toEqual([0, 1]);
    const generated = res.choices.reduce((sum, c) => sum + c.logprobs!.content!.length, 0);
    expect(res.usage!.completion_tokens).toBe(generated);
    const single = await openai.chat.completions.create({ model, messages: ask, max_tokens: 1 });
    expect(res.usage!.prompt_tokens).toBe(single.usage!.prompt_tokens);
  });

  it("gives the same completion for the same seed", async () => {
    const params = { model, messages: ask, max_tokens: 10, temperature: 1, seed: 42 };
    const a = await openai.chat.completions.create(params);
    const b = await openai.chat.completions.create(params);
    expect(b.choices[0]!.message.content).toBe(a.choices[0]!.message.content);
  });

  it("stops before a stop sequence, which is left out of the text", async () => {
    const free = await openai.chat.completions.create({ model, messages: ask, max_tokens: 16, temperature: 0 });
    const text = free.choices[0]!.message.content!;
    expect(text.length).toBeGreaterThan(3);
    const stop = text.slice(2, 4);
    const stopped = await openai.chat.completions.create({ model, messages: ask, max_tokens: 16, temperature: 0, stop: [stop] });
    expect(stopped.choices[0]!.message.content).toBe(text.slice(0, text.indexOf(stop)));
    expect(stopped.choices[0]!.finish_reason).toBe("stop");
  });

  it("ends with finish_reason length at max_tokens (max_completion_tokens wins; CHAT_MAX_TOKENS caps both)", async () => {
    const res = await openai.chat.completions.create({ model, messages: ask, max_tokens: 2, temperature: 0 });
    expect(res.choices[0]!.finish_reason).toBe("length");
    expect(res.usage!.completion_tokens).toBe(2);
    const both = await openai.chat.completions.create({ model, messages: ask, max_tokens: 9, max_completion_tokens: 3, temperature: 0 });
    expect(both.usage!.completion_tokens).toBe(3);
    const capped = await openai.chat.completions.create({ model, messages: ask, max_tokens: 1000, temperature: 0 });
    expect(capped.usage!.completion_tokens).toBeLessThanOrEqual(24);
  });

  it("accepts tool calls, tool results, text parts and the fields ART adds", async () => {
    const res = await openai.chat.completions.create({
      model,
      max_tokens: 3,
      messages: [
        { role: "system", content: [{ type: "text", text: "You answer briefly." }] },
        { role: "user", content: "What is the weather?" },
        { role: "assistant", content: null, tool_calls: [{ id: "call_1", type: "function", function: { name: "weather", arguments: '{"city":"Oslo"}' } }] },
        { role: "tool", tool_call_id: "call_1", content: "rain" },
      ],
      tools: [{ type: "function", function: { name: "weather", parameters: { type: "object" } } }],
      // @ts-expect-error: vLLM's fields, which ART sends as extra_body
      return_token_ids: true,
      chat_template_kwargs: { enable_thinking: false },
    });
    expect(res.choices).toHaveLength(1);
  });

  it("answers at the path with a trailing slash too", async () => {
    const res = await fetch(`${service.url}/v1/chat/completions/`, {
      method: "POST",
      headers: { authorization: `Bearer ${KEY_ACME}`, "content-type": "application/json" },
      body: JSON.stringify({ model, messages: ask, max_tokens: 2 }),
    });
    expect(res.status).toBe(200);
    expect(((await res.json()) as { object: string }).object).toBe("chat.completion");
  });
});

describe("errors", () => {
  it("answers 404 for an unknown model, with a message the SDK shows", async () => {
    const err = await openai.chat.completions.create({ model: "no-such-model", messages: ask }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(OpenAI.NotFoundError);
    expect((err as InstanceType<typeof OpenAI.NotFoundError>).message).toBe("404 The model `no-such-model` does not exist or you do not have access to it.");
    const raw = await fetch(`${service.url}/v1/chat/completions`, {
      method: "POST",
      headers: { authorization: `Bearer ${KEY_ACME}`, "content-type": "application/json" },
      body: JSON.stringify({ model: "no-such-model", messages: ask }),
    });
    expect(raw.status).toBe(404);
    const message = "The model `no-such-model` does not exist or you do not have access to it.";
    expect(await raw.json()).toEqual({ detail: message, message, error: { message, type: "invalid_request_error", param: null, code: "model_not_found" } });
  });

  it("answers 422 with the detail list for a bad body", async () => {
    const raw = await fetch(`${service.url}/v1/chat/completions`, {
      method: "POST",
      headers: { authorization: `Bearer ${KEY_ACME}`, "content-type": "application/json" },
      body: JSON.stringify({ model, messages: [], temperature: 3 }),
    });
    expect(raw.status).toBe(422);
    const body = (await raw.json()) as { detail: { loc: unknown[] }[]; error: { type: string } };
    expect(body.detail.map((d) => d.loc)).toEqual([["body", "messages"], ["body", "temperature"]]);
    expect(body.error.type).toBe("invalid_request_error");
    const err = await openai.chat.completions.create({ model, messages: ask, top_logprobs: 2 }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(OpenAI.UnprocessableEntityError);
    expect((err as Error).message).toBe("422 body.top_logprobs: top_logprobs needs logprobs: true");
  });

  it("answers 401 without a valid key", async () => {
    const anonymous = new OpenAI({ apiKey: "not-a-key-of-ours", baseURL: `${service.url}/v1`, maxRetries: 0 });
    await expect(anonymous.chat.completions.create({ model, messages: ask })).rejects.toBeInstanceOf(OpenAI.AuthenticationError);
  });
});

type Chunk = OpenAI.Chat.Completions.ChatCompletionChunk;

async function collect(stream: AsyncIterable<Chunk>): Promise<Chunk[]> {
  const chunks: Chunk[] = [];
  for await (const chunk of stream) chunks.push(chunk);
  return chunks;
}

const contentOf = (chunks: readonly Chunk[], index: number) =>
  chunks.flatMap((c) => c.choices.filter((choice) => choice.index === index).map((choice) => choice.delta.content ?? "")).join("");

describe("POST /v1/chat/completions, streamed", () => {
  it("streams the same completion as the answer in one piece, with per-token logprobs and a usage chunk", async () => {
    const params = { model, messages: ask, max_tokens: 8, temperature: 0, logprobs: true, top_logprobs: 2 };
    const whole = await openai.chat.completions.create(params);
    const chunks = await collect(await openai.chat.completions.create({ ...params, stream: true, stream_options: { include_usage: true } }));
    expect(new Set(chunks.map((c) => c.id)).size).toBe(1);
    expect(chunks.every((c) => c.object === "chat.completion.chunk" && c.model === model)).toBe(true);
    expect(chunks[0]!.choices[0]!.delta.role).toBe("assistant");
    expect(contentOf(chunks, 0)).toBe(whole.choices[0]!.message.content);
    const streamedTokens = chunks.flatMap((c) => c.choices.flatMap((choice) => choice.logprobs?.content ?? []));
    expect(streamedTokens).toEqual(whole.choices[0]!.logprobs!.content);
    const finishes = chunks.flatMap((c) => c.choices.map((choice) => choice.finish_reason).filter((f) => f !== null));
    expect(finishes).toEqual([whole.choices[0]!.finish_reason]);
    const last = chunks.at(-1)!;
    expect(last.choices).toEqual([]);
    expect(last.usage).toEqual(whole.usage);
    expect(chunks.slice(0, -1).every((c) => c.usage === null)).toBe(true);
  });

  it("streams n choices, each under its index, and no usage chunk unless asked", async () => {
    const params = { model, messages: ask, max_tokens: 4, n: 2, seed: 3 };
    const whole = await openai.chat.completions.create(params);
    const chunks = await collect(await openai.chat.completions.create({ ...params, stream: true }));
    expect(contentOf(chunks, 0)).toBe(whole.choices[0]!.message.content);
    expect(contentOf(chunks, 1)).toBe(whole.choices[1]!.message.content);
    expect(chunks.every((c) => c.choices.length > 0 && c.usage === undefined)).toBe(true);
  });

  it("streams text that stops before a stop sequence", async () => {
    const free = await openai.chat.completions.create({ model, messages: ask, max_tokens: 16, temperature: 0 });
    const text = free.choices[0]!.message.content!;
    const stop = text.slice(3, 6);
    const chunks = await collect(await openai.chat.completions.create({ model, messages: ask, max_tokens: 16, temperature: 0, stop, stream: true }));
    expect(contentOf(chunks, 0)).toBe(text.slice(0, text.indexOf(stop)));
  });

  it("ends the raw stream with data: [DONE]", async () => {
    const raw = await fetch(`${service.url}/v1/chat/completions`, {
      method: "POST",
      headers: { authorization: `Bearer ${KEY_ACME}`, "content-type": "application/json" },
      body: JSON.stringify({ model, messages: ask, max_tokens: 2, stream: true }),
    });
    expect(raw.headers.get("content-type")).toMatch(/^text\/event-stream/);
    const events = (await raw.text()).split("\n\n").filter(Boolean);
    expect(events.every((e) => e.startsWith("data: "))).toBe(true);
    expect(events.at(-1)).toBe("data: [DONE]");
  });
});

describe("GET /v1/models", () => {
  it("lists the base models in the OpenAI list shape", async () => {
    const listed = [];
    for await (const entry of openai.models.list()) listed.push(entry);
    expect(listed.slice(0, baseModels().length)).toEqual(baseModels().map((m) => ({ id: m.id, object: "model", created: m.created, owned_by: "tracehouse", root: m.id })));
  });
});

describe("trained models", () => {
  it("serves a trained model by ART's name (latest or :step<N>), lists it for keys that reach it, refuses others", async () => {
    const created = await client(service.url).post("/v1/preview/models", { entity: "acme", project: "chat", name: "m1", base_model: model });
    expect(created.status).toBe(200);
    const name = "wandb-artifact:///acme/chat/m1";
    const params = { messages: ask, max_tokens: 6, temperature: 0 };
    const base = await openai.chat.completions.create({ model, ...params });
    // Step 0 is the base model's weights.
    const latest = await openai.chat.completions.create({ model: name, ...params });
    expect(latest.model).toBe(`${name}:step0`);
    expect(latest.choices[0]!.message.content).toBe(base.choices[0]!.message.content);
    const step0 = await openai.chat.completions.create({ model: `${name}:step0`, ...params });
    expect(step0.choices[0]!.message.content).toBe(base.choices[0]!.message.content);
    await expect(openai.chat.completions.create({ model: `${name}:step9`, ...params })).rejects.toBeInstanceOf(OpenAI.NotFoundError);
    await expect(openai.chat.completions.create({ model: "wandb-artifact:///acme/chat/nope", ...params })).rejects.toBeInstanceOf(OpenAI.NotFoundError);

    const other = new OpenAI({ apiKey: KEY_OTHER, baseURL: `${service.url}/v1`, maxRetries: 0 });
    await expect(other.chat.completions.create({ model: name, ...params })).rejects.toBeInstanceOf(OpenAI.PermissionDeniedError);

    const listed = [];
    for await (const entry of openai.models.list()) listed.push(entry);
    expect(listed.find((m) => m.id === name)).toEqual({ id: name, object: "model", created: expect.any(Number), owned_by: "acme", root: model });
    const listedToOther = [];
    for await (const entry of other.models.list()) listedToOther.push(entry.id);
    expect(listedToOther).toEqual(baseModels().map((m) => m.id));
  });
});

describe("recording", () => {
  type CallRow = { id: string; op_name: string; inputs: Record<string, unknown>; output: { id: string; model: string }; summary: { usage: Record<string, unknown> }; wb_user_id: string; ended_at: string | null };

  it("records each completion as a finished call in the project of the OpenAI-Project header, with its usage", async () => {
    const scoped = new OpenAI({ apiKey: KEY_ACME, baseURL: `${service.url}/v1`, maxRetries: 0, project: PROJECT });
    const res = await scoped.chat.completions.create({ model, messages: ask, max_tokens: 3, user: "someone" });
    const chunks = await collect(await scoped.chat.completions.create({ model, messages: ask, max_tokens: 3, stream: true, stream_options: { include_usage: true } }));
    const api = client(service.url, KEY_ACME);
    const calls = await api.lines<CallRow>("/calls/stream_query", { project_id: PROJECT, sort_by: [{ field: "started_at", direction: "asc" }] });
    expect(calls.map((c) => c.op_name)).toEqual(["openai.chat.completions.create", "openai.chat.completions.create"]);
    const [first, second] = calls as [CallRow, CallRow];
    expect(first.inputs).toEqual({ model, messages: ask, max_tokens: 3, user: "someone" });
    expect(first.output).toEqual(JSON.parse(JSON.stringify(res)));
    expect(first.wb_user_id).toBe("alice");
    expect(first.ended_at).not.toBeNull();
    expect(first.summary.usage).toEqual({ [model]: { requests: 1, ...res.usage } });
    expect(second.output.id).toBe(chunks[0]!.id);
    expect(second.summary.usage).toEqual({ [model]: { requests: 1, ...chunks.at(-1)!.usage } });

    const usage = await api.json<{ call_usage: Record<string, Record<string, { requests: number; total_tokens: number }>> }>("/calls/usage", { project_id: PROJECT, call_ids: [first.id] });
    expect(usage.call_usage[first.id]![model]).toMatchObject({ requests: 1, total_tokens: res.usage!.total_tokens });
  });

  it("also takes the project from Vendor-Project; records nothing without a header; refuses a project the key does not reach", async () => {
    const other = "acme/vendor";
    const vendor = new OpenAI({ apiKey: KEY_ACME, baseURL: `${service.url}/v1`, maxRetries: 0, defaultHeaders: { "Vendor-Project": other } });
    await vendor.chat.completions.create({ model, messages: ask, max_tokens: 1 });
    const api = client(service.url, KEY_ACME);
    expect(await api.lines("/calls/stream_query", { project_id: other })).toHaveLength(1);

    const foreign = new OpenAI({ apiKey: KEY_ACME, baseURL: `${service.url}/v1`, maxRetries: 0, project: "other/p" });
    await expect(foreign.chat.completions.create({ model, messages: ask, max_tokens: 1 })).rejects.toBeInstanceOf(OpenAI.PermissionDeniedError);
    await expect(foreign.models.list()).rejects.toBeInstanceOf(OpenAI.PermissionDeniedError);
    const malformed = new OpenAI({ apiKey: KEY_ACME, baseURL: `${service.url}/v1`, maxRetries: 0, project: "proj_abc" });
    await expect(malformed.chat.completions.create({ model, messages: ask, max_tokens: 1 })).rejects.toBeInstanceOf(OpenAI.UnprocessableEntityError);
  });
});
