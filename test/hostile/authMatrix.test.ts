import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { KEY_ONLY, makeLookedUp, PUBLIC, type LookedUp } from "../http/operationRequests.js";
import { KEY_ACME, KEY_ADMIN, KEY_OTHER, startTestService } from "../support/service.js";
import { messageOf, validRequest } from "./hostile.js";

/**
 * Every operation the service mounts (but the public ones, named in operationRequests.ts:
 * health; /docs and /openapi.json are pages, not operations) × four callers: no key → 401,
 * a key the service does not know (and malformed Authorization headers) → 401, a key of
 * another entity → 403 (key-only operations touch no project: 200), the right key → a 2xx,
 * or the operation's own 4xx for the request of its row (never 401/403, never 5xx).
 */
const WRONG = ["Basic " + Buffer.from("api:not-a-key-0123456789abcdef").toString("base64"), "Bearer not-a-key-0123456789abcdef", "Basic !!!not-base64"];

describe("the auth matrix", () => {
  let service: Awaited<ReturnType<typeof startTestService>>;
  let made: LookedUp;
  const fill = (text: string) => made.fill(text);

  beforeAll(async () => {
    service = await startTestService();
    made = await makeLookedUp(service.url, KEY_ADMIN, "matrix");
  });
  afterAll(async () => service.stop());

  const call = async (op: (typeof service.operations)[number], authorization: string | null) => {
    const request = validRequest(op, fill);
    const res = await fetch(`${service.url}${request.path}`, {
      method: op.method.toUpperCase(),
      headers: { ...(authorization === null ? {} : { authorization }), ...(request.body instanceof FormData ? {} : { "content-type": "application/json" }), ...request.headers },
      body: op.method === "get" ? undefined : request.body,
      signal: AbortSignal.timeout(30_000),
    });
    return { status: res.status, text: await res.text() };
  };
  const basic = (key: string) => `Basic ${Buffer.from(`api:${key}`).toString("base64")}`;

  it("covers every operation but the public ones", () => {
    const covered = service.operations.filter((op) => !PUBLIC.includes(op.id));
    expect(covered.length).toBeGreaterThan(100);
    expect(service.operations.filter((op) => op.scope.kind === "public").map((op) => op.id).sort()).toEqual([...PUBLIC].sort());
  });

  it("no key → 401, an unknown or malformed key → 401, each with a message", async () => {
    const seen: string[] = [];
    for (const op of service.operations.filter((o) => !PUBLIC.includes(o.id))) {
      for (const authorization of [null, ...WRONG]) {
        const answer = await call(op, authorization);
        if (answer.status !== 401 || messageOf(answer.text) === null) seen.push(`${op.id} with ${JSON.stringify(authorization)}: ${answer.status} ${answer.text.slice(0, 120)}`);
      }
    }
    expect(seen).toEqual([]);
  }, 240_000);

  it("another entity's key → 403 (200 for key-only operations)", async () => {
    const seen: string[] = [];
    for (const op of service.operations.filter((o) => !PUBLIC.includes(o.id))) {
      const expected = KEY_ONLY.includes(op.id) ? 200 : 403;
      const answer = await call(op, basic(KEY_OTHER));
      if (answer.status !== expected) seen.push(`${op.id}: ${answer.status} ${answer.text.slice(0, 120)}`);
    }
    expect(seen).toEqual([]);
  }, 240_000);

  it("the right key → 2xx, or the operation's own 4xx for its row's request", async () => {
    const seen: string[] = [];
    for (const op of service.operations.filter((o) => !PUBLIC.includes(o.id))) {
      const answer = await call(op, basic(KEY_ACME));
      const fine = (answer.status >= 200 && answer.status < 300) || (answer.status >= 400 && answer.status < 500 && answer.status !== 401 && answer.status !== 403 && messageOf(answer.text) !== null);
      if (!fine) seen.push(`${op.id}: ${answer.status} ${answer.text.slice(0, 160)}`);
    }
    expect(seen).toEqual([]);
  }, 240_000);
});
