import { RetryableError, errorText } from "../../errors.js";
import { isJsonObject } from "../../json.js";

/**
 * The OpenAI-compatible chat completion that evaluation and scoring jobs call for LLM models
 * and LLM judges. The wiring (resources.ts) gives one: the service's own language model in process
 * (inference/evalCompleter.ts), or an upstream endpoint (EVAL_LLM_BASE_URL).
 */
export interface ChatAsk {
  readonly model: string;
  readonly messages: readonly { readonly role: string; readonly content: string }[];
  readonly temperature?: number | undefined;
  readonly top_p?: number | undefined;
  readonly max_tokens?: number | undefined;
  readonly stop?: readonly string[] | undefined;
  /** The project the job works for: trained models of it may be named. */
  readonly projectId: string;
}

export interface ChatAnswer {
  readonly text: string;
  /** The model that answered, as the endpoint names it. */
  readonly model: string;
  readonly promptTokens: number;
  readonly completionTokens: number;
}

export interface ChatCompleter {
  complete(ask: ChatAsk, signal?: AbortSignal): Promise<ChatAnswer>;
}

/** A completion the endpoint refused (a 4xx): running the job again would not help. */
export class ChatCompletionError extends Error {}

/** `POST <baseUrl>/chat/completions` with a Bearer key. A 4xx fails the job; a 5xx or a network error is retried by the runner. */
export class UpstreamChatCompleter implements ChatCompleter {
  constructor(
    private readonly baseUrl: string,
    private readonly key: string | null,
  ) {}

  async complete(ask: ChatAsk, signal?: AbortSignal): Promise<ChatAnswer> {
    const { projectId: _project, ...request } = ask;
    let res: Response;
    try {
      res = await fetch(`${this.baseUrl.replace(/\/+$/, "")}/chat/completions`, {
        method: "POST",
        headers: { "content-type": "application/json", ...(this.key ? { authorization: `Bearer ${this.key}` } : {}) },
        body: JSON.stringify(request),
        ...(signal ? { signal } : {}),
      });
    } catch (err) {
      if (signal?.aborted) throw err;
      throw new RetryableError(`chat completion endpoint unreachable: ${errorText(err)}`);
    }
    const text = await res.text();
    if (res.status >= 500) throw new RetryableError(`chat completion endpoint answered ${res.status}: ${errorMessage(text)}`);
    if (res.status !== 200) throw new ChatCompletionError(`chat completion endpoint answered ${res.status}: ${errorMessage(text)}`);
    return answerOf(text, ask.model);
  }
}

function errorMessage(body: string): string {
  try {
    const parsed: unknown = JSON.parse(body);
    if (isJsonObject(parsed)) {
      const error = parsed.error;
      if (isJsonObject(error) && typeof error.message === "string") return error.message;
      if (typeof parsed.message === "string") return parsed.message;
    }
  } catch {
    // not JSON: the text itself
  }
  return body.slice(0, 500);
}

function answerOf(body: string, asked: string): ChatAnswer {
  const parsed: unknown = JSON.parse(body);
  if (!isJsonObject(parsed) || !Array.isArray(parsed.choices)) throw new ChatCompletionError("chat completion endpoint answered no choices");
  const first: unknown = parsed.choices[0];
  const message = isJsonObject(first) && isJsonObject(first.message) ? first.message : {};
  const usage = isJsonObject(parsed.usage) ? parsed.usage : {};
  return {
    text: typeof message.content === "string" ? message.content : "",
    model: typeof parsed.model === "string" ? parsed.model : asked,
    promptTokens: typeof usage.prompt_tokens === "number" ? usage.prompt_tokens : 0,
    completionTokens: typeof usage.completion_tokens === "number" ? usage.completion_tokens : 0,
  };
}
