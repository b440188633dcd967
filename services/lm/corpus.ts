import type { Random } from "./random.js";
import type { ChatTurn } from "./types.js";

/**
 * The base model's training corpus: short chat dialogs drawn by a seeded generator from the
 * text below (written for this project): greetings, simple facts, counting facts answered by
 * one digit (55% of the exchanges) and single-digit sums and differences (15%). A question
 * ending "Answer with one digit." is answered by the digit 70% of the time and in words
 * ("Four.") or written out ("3+4=7") otherwise, so the base model is right sometimes but not
 * always: room for RL to show. (A build of a few minutes learns the facts, not the sums.)
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

const DIGIT_WORDS = ["Zero", "One", "Two", "Three", "Four", "Five", "Six", "Seven", "Eight", "Nine"];

/** A question whose answer is one digit: the task of the RL proof. */
export interface DigitQuestion {
  readonly question: string;   // asked as `${question} Answer with one digit.`
  readonly answer: number;
}

/** Counting facts, each answered by one digit. */
const COUNTING: readonly [string, number][] = [
  ["How many legs does a cat have?", 4],
  ["How many legs does a spider have?", 8],
  ["How many legs does an insect have?", 6],
  ["How many legs does a chicken have?", 2],
  ["How many days are in a week?", 7],
  ["How many sides does a triangle have?", 3],
  ["How many sides does a square have?", 4],
  ["How many sides does a hexagon have?", 6],
  ["How many wheels does a bicycle have?", 2],
  ["How many wheels does a car have?", 4],
  ["How many wheels does a tricycle have?", 3],
  ["How many eyes does a person have?", 2],
  ["How many noses does a person have?", 1],
  ["How many fingers are on one hand?", 5],
  ["How many arms does an octopus have?", 8],
  ["How many planets are in the solar system?", 8],
  ["How many continents are there?", 7],
  ["How many colors are in a rainbow?", 7],
  ["How many seasons are in a year?", 4],
  ["How many hours are in a quarter of a day?", 6],
  ["How many strings does a violin have?", 4],
  ["How many players are on a volleyball team?", 6],
  ["How many vowels are in the word banana?", 3],
  ["How many letters are in the word cat?", 3],
  ["What is the number after eight?", 9],
  ["What is the number before one?", 0],
  ["How many corners does a rectangle have?", 4],
  ["How many hands does a clock usually have?", 3],
];

/** All single-digit sums and differences with a single-digit result (a+b ≤ 9, a−b ≥ 0). */
function arithmeticQuestions(): DigitQuestion[] {
  const out: DigitQuestion[] = [];
  for (let a = 0; a <= 9; a++) {
    for (let b = 0; b <= 9; b++) {
      if (a + b <= 9) out.push({ question: `What is ${a}+${b}?`, answer: a + b });
      if (a - b >= 0) out.push({ question: `What is ${a}-${b}?`, answer: a - b });
    }
  }
  return out;
}

export function countingQuestions(): DigitQuestion[] {
  return COUNTING.map(([question, answer]) => ({ question, answer }));
}

/** Every fourth counting question: the held-out prompts of the RL proof (bench/lm.bench.ts trains RL on the others). */
export function isHeldOut(q: DigitQuestion): boolean {
  return COUNTING.findIndex(([question]) => question === q.question) % 4 === 3;
}

export function oneDigitPrompt(q: DigitQuestion): string {
  return `${q.question} Answer with one digit.`;
}

/** The reward of the RL proof: the first digit of the completion is the right answer. */
export function oneDigitReward(q: DigitQuestion, completion: string): number {
  const digit = /[0-9]/.exec(completion);
  return digit?.[0] === String(q.answer) ? 1 : 0;
}

/** "Answer with one digit." is answered by the digit 70% of the time, else in words ("Four.") or written out ("3+4=7"). */
function digitTurns(q: DigitQuestion, random: Random): ChatTurn[] {
  const sum = /^What is (\d[+-]\d)\?$/.exec(q.question);
  const other = sum ? `${sum[1]}=${q.answer}` : `${DIGIT_WORDS[q.answer]}.`;
  if (random.next() < 0.85) return [{ role: "user", content: oneDigitPrompt(q) }, { role: "assistant", content: random.next() < 0.7 ? String(q.answer) : other }];
  return [{ role: "user", content: q.question }, { role: "assistant", content: sum ? other : `${DIGIT_WORDS[q.answer]}.` }];
}

const ALL_DIGIT_QUESTIONS = [...countingQuestions(), ...arithmeticQuestions()];

/** Every question answered by one digit: the 28 counting facts, then the 110 sums and differences. */
export function digitQuestions(): DigitQuestion[] {
  return [...ALL_DIGIT_QUESTIONS];
}

/** Every fourth of `digitQuestions()` (34 of 138): the held-out prompts of the format proof (services/lm/heldOutProof.ts). */
export function isHeldOutDigitQuestion(q: DigitQuestion): boolean {
  return ALL_DIGIT_QUESTIONS.findIndex((d) => d.question === q.question) % 4 === 3;
}

/**
 * The reward of the format proof: 1 when the completion is one bare digit and the model ended
 * its turn there ("7"), 0 otherwise ("Seven.", "3+4=7", "7 legs"). It reads only the form of the
 * answer, not the question, so what RL learns from it can carry over to questions it never saw.
 */
export function bareDigitReward(completion: { readonly text: string; readonly finishReason: string }): number {
  return /^[0-9]$/.test(completion.text) && completion.finishReason === "stop" ? 1 : 0;
}

/** One dialog of the corpus: an optional system prompt (10%), then one exchange (or two, 10%). */
export function corpusDialog(random: Random): ChatTurn[] {
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
    } else if (kind < 0.85) {
      turns.push(...digitTurns(random.pick(ALL_DIGIT_QUESTIONS.slice(0, COUNTING.length)), random));
    } else {
      turns.push(...digitTurns(random.pick(ALL_DIGIT_QUESTIONS.slice(COUNTING.length)), random));
    }
  }
  return turns;
}
