import type { ChatCompletion, ChatCompletionChunk, CompletionUsage, TokenLogprobOut } from "../contract/chat.js";
import type { Completion, TokenLogprob } from "../lm/index.js";
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
 * The pieces of one choice's stream, so that what is sent adds up to the final completion's
 * text exactly. Tokens are held back while they could still turn out to be part of a stop
 * sequence (the model cuts a stop sequence from its text once it is complete). When the
 * completion ends, the rest of its text is sent with the logprobs of its remaining tokens.
 */
export class ChoiceStream {
  private readonly pending: TokenLogprob[] = [];
  private pendingText = "";
  private sentText = 0;
  private sentTokens = 0;
  private readonly holdBack: number;

  constructor(stop: readonly string[]) {
    this.holdBack = Math.max(0, ...stop.map((s) => s.length));
  }

  /**
   * The tokens that may be sent now, after `token` was produced. A stop sequence completed by a
   * later token holds at least one character of it, so it starts at most `holdBack - 1`
   * characters before that token: text ending before that point is final.
   */
  push(token: TokenLogprob): TokenLogprob[] {
    this.pending.push(token);
    this.pendingText += token.token;
    if (this.holdBack === 0) return this.release(this.pending.length);
    const limit = this.pendingText.length - token.token.length - (this.holdBack - 1);
    let releasable = 0;
    let end = 0;
    for (const pendingToken of this.pending) {
      end += pendingToken.token.length;
      if (end > limit) break;
      releasable++;
    }
    return this.release(releasable);
  }

  private release(count: number): TokenLogprob[] {
    const out = this.pending.splice(0, count);
    const text = out.map((t) => t.token).join("");
    this.pendingText = this.pendingText.slice(text.length);
    this.sentText += text.length;
    this.sentTokens += out.length;
    return out;
  }

  /** What is left to send once the completion is known: the rest of its text and its remaining tokens. */
  finish(completion: Completion): { text: string; tokens: TokenLogprob[] } {
    return { text: completion.text.slice(this.sentText), tokens: completion.tokens.slice(this.sentTokens) };
  }
}
