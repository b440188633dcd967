import { describe, expect, it } from "vitest";
import { RetryAnswers, retryKey, type RecordedAnswers, type RetryKey } from "../../services/http/retries.js";

/** The answers of retried requests: remembered within bounds, recorded when asked, never an error's. */
const key = (id: string, route = "op", projects = ["acme/p"]) => retryKey(id, route, projects);

function recorder(): RecordedAnswers & { rows: Map<string, string> } {
  const rows = new Map<string, string>();
  const id = (k: RetryKey) => `${k.route}|${k.projects}|${k.retryId}`;
  return {
    rows,
    async find(k) {
      return rows.get(id(k)) ?? null;
    },
    async record(k, answer) {
      if (!rows.has(id(k))) rows.set(id(k), answer);
    },
  };
}

describe("retried requests' answers", () => {
  it("apply once per key and answer the first answer; another route, project set or id is another request", async () => {
    const answers = new RetryAnswers(null);
    let applied = 0;
    const apply = async () => JSON.stringify({ n: ++applied });
    expect(await answers.answer(key("r1"), false, apply)).toBe('{"n":1}');
    expect(await answers.answer(key("r1"), false, apply)).toBe('{"n":1}');
    expect(await answers.answer(key("r1", "other"), false, apply)).toBe('{"n":2}');
    expect(await answers.answer(key("r1", "op", ["acme/q"]), false, apply)).toBe('{"n":3}');
    expect(await answers.answer(key("r2"), false, apply)).toBe('{"n":4}');
    expect(await answers.answer(key("r1", "op", ["acme/p", "acme/p"]), false, apply)).toBe('{"n":1}');
  });

  it("join an attempt that arrives while the first runs", async () => {
    const answers = new RetryAnswers(null);
    let release: () => void = () => {};
    let applied = 0;
    const apply = () => new Promise<string>((done) => (release = () => done(String(++applied))));
    const first = answers.answer(key("r"), false, apply);
    const second = answers.answer(key("r"), false, apply);
    release();
    expect(await Promise.all([first, second])).toEqual(["1", "1"]);
  });

  it("keep nothing of a failed attempt: the next one applies", async () => {
    const answers = new RetryAnswers(null);
    await expect(answers.answer(key("r"), false, () => Promise.reject(new Error("refused")))).rejects.toThrow("refused");
    expect(await answers.answer(key("r"), false, async () => "ok")).toBe("ok");
  });

  it("forget the oldest beyond the entry and byte bounds, and never hold one oversized answer", async () => {
    const answers = new RetryAnswers(null, () => {}, { entries: 2, bytes: 400 });
    let applied = 0;
    const apply = async () => `"${++applied}"`;
    await answers.answer(key("a"), false, apply);
    await answers.answer(key("b"), false, apply);
    await answers.answer(key("c"), false, apply);
    expect(await answers.answer(key("c"), false, apply)).toBe('"3"');
    expect(await answers.answer(key("a"), false, apply)).toBe('"4"');
    const big = "x".repeat(150);
    expect(await answers.answer(key("big"), false, async () => big)).toBe(big);
    expect(await answers.answer(key("big"), false, async () => "again")).toBe("again");
  });

  it("record answers where asked, find them in a process that does not remember, and answer even when recording fails", async () => {
    const store = recorder();
    const one = new RetryAnswers(store);
    const other = new RetryAnswers(store);
    expect(await one.answer(key("r"), true, async () => "first")).toBe("first");
    expect(await other.answer(key("r"), true, async () => "second")).toBe("first");
    expect(await other.answer(key("s"), false, async () => "not recorded")).toBe("not recorded");
    expect(store.rows.size).toBe(1);

    const failing: RecordedAnswers = { find: async () => null, record: () => Promise.reject(new Error("down")) };
    const failures: unknown[] = [];
    const answers = new RetryAnswers(failing, (err) => failures.push(err));
    expect(await answers.answer(key("t"), true, async () => "applied")).toBe("applied");
    expect(failures).toHaveLength(1);
  });
});
