import type { ParamBuilder } from "../sql.js";

/**
 * The inputs and output a span's attributes repeat, stored once (docs/architecture.md, "A
 * span's inputs and output stored once"). The OTLP mapping makes a call's inputs and output
 * of the attribute that carries them as JSON text (`gen_ai.input.messages`, `input.value`):
 * where that text is exactly the JSON text the row stores in `inputs` (or in its `value`, the
 * wrapper of a list) or in `output`, the row's attributes text holds a mark in its place, and
 * every read puts the text back. The attribute's leaf stays in `json_values`, so its filters
 * and sorts are unchanged, and a text written otherwise (spaces after the commas) is kept.
 *
 * A mark is U+0001 and a letter, where the attribute's quoted string was. JSON.stringify,
 * which writes every stored text, escapes each character below U+0020: no stored text holds
 * U+0001 otherwise, so the marks need no column of their own.
 */
const MARK = "\u0001";

/** The inputs of a list: `{"value": <list>}` (otlp/attributes.ts). */
const VALUE_OPEN = '{"value":';

interface Copy {
  /** The mark's letter, after MARK. */
  readonly letter: string;
  /** The text the attribute repeats, of the row's stored inputs and output. */
  source(inputs: string, output: string | null): string | null;
  /** The same in SQL over the row. */
  readonly sql: string;
}

const WHOLE_INPUTS: Copy = { letter: "I", source: (inputs) => inputs, sql: "inputs" };
const INPUTS_VALUE: Copy = {
  letter: "V",
  source: (inputs) => (inputs.startsWith(VALUE_OPEN) ? inputs.slice(VALUE_OPEN.length, -1) : null),
  sql: `substring(inputs, ${VALUE_OPEN.length + 1}, length(inputs) - ${VALUE_OPEN.length + 1})`,
};
const OUTPUT: Copy = { letter: "O", source: (_inputs, output) => output, sql: "ifNull(output, '')" };
const COPIES = [WHOLE_INPUTS, INPUTS_VALUE, OUTPUT] as const;

const COLON = 0x3a;
/** Every mark, for `withCopiesAsNull`. */
const MARKS = new RegExp(`${MARK}[${COPIES.map((copy) => copy.letter).join("")}]`, "g");

/** Shorter texts are left where they are: a mark would save next to nothing. */
const MIN_COPY_CHARS = 16;

/**
 * The attributes text to store: the first attribute repeating the inputs, and the first
 * repeating the output, marked. Inputs wrapped as a list's are looked for as their value first.
 */
export function withoutIoCopies(attributes: string, inputs: string, output: string | null): string {
  const [first, second] = inputs.startsWith(VALUE_OPEN) ? [INPUTS_VALUE, WHOLE_INPUTS] : [WHOLE_INPUTS, INPUTS_VALUE];
  const inputsMarked = marked(attributes, first, inputs, output) ?? marked(attributes, second, inputs, output) ?? attributes;
  return marked(inputsMarked, OUTPUT, inputs, output) ?? inputsMarked;
}

/**
 * `text` with the object value that is the quoted `copy` replaced by its mark, or null when
 * none is. `:` then a quote opens a string that is an object's value (inside a string a quote
 * is escaped), and a quoted text ends at its own closing quote: a match is a whole value.
 */
function marked(text: string, copy: Copy, inputs: string, output: string | null): string | null {
  const source = copy.source(inputs, output);
  if (source === null || source.length < MIN_COPY_CHARS || source.length > text.length) return null;
  const quoted = JSON.stringify(source);
  for (let at = text.indexOf(quoted); at > 0; at = text.indexOf(quoted, at + 1)) {
    if (text.charCodeAt(at - 1) === COLON) return `${text.slice(0, at)}${MARK}${copy.letter}${text.slice(at + quoted.length)}`;
  }
  return null;
}

/** The attributes text as written, of a row's stored attributes, inputs and output. */
export function withIoCopies(attributes: string, inputs: string | undefined, output: string | null | undefined): string {
  if (!attributes.includes(MARK)) return attributes;
  if (inputs === undefined || output === undefined) throw new Error("a call's attributes were read without its inputs and output");
  let text = attributes;
  for (const copy of COPIES) {
    const at = text.indexOf(`${MARK}${copy.letter}`);
    if (at >= 0) text = `${text.slice(0, at)}${JSON.stringify(copy.source(inputs, output) ?? "")}${text.slice(at + 2)}`;
  }
  return text;
}

/**
 * The attributes text with each mark as `null`: JSON again, without the copies, for a reader
 * that reads the attributes alone and needs no copy (evalResults' trial children).
 */
export const withCopiesAsNull = (attributes: string): string => (attributes.includes(MARK) ? attributes.replace(MARKS, "null") : attributes);

/**
 * `withIoCopies` in SQL over a `calls` row, of `text` (the row's attributes or a part of them
 * that cuts no mark). ClickHouse's replace functions take constant
 * replacements only: the text is split at the marks and each piece after one starts with its
 * letter. The quoting is JSON.stringify's for these texts (JSON texts themselves: no raw
 * control character or lone surrogate, so only `\` and `"` are escaped).
 */
export function withIoCopiesSql(text: string, pb: ParamBuilder): string {
  const quoted = (sql: string) => String.raw`concat('"', replaceAll(replaceAll(${sql}, '\\', '\\\\'), '"', '\\"'), '"')`;
  const byLetter = COPIES.slice(0, -1).map((copy) => `substring(piece, 1, 1) = ${pb.str(copy.letter)}, ${quoted(copy.sql)}`);
  const source = `multiIf(${byLetter.join(", ")}, ${quoted(COPIES[COPIES.length - 1]!.sql)})`;
  const pieces = `splitByChar(${pb.str(MARK)}, ${text})`;
  const restored = `arrayStringConcat(arrayMap((piece, i) -> if(i = 1, piece, concat(${source}, substring(piece, 2))), ${pieces}, arrayEnumerate(${pieces})))`;
  return `if(position(${text}, ${pb.str(MARK)}) = 0, ${text}, ${restored})`;
}
