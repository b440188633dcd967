import { seededRandom } from "../test/support/seededRandom.js";

/** The calls ingest benches' requests: the same upsert_batch in the service, cluster and hot-path benches. */
export const PARTS_PER_REQUEST = 500;
export const T0 = Date.UTC(2026, 9, 1);

export const iso = (micros: number) => new Date(Math.floor(micros / 1000)).toISOString().replace("Z", `${String(micros % 1000).padStart(3, "0")}Z`);

/**
 * Bodies as SDKs send them, for `calls` parts in all: `upsert_batch` requests of
 * PARTS_PER_REQUEST parts, calls in traces of one to four (a root and its children), call ids
 * UUIDv7 (as the Weave SDKs make them) in half the traces and random UUIDs in the other half,
 * trace ids random. Most calls end in the request that starts them; a fifth of the traces end
 * in the next request (a call still running when its SDK flushed), so the worker also merges
 * ends with starts it stored before. Deterministic for a seed.
 */
export function realisticBatchBodies(project: string, parts: number, seed = 1): Uint8Array<ArrayBuffer>[] {
  const random = seededRandom(seed);
  const bodies: Uint8Array<ArrayBuffer>[] = [];
  let items: string[] = [];
  let later: string[] = [];
  let at = T0 * 1000;
  const flush = () => {
    bodies.push(new Uint8Array(Buffer.from(`{"batch":[${items.join(",")}]}`)));
    items = later;
    later = [];
  };
  for (let made = 0; made + 1 < parts; ) {
    const size = Math.min(1 + Math.floor(random() * 4), (parts - made) >> 1);
    const ends = random() < 0.2 ? later : items;
    const traceId = randomUuid(random);
    const ids = Array.from({ length: size }, () => (random() < 0.5 ? uuidv7From(random, Math.floor(at / 1000)) : randomUuid(random)));
    ids.forEach((id, i) => {
      const started = at + i * 1000;
      items.push(startPart(project, id, traceId, i === 0 ? null : ids[0]!, started, made + i));
      ends.push(endPart(project, id, started + 150_000 + Math.floor(random() * 2_000_000), made + i));
    });
    made += 2 * size;
    at += 5_000;
    if (items.length >= PARTS_PER_REQUEST) flush();
  }
  while (items.length > 0) flush();
  return bodies;
}

const OPS = ["agent.run", "openai.chat.completions.create", "search_docs", "rank", "summarize", "tool.call"];

function startPart(project: string, id: string, traceId: string, parentId: string | null, micros: number, n: number): string {
  const op = `weave:///${project}/op/${OPS[n % OPS.length]}:v${1 + (n % 3)}`;
  const parent = parentId === null ? "null" : `"${parentId}"`;
  const inputs = `{"messages":[{"role":"user","content":"question ${n}: how do I rotate the API key of workspace ${n % 97}?"}],"model":"gpt-4o-mini","temperature":0.2}`;
  return `{"mode":"start","req":{"start":{"project_id":"${project}","id":"${id}","op_name":"${op}","trace_id":"${traceId}","parent_id":${parent},"started_at":"${iso(micros)}","attributes":{"weave":{"client_version":"0.52.0","source":"python-sdk"},"env":"prod"},"inputs":${inputs}}}}`;
}

function endPart(project: string, id: string, micros: number, n: number): string {
  const output = `{"choices":[{"message":{"role":"assistant","content":"Open settings, then keys, then rotate (answer ${n})."}}]}`;
  return `{"mode":"end","req":{"end":{"project_id":"${project}","id":"${id}","ended_at":"${iso(micros)}","output":${output},"summary":{"usage":{"gpt-4o-mini":{"prompt_tokens":${40 + (n % 50)},"completion_tokens":${12 + (n % 30)},"requests":1}}}}}}`;
}

const hexFrom = (random: () => number, digits: number) => Array.from({ length: digits }, () => Math.floor(random() * 16).toString(16)).join("");

function randomUuid(random: () => number): string {
  const variant = (8 + Math.floor(random() * 4)).toString(16);
  return `${hexFrom(random, 8)}-${hexFrom(random, 4)}-4${hexFrom(random, 3)}-${variant}${hexFrom(random, 3)}-${hexFrom(random, 12)}`;
}

function uuidv7From(random: () => number, ms: number): string {
  const time = ms.toString(16).padStart(12, "0");
  const variant = (8 + Math.floor(random() * 4)).toString(16);
  return `${time.slice(0, 8)}-${time.slice(8)}-7${hexFrom(random, 3)}-${variant}${hexFrom(random, 3)}-${hexFrom(random, 12)}`;
}
