import { JsonObject } from "./common.js";
import { ValidationError } from "../errors.js";
import { operation, type RequestHeaders } from "./operation.js";
import { z } from "./zod.js";

/**
 * Chat completions in the OpenAI convention (the interface spec beside this repository, shared/spec/training-api.md, "Chat completions"): what
 * the OpenAI SDKs and OpenPipe ART send and read. Unknown request fields are accepted (and
 * named in `X-Ignored-Fields`); the fields ART adds are declared so they are not reported.
 */

/** The most choices one request may ask for (`n`): each is generated in turn on the one thread. */
export const MAX_CHOICES = 8;
export const MAX_TOP_LOGPROBS = 20;
export const MAX_STOP_SEQUENCES = 4;

const TextPart = z.object({ type: z.literal("text"), text: z.string() });
const RefusalPart = z.object({ type: z.literal("refusal"), refusal: z.string() });
/** Our models read text only: image, audio and file parts are refused by the discriminator (422). */
const ContentPart = z.discriminatedUnion("type", [TextPart, RefusalPart]);
const Content = z.union([z.string(), z.array(ContentPart)]);
export type MessageContent = z.infer<typeof Content>;

export const ToolCall = z
  .object({
    id: z.string(),
    type: z.literal("function").default("function"),
    function: z.object({ name: z.string(), arguments: z.string() }),
  })
  .openapi("ChatToolCall");
export type ToolCall = z.infer<typeof ToolCall>;

const SystemMessage = z.object({ role: z.enum(["system", "developer"]), content: Content, name: z.string().nullish() });
const UserMessage = z.object({ role: z.literal("user"), content: Content, name: z.string().nullish() });
const AssistantMessage = z.object({
  role: z.literal("assistant"),
  content: Content.nullish(),
  name: z.string().nullish(),
  refusal: z.string().nullish(),
  tool_calls: z.array(ToolCall).nullish(),
});
const ToolMessage = z.object({ role: z.literal("tool"), content: Content, tool_call_id: z.string() });

export const ChatMessage = z.discriminatedUnion("role", [SystemMessage, UserMessage, AssistantMessage, ToolMessage]).openapi("ChatMessage");
export type ChatMessage = z.infer<typeof ChatMessage>;

const Stop = z.union([z.string().min(1), z.array(z.string().min(1)).max(MAX_STOP_SEQUENCES)]);

export const ChatCompletionReq = z
  .object({
    model: z.string().min(1).openapi({ description: "A base model id (GET /v1/models), or a trained model `wandb-artifact:///<entity>/<project>/<name>` (latest step) or `…:step<N>`" }),
    messages: z.array(ChatMessage).min(1),
    temperature: z.number().min(0).max(2).nullish().openapi({ description: "Default 1; 0 is greedy" }),
    top_p: z.number().min(0).max(1).nullish().openapi({ description: "Default 1; 0 is greedy" }),
    max_tokens: z.number().int().min(1).nullish().openapi({ description: "Capped by the server's CHAT_MAX_TOKENS" }),
    max_completion_tokens: z.number().int().min(1).nullish().openapi({ description: "Wins over max_tokens when both are given" }),
    n: z.number().int().min(1).max(MAX_CHOICES).nullish(),
    stop: Stop.nullish(),
    seed: z.number().int().nullish().openapi({ description: "Same seed, model and messages → same completion (choice i samples with seed + i)" }),
    stream: z.boolean().nullish(),
    stream_options: z.object({ include_usage: z.boolean().nullish() }).nullish(),
    logprobs: z.boolean().nullish(),
    top_logprobs: z.number().int().min(0).max(MAX_TOP_LOGPROBS).nullish(),
    tools: z.array(JsonObject).nullish().openapi({ description: "Accepted; the built-in models do not call tools" }),
    tool_choice: z.union([z.string(), JsonObject]).nullish(),
    response_format: JsonObject.nullish().openapi({ description: "Accepted; the built-in models answer text" }),
    // Sent by OpenPipe ART for vLLM; accepted and not used.
    return_token_ids: z.boolean().nullish(),
    return_tokens_as_token_ids: z.boolean().nullish(),
    chat_template_kwargs: JsonObject.nullish(),
  })
  .superRefine((req, ctx) => {
    if ((req.top_logprobs ?? 0) > 0 && req.logprobs !== true) {
      ctx.addIssue({ code: "custom", path: ["top_logprobs"], message: "top_logprobs needs logprobs: true" });
    }
  })
  .openapi("ChatCompletionReq");
export type ChatCompletionReq = z.infer<typeof ChatCompletionReq>;

export const TopLogprob = z.object({ token: z.string(), logprob: z.number(), bytes: z.array(z.number().int()).nullable() }).openapi("ChatTopLogprob");
export const TokenLogprob = TopLogprob.extend({ top_logprobs: z.array(TopLogprob) }).openapi("ChatTokenLogprob");
export type TokenLogprobOut = z.infer<typeof TokenLogprob>;
export const ChoiceLogprobs = z.object({ content: z.array(TokenLogprob).nullable(), refusal: z.null().optional() }).openapi("ChatChoiceLogprobs");

export const FinishReason = z.enum(["stop", "length", "tool_calls", "content_filter"]);
export const CompletionUsage = z
  .object({ prompt_tokens: z.number().int(), completion_tokens: z.number().int(), total_tokens: z.number().int() })
  .openapi("CompletionUsage");
export type CompletionUsage = z.infer<typeof CompletionUsage>;

export const ChatCompletion = z
  .object({
    id: z.string(),
    object: z.literal("chat.completion"),
    created: z.number().int().openapi({ description: "Unix seconds" }),
    model: z.string(),
    system_fingerprint: z.string().nullable(),
    choices: z.array(
      z.object({
        index: z.number().int(),
        message: z.object({ role: z.literal("assistant"), content: z.string().nullable(), refusal: z.string().nullable(), tool_calls: z.array(ToolCall).optional() }),
        logprobs: ChoiceLogprobs.nullable(),
        finish_reason: FinishReason,
      }),
    ),
    usage: CompletionUsage,
  })
  .openapi("ChatCompletion", {
    description:
      "With `stream: true` the answer is `text/event-stream` instead: `data: <ChatCompletionChunk>` events, then `data: [DONE]`.",
  });
export type ChatCompletion = z.infer<typeof ChatCompletion>;

export const ChatCompletionChunk = z
  .object({
    id: z.string(),
    object: z.literal("chat.completion.chunk"),
    created: z.number().int(),
    model: z.string(),
    system_fingerprint: z.string().nullable(),
    choices: z.array(
      z.object({
        index: z.number().int(),
        delta: z.object({ role: z.literal("assistant").optional(), content: z.string().nullable().optional(), refusal: z.string().nullable().optional() }),
        logprobs: ChoiceLogprobs.nullable(),
        finish_reason: FinishReason.nullable(),
      }),
    ),
    usage: CompletionUsage.nullable().optional().openapi({ description: "With stream_options.include_usage: null on every chunk but the last, whose choices are []" }),
  })
  .openapi("ChatCompletionChunk");
export type ChatCompletionChunk = z.infer<typeof ChatCompletionChunk>;

/**
 * The project a request is recorded in (chat) or listed for (models): the `OpenAI-Project`
 * header (what the OpenAI SDKs send for their `project` option) or `Vendor-Project`
 * (interface.md), as `<entity>/<project>`. Absent: none, and nothing is recorded.
 */
export const PROJECT_HEADERS = ["openai-project", "vendor-project"] as const;

export function headerProject(headers: RequestHeaders): string | null {
  for (const name of PROJECT_HEADERS) {
    const raw = headers[name];
    const value = (Array.isArray(raw) ? raw[0] : raw)?.trim();
    if (!value) continue;
    if (!/^[^/\s]+\/[^/\s]+$/.test(value)) throw ValidationError.at(["header", name], "must be <entity>/<project>");
    return value;
  }
  return null;
}

/** Scope of the inference operations: the project of the header, when one is named. */
const HEADER_PROJECT = { kind: "projects", of: (_input: unknown, headers: RequestHeaders) => [headerProject(headers)].filter((p): p is string => p !== null) } as const;

export const ModelEntry = z
  .object({ id: z.string(), object: z.literal("model"), created: z.number().int(), owned_by: z.string(), root: z.string() })
  .openapi("ModelEntry");
export type ModelEntry = z.infer<typeof ModelEntry>;
export const ModelList = z.object({ object: z.literal("list"), data: z.array(ModelEntry) }).openapi("ModelList");

const TAG = "Inference";

export const chatCompletionsOp = operation({
  id: "chat_completions",
  method: "post",
  path: "/v1/chat/completions",
  summary: "Create a chat completion (also at /v1/chat/completions/); recorded as a call in the project of the OpenAI-Project or Vendor-Project header",
  tag: TAG,
  body: ChatCompletionReq,
  role: "writer",
  scope: HEADER_PROJECT,
  response: ChatCompletion,
});

export const modelsListOp = operation({
  id: "inference_models_list",
  method: "get",
  path: "/v1/models",
  summary: "Models available for inference: base models and the trained models the key reaches",
  tag: TAG,
  role: "viewer",
  scope: HEADER_PROJECT,
  response: ModelList,
});
