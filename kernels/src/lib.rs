//! The arithmetic of Lore's models that candle does not do well.
//!
//! For the embedded chat model (`engine::providers::gguf`): block-quantised
//! products ([`quant`]) and the whole Llama forward pass ([`llama`]).
//!
//! For the BERT encoder (`engine::embed::bert`): the 8-bit dense products ([`int8`]), and between the
//! products, on plain f32 slices, bias and activation, residual and layer
//! norm, attention, pooling.
//!
//! candle runs these as separate passes (bias, then residual, then norm) and
//! its `exp` and `erf` are scalar library calls, which cost as much as the
//! matrix products on a 2-core machine. Here each step is one pass, and `exp`
//! and `erf` are branch-free polynomials the compiler vectorises (8 lanes
//! with AVX2). Their accuracy is a few ulp (`exp`) and 1.5e-7 absolute
//! (`erf`, Abramowitz & Stegun 7.1.26): far below what an f32 model carries.
//!
//! Sums use eight partial accumulators: the compiler may not reorder float
//! additions itself, so a plain `iter().sum()` would stay scalar. Where a
//! loop needs its accumulators held in registers (attention's two products,
//! the integer product), it is written with explicit AVX2 vectors through
//! `safe_arch`, beside a plain-Rust version for other targets that the tests
//! check too.
//!
//! Work is split across rayon's pool (the one candle's matrix products use)
//! by rows or by sequence.
//!
//! This is its own crate so that the dev profile compiles it optimised (the
//! workspace `Cargo.toml`): unoptimised, none of it vectorises.

use rayon::prelude::*;

pub mod int8;
pub mod llama;
pub mod quant;

/// The activation after the intermediate dense layer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Activation {
    /// `x · Φ(x)` with the exact normal CDF (BERT's `gelu`).
    GeluErf,
    /// The tanh approximation (`gelu_new`).
    GeluTanh,
    Relu,
}

const LANES: usize = 8;

/// Rows per parallel task: enough work to be worth a hand-off.
const ROWS_PER_TASK: usize = 16;

/// A deterministic pseudo-random stream in [-1, 1), for tests.
#[cfg(test)]
pub(crate) fn noise(seed: u64, n: usize) -> Vec<f32> {
    let mut state = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
    (0..n)
        .map(|_| {
            state = state.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            ((state >> 40) as f32 / (1u64 << 24) as f32) * 2.0 - 1.0
        })
        .collect()
}

/// `e^x` for f32, branch-free: `2^n · e^r` with `|r| ≤ ln2/2` and a
/// degree-6 polynomial (Cephes' `expf` coefficients). Inputs are clamped to
/// `[-87, 88]`, where `e^x` stays a normal f32.
#[inline(always)]
pub fn exp(x: f32) -> f32 {
    // 1.5 · 2²³: adding it rounds to an integer held in the low mantissa bits.
    const ROUNDER: f32 = 12_582_912.0;
    const LN2_HI: f32 = 0.693_359_4;
    const LN2_LO: f32 = -2.121_944_4e-4;
    let x = x.clamp(-87.0, 88.0);
    let shifted = x.mul_add(std::f32::consts::LOG2_E, ROUNDER);
    let n = shifted - ROUNDER;
    let r = n.mul_add(-LN2_HI, x);
    let r = n.mul_add(-LN2_LO, r);
    let mut p = 1.987_569_1e-4_f32;
    p = p.mul_add(r, 1.398_199_9e-3);
    p = p.mul_add(r, 8.333_452e-3);
    p = p.mul_add(r, 4.166_579_6e-2);
    p = p.mul_add(r, 1.666_666_5e-1);
    p = p.mul_add(r, 0.5);
    let er = (p * r).mul_add(r, r) + 1.0;
    // n is in [-126, 127]: 2^n is a normal f32 built from its exponent bits.
    let n_bits = shifted.to_bits().wrapping_sub(ROUNDER.to_bits());
    let scale = f32::from_bits(n_bits.wrapping_add(127) << 23);
    er * scale
}

/// The error function, within 1.5e-7 (Abramowitz & Stegun 7.1.26).
#[inline(always)]
pub fn erf(x: f32) -> f32 {
    let a = x.abs();
    let t = 1.0 / 0.327_591_1_f32.mul_add(a, 1.0);
    let mut p = 1.061_405_4_f32;
    p = p.mul_add(t, -1.453_152_1);
    p = p.mul_add(t, 1.421_413_8);
    p = p.mul_add(t, -0.284_496_74);
    p = p.mul_add(t, 0.254_829_6);
    let y = 1.0 - p * t * exp(-a * a);
    y.copysign(x)
}

#[inline(always)]
fn activate(x: f32, activation: Activation) -> f32 {
    match activation {
        Activation::GeluErf => 0.5 * x * (1.0 + erf(x * std::f32::consts::FRAC_1_SQRT_2)),
        Activation::GeluTanh => {
            // tanh(y) = 1 − 2 / (e^{2y} + 1)
            let y = 0.797_884_6 * x * 0.044_715_f32.mul_add(x * x, 1.0);
            let tanh = 1.0 - 2.0 / (exp(2.0 * y) + 1.0);
            0.5 * x * (1.0 + tanh)
        }
        Activation::Relu => x.max(0.0),
    }
}

fn sum(xs: &[f32]) -> f32 {
    let mut acc = [0.0_f32; LANES];
    let chunks = xs.chunks_exact(LANES);
    let rest: f32 = chunks.remainder().iter().sum();
    for chunk in chunks {
        for (a, x) in acc.iter_mut().zip(chunk) {
            *a += x;
        }
    }
    acc.iter().sum::<f32>() + rest
}

fn max(xs: &[f32]) -> f32 {
    let mut acc = [f32::NEG_INFINITY; LANES];
    let chunks = xs.chunks_exact(LANES);
    let rest = chunks.remainder().iter().fold(f32::NEG_INFINITY, |m, &x| m.max(x));
    for chunk in chunks {
        for (a, &x) in acc.iter_mut().zip(chunk) {
            *a = a.max(x);
        }
    }
    acc.iter().fold(rest, |m, &x| m.max(x))
}

/// `rows[i] = activation(rows[i] + bias)` for every row of `rows`
/// (`[n, bias.len()]`), or just the bias when `activation` is `None`.
pub fn add_bias_activate(rows: &mut [f32], bias: &[f32], activation: Option<Activation>) {
    let width = bias.len();
    rows.par_chunks_mut(width * ROWS_PER_TASK).for_each(|block| {
        for row in block.chunks_exact_mut(width) {
            for (x, b) in row.iter_mut().zip(bias) {
                *x += b;
            }
            if let Some(activation) = activation {
                for x in row.iter_mut() {
                    *x = activate(*x, activation);
                }
            }
        }
    });
}

/// A layer norm's parameters.
pub struct Norm {
    pub gamma: Vec<f32>,
    pub beta: Vec<f32>,
    pub eps: f32,
}

/// `rows[i] = norm(rows[i] + bias + residual[i])`: the end of a BERT
/// sub-layer (dense output, residual connection, layer norm) in one pass.
/// `rows` and `residual` are `[n, norm.gamma.len()]`.
pub fn add_residual_norm(rows: &mut [f32], residual: &[f32], bias: Option<&[f32]>, norm: &Norm) {
    let width = norm.gamma.len();
    let block = width * ROWS_PER_TASK;
    rows.par_chunks_mut(block).zip(residual.par_chunks(block)).for_each(|(rows, residual)| {
        for (row, residual) in rows.chunks_exact_mut(width).zip(residual.chunks_exact(width)) {
            for (x, r) in row.iter_mut().zip(residual) {
                *x += r;
            }
            if let Some(bias) = bias {
                for (x, b) in row.iter_mut().zip(bias) {
                    *x += b;
                }
            }
            normalise(row, norm);
        }
    });
}

fn normalise(row: &mut [f32], norm: &Norm) {
    let n = row.len() as f32;
    let mean = sum(row) / n;
    let mut squares = [0.0_f32; LANES];
    let chunks = row.chunks_exact(LANES);
    let rest: f32 = chunks.remainder().iter().map(|x| (x - mean) * (x - mean)).sum();
    for chunk in chunks {
        for (s, x) in squares.iter_mut().zip(chunk) {
            *s = (x - mean).mul_add(x - mean, *s);
        }
    }
    let variance = (squares.iter().sum::<f32>() + rest) / n;
    let scale = 1.0 / (variance + norm.eps).sqrt();
    for ((x, g), b) in row.iter_mut().zip(&norm.gamma).zip(&norm.beta) {
        *x = ((*x - mean) * scale).mul_add(*g, *b);
    }
}

/// Multi-head self-attention over packed sequences without padding.
///
/// `qkv` is `[tokens, 3 · hidden]`: each token's query (already scaled by
/// 1/√head_size), key and value, the sequences one after another with the
/// lengths in `lengths`. Returns the context, `[tokens, hidden]`. A token
/// attends only to the tokens of its own sequence, so no mask is needed.
pub fn attention(qkv: &[f32], lengths: &[usize], heads: usize, hidden: usize) -> Vec<f32> {
    let tokens: usize = lengths.iter().sum();
    let mut context = vec![0.0_f32; tokens * hidden];
    // One task per sequence: its rows of the context are its own.
    let mut tasks = Vec::with_capacity(lengths.len());
    let mut rest = context.as_mut_slice();
    let mut start = 0;
    for &length in lengths {
        let (mine, others) = rest.split_at_mut(length * hidden);
        tasks.push((start, length, mine));
        rest = others;
        start += length;
    }
    tasks.into_par_iter().for_each(|(start, length, out)| {
        let rows = &qkv[start * 3 * hidden..(start + length) * 3 * hidden];
        attend_sequence(rows, length, heads, hidden, out);
    });
    context
}

fn attend_sequence(rows: &[f32], length: usize, heads: usize, hidden: usize, out: &mut [f32]) {
    #[cfg(all(target_arch = "x86_64", target_feature = "avx2", target_feature = "fma"))]
    match hidden / heads {
        32 => return simd_attention::attend_sequence::<4>(rows, length, heads, hidden, out),
        64 => return simd_attention::attend_sequence::<8>(rows, length, heads, hidden, out),
        16 => return simd_attention::attend_sequence::<2>(rows, length, heads, hidden, out),
        8 => return simd_attention::attend_sequence::<1>(rows, length, heads, hidden, out),
        _ => {}
    }
    attend_sequence_portable(rows, length, heads, hidden, out)
}

/// [`attend_sequence`] in plain Rust, for any head size and target.
fn attend_sequence_portable(rows: &[f32], length: usize, heads: usize, hidden: usize, out: &mut [f32]) {
    let head_size = hidden / heads;
    let stride = 3 * hidden;
    let mut keys_t = vec![0.0_f32; head_size * length]; // [head_size, length]
    let mut values = vec![0.0_f32; length * head_size]; // [length, head_size]
    let mut scores = vec![0.0_f32; length];
    for head in 0..heads {
        let offset = head * head_size;
        for (j, row) in rows.chunks_exact(stride).enumerate() {
            let key = &row[hidden + offset..hidden + offset + head_size];
            for (c, &k) in key.iter().enumerate() {
                keys_t[c * length + j] = k;
            }
            values[j * head_size..(j + 1) * head_size]
                .copy_from_slice(&row[2 * hidden + offset..2 * hidden + offset + head_size]);
        }
        for (i, row) in rows.chunks_exact(stride).enumerate() {
            let query = &row[offset..offset + head_size];
            scores.fill(0.0);
            for (&q, keys) in query.iter().zip(keys_t.chunks_exact(length)) {
                for (s, &k) in scores.iter_mut().zip(keys) {
                    *s = q.mul_add(k, *s);
                }
            }
            let top = max(&scores);
            for s in scores.iter_mut() {
                *s = exp(*s - top);
            }
            let inverse = 1.0 / sum(&scores);
            let context = &mut out[i * hidden + offset..i * hidden + offset + head_size];
            for (&p, value) in scores.iter().zip(values.chunks_exact(head_size)) {
                let p = p * inverse;
                for (c, &v) in context.iter_mut().zip(value) {
                    *c = p.mul_add(v, *c);
                }
            }
        }
    }
}

/// Attention with explicit AVX2 vectors, for head sizes of `8 · W`.
///
/// Both products are register-blocked as small matrix products: the scores
/// four queries by sixteen keys at a time (eight accumulators), the context
/// two queries by the whole head (`2 · W` accumulators). The compiler keeps
/// neither blocking on its own: it spills arrays of accumulators to memory.
#[cfg(all(target_arch = "x86_64", target_feature = "avx2", target_feature = "fma"))]
mod simd_attention {
    use safe_arch::{fused_mul_add_m256, m256, mul_m256, set_splat_m256, zeroed_m256};

    use super::{exp, max, sum};

    const QUERIES: usize = 4;
    /// Keys per block of scores: two vectors.
    type KeyBlock = [[f32; 8]; 2];

    pub(super) fn attend_sequence<const W: usize>(
        rows: &[f32],
        length: usize,
        heads: usize,
        hidden: usize,
        out: &mut [f32],
    ) {
        let head_size = 8 * W;
        let stride = 3 * hidden;
        let key_blocks = length.div_ceil(16);
        let groups = length.div_ceil(QUERIES);
        // Per block of 16 keys, per component: the keys (zero past the end).
        let mut keys: Vec<KeyBlock> = vec![[[0.0; 8]; 2]; key_blocks * head_size];
        // Per key: its value, W vectors.
        let mut values: Vec<[[f32; 8]; W]> = vec![[[0.0; 8]; W]; length];
        // Per group of four queries, per component: the queries' components
        // (zero past the end).
        let mut queries: Vec<[f32; QUERIES]> = vec![[0.0; QUERIES]; groups * head_size];
        // The four queries' scores, then their weights.
        let mut scores: Vec<[f32; 8]> = vec![[0.0; 8]; QUERIES * 2 * key_blocks];
        let row_width = 16 * key_blocks;

        for head in 0..heads {
            let offset = head * head_size;
            for (j, row) in rows.chunks_exact(stride).enumerate() {
                let (group, lane) = (j / QUERIES, j % QUERIES);
                let query = &row[offset..offset + head_size];
                for (slot, &q) in queries[group * head_size..(group + 1) * head_size].iter_mut().zip(query) {
                    slot[lane] = q;
                }
                let (block, lane) = (j / 16, j % 16);
                let key = &row[hidden + offset..hidden + offset + head_size];
                for (slot, &k) in keys[block * head_size..(block + 1) * head_size].iter_mut().zip(key) {
                    slot[lane / 8][lane % 8] = k;
                }
                let value = &row[2 * hidden + offset..2 * hidden + offset + head_size];
                for (slot, chunk) in values[j].iter_mut().zip(value.chunks_exact(8)) {
                    slot.copy_from_slice(chunk);
                }
            }

            for group in 0..groups {
                let group_queries = &queries[group * head_size..(group + 1) * head_size];
                for (block, block_keys) in keys.chunks_exact(head_size).enumerate() {
                    let mut acc = [[zeroed_m256(); 2]; QUERIES];
                    for (&[low, high], components) in block_keys.iter().zip(group_queries) {
                        let (low, high) = (m256::from(low), m256::from(high));
                        for (acc, &q) in acc.iter_mut().zip(components) {
                            let q = set_splat_m256(q);
                            acc[0] = fused_mul_add_m256(q, low, acc[0]);
                            acc[1] = fused_mul_add_m256(q, high, acc[1]);
                        }
                    }
                    for (r, [low, high]) in acc.into_iter().enumerate() {
                        let at = r * 2 * key_blocks + 2 * block;
                        scores[at] = low.into();
                        scores[at + 1] = high.into();
                    }
                }

                let mut inverse = [0.0_f32; QUERIES];
                for (row, inverse) in scores.as_flattened_mut().chunks_exact_mut(row_width).zip(&mut inverse)
                {
                    let row = &mut row[..length];
                    let top = max(row);
                    for s in row.iter_mut() {
                        *s = exp(*s - top);
                    }
                    *inverse = 1.0 / sum(row);
                }

                let weights = scores.as_flattened();
                for pair in 0..QUERIES / 2 {
                    let first = group * QUERIES + pair * 2;
                    if first >= length {
                        break;
                    }
                    let row = |r: usize| &weights[r * row_width..r * row_width + length];
                    let (upper, lower) = (row(pair * 2), row(pair * 2 + 1));
                    let (mut acc0, mut acc1) = ([zeroed_m256(); W], [zeroed_m256(); W]);
                    for ((value, &p0), &p1) in values.iter().zip(upper).zip(lower) {
                        let (p0, p1) = (set_splat_m256(p0), set_splat_m256(p1));
                        for ((a0, a1), &v) in acc0.iter_mut().zip(acc1.iter_mut()).zip(value) {
                            let v = m256::from(v);
                            *a0 = fused_mul_add_m256(p0, v, *a0);
                            *a1 = fused_mul_add_m256(p1, v, *a1);
                        }
                    }
                    for (h, acc) in [acc0, acc1].iter().enumerate() {
                        let i = first + h;
                        if i >= length {
                            break;
                        }
                        let scale = set_splat_m256(inverse[pair * 2 + h]);
                        let context = &mut out[i * hidden + offset..i * hidden + offset + head_size];
                        for (chunk, &a) in context.chunks_exact_mut(8).zip(acc) {
                            let scaled: [f32; 8] = mul_m256(a, scale).into();
                            chunk.copy_from_slice(&scaled);
                        }
                    }
                }
            }
        }
    }
}

/// Mean of each sequence's rows of `hidden` (`[tokens, width]`, sequences
/// packed with `lengths`), L2-normalised: sentence-transformers' pooling
/// for this family of models.
pub fn mean_pool_normalised(hidden: &[f32], lengths: &[usize], width: usize) -> Vec<Vec<f32>> {
    let mut vectors = Vec::with_capacity(lengths.len());
    let mut start = 0;
    for &length in lengths {
        let mut mean = vec![0.0_f32; width];
        for row in hidden[start * width..(start + length) * width].chunks_exact(width) {
            for (m, x) in mean.iter_mut().zip(row) {
                *m += x;
            }
        }
        let count = length.max(1) as f32;
        for m in mean.iter_mut() {
            *m /= count;
        }
        let norm = mean.iter().map(|m| m * m).sum::<f32>().sqrt().max(1e-12);
        for m in mean.iter_mut() {
            *m /= norm;
        }
        vectors.push(mean);
        start += length;
    }
    vectors
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

    use super::*;

    /// Deterministic values in [-scale, scale].
    fn values(count: usize, seed: u32, scale: f32) -> Vec<f32> {
        let mut state = seed.wrapping_mul(2_654_435_761).wrapping_add(1);
        (0..count)
            .map(|_| {
                state ^= state << 13;
                state ^= state >> 17;
                state ^= state << 5;
                (state as f32 / u32::MAX as f32 * 2.0 - 1.0) * scale
            })
            .collect()
    }

    #[test]
    fn exp_matches_the_library_to_a_few_ulp() {
        for x in (-8700..=8800).map(|i| i as f32 * 0.01) {
            let (got, want) = (exp(x), x.exp());
            assert!(((got - want) / want).abs() < 4e-7, "exp({x}) = {got}, want {want}");
        }
        assert!(exp(-1000.0) > 0.0 && exp(-1000.0) < 1e-37, "clamped, not zero or NaN");
    }

    /// erf by its Taylor series in f64: exact to ~1e-11 for |x| ≤ 4.5, and
    /// erf(x) is 1 within 2e-10 beyond.
    fn reference_erf(x: f64) -> f64 {
        if x.abs() > 4.5 {
            return x.signum();
        }
        let (mut term, mut total) = (x, x);
        for n in 1..200 {
            term *= -x * x / n as f64;
            total += term / (2 * n + 1) as f64;
        }
        total * 2.0 / std::f64::consts::PI.sqrt()
    }

    /// `activation` over values in [-6, 6] against `reference` in f64.
    fn activation_against_reference(activation: Activation, seed: u32, reference: impl Fn(f64) -> f64) {
        let xs = values(4096, seed, 6.0);
        let mut got = xs.clone();
        add_bias_activate(&mut got, &[0.0; 64], Some(activation));
        for (x, g) in xs.iter().zip(&got) {
            let want = reference(f64::from(*x));
            assert!((f64::from(*g) - want).abs() < 1e-6, "{activation:?}({x}) = {g}, want {want}");
        }
    }

    #[test]
    fn erf_gelu_is_within_f32_noise_of_the_exact_one() {
        activation_against_reference(Activation::GeluErf, 7, |x| {
            0.5 * x * (1.0 + reference_erf(x / std::f64::consts::SQRT_2))
        });
    }

    #[test]
    fn tanh_gelu_is_within_f32_noise_of_the_exact_one() {
        activation_against_reference(Activation::GeluTanh, 8, |x| {
            let inner = (2.0 / std::f64::consts::PI).sqrt() * (x + 0.044_715 * x.powi(3));
            0.5 * x * (1.0 + inner.tanh())
        });
    }

    #[test]
    fn bias_is_added_before_the_activation() {
        let mut rows = vec![-1.0, 2.0, -3.0, 4.0];
        add_bias_activate(&mut rows, &[2.0, -3.0], Some(Activation::Relu));
        assert_eq!(rows, vec![1.0, 0.0, 0.0, 1.0]);
    }

    #[test]
    fn residual_norm_is_a_layer_norm_of_the_sum() {
        let width = 48;
        let rows = values(width * 40, 1, 3.0);
        let residual = values(width * 40, 2, 3.0);
        let bias = values(width, 3, 1.0);
        let norm = Norm { gamma: values(width, 4, 2.0), beta: values(width, 5, 1.0), eps: 1e-12 };

        let mut got = rows.clone();
        add_residual_norm(&mut got, &residual, Some(&bias), &norm);
        for (r, row) in got.chunks(width).enumerate() {
            let summed: Vec<f64> = (0..width)
                .map(|c| f64::from(rows[r * width + c] + residual[r * width + c] + bias[c]))
                .collect();
            let mean = summed.iter().sum::<f64>() / width as f64;
            let variance = summed.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / width as f64;
            for (c, g) in row.iter().enumerate() {
                let want = (summed[c] - mean) / (variance + 1e-12).sqrt() * f64::from(norm.gamma[c])
                    + f64::from(norm.beta[c]);
                assert!((f64::from(*g) - want).abs() < 2e-5, "row {r} column {c}: {g} vs {want}");
            }
        }
    }

    /// Attention computed the obvious way, one sequence and head at a time.
    fn reference_attention(qkv: &[f32], lengths: &[usize], heads: usize, hidden: usize) -> Vec<f32> {
        let head_size = hidden / heads;
        let stride = 3 * hidden;
        let tokens: usize = lengths.iter().sum();
        let mut out = vec![0.0_f32; tokens * hidden];
        let mut start = 0;
        for &length in lengths {
            for head in 0..heads {
                let at = |t: usize, part: usize, c: usize| {
                    f64::from(qkv[(start + t) * stride + part * hidden + head * head_size + c])
                };
                for i in 0..length {
                    let scores: Vec<f64> = (0..length)
                        .map(|j| (0..head_size).map(|c| at(i, 0, c) * at(j, 1, c)).sum())
                        .collect();
                    let top = scores.iter().copied().fold(f64::NEG_INFINITY, f64::max);
                    let weights: Vec<f64> = scores.iter().map(|s| (s - top).exp()).collect();
                    let total: f64 = weights.iter().sum();
                    for c in 0..head_size {
                        let value: f64 = (0..length).map(|j| weights[j] / total * at(j, 2, c)).sum();
                        out[(start + i) * hidden + head * head_size + c] = value as f32;
                    }
                }
            }
            start += length;
        }
        out
    }

    /// Packed attention on random values against the reference; returns
    /// the inputs and the result.
    fn attention_against_reference(
        heads: usize,
        hidden: usize,
        lengths: &[usize],
        seed: u32,
    ) -> (Vec<f32>, Vec<f32>) {
        let tokens: usize = lengths.iter().sum();
        let qkv = values(tokens * 3 * hidden, seed, 2.0);
        let got = attention(&qkv, lengths, heads, hidden);
        let want = reference_attention(&qkv, lengths, heads, hidden);
        for (g, w) in got.iter().zip(&want) {
            assert!((g - w).abs() < 1e-5, "{g} vs {w}");
        }
        (qkv, got)
    }

    #[test]
    fn packed_attention_keeps_each_sequence_to_itself() {
        let hidden = 32;
        let (qkv, got) = attention_against_reference(4, hidden, &[1, 7, 19, 3], 11);
        // A sequence of one token attends only to itself: its context is its value.
        assert_eq!(&got[..hidden], &qkv[2 * hidden..3 * hidden]);
    }

    #[test]
    fn attention_matches_at_the_model_s_shape() {
        // all-MiniLM-L6-v2's shape: 12 heads of 32, and lengths on either
        // side of the vector width.
        attention_against_reference(12, 384, &[2, 16, 17, 33, 5], 13);
    }

    #[test]
    fn attention_at_a_head_size_without_vector_kernel() {
        // Heads of 12: the plain-Rust path.
        attention_against_reference(3, 36, &[4, 21, 1], 17);
    }

    #[test]
    fn pooling_averages_each_sequence_and_normalises() {
        let hidden = [3.0, 4.0, 1.0, 0.0, 0.0, 1.0, 2.0, 2.0];
        let vectors = mean_pool_normalised(&hidden, &[1, 3], 2);
        assert_eq!(vectors.len(), 2);
        assert!((vectors[0][0] - 0.6).abs() < 1e-6 && (vectors[0][1] - 0.8).abs() < 1e-6);
        let s = 1.0 / 2.0_f32.sqrt();
        assert!((vectors[1][0] - s).abs() < 1e-6 && (vectors[1][1] - s).abs() < 1e-6);
    }
}
