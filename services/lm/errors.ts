/** Errors of the language model library, told apart by type. */

/** Bytes given as weights that are not a model this library wrote (wrong magic, version, shapes or checksum). */
export class InvalidWeightsError extends Error {
  override readonly name = "InvalidWeightsError";
}

/** Training stopped because its AbortSignal fired (between steps); `name` is "AbortError" as for fetch. */
export class TrainingAbortedError extends Error {
  override readonly name = "AbortError";
  constructor() {
    super("training was aborted");
  }
}

/** Input a training step cannot use (no trainable tokens at all, an empty dataset). */
export class TrainingInputError extends Error {
  override readonly name = "TrainingInputError";
}
