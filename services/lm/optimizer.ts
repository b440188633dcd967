import type * as tfTypes from "@tensorflow/tfjs";

type Tf = typeof tfTypes;
type Tensor = tfTypes.Tensor;

const BETA1 = 0.9;
const BETA2 = 0.999;
const EPSILON = 1e-8;
/** Gradients are scaled down to this global L2 norm when larger. */
export const MAX_GRAD_NORM = 1.0;

/**
 * Adam over a dictionary of plain tensors (no tf.Variable: parameters are replaced by new
 * tensors each step, the old ones disposed). Its moments live only for one training job.
 */
export class Adam {
  private readonly m: Record<string, Tensor> = {};
  private readonly v: Record<string, Tensor> = {};
  private t = 0;

  constructor(private readonly tf: Tf) {}

  /** Updates `params` in place (new tensors); returns the gradient's global norm before clipping. */
  step(params: Record<string, Tensor>, grads: Record<string, Tensor>, learningRate: number): number {
    const tf = this.tf;
    this.t++;
    const norm = tf.tidy(() => tf.sqrt(tf.addN(Object.values(grads).map((g) => tf.sum(tf.square(g))))).dataSync()[0] as number);
    const scale = Number.isFinite(norm) && norm > MAX_GRAD_NORM ? MAX_GRAD_NORM / norm : 1;
    const correction1 = 1 - BETA1 ** this.t;
    const correction2 = 1 - BETA2 ** this.t;
    for (const name of Object.keys(params)) {
      const grad = grads[name];
      const param = params[name] as Tensor;
      if (!grad) continue;
      const [m, v, next] = tf.tidy(() => {
        const g = tf.mul(grad, scale);
        const m = tf.add(tf.mul(this.m[name] ?? tf.zerosLike(g), BETA1), tf.mul(g, 1 - BETA1));
        const v = tf.add(tf.mul(this.v[name] ?? tf.zerosLike(g), BETA2), tf.mul(tf.square(g), 1 - BETA2));
        const update = tf.div(tf.div(m, correction1), tf.add(tf.sqrt(tf.div(v, correction2)), EPSILON));
        return [m, v, tf.sub(param, tf.mul(update, learningRate))];
      });
      this.m[name]?.dispose();
      this.v[name]?.dispose();
      param.dispose();
      this.m[name] = m;
      this.v[name] = v;
      params[name] = next;
    }
    return norm;
  }

  dispose(): void {
    for (const t of [...Object.values(this.m), ...Object.values(this.v)]) t.dispose();
  }
}
