import type { ChatCompletion, ChatCompletionChunk, CompletionUsage, TokenLogprobOut } from "../contract/chat.js";
import type { Completion, TokenLogprob } from "../lm/types.js";
import { uuid4 } from "../ids.js";

/** What every answer (and every chunk) of one request shares. */
export interface AnswerHeader {
  readonly id: string;
  readonly created: number;
  readonly model: string;
}

export function answerHeader(model: string, nowMs = Date.now()): AnswerHeader {
  return { id: `chatcmpl-${uuid4().replace(/-/g, "")}`, created: Math.floor(nowMs / 1000), model };
}

export function tokenLogprobOut(token: TokenLogprob): TokenLogprobOut {
  return {
    token: token.token,
    logprob: token.logprob,
    bytes: [...token.bytes],
    top_logprobs: token.top_logprobs.map((t) => ({ token: t.token, logprob: t.logprob, bytes: [...t.bytes] })),
  };
}

/** Every choice is sampled from the same prompt: it is counted once, completions are added. */
export function usageOf(completions: readonly Completion[]): CompletionUsage {
  const prompt = completions[0]?.promptTokens ?? 0;
  const completion = completions.reduce((sum, c) => sum + c.completionTokens, 0);
  return { prompt_tokens: prompt, completion_tokens: completion, total_tokens: prompt + completion };
}

export function completionResponse(header: AnswerHeader, completions: readonly Completion[], withLogprobs: boolean): ChatCompletion {
  return {
    ...header,
    object: "chat.completion",
    system_fingerprint: null,
    choices: completions.map((c, index) => ({
      index,
      message: { role: "assistant", content: c.text, refusal: null },
      logprobs: withLogprobs ? { content: c.tokens.map(tokenLogprobOut), refusal: null } : null,
      finish_reason: c.finishReason,
    })),
    usage: usageOf(completions),
  };
}

type ChunkChoice = ChatCompletionChunk["choices"][number];

export function chunkOf(header: AnswerHeader, choices: ChunkChoice[], includeUsage: boolean, usage: CompletionUsage | null = null): ChatCompletionChunk {
  return { ...header, object: "chat.completion.chunk", system_fingerprint: null, choices, ...(includeUsage ? { usage } : {}) };
}

/**
 * The pieces of one choice's stream. Tokens are bytes (a character beyond ASCII spans several,
 * each named `bytes:\xNN` in logprobs), so the text sent is decoded as the bytes come: a token
 * that ends inside a character sends its logprobs with empty content, the character goes with
 * the token that completes it. The model hands a token over only once it cannot turn into a
 * stop sequence; the completion's text is the authority, and `finish` sends what of it is left.
 */
export class ChoiceStream {
  private readonly decoder = new TextDecoder();
  private sentText = "";
  private sentTokens = 0;

  push(token: TokenLogprob): { text: string; tokens: TokenLogprob[] } {
    const text = this.decoder.decode(Uint8Array.from(token.bytes), { stream: true });
    this.sentText += text;
    this.sentTokens++;
    return { text, tokens: [token] };
  }

  /** What is left to send once the completion is known: the rest of its text and its remaining tokens. */
  finish(completion: Completion): { text: string; tokens: TokenLogprob[] } {
    const rest = completion.text.startsWith(this.sentText) ? completion.text.slice(this.sentText.length) : "";
    return { text: rest, tokens: completion.tokens.slice(this.sentTokens) };
  }
}
