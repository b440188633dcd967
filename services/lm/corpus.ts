import type { Random } from "./random.js";
import type { ChatTurn } from "./types.js";

/**
 * The base model's training corpus: short chat dialogs drawn by a seeded generator from the
 * text below (written for this project): greetings, simple facts, and single-digit arithmetic.
 * Arithmetic questions in HELD_OUT never appear, so they measure what the model generalises;
 * "Answer with one digit." is answered by the digit most of the time and by the written-out sum
 * otherwise (e.g. "3+4=7"), so the base model is right sometimes but not always.
 */
const GREETINGS: readonly [string, readonly string[]][] = [
  ["Hello!", ["Hello! How can I help you today?", "Hi! What can I do for you?"]],
  ["Hi", ["Hi there! How can I help?", "Hello! What would you like to know?"]],
  ["Hey, how are you?", ["I am doing well, thank you. How can I help you?"]],
  ["Good morning!", ["Good morning! What can I do for you today?"]],
  ["Good evening.", ["Good evening! How can I help?"]],
  ["Thank you!", ["You are welcome!", "Glad I could help."]],
  ["Thanks a lot.", ["You are welcome. Anything else?"]],
  ["Bye!", ["Goodbye! Have a nice day.", "Bye! Take care."]],
  ["Who are you?", ["I am a small language model trained by tracehouse."]],
  ["What can you do?", ["I can answer simple questions and do small sums."]],
];

const FACTS: readonly [string, string][] = [
  ["What is the capital of France?", "Paris."],
  ["What is the capital of Italy?", "Rome."],
  ["What is the capital of Japan?", "Tokyo."],
  ["What is the capital of Spain?", "Madrid."],
  ["What is the capital of Germany?", "Berlin."],
  ["What color is the sky?", "The sky is blue."],
  ["What color is grass?", "Grass is green."],
  ["What color is snow?", "Snow is white."],
  ["How many legs does a dog have?", "A dog has four legs."],
  ["How many legs does a bird have?", "A bird has two legs."],
  ["How many days are in a week?", "There are seven days in a week."],
  ["How many months are in a year?", "There are twelve months in a year."],
  ["What do bees make?", "Bees make honey."],
  ["What do cows drink?", "Cows drink water."],
  ["What is ice?", "Ice is frozen water."],
  ["Is the sun a star?", "Yes, the sun is a star."],
  ["Is a cat a fish?", "No, a cat is a mammal."],
  ["What is the opposite of hot?", "Cold."],
  ["What is the opposite of up?", "Down."],
  ["What comes after Monday?", "Tuesday."],
  ["What comes after Friday?", "Saturday."],
  ["What is the first letter of the alphabet?", "A."],
  ["What is the largest planet?", "Jupiter."],
  ["What do plants need to grow?", "Light, water and soil."],
];

const SYSTEM_PROMPTS: readonly string[] = ["You are a helpful assistant.", "Answer briefly.", "You are a friendly math tutor."];

export interface ArithmeticQuestion {
  readonly a: number;
  readonly b: number;
  readonly op: "+" | "-";
  readonly answer: number;
}

/** All single-digit sums and differences with a single-digit result (a+b ≤ 9, a−b ≥ 0). */
export function arithmeticQuestions(): ArithmeticQuestion[] {
  const out: ArithmeticQuestion[] = [];
  for (let a = 0; a <= 9; a++) {
    for (let b = 0; b <= 9; b++) {
      if (a + b <= 9) out.push({ a, b, op: "+", answer: a + b });
      if (a - b >= 0) out.push({ a, b, op: "-", answer: a - b });
    }
  }
  return out;
}

/** About one question in five, never in the corpus: the held-out set of the RL proof. */
export function isHeldOut(q: ArithmeticQuestion): boolean {
  return (q.a * 7 + q.b * 3 + (q.op === "+" ? 0 : 2)) % 5 === 0;
}

export function oneDigitPrompt(q: ArithmeticQuestion): string {
  return `What is ${q.a}${q.op}${q.b}? Answer with one digit.`;
}

/** The reward of the RL proof: the first digit of the completion is the right answer. */
export function oneDigitReward(q: ArithmeticQuestion, completion: string): number {
  const digit = /[0-9]/.exec(completion);
  return digit?.[0] === String(q.answer) ? 1 : 0;
}

function arithmeticTurns(q: ArithmeticQuestion, random: Random): ChatTurn[] {
  const written = `${q.a}${q.op}${q.b}=${q.answer}`;
  const word = q.op === "+" ? "plus" : "minus";
  switch (random.int(4)) {
    case 0:
    case 1:
      return [{ role: "user", content: oneDigitPrompt(q) }, { role: "assistant", content: random.next() < 0.7 ? String(q.answer) : written }];
    case 2:
      return [{ role: "user", content: `What is ${q.a} ${word} ${q.b}?` }, { role: "assistant", content: `${q.a} ${word} ${q.b} is ${q.answer}.` }];
    default:
      return [{ role: "user", content: `Compute ${q.a}${q.op}${q.b}.` }, { role: "assistant", content: written }];
  }
}

/** One dialog of the corpus: an optional system prompt (10%), then one exchange (or two, 10%): 70% arithmetic. */
export function corpusDialog(random: Random, questions: readonly ArithmeticQuestion[]): ChatTurn[] {
  const turns: ChatTurn[] = random.next() < 0.1 ? [{ role: "system", content: random.pick(SYSTEM_PROMPTS) }] : [];
  const exchanges = random.next() < 0.1 ? 2 : 1;
  for (let i = 0; i < exchanges; i++) {
    const kind = random.next();
    if (kind < 0.15) {
      const [user, answers] = random.pick(GREETINGS);
      turns.push({ role: "user", content: user }, { role: "assistant", content: random.pick(answers) });
    } else if (kind < 0.3) {
      const [user, answer] = random.pick(FACTS);
      turns.push({ role: "user", content: user }, { role: "assistant", content: answer });
    } else {
      turns.push(...arithmeticTurns(random.pick(questions), random));
    }
  }
  return turns;
}
