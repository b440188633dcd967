/**
 * Decoding and mapping the corpus (corpus.ts) gives exactly the stored events it gave before
 * the decode and mapping were made cheaper: the digest of their JSON, line by line, was taken
 * from the implementation of 2026-11-24 (protobufjs decode, the first mapSpan).
 */
import { createHash } from "node:crypto";
import { describe, expect, it } from "vitest";
import { decodeProtobufRequest } from "../../services/ingest/otlp/decode.js";
import { mapSpans } from "../../services/ingest/otlp/mapSpan.js";
import { corpusBodies } from "./corpus.js";

const CTX = { project_id: "acme/chat", wb_user_id: "u", maxSpanBytes: 1200 };
const DIGEST = "bd34040ae1e828fbf7d2551fff6af82d6c1e2452f0eebc7f25670c10a8d32538";

describe("OTLP decode + map regression", () => {
  it("maps 300 random requests and two bench requests to the same JSON as before, byte for byte", () => {
    const lines = corpusBodies(300).map((body) => JSON.stringify(mapSpans(decodeProtobufRequest(body), CTX)));
    expect(createHash("sha256").update(lines.join("\n")).digest("hex")).toBe(DIGEST);
  });
});
