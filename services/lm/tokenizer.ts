import type { ChatRole, ChatTurn, TopLogprob } from "./types.js";

/**
 * Byte-level tokens: ids 0..255 are the bytes of UTF-8 text, then a few special tokens.
 * A turn is written `<|role|>` + its content's bytes + `<|end|>`; a prompt for the
 * assistant ends with `<|assistant|>`, and the model ends its turn by producing `<|end|>`.
 */
export const END_OF_TURN = 256;
const ROLE_TOKENS: Readonly<Record<ChatRole, number>> = {
  system: 257,
  developer: 257, // the system role under its newer OpenAI name
  user: 258,
  assistant: 259,
  tool: 260,
};
export const ASSISTANT = ROLE_TOKENS.assistant;
export const VOCAB_SIZE = 264; // 261 used, rounded up to a multiple of 8
const SPECIAL_NAMES: Readonly<Record<number, string>> = {
  256: "<|end|>",
  257: "<|system|>",
  258: "<|user|>",
  259: "<|assistant|>",
  260: "<|tool|>",
};

const encoder = new TextEncoder();
const decoder = new TextDecoder("utf-8");

export function encodeText(text: string): number[] {
  return Array.from(encoder.encode(text));
}

/** Bytes → text; a byte sequence cut inside a character decodes to U+FFFD for that part. */
export function decodeBytes(bytes: readonly number[]): string {
  return decoder.decode(Uint8Array.from(bytes));
}

export function isSpecial(token: number): boolean {
  return token >= END_OF_TURN;
}

export function turnTokens(turn: ChatTurn): number[] {
  return [ROLE_TOKENS[turn.role], ...encodeText(turn.content), END_OF_TURN];
}

/** The conversation followed by the opening of the assistant's turn: what the model continues. */
export function promptTokens(turns: readonly ChatTurn[]): number[] {
  return [...turns.flatMap(turnTokens), ASSISTANT];
}

/**
 * A token as the API reports it: a byte that is a whole character (ASCII) is that character;
 * a byte of a longer UTF-8 character is `bytes:\xNN` (as OpenAI writes partial characters);
 * a special token is its name. `bytes` carries the raw byte(s).
 */
export function tokenEntry(token: number, logprob: number): TopLogprob {
  if (isSpecial(token)) {
    const name = SPECIAL_NAMES[token] ?? `<|special_${token}|>`;
    return { token: name, logprob, bytes: encodeText(name) };
  }
  const text = token < 0x80 ? String.fromCharCode(token) : `bytes:\\x${token.toString(16).padStart(2, "0")}`;
  return { token: text, logprob, bytes: [token] };
}
