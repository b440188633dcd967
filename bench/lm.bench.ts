/**
 * The built-in language model (issue 10): base-model build figures, generation speed, SFT and
 * RL step times (and how long one blocks the event loop), and the RL proof on held-out prompts
 * (services/lm/heldOutProof.ts: a format reward, RL on 104 digit questions, measured on 34
 * others it never saw), once per seed.
 *
 *   npx tsx bench/lm.bench.ts   (BENCH_LM_SEEDS: comma-separated RL seeds, default 7,1,2;
 *                                BENCH_LM_ROUNDS, BENCH_LM_LR: RL rounds and learning rate, default PROOF_DEFAULTS')
 */
import { monitorEventLoopDelay } from "node:perf_hooks";
import { BASE_MODEL_SPECS } from "../services/lm/baseModels.js";
import { countingQuestions, oneDigitPrompt } from "../services/lm/corpus.js";
import { PROOF_DEFAULTS, runHeldOutProof } from "../services/lm/heldOutProof.js";
import { baseModelWeights, loadModel, RL_DEFAULTS, trainRl, trainSft, type RlGroup, type SamplingOptions, type TrainingProgress } from "../services/lm/index.js";
import { decodeWeights } from "../services/lm/weightsFormat.js";

const SEEDS = (process.env.BENCH_LM_SEEDS ?? "7,1,2").split(",").map(Number);
const PROOF = {
  ...PROOF_DEFAULTS,
  rounds: Number(process.env.BENCH_LM_ROUNDS ?? PROOF_DEFAULTS.rounds),
  learningRate: Number(process.env.BENCH_LM_LR ?? PROOF_DEFAULTS.learningRate),
};
const SAMPLING: SamplingOptions = { temperature: 1, topP: 1, maxTokens: 8, stop: [], topLogprobs: 0 };
const quiet: TrainingProgress = { started: () => {}, step: () => {} };

const user = (question: string) => [{ role: "user" as const, content: question }];

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

/** One RL step of 32 trajectories of sampled answers, timed and its event-loop block measured. */
async function rlStepFigures(base: Uint8Array): Promise<string> {
  const model = await loadModel(base);
  const groups: RlGroup[] = [];
  for (const q of countingQuestions().slice(0, 4)) {
    const trajectories = [];
    for (let s = 0; s < 8; s++) {
      const c = await model.complete(user(oneDigitPrompt(q)), { ...SAMPLING, seed: s });
      trajectories.push({ reward: s % 2, items: [{ kind: "context" as const, turn: user(oneDigitPrompt(q))[0]! }, { kind: "choice" as const, choice: { content: c.text, sampled: c.tokens } }] });
    }
    groups.push({ trajectories });
  }
  model.dispose();
  const started = Date.now();
  const blocked = await blockedMs(() => trainRl(base, groups, RL_DEFAULTS, quiet));
  return `RL: one step of 32 trajectories ${Date.now() - started} ms, longest event-loop block ${blocked.toFixed(0)} ms`;
}

async function main(): Promise<void> {
  const spec = BASE_MODEL_SPECS[0]!;
  const base = await baseModelWeights(spec.info.id);
  if (!base) throw new Error("no base model");
  const meta = decodeWeights(base).meta;
  console.log(`base model ${spec.info.id}: ${meta.steps} steps of ${meta.batch_size} dialogs, built in ${meta.build_seconds ?? "?"} s wall / ${meta.build_cpu_seconds ?? "?"} s CPU, final loss ${meta.final_loss ?? "?"}`);

  const model = await loadModel(base);
  const genStart = Date.now();
  let tokens = 0;
  for (let i = 0; i < 4; i++) tokens += (await model.complete([{ role: "user", content: "Hello!" }], { ...SAMPLING, maxTokens: 48, seed: i })).completionTokens;
  console.log(`generation: ${tokens} tokens in ${Date.now() - genStart} ms = ${(tokens / ((Date.now() - genStart) / 1000)).toFixed(1)} tokens/s (one sequence, no KV cache)`);
  model.dispose();

  const sftExamples = countingQuestions().slice(0, 32).map((q) => ({ messages: [...user(oneDigitPrompt(q)), { role: "assistant" as const, content: String(q.answer) }] }));
  const sftStart = Date.now();
  const sftBlocked = await blockedMs(() => trainSft(base, sftExamples, { learningRate: 1e-3, batchSize: 8, assistantTurns: "all" }, quiet));
  console.log(`SFT: ${((Date.now() - sftStart) / 4).toFixed(0)} ms per step (8 dialogs of ~45 tokens), longest event-loop block ${sftBlocked.toFixed(0)} ms`);

  console.log(await rlStepFigures(base));

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
