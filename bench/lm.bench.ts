/**
 * The built-in language model (issue 10): base-model build figures, generation speed, SFT and
 * RL step times, and the RL proof: mean reward of the base model and of the model after a few
 * RL steps, on held-out counting questions that RL never trained on.
 *
 *   npx tsx bench/lm.bench.ts   (BENCH_LM_ROUNDS: RL rounds, default 6; BENCH_LM_LR: RL learning rate, default RL_DEFAULTS')
 *
 * The task: "How many legs does a spider have? Answer with one digit." (the 28 counting facts of
 * services/lm/corpus.ts); reward 1 when the completion's first digit is the answer. RL trains on
 * 21 of them (every one each round, in a fresh order, 8 completions per prompt at temperature 1, the
 * completions' recorded logprobs sent along) and is measured on the held-out split
 * (services/lm/corpus.ts isHeldOut; the base model's corpus has all questions), 32 seeded
 * samples per prompt at temperature 1 (same seeds for both models) and one greedy answer.
 */
import { BASE_MODEL_SPECS } from "../services/lm/baseModels.js";
import { countingQuestions, isHeldOut, oneDigitPrompt, oneDigitReward, type DigitQuestion } from "../services/lm/corpus.js";
import { baseModelWeights, loadModel, RL_DEFAULTS, trainRl, trainSft, type RlGroup, type SamplingOptions, type TrainingProgress } from "../services/lm/index.js";
import { Random } from "../services/lm/random.js";
import { decodeWeights } from "../services/lm/weightsFormat.js";

const ROUNDS = Number(process.env.BENCH_LM_ROUNDS ?? 6);
const PROMPTS_PER_ROUND = 21;
const SAMPLES = 8;
const EVAL_SAMPLES = 32;
const LEARNING_RATE = Number(process.env.BENCH_LM_LR ?? RL_DEFAULTS.learningRate);
const SAMPLING: SamplingOptions = { temperature: 1, topP: 1, maxTokens: 8, stop: [], topLogprobs: 0 };
const quiet: TrainingProgress = { started: () => {}, step: () => {} };

const user = (q: DigitQuestion) => [{ role: "user" as const, content: oneDigitPrompt(q) }];

async function meanReward(weights: Uint8Array, questions: readonly DigitQuestion[]): Promise<{ sampled: number; greedy: number }> {
  const model = await loadModel(weights);
  let sampled = 0;
  let greedy = 0;
  for (const [i, q] of questions.entries()) {
    for (let s = 0; s < EVAL_SAMPLES; s++) sampled += oneDigitReward(q, (await model.complete(user(q), { ...SAMPLING, seed: 1000 * i + s })).text);
    greedy += oneDigitReward(q, (await model.complete(user(q), { ...SAMPLING, temperature: 0 })).text);
  }
  model.dispose();
  return { sampled: sampled / (questions.length * EVAL_SAMPLES), greedy: greedy / questions.length };
}

async function rlRound(weights: Uint8Array, questions: readonly DigitQuestion[], random: Random): Promise<{ weights: Uint8Array; reward: number; stepMs: number; steps: number }> {
  const model = await loadModel(weights);
  const groups: RlGroup[] = [];
  for (const q of random.shuffle(questions).slice(0, PROMPTS_PER_ROUND)) {
    const trajectories = [];
    for (let s = 0; s < SAMPLES; s++) {
      const c = await model.complete(user(q), { ...SAMPLING, seed: random.int(2 ** 31) });
      trajectories.push({
        reward: oneDigitReward(q, c.text),
        items: [{ kind: "context" as const, turn: user(q)[0]! }, { kind: "choice" as const, choice: { content: c.text, sampled: c.tokens } }],
      });
    }
    groups.push({ trajectories });
  }
  model.dispose();
  let steps = 0;
  const started = Date.now();
  const result = await trainRl(weights, groups, { ...RL_DEFAULTS, learningRate: LEARNING_RATE }, { started: () => {}, step: () => void steps++ });
  const reward = groups.flatMap((g) => g.trajectories).reduce((a, t) => a + t.reward, 0) / (groups.length * SAMPLES);
  return { weights: result.weights, reward, stepMs: (Date.now() - started) / steps, steps };
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

  const sftExamples = countingQuestions().slice(0, 32).map((q) => ({ messages: [...user(q), { role: "assistant" as const, content: String(q.answer) }] }));
  const sftStart = Date.now();
  await trainSft(base, sftExamples, { learningRate: 1e-3, batchSize: 8, assistantTurns: "all" }, quiet);
  console.log(`SFT: ${((Date.now() - sftStart) / 4).toFixed(0)} ms per step (8 dialogs of ~45 tokens)`);

  const heldOut = countingQuestions().filter(isHeldOut);
  const train = countingQuestions().filter((q) => !isHeldOut(q));
  const before = await meanReward(base, heldOut);
  let weights = base;
  const random = new Random(7);
  for (let round = 1; round <= ROUNDS; round++) {
    const r = await rlRound(weights, train, random);
    weights = r.weights;
    console.log(`RL round ${round}: mean reward of its ${PROMPTS_PER_ROUND * SAMPLES} samples ${r.reward.toFixed(3)}, ${r.steps} step(s), ${r.stepMs.toFixed(0)} ms per RL step (32 trajectories)`);
  }
  const after = await meanReward(weights, heldOut);
  console.log(`RL learning rate ${LEARNING_RATE}; held-out prompts (${heldOut.length}, ${EVAL_SAMPLES} samples each at temperature 1; greedy once):`);
  console.log(`  base model:       mean reward ${before.sampled.toFixed(3)} sampled, ${before.greedy.toFixed(3)} greedy`);
  console.log(`  after ${ROUNDS} RL rounds: mean reward ${after.sampled.toFixed(3)} sampled, ${after.greedy.toFixed(3)} greedy`);
}

await main();
