/**
 * The built-in language model (issue 10): base-model build figures, generation speed, SFT and
 * RL step times (and how long one blocks the event loop when the library is called on it),
 * the same SFT and RL steps as training jobs of a service started in this process (the
 * default single-process start, issue 28): the longest block of this thread, which answers
 * requests, and the slowest `/call/start` answer while each job runs; and the RL proof on
 * held-out prompts (services/lm/heldOutProof.ts: a format reward, RL on 104 digit questions,
 * measured on 34 others it never saw), once per seed.
 *
 *   npx tsx bench/lm.bench.ts   (BENCH_LM_SEEDS: comma-separated RL seeds, default 7,1,2;
 *                                BENCH_LM_ROUNDS, BENCH_LM_LR: RL rounds and learning rate, default PROOF_DEFAULTS';
 *                                BENCH_LM_SECTIONS: comma-separated of library,service,proof, default all)
 */
import { createServer } from "node:http";
import { monitorEventLoopDelay } from "node:perf_hooks";
import { loadConfig } from "../services/config.js";
import { startService } from "../services/service.js";
import { BASE_MODEL_SPECS } from "../services/lm/baseModels.js";
import { countingQuestions, oneDigitPrompt } from "../services/lm/corpus.js";
import { PROOF_DEFAULTS, runHeldOutProof } from "../services/lm/heldOutProof.js";
import { loadModel, RL_DEFAULTS, trainRl, trainSft, type RlGroup, type TrainingProgress } from "../services/lm/index.js";
import { decodeWeights } from "../services/lm/weightsFormat.js";
import { BENCH_AUTH, BENCH_KEY, inProcessServiceLog, startBenchClickHouse } from "./support.js";
import { benchBaseModel, createModel, jobEnded, rlJob, SAMPLING, sampleTrajectories, trainingApi, user, type Sampled } from "./trainingApi.js";

const SECTIONS = new Set((process.env.BENCH_LM_SECTIONS ?? "library,service,proof").split(","));

const SEEDS = (process.env.BENCH_LM_SEEDS ?? "7,1,2").split(",").map(Number);
const PROOF = {
  ...PROOF_DEFAULTS,
  rounds: Number(process.env.BENCH_LM_ROUNDS ?? PROOF_DEFAULTS.rounds),
  learningRate: Number(process.env.BENCH_LM_LR ?? PROOF_DEFAULTS.learningRate),
};
const quiet: TrainingProgress = { started: () => {}, step: () => {} };

/** Longest event-loop delay (ms) while `work` runs: how long one synchronous step holds the loop. */
async function blockedMs(work: () => Promise<unknown>): Promise<number> {
  const monitor = monitorEventLoopDelay({ resolution: 10 });
  monitor.enable();
  // The monitor measures from its own previous tick: let it tick once before the work starts.
  await new Promise((r) => setTimeout(r, 50));
  await work();
  await new Promise((r) => setTimeout(r, 50)); // the timer that fired late records the block
  monitor.disable();
  return monitor.max / 1e6;
}

const libraryGroups = (sampled: Sampled[][]): RlGroup[] =>
  sampled.map((group) => ({
    trajectories: group.map(({ prompt, completion, reward }) => ({
      reward,
      items: [{ kind: "context" as const, turn: user(prompt)[0]! }, { kind: "choice" as const, choice: { content: completion.text, sampled: completion.tokens } }],
    })),
  }));

/** One RL step of 32 trajectories of sampled answers, timed and its event-loop block measured. */
async function rlStepFigures(base: Uint8Array, sampled: Sampled[][]): Promise<string> {
  const started = Date.now();
  const blocked = await blockedMs(() => trainRl(base, libraryGroups(sampled), RL_DEFAULTS, quiet));
  return `RL: one step of 32 trajectories ${Date.now() - started} ms, longest event-loop block ${blocked.toFixed(0)} ms (the library called on this thread)`;
}

const sftRows = () => countingQuestions().slice(0, 32).map((q) => ({ messages: [...user(oneDigitPrompt(q)), { role: "assistant" as const, content: String(q.answer) }] }));

/** A `/call/start` every 25 ms while `work` runs: the slowest answer (ms). */
async function slowestCallStart(url: string, work: () => Promise<unknown>): Promise<number> {
  let slowest = 0;
  let running = true;
  let n = 0;
  const probe = (async () => {
    while (running) {
      const i = n++;
      const started = performance.now();
      const res = await fetch(`${url}/call/start`, {
        method: "POST",
        headers: { "content-type": "application/json", authorization: BENCH_AUTH },
        body: JSON.stringify({ start: { project_id: "bench/lm", id: `probe-${Date.now()}-${i}`, trace_id: `probe-${i}`, op_name: "probe", started_at: new Date().toISOString(), attributes: {}, inputs: {} } }),
      });
      await res.text();
      if (res.status !== 200) throw new Error(`/call/start answered ${res.status}`);
      slowest = Math.max(slowest, performance.now() - started);
      await new Promise((r) => setTimeout(r, 25));
    }
  })();
  try {
    await work();
  } finally {
    running = false;
    await probe;
  }
  return slowest;
}

/**
 * The RL step and SFT steps above as training jobs of a service in this process (ROLE=all, its
 * own ClickHouse): submitted over HTTP, events polled until the end. This thread answers the
 * service's requests; training runs in its model thread.
 */
async function serviceFigures(sampled: Sampled[][]): Promise<string[]> {
  const bench = await startBenchClickHouse("lm");
  const data = createServer((_req, res) => res.writeHead(200, { "content-type": "application/jsonl" }).end(sftRows().map((r) => JSON.stringify(r)).join("\n") + "\n"));
  await new Promise<void>((done) => data.listen(0, "127.0.0.1", done));
  const address = data.address();
  const dataUrl = `http://127.0.0.1:${typeof address === "object" && address ? address.port : 0}/data.jsonl`;
  const service = await startService(
    loadConfig({
      PORT: "0", HOST: "127.0.0.1", CLICKHOUSE_URL: bench.ch.url, CLICKHOUSE_DATABASE: "bench_lm", DATA_DIR: bench.dir,
      AUTH_KEYS: JSON.stringify([{ key: BENCH_KEY, username: "bench", entities: ["*"] }]),
    }),
    inProcessServiceLog(),
  );
  try {
    const url = service.url!;
    const api = trainingApi(url);
    const rlModel = await createModel(api, "lm", "rl");
    const sftModel = await createModel(api, "lm", "sft");
    const measured = async (what: string, work: () => Promise<unknown>) => {
      let slowest = 0;
      const started = Date.now();
      const blocked = await blockedMs(async () => {
        slowest = await slowestCallStart(url, work);
      });
      return `${what}: ${Date.now() - started} ms, longest event-loop block of the thread that answers requests ${blocked.toFixed(0)} ms, slowest /call/start ${slowest.toFixed(0)} ms`;
    };
    const rl = () => rlJob(api, rlModel, sampled);
    const sftJob = async () => {
      const { id } = await api<{ id: string }>("POST", "/v1/preview/sft-training-jobs", { model_id: sftModel, training_data_url: dataUrl, config: { batch_size: 8, learning_rate: 1e-3 } });
      await jobEnded(api, id);
    };
    return [
      // What this machine does to the thread with no job at all (other processes, the probe's own requests).
      await measured("no job, 3 s", () => new Promise((r) => setTimeout(r, 3_000))),
      await measured("RL job, the service's first (its model thread starts, tfjs loads there), submitted to ended", rl),
      await measured("RL job again (the same step on the new checkpoint)", rl),
      await measured("SFT job (the same 4 steps)", sftJob),
    ];
  } finally {
    await service.stop();
    await new Promise((done) => data.close(done));
    await bench.stop();
  }
}

async function main(): Promise<void> {
  const spec = BASE_MODEL_SPECS[0]!;
  const base = await benchBaseModel();
  const meta = decodeWeights(base).meta;
  console.log(`base model ${spec.info.id}: ${meta.steps} steps of ${meta.batch_size} dialogs, built in ${meta.build_seconds ?? "?"} s wall / ${meta.build_cpu_seconds ?? "?"} s CPU, final loss ${meta.final_loss ?? "?"}`);

  const sampled = await sampleTrajectories(base);
  if (SECTIONS.has("library")) await libraryFigures(base, sampled);
  if (SECTIONS.has("service")) {
    console.log("Training jobs through a service in this process (issue 28: nothing blocks the thread that answers requests):");
    for (const line of await serviceFigures(sampled)) console.log(`  ${line}`);
  }
  if (SECTIONS.has("proof")) await proofFigures(base);
}

async function libraryFigures(base: Uint8Array, sampled: Sampled[][]): Promise<void> {
  const model = await loadModel(base);
  const genStart = Date.now();
  let tokens = 0;
  for (let i = 0; i < 4; i++) tokens += (await model.complete([{ role: "user", content: "Hello!" }], { ...SAMPLING, maxTokens: 48, seed: i })).completionTokens;
  console.log(`generation: ${tokens} tokens in ${Date.now() - genStart} ms = ${(tokens / ((Date.now() - genStart) / 1000)).toFixed(1)} tokens/s (one sequence, no KV cache)`);
  model.dispose();

  const sftStart = Date.now();
  const sftBlocked = await blockedMs(() => trainSft(base, sftRows(), { learningRate: 1e-3, batchSize: 8, assistantTurns: "all" }, quiet));
  console.log(`SFT: ${((Date.now() - sftStart) / 4).toFixed(0)} ms per step (8 dialogs of ~45 tokens), longest event-loop block ${sftBlocked.toFixed(0)} ms (the library called on this thread)`);

  console.log(await rlStepFigures(base, sampled));
}

async function proofFigures(base: Uint8Array): Promise<void> {
  console.log(`RL held-out proof (format reward; ${PROOF.rounds} rounds of ${PROOF.promptsPerRound} prompts × ${PROOF.samples} samples, learning rate ${PROOF.learningRate}; held-out: ${PROOF.evalSamples} seeded samples per prompt at temperature 1)`);
  for (const seed of SEEDS) {
    const started = Date.now();
    const r = await runHeldOutProof(base, { ...PROOF, seed });
    const secs = ((Date.now() - started) / 1000).toFixed(1);
    console.log(`  seed ${seed}: train-prompt reward per round ${r.trainRewards.map((x) => x.toFixed(3)).join(", ")}; ` +
      `held-out (${r.heldOutPrompts} prompts) format ${r.before.format.toFixed(3)} → ${r.after.format.toFixed(3)}, right digit ${r.before.correct.toFixed(3)} → ${r.after.correct.toFixed(3)} (${secs} s)`);
  }
}

await main();
