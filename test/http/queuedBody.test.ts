import { setFlagsFromString } from "node:v8";
import { runInNewContext } from "node:vm";
import pino from "pino";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { KeyRing } from "../../services/auth/keys.js";
import { BODY_PROJECT, operation } from "../../services/contract/operation.js";
import { z } from "../../services/contract/zod.js";
import { HttpApi } from "../../services/http/app.js";
import { RETRY_ID_HEADER } from "../../services/http/retries.js";
import { basic, KEY_ACME } from "../support/service.js";

/**
 * A queued write's answer waits for its log to sync. Meanwhile neither the request nor the
 * handling keeps the body's parsed value: under load it would outlive V8's young generation
 * (http/app.ts, `handOver`). The handler below holds its body only weakly and answers when
 * the test lets its "sync" finish; a full collection meanwhile must find the body unreachable.
 */
setFlagsFromString("--expose-gc");
const collect = runInNewContext("gc") as () => void;

const Body = z.object({ project_id: z.string(), items: z.array(z.string()) });
const queuedOp = operation({
  id: "test_queued",
  method: "post",
  path: "/queued",
  summary: "test",
  tag: "Test",
  body: Body,
  // The same object as `req.body`, as the call routes' checks answer: one reference to follow.
  fastBody: (body) => Body.parse(body) && (body as z.output<typeof Body>),
  role: "writer",
  response: z.object({ items: z.number() }),
  scope: BODY_PROJECT,
  retries: "remembered",
  queued: true,
});

interface Pending {
  readonly body: WeakRef<object>;
  readonly sync: () => void;
}

const handled: Pending[] = [];
let url = "";
let close: () => Promise<void>;

beforeAll(async () => {
  const api = new HttpApi({ keys: new KeyRing([{ key: KEY_ACME, username: "alice", entities: ["acme"] }]), log: pino({ level: "silent" }), maxBodyBytes: 1 << 20, maxJsonDepth: 64 });
  // Not async, as the call routes: only the answer is kept while the "log" syncs.
  api.mount(queuedOp, ({ body }) => {
    const items = body.items.length;
    let sync = () => {};
    const synced = new Promise<void>((resolve) => (sync = resolve));
    handled.push({ body: new WeakRef(body), sync });
    return synced.then(() => ({ items }));
  });
  const server = await api.listen(0, "127.0.0.1");
  const address = server.address();
  url = `http://127.0.0.1:${typeof address === "object" && address ? address.port : 0}`;
  close = () => new Promise((done) => server.close(() => done()));
});

afterAll(() => close());

async function whileSyncing(headers: Record<string, string>): Promise<boolean> {
  const before = handled.length;
  const body = JSON.stringify({ project_id: "acme/p", items: Array.from({ length: 1000 }, (_, i) => `item ${i}`) });
  const answer = fetch(`${url}/queued`, { method: "POST", headers: { authorization: basic(KEY_ACME), "content-type": "application/json", ...headers }, body });
  while (handled.length === before) await new Promise((r) => setTimeout(r, 5));
  const pending = handled[before]!;
  // Collections run after the current turn, once the request's own code has returned.
  await new Promise((r) => setTimeout(r, 20));
  collect();
  const kept = pending.body.deref() !== undefined;
  pending.sync();
  const res = await answer;
  expect(res.status).toBe(200);
  expect(await res.json()).toEqual({ items: 1000 });
  return kept;
}

describe("a queued write's body while its log syncs", () => {
  it("is not kept", async () => {
    expect(await whileSyncing({})).toBe(false);
  });

  it("is not kept when the request is a retry's (its answer is remembered)", async () => {
    expect(await whileSyncing({ [RETRY_ID_HEADER]: "retry-1" })).toBe(false);
  });
});
