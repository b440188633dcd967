/** The calls ingest benches' requests: the same upsert_batch in the service, cluster and hot-path benches. */
export const PARTS_PER_REQUEST = 500;
export const T0 = Date.UTC(2026, 9, 1);

export const iso = (micros: number) => new Date(Math.floor(micros / 1000)).toISOString().replace("Z", `${String(micros % 1000).padStart(3, "0")}Z`);

/** One `upsert_batch` body of PARTS_PER_REQUEST parts: the start and end of half as many calls of one trace. */
export function batchBody(project: string, request: number): string {
  const items: string[] = [];
  for (let i = 0; i < PARTS_PER_REQUEST / 2; i++) {
    const id = `r${request}-${i}`;
    const at = T0 * 1000 + request * 1_000_000 + i * 1000;
    items.push(
      `{"mode":"start","req":{"start":{"project_id":"${project}","id":"${id}","op_name":"weave:///bench/ingest/op/step${i % 20}:v1","trace_id":"t${request}","parent_id":${i === 0 ? "null" : `"r${request}-0"`},"started_at":"${iso(at)}","attributes":{"env":"bench"},"inputs":{"question":"what is ${i} plus ${request}?","n":${i}}}}}`,
      `{"mode":"end","req":{"end":{"project_id":"${project}","id":"${id}","ended_at":"${iso(at + 250_000)}","output":{"answer":${i + request}},"summary":{"usage":{"gpt-4o-mini":{"prompt_tokens":12,"completion_tokens":5,"requests":1}}}}}}`,
    );
  }
  return `{"batch":[${items.join(",")}]}`;
}

/**
 * `count` upsert_batch bodies of `project`, encoded before the clock starts: the load
 * generator's share of the cores then goes to sending, not to building bodies.
 */
export function encodedBatchBodies(project: string, count: number): Uint8Array<ArrayBuffer>[] {
  return Array.from({ length: count }, (_, n) => new Uint8Array(Buffer.from(batchBody(project, n))));
}
