import type { Response } from "express";
import type { Logger } from "pino";
import { canReach } from "../auth/keys.js";
import { chatCompletionsOp, type ChatCompletion, type ChatCompletionChunk, type ChatCompletionReq } from "../contract/chat.js";
import { NotFoundError } from "../errors.js";
import type { ErrorRenderer, HttpApi } from "../http/app.js";
import type { RequestContext } from "../http/operation.js";
import { isJsonObject, type JsonObject } from "../json.js";
import type { ModelWeightsRef } from "../lm/modelCache.js";
import type { ModelThreads } from "../lm/modelThreads.js";
import type { Completion } from "../lm/types.js";
import { nowMicros } from "../times.js";
import { choiceCount, samplingOf, turnsOf, wantsLogprobs } from "./chatRequest.js";
import { answerHeader, ChoiceStream, chunkOf, completionResponse, tokenLogprobOut, usageOf, type AnswerHeader } from "./chatResponse.js";
import { resolveModel, weightsRefOf, type ModelResolver } from "./models.js";
import type { CompletionRecorder } from "./recording.js";
import type { Upstream } from "./upstream.js";

export interface ChatCompletionsDeps {
  /** Asked in order; the first that knows the model name serves it. */
  readonly resolvers: readonly ModelResolver[];
  /** Where the built-in and trained models are sampled (never on this thread). */
  readonly modelThreads: ModelThreads;
  /** Null when this process cannot publish calls (then nothing is recorded). */
  readonly recorder: CompletionRecorder | null;
  readonly upstream: Upstream | null;
  /** The most tokens one choice may generate (CHAT_MAX_TOKENS). */
  readonly maxTokens: number;
  readonly log: Logger;
}

/**
 * The OpenAI SDKs read an error's message from `error.message` (else they show "404 status
 * code (no body)"): our `{detail, message}` body gains `error: {message, type, code}`.
 */
export const openAiError: ErrorRenderer = (answer, _err, _req, res) => {
  const body = isJsonObject(answer.body) ? answer.body : {};
  const message = typeof body.message === "string" ? body.message : "request failed";
  const type = answer.status >= 500 ? "server_error" : answer.status === 401 ? "authentication_error" : answer.status === 403 ? "permission_error" : "invalid_request_error";
  const code = answer.status === 404 ? "model_not_found" : answer.status === 422 ? "invalid_request" : null;
  res.json({ ...body, error: { message, type, param: null, code } });
};

/** The client went away while its completion was generated: generation stops. */
class ClientGone extends Error {}

const modelNotFound = (model: string) =>
  new NotFoundError(`The model \`${model}\` does not exist or you do not have access to it.`);

export function mountChatCompletions(api: HttpApi, deps: ChatCompletionsDeps): void {
  api.mount(chatCompletionsOp, async ({ body: req }, ctx) => {
    const startedAt = nowMicros();
    const rawRequest: JsonObject = isJsonObject(ctx.req.body) ? (ctx.req.body as JsonObject) : {};
    const project = ctx.projects[0] ?? null;
    const record = async (response: ChatCompletion, servedBy: "local" | "upstream") => {
      if (project === null || deps.recorder === null) return;
      await deps.recorder.record({ projectId: project, username: ctx.principal.username, request: rawRequest, response, startedAtMicros: startedAt, endedAtMicros: nowMicros(), servedBy });
    };

    if (deps.upstream?.serves(req.model)) {
      const gone = new AbortController();
      ctx.res.on("close", () => gone.abort());
      const response = await deps.upstream.forward(rawRequest, ctx.res, gone.signal);
      // Recorded before the answer ends, so a client that read all of it finds the call.
      if (response) await record(response, "upstream");
      ctx.res.end();
      return;
    }

    const resolved = await resolveModel(deps.resolvers, req.model, (projectId) => canReach(ctx.principal, projectId));
    if (!resolved) throw modelNotFound(req.model);
    const model = weightsRefOf(resolved);
    const header = answerHeader(resolved.modelId);
    if (req.stream === true) {
      await streamCompletion(model, req, header, ctx, deps, record);
      return;
    }
    const completions: Completion[] = [];
    const turns = turnsOf(req.messages);
    for (let i = 0; i < choiceCount(req); i++) completions.push(await deps.modelThreads.complete(model, turns, samplingOf(req, i, deps.maxTokens)));
    const response = completionResponse(header, completions, wantsLogprobs(req));
    await record(response, "local");
    return response;
  }, { renderError: openAiError });
}

function sendEvent(res: Response, data: ChatCompletionChunk | { error: JsonObject } | "[DONE]"): void {
  res.write(`data: ${typeof data === "string" ? data : JSON.stringify(data)}\n\n`);
}

/**
 * SSE: a first chunk opening every choice with the assistant role, then the choices one after
 * the other, a chunk per token (with its logprobs when asked) and a last chunk with the
 * finish reason; with `include_usage` a chunk with `choices: []` and the usage; then
 * `[DONE]`. The call is recorded before `[DONE]`, so a client that read the whole stream
 * finds it. An error after the headers went out is sent as an `error` event (what the
 * OpenAI SDKs raise from a stream).
 */
async function streamCompletion(
  model: ModelWeightsRef,
  req: ChatCompletionReq,
  header: AnswerHeader,
  ctx: RequestContext,
  deps: ChatCompletionsDeps,
  record: (response: ChatCompletion, servedBy: "local") => Promise<void>,
): Promise<void> {
  const { res } = ctx;
  let gone = false;
  res.on("close", () => (gone = true));
  const includeUsage = req.stream_options?.include_usage === true;
  const withLogprobs = wantsLogprobs(req);
  const send = (choices: ChatCompletionChunk["choices"]) => sendEvent(res, chunkOf(header, choices, includeUsage));
  res.status(200).setHeader("content-type", "text/event-stream; charset=utf-8");
  res.setHeader("cache-control", "no-cache");
  res.flushHeaders();
  const n = choiceCount(req);
  send(Array.from({ length: n }, (_, index) => ({ index, delta: { role: "assistant", content: "" }, logprobs: null, finish_reason: null })));
  const completions: Completion[] = [];
  try {
    const turns = turnsOf(req.messages);
    for (let index = 0; index < n; index++) {
      const options = samplingOf(req, index, deps.maxTokens);
      const stream = new ChoiceStream();
      const completion = await deps.modelThreads.complete(model, turns, options, {
        onToken: (token) => {
          if (gone) throw new ClientGone();
          const piece = stream.push(token);
          send([{ index, delta: { content: piece.text }, logprobs: withLogprobs ? { content: piece.tokens.map(tokenLogprobOut) } : null, finish_reason: null }]);
        },
      });
      const rest = stream.finish(completion);
      if (rest.text !== "" || rest.tokens.length > 0) {
        send([{ index, delta: { content: rest.text }, logprobs: withLogprobs ? { content: rest.tokens.map(tokenLogprobOut) } : null, finish_reason: null }]);
      }
      send([{ index, delta: {}, logprobs: null, finish_reason: completion.finishReason }]);
      completions.push(completion);
    }
  } catch (err) {
    if (err instanceof ClientGone || gone) return void res.end();
    deps.log.error({ err }, "chat completion failed while streaming");
    sendEvent(res, { error: { message: "internal error while generating", type: "server_error", code: null } });
    return void res.end();
  }
  if (includeUsage) sendEvent(res, chunkOf(header, [], true, usageOf(completions)));
  await record(completionResponse(header, completions, withLogprobs), "local");
  sendEvent(res, "[DONE]");
  res.end();
}
