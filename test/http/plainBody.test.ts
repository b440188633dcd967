import { request, type Server } from "node:http";
import { gzipSync } from "node:zlib";
import pino from "pino";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { KeyRing } from "../../services/auth/keys.js";
import { BODY_PROJECT, operation } from "../../services/contract/operation.js";
import { z } from "../../services/contract/zod.js";
import { HttpApi } from "../../services/http/app.js";
import { basic, KEY_ACME } from "../support/service.js";

/**
 * A plain JSON body (declared length, not compressed, UTF-8) is read without body-parser.
 * Every request below gets the same answer that way as through body-parser (the same body
 * chunked or gzipped).
 */
const echoOp = operation({
  id: "test_echo",
  method: "post",
  path: "/echo",
  summary: "test",
  tag: "Test",
  body: z.object({ project_id: z.string(), val: z.unknown() }),
  keepBodyText: true,
  role: "writer",
  response: z.object({}).passthrough(),
  scope: BODY_PROJECT,
});

const MAX_BODY_BYTES = 4096;

interface Answer {
  readonly status: number;
  readonly body: unknown;
  readonly ignored: string | undefined;
}

type Framing = "length" | "chunked" | "gzip";

function send(url: string, body: Buffer, framing: Framing, headers: Record<string, string> = {}): Promise<Answer> {
  const sent = framing === "gzip" ? gzipSync(body) : body;
  const framingHeaders: Record<string, string> =
    framing === "length" ? { "content-length": String(sent.length) } : framing === "chunked" ? { "transfer-encoding": "chunked" } : { "content-length": String(sent.length), "content-encoding": "gzip" };
  return new Promise((resolve, reject) => {
    const req = request(`${url}/echo`, { method: "POST", headers: { authorization: basic(KEY_ACME), "content-type": "application/json", ...framingHeaders, ...headers } }, (res) => {
      const chunks: Buffer[] = [];
      res.on("data", (c: Buffer) => chunks.push(c));
      res.on("end", () => {
        const text = Buffer.concat(chunks).toString("utf8");
        const ignored = res.headers["x-ignored-fields"];
        resolve({ status: res.statusCode ?? 0, body: JSON.parse(text) as unknown, ignored: Array.isArray(ignored) ? ignored[0] : ignored });
      });
    });
    req.on("error", reject);
    req.end(sent);
  });
}

const json = (value: unknown) => Buffer.from(JSON.stringify(value));
const BODIES: Record<string, Buffer> = {
  valid: json({ project_id: "acme/p", val: { a: [1, "é"] } }),
  "valid, with a byte order mark": Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), json({ project_id: "acme/p", val: 1 })]),
  "an unknown field": json({ project_id: "acme/p", val: 1, extra: true }),
  "a field of the wrong type": json({ project_id: 7 }),
  "another entity's project": json({ project_id: "other/p", val: 1 }),
  "malformed JSON": Buffer.from('{"project_id": "acme/p", "val": }'),
  "not UTF-8": Buffer.from([0x7b, 0x22, 0xff, 0x22, 0x3a, 0x31, 0x7d]),
  "nested too deep": Buffer.from(`${"[".repeat(200)}${"]".repeat(200)}`),
  "over the size limit": json({ project_id: "acme/p", val: "x".repeat(MAX_BODY_BYTES) }),
  "a JSON value that is not an object": Buffer.from("42"),
};

async function serve(): Promise<{ server: Server; url: string }> {
  const api = new HttpApi({ keys: new KeyRing([{ key: KEY_ACME, username: "alice", entities: ["acme"] }]), log: pino({ level: "silent" }), maxBodyBytes: MAX_BODY_BYTES, maxJsonDepth: 64 });
  api.mount(echoOp, async ({ body }, ctx) => ({ val: body.val, text: ctx.bodyText ?? null, bytes: ctx.bodyBytes }));
  const server = await api.listen(0, "127.0.0.1");
  const address = server.address();
  return { server, url: `http://127.0.0.1:${typeof address === "object" && address ? address.port : 0}` };
}

describe("plain JSON bodies, read without body-parser", () => {
  let direct: { server: Server; url: string };

  beforeAll(async () => {
    direct = await serve();
  });
  afterAll(async () => {
    await new Promise((done) => direct.server.close(done));
  });

  for (const [name, body] of Object.entries(BODIES)) {
    it(`answers ${name} as body-parser does`, async () => {
      const expected = await send(direct.url, body, "chunked");
      expect(await send(direct.url, body, "length")).toEqual(expected);
      if (name !== "over the size limit") expect(await send(direct.url, body, "gzip")).toEqual(expected);
    });
  }

  it("reads a body declared in another charset through body-parser, which refuses it", async () => {
    const latin1 = { "content-type": "application/json; charset=iso-8859-1" };
    expect((await send(direct.url, BODIES.valid!, "length", latin1)).status).toBe(415);
  });

  it("answers a valid body with what the handler returned, the body's text and size kept", async () => {
    const answer = await send(direct.url, BODIES.valid!, "length");
    expect(answer).toEqual({ status: 200, body: { val: { a: [1, "é"] }, text: BODIES.valid!.toString("utf8"), bytes: BODIES.valid!.length }, ignored: undefined });
  });
});
