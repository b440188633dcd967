import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { ASSISTANT, END_OF_TURN, decodeBytes, encodeText, promptTokens, tokenEntry } from "../../services/lm/tokenizer.js";

describe("byte tokenizer", () => {
  it("any string → tokens → the same string", () => {
    fc.assert(fc.property(fc.string({ unit: "binary" }), (text) => {
      expect(decodeBytes(encodeText(text))).toBe(text);
    }), { numRuns: 300 });
  });

  it("the tokens' bytes of any string are its UTF-8 bytes, one byte per token", () => {
    fc.assert(fc.property(fc.string({ unit: "binary" }), (text) => {
      const entries = encodeText(text).map((t) => tokenEntry(t, 0));
      expect(Buffer.from(entries.flatMap((e) => e.bytes)).equals(Buffer.from(text, "utf8"))).toBe(true);
    }), { numRuns: 300 });
  });

  it("reports ASCII bytes as their character and bytes of longer characters as bytes:\\xNN", () => {
    expect(encodeText("a€").map((t) => tokenEntry(t, -1))).toEqual([
      { token: "a", logprob: -1, bytes: [0x61] },
      { token: "bytes:\\xe2", logprob: -1, bytes: [0xe2] },
      { token: "bytes:\\x82", logprob: -1, bytes: [0x82] },
      { token: "bytes:\\xac", logprob: -1, bytes: [0xac] },
    ]);
    expect(tokenEntry(END_OF_TURN, -2)).toEqual({ token: "<|end|>", logprob: -2, bytes: Array.from(Buffer.from("<|end|>")) });
  });

  it("writes a conversation as role token, content bytes, end of turn, and opens the assistant's turn", () => {
    const tokens = promptTokens([{ role: "system", content: "S" }, { role: "user", content: "Hi" }]);
    expect(tokens).toEqual([257, 0x53, END_OF_TURN, 258, 0x48, 0x69, END_OF_TURN, ASSISTANT]);
    expect(promptTokens([{ role: "developer", content: "S" }])[0]).toBe(257);
  });
});
