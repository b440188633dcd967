import type * as tfTypes from "@tensorflow/tfjs";
import { Random } from "./random.js";

type Tf = typeof tfTypes;
type Tensor = tfTypes.Tensor;

/** A causal, pre-norm transformer over byte tokens, with learned positions. */
export interface TransformerConfig {
  readonly vocabSize: number;
  readonly contextLength: number;
  readonly dModel: number;
  readonly layers: number;
  readonly heads: number;
  readonly ffDim: number;
}

/** Parameter tensors by name (the names and shapes `parameterShapes` lists). */
export type Parameters = Readonly<Record<string, Tensor>>;

export function parameterShapes(c: TransformerConfig): [string, number[]][] {
  const shapes: [string, number[]][] = [
    ["tok_emb", [c.vocabSize, c.dModel]],
    ["pos_emb", [c.contextLength, c.dModel]],
  ];
  for (let i = 0; i < c.layers; i++) {
    shapes.push(
      [`l${i}.ln1.g`, [c.dModel]], [`l${i}.ln1.b`, [c.dModel]],
      [`l${i}.attn.qkv`, [c.dModel, 3 * c.dModel]], [`l${i}.attn.qkv_b`, [3 * c.dModel]],
      [`l${i}.attn.out`, [c.dModel, c.dModel]], [`l${i}.attn.out_b`, [c.dModel]],
      [`l${i}.ln2.g`, [c.dModel]], [`l${i}.ln2.b`, [c.dModel]],
      [`l${i}.mlp.in`, [c.dModel, c.ffDim]], [`l${i}.mlp.in_b`, [c.ffDim]],
      [`l${i}.mlp.out`, [c.ffDim, c.dModel]], [`l${i}.mlp.out_b`, [c.dModel]],
    );
  }
  shapes.push(["ln_f.g", [c.dModel]], ["ln_f.b", [c.dModel]], ["head", [c.dModel, c.vocabSize]]);
  return shapes;
}

/** Fresh weights drawn from a seeded generator (GPT-2's scheme: N(0, 0.02), residual outputs scaled down). */
export function initialParameters(c: TransformerConfig, seed: number): Map<string, Float32Array> {
  const random = new Random(seed);
  const out = new Map<string, Float32Array>();
  for (const [name, shape] of parameterShapes(c)) {
    const values = new Float32Array(shape.reduce((a, b) => a * b, 1));
    if (name.endsWith(".g")) values.fill(1);
    else if (shape.length === 2) {
      const std = name.endsWith("attn.out") || name.endsWith("mlp.out") ? 0.02 / Math.sqrt(2 * c.layers) : 0.02;
      for (let i = 0; i < values.length; i++) values[i] = random.normal() * std;
    }
    out.set(name, values);
  }
  return out;
}

function param(p: Parameters, name: string): Tensor {
  const t = p[name];
  if (!t) throw new Error(`missing parameter ${name}`);
  return t;
}

function layerNorm(tf: Tf, x: Tensor, g: Tensor, b: Tensor): Tensor {
  const { mean, variance } = tf.moments(x, -1, true);
  return tf.add(tf.mul(tf.mul(tf.sub(x, mean), tf.rsqrt(tf.add(variance, 1e-5))), g), b);
}

/** [B·T, d] → [B·H, T, d/H] */
function splitHeads(tf: Tf, x: Tensor, b: number, t: number, h: number): Tensor {
  const dh = x.shape[1]! / h;
  return tf.reshape(tf.transpose(tf.reshape(x, [b, t, h, dh]), [0, 2, 1, 3]), [b * h, t, dh]);
}

function attention(tf: Tf, c: TransformerConfig, p: Parameters, i: number, x: Tensor, b: number, t: number): Tensor {
  const d = c.dModel;
  const qkv = tf.add(tf.matMul(x, param(p, `l${i}.attn.qkv`)), param(p, `l${i}.attn.qkv_b`));
  const [q, k, v] = tf.split(qkv, 3, 1) as [Tensor, Tensor, Tensor];
  const scores = tf.mul(tf.matMul(splitHeads(tf, q, b, t, c.heads), splitHeads(tf, k, b, t, c.heads), false, true), 1 / Math.sqrt(d / c.heads));
  const lower = tf.linalg.bandPart(tf.ones([t, t]), -1, 0);
  const masked = tf.add(scores, tf.mul(tf.sub(1, lower), -1e9));
  const mixed = tf.matMul(tf.softmax(masked), splitHeads(tf, v, b, t, c.heads));
  const merged = tf.reshape(tf.transpose(tf.reshape(mixed, [b, c.heads, t, d / c.heads]), [0, 2, 1, 3]), [b * t, d]);
  return tf.add(tf.matMul(merged, param(p, `l${i}.attn.out`)), param(p, `l${i}.attn.out_b`));
}

function mlp(tf: Tf, p: Parameters, i: number, x: Tensor): Tensor {
  const hidden = tf.relu(tf.add(tf.matMul(x, param(p, `l${i}.mlp.in`)), param(p, `l${i}.mlp.in_b`)));
  return tf.add(tf.matMul(hidden, param(p, `l${i}.mlp.out`)), param(p, `l${i}.mlp.out_b`));
}

/**
 * The residual stream after every block, [B·T, d], for int32 tokens [B, T] (T ≤ contextLength).
 * Embeddings are a one-hot matmul: the wasm backend has no gradient for gather.
 */
function hiddenStates(tf: Tf, c: TransformerConfig, p: Parameters, tokens: Tensor): Tensor {
  const [b, t] = tokens.shape as [number, number];
  if (t > c.contextLength) throw new Error(`sequence of ${t} tokens exceeds the context length ${c.contextLength}`);
  const oneHot = tf.oneHot(tf.reshape(tokens, [b * t]), c.vocabSize).toFloat();
  const positions = tf.tile(tf.slice(param(p, "pos_emb"), [0, 0], [t, c.dModel]), [b, 1]);
  let x = tf.add(tf.matMul(oneHot, param(p, "tok_emb")), positions);
  for (let i = 0; i < c.layers; i++) {
    x = tf.add(x, attention(tf, c, p, i, layerNorm(tf, x, param(p, `l${i}.ln1.g`), param(p, `l${i}.ln1.b`)), b, t));
    x = tf.add(x, mlp(tf, p, i, layerNorm(tf, x, param(p, `l${i}.ln2.g`), param(p, `l${i}.ln2.b`))));
  }
  return x;
}

function head(tf: Tf, p: Parameters, x: Tensor): Tensor {
  return tf.matMul(layerNorm(tf, x, param(p, "ln_f.g"), param(p, "ln_f.b")), param(p, "head"));
}

/** Logits at every position: [B·T, V] (row b·T + t predicts token t+1 of sequence b). */
export function logitsAll(tf: Tf, c: TransformerConfig, p: Parameters, tokens: Tensor): Tensor {
  return head(tf, p, hiddenStates(tf, c, p, tokens));
}

/** Logits of the next token after each sequence: [B, V]. */
export function logitsLast(tf: Tf, c: TransformerConfig, p: Parameters, tokens: Tensor): Tensor {
  const [b, t] = tokens.shape as [number, number];
  const x = tf.reshape(hiddenStates(tf, c, p, tokens), [b, t, c.dModel]);
  return head(tf, p, tf.reshape(tf.slice(x, [0, t - 1, 0], [b, 1, c.dModel]), [b, c.dModel]));
}
