//! The forward pass of a Llama-architecture chat model (SmolLM2, Llama),
//! on plain f32 slices and block-quantised weights ([`crate::quant`]): the
//! embedded provider's decoder.
//!
//! Each layer is RMS norm, one product for query, key and value together,
//! rotary positions (interleaved pairs, as GGUF files permute the weights
//! for), grouped-query attention over a key-value cache allocated once for
//! the whole generation, the output product and residual, then RMS norm,
//! one product for gate and up together, SiLU, the down product and
//! residual. Every step writes into buffers allocated once per call: a
//! generated token costs the products and a few passes over 576 floats,
//! not hundreds of tensor allocations.

use rayon::prelude::*;

use crate::quant::{quantise_activations, QMatrix};

/// The model's shape.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Config {
    pub hidden: usize,
    pub heads: usize,
    pub kv_heads: usize,
    pub ffn: usize,
    pub rope_theta: f32,
    pub eps: f32,
}

impl Config {
    pub fn head_dim(&self) -> usize {
        self.hidden / self.heads
    }

    fn kv_width(&self) -> usize {
        self.kv_heads * self.head_dim()
    }
}

/// One decoder layer's weights.
pub struct Layer {
    pub attn_norm: Vec<f32>,
    /// Query, key and value rows stacked: `[hidden + 2 · kv_width, hidden]`.
    pub qkv: QMatrix,
    pub output: QMatrix,
    pub ffn_norm: Vec<f32>,
    /// Gate and up rows stacked: `[2 · ffn, hidden]`.
    pub gate_up: QMatrix,
    pub down: QMatrix,
}

/// A loaded model.
pub struct Llama {
    config: Config,
    embedding: QMatrix,
    layers: Vec<Layer>,
    norm: Vec<f32>,
    /// The output projection; `None` when it is the embedding (tied).
    head: Option<QMatrix>,
}

/// The keys and values of the tokens seen so far, for one generation.
pub struct Cache {
    capacity: usize,
    len: usize,
    /// Per layer, `[kv_heads, capacity, head_dim]`.
    keys: Vec<Vec<f32>>,
    values: Vec<Vec<f32>>,
}

impl Cache {
    /// Tokens seen so far.
    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
}

impl Llama {
    /// Checks that the parts fit together.
    pub fn new(
        config: Config,
        embedding: QMatrix,
        layers: Vec<Layer>,
        norm: Vec<f32>,
        head: Option<QMatrix>,
    ) -> Result<Self, String> {
        let Config { hidden, heads, kv_heads, ffn, .. } = config;
        if heads == 0 || kv_heads == 0 || !hidden.is_multiple_of(heads) || !heads.is_multiple_of(kv_heads) {
            return Err(format!("{heads} heads and {kv_heads} key-value heads do not divide {hidden}"));
        }
        if !config.head_dim().is_multiple_of(2) {
            return Err("rotary positions need an even head size".into());
        }
        let shape = |name: &str, m: &QMatrix, rows: usize, cols: usize| {
            if m.rows() == rows && m.cols() == cols {
                Ok(())
            } else {
                Err(format!("{name} is {} × {}, not {rows} × {cols}", m.rows(), m.cols()))
            }
        };
        shape("the embedding", &embedding, embedding.rows(), hidden)?;
        if let Some(head) = &head {
            shape("the output", head, embedding.rows(), hidden)?;
        }
        if norm.len() != hidden {
            return Err("the output norm has the wrong width".into());
        }
        for (n, layer) in layers.iter().enumerate() {
            let named = |part: &str| format!("layer {n}'s {part}");
            shape(&named("query, key and value"), &layer.qkv, hidden + 2 * config.kv_width(), hidden)?;
            shape(&named("attention output"), &layer.output, hidden, hidden)?;
            shape(&named("gate and up"), &layer.gate_up, 2 * ffn, hidden)?;
            shape(&named("down"), &layer.down, hidden, ffn)?;
            if layer.attn_norm.len() != hidden || layer.ffn_norm.len() != hidden {
                return Err(named("norms have the wrong width"));
            }
        }
        Ok(Self { config, embedding, layers, norm, head })
    }

    pub fn config(&self) -> Config {
        self.config
    }

    /// Tokens the vocabulary holds.
    pub fn vocabulary(&self) -> usize {
        self.embedding.rows()
    }

    /// An empty cache for a generation of at most `capacity` tokens in all.
    pub fn cache(&self, capacity: usize) -> Cache {
        let size = self.config.kv_heads * capacity * self.config.head_dim();
        Cache {
            capacity,
            len: 0,
            keys: self.layers.iter().map(|_| vec![0.0; size]).collect(),
            values: self.layers.iter().map(|_| vec![0.0; size]).collect(),
        }
    }

    /// Runs `tokens` after those already in `cache` and returns the logits
    /// after the last one. The cache then holds them too.
    pub fn forward(&self, tokens: &[u32], cache: &mut Cache) -> Result<Vec<f32>, String> {
        let config = self.config;
        let (n, hidden) = (tokens.len(), config.hidden);
        if n == 0 {
            return Err("no tokens to run".into());
        }
        if cache.len + n > cache.capacity || cache.keys.len() != self.layers.len() {
            return Err(format!("{} tokens do not fit a cache of {}", cache.len + n, cache.capacity));
        }
        let mut x = Vec::with_capacity(n * hidden);
        for &token in tokens {
            x.extend(
                self.embedding
                    .row(token as usize)
                    .ok_or_else(|| format!("token {token} is not in the vocabulary"))?,
            );
        }
        let width = hidden + 2 * config.kv_width();
        let rope = Rope::new(&config, cache.len, n);
        let mut normed = vec![0.0; n * hidden];
        let mut qkv = vec![0.0; n * width];
        let mut attended = vec![0.0; n * hidden];
        let mut projected = vec![0.0; n * hidden];
        let mut gate_up = vec![0.0; n * 2 * config.ffn];
        let mut activated = vec![0.0; n * config.ffn];
        for (l, layer) in self.layers.iter().enumerate() {
            rms_norm(&x, &layer.attn_norm, config.eps, &mut normed);
            product(&layer.qkv, &normed, &mut qkv)?;
            for (i, row) in qkv.chunks_exact_mut(width).enumerate() {
                let (query, rest) = row.split_at_mut(hidden);
                let (key, value) = rest.split_at_mut(config.kv_width());
                rope.apply(i, query);
                rope.apply(i, key);
                cache.store(l, &config, cache.len + i, key, value);
            }
            attention(&config, &qkv, cache, l, cache.len, &mut attended);
            product(&layer.output, &attended, &mut projected)?;
            add(&mut x, &projected);
            rms_norm(&x, &layer.ffn_norm, config.eps, &mut normed);
            product(&layer.gate_up, &normed, &mut gate_up)?;
            silu_times(&gate_up, config.ffn, &mut activated);
            product(&layer.down, &activated, &mut projected)?;
            add(&mut x, &projected);
        }
        cache.len += n;
        let last = &x[(n - 1) * hidden..];
        let mut final_norm = vec![0.0; hidden];
        rms_norm(last, &self.norm, config.eps, &mut final_norm);
        let head = self.head.as_ref().unwrap_or(&self.embedding);
        let mut logits = vec![0.0; head.rows()];
        product(head, &final_norm, &mut logits)?;
        Ok(logits)
    }
}

fn product(matrix: &QMatrix, x: &[f32], out: &mut [f32]) -> Result<(), String> {
    matrix
        .product_quantised(&quantise_activations(x, matrix.cols()), out)
        .ok_or_else(|| "a product's shapes do not match".into())
}

impl Cache {
    fn store(&mut self, layer: usize, config: &Config, position: usize, key: &[f32], value: &[f32]) {
        let head_dim = config.head_dim();
        for (g, (k, v)) in key.chunks_exact(head_dim).zip(value.chunks_exact(head_dim)).enumerate() {
            let at = (g * self.capacity + position) * head_dim;
            self.keys[layer][at..at + head_dim].copy_from_slice(k);
            self.values[layer][at..at + head_dim].copy_from_slice(v);
        }
    }
}

/// The rotary angles' cosines and sines for a run of positions.
struct Rope {
    half: usize,
    cos: Vec<f32>,
    sin: Vec<f32>,
}

impl Rope {
    fn new(config: &Config, first: usize, n: usize) -> Self {
        let head_dim = config.head_dim();
        let half = head_dim / 2;
        let frequencies: Vec<f32> =
            (0..half).map(|i| 1.0 / config.rope_theta.powf((2 * i) as f32 / head_dim as f32)).collect();
        let (mut cos, mut sin) = (Vec::with_capacity(n * half), Vec::with_capacity(n * half));
        for position in first..first + n {
            for f in &frequencies {
                let angle = position as f32 * f;
                cos.push(angle.cos());
                sin.push(angle.sin());
            }
        }
        Self { half, cos, sin }
    }

    /// Rotates each head of `row` (the `i`-th token of the run) pair by pair.
    fn apply(&self, i: usize, row: &mut [f32]) {
        let cos = &self.cos[i * self.half..(i + 1) * self.half];
        let sin = &self.sin[i * self.half..(i + 1) * self.half];
        for head in row.chunks_exact_mut(2 * self.half) {
            for ((pair, c), s) in head.chunks_exact_mut(2).zip(cos).zip(sin) {
                let (a, b) = (pair[0], pair[1]);
                pair[0] = a * c - b * s;
                pair[1] = a * s + b * c;
            }
        }
    }
}

/// Attention for the run of tokens whose first is at `first`: token `i`
/// sees the cache's positions `0..=first + i`.
fn attention(config: &Config, qkv: &[f32], cache: &Cache, layer: usize, first: usize, out: &mut [f32]) {
    let head_dim = config.head_dim();
    let width = config.hidden + 2 * config.kv_width();
    let group = config.heads / config.kv_heads;
    let scale = 1.0 / (head_dim as f32).sqrt();
    let (keys, values) = (&cache.keys[layer], &cache.values[layer]);
    let one = |(task, out): (usize, &mut [f32])| {
        let (i, head) = (task / config.heads, task % config.heads);
        let query = &qkv[i * width + head * head_dim..][..head_dim];
        let seen = first + i + 1;
        let base = (head / group) * cache.capacity * head_dim;
        let keys = &keys[base..base + seen * head_dim];
        let values = &values[base..base + seen * head_dim];
        let mut scores: Vec<f32> = keys.chunks_exact(head_dim).map(|k| dot(query, k) * scale).collect();
        let top = crate::max(&scores);
        for s in scores.iter_mut() {
            *s = crate::exp(*s - top);
        }
        let total = crate::sum(&scores);
        out.fill(0.0);
        for (p, v) in scores.iter().zip(values.chunks_exact(head_dim)) {
            let weight = p / total;
            for (o, v) in out.iter_mut().zip(v) {
                *o = weight.mul_add(*v, *o);
            }
        }
    };
    let rows = out.len() / config.hidden;
    // Work in multiply-adds: worth splitting across threads past ~64k.
    let work = rows * config.heads * (first + rows) * head_dim;
    if work >= 1 << 16 {
        out.par_chunks_mut(head_dim).enumerate().for_each(one);
    } else {
        out.chunks_mut(head_dim).enumerate().for_each(one);
    }
}

fn dot(a: &[f32], b: &[f32]) -> f32 {
    let mut acc = [0.0_f32; 8];
    for (a, b) in a.chunks_exact(8).zip(b.chunks_exact(8)) {
        for ((s, x), y) in acc.iter_mut().zip(a).zip(b) {
            *s = x.mul_add(*y, *s);
        }
    }
    let rest: f32 =
        a.chunks_exact(8).remainder().iter().zip(b.chunks_exact(8).remainder()).map(|(x, y)| x * y).sum();
    acc.iter().sum::<f32>() + rest
}

/// `out[i] = x[i] / rms(x[i]) · weight` for each row.
fn rms_norm(x: &[f32], weight: &[f32], eps: f32, out: &mut [f32]) {
    let width = weight.len();
    let one = |(out, x): (&mut [f32], &[f32])| {
        let squares = dot(x, x);
        let scale = 1.0 / (squares / width as f32 + eps).sqrt();
        for ((o, v), w) in out.iter_mut().zip(x).zip(weight) {
            *o = v * scale * w;
        }
    };
    if x.len() >= 64 * width {
        out.par_chunks_mut(width).zip(x.par_chunks(width)).for_each(one);
    } else {
        out.chunks_mut(width).zip(x.chunks(width)).for_each(one);
    }
}

fn add(x: &mut [f32], y: &[f32]) {
    for (a, b) in x.iter_mut().zip(y) {
        *a += b;
    }
}

/// `out = silu(gate) · up`, row by row; each row of `gate_up` is the gate,
/// then the up values.
fn silu_times(gate_up: &[f32], ffn: usize, out: &mut [f32]) {
    for (out, row) in out.chunks_exact_mut(ffn).zip(gate_up.chunks_exact(2 * ffn)) {
        let (gate, up) = row.split_at(ffn);
        for ((o, g), u) in out.iter_mut().zip(gate).zip(up) {
            *o = g / (1.0 + crate::exp(-g)) * u;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::noise;

    fn matrix(seed: u64, rows: usize, cols: usize) -> QMatrix {
        let values: Vec<f32> = noise(seed, rows * cols).iter().map(|v| v * 0.2).collect();
        QMatrix::quantise(&values, rows, cols).unwrap()
    }

    fn tiny() -> Llama {
        let config = Config { hidden: 64, heads: 4, kv_heads: 2, ffn: 96, rope_theta: 10_000.0, eps: 1e-5 };
        let layers = (0..2)
            .map(|l| Layer {
                attn_norm: vec![1.0; 64],
                qkv: matrix(l * 10 + 1, 64 + 2 * 32, 64),
                output: matrix(l * 10 + 2, 64, 64),
                ffn_norm: vec![1.0; 64],
                gate_up: matrix(l * 10 + 3, 192, 64),
                down: matrix(l * 10 + 4, 64, 96),
            })
            .collect();
        Llama::new(config, matrix(99, 50, 64), layers, vec![1.0; 64], None).unwrap()
    }

    #[test]
    fn a_prompt_at_once_gives_the_logits_of_its_tokens_one_by_one() {
        let model = tiny();
        let tokens = [3, 14, 15, 9, 2, 6, 5, 35, 8, 9, 7, 9, 3, 2, 3, 8, 4, 6, 2, 6, 4, 33];
        let mut whole = model.cache(32);
        let at_once = model.forward(&tokens, &mut whole).unwrap();
        let mut stepwise = model.cache(32);
        let mut last = Vec::new();
        for token in tokens {
            last = model.forward(&[token], &mut stepwise).unwrap();
        }
        assert_eq!(whole.len(), tokens.len());
        for (a, b) in at_once.iter().zip(&last) {
            assert!((a - b).abs() < 1e-3, "{a} vs {b}");
        }
        // And the next token continues both the same way.
        let (a, b) = (model.forward(&[1], &mut whole).unwrap(), model.forward(&[1], &mut stepwise).unwrap());
        assert!(a.iter().zip(&b).all(|(a, b)| (a - b).abs() < 1e-3));
    }

    #[test]
    fn positions_matter_and_the_cache_bounds_the_run() {
        let model = tiny();
        let alone = model.forward(&[7], &mut model.cache(4)).unwrap();
        // A query sees the keys rotated by its distance to them: the same
        // pair of tokens in the other order attends differently.
        let after = |tokens: &[u32]| model.forward(tokens, &mut model.cache(4)).unwrap();
        assert_ne!(after(&[3, 7]), alone, "what came before counts");
        let (ab, ba) = (after(&[3, 7, 9]), after(&[7, 3, 9]));
        assert!(ab.iter().zip(&ba).any(|(a, b)| (a - b).abs() > 1e-4), "order counts");
        let mut cache = model.cache(4);
        model.forward(&[7, 7], &mut cache).unwrap();
        assert!(model.forward(&[1, 2, 3], &mut cache).is_err(), "5 tokens do not fit 4");
        assert_eq!(cache.len(), 2, "a refused run leaves the cache as it was");
        assert!(model.forward(&[50], &mut cache).is_err(), "token 50 is past the vocabulary");
        assert!(model.forward(&[], &mut cache).is_err());
    }

    #[test]
    fn rotary_positions_rotate_pairs_by_position_times_frequency() {
        let config = Config { hidden: 4, heads: 1, kv_heads: 1, ffn: 4, rope_theta: 100.0, eps: 1e-5 };
        let rope = Rope::new(&config, 3, 1);
        let mut row = [1.0, 0.0, 0.0, 1.0];
        rope.apply(0, &mut row);
        // Pair 0 turns by 3 radians, pair 1 by 3 / 100^(2/4) = 0.3.
        let want = [3.0_f32.cos(), 3.0_f32.sin(), -(0.3_f32.sin()), 0.3_f32.cos()];
        for (g, w) in row.iter().zip(want) {
            assert!((g - w).abs() < 1e-5, "{row:?} vs {want:?}");
        }
    }

    #[test]
    fn wrong_shapes_are_refused() {
        let config = Config { hidden: 64, heads: 4, kv_heads: 2, ffn: 96, rope_theta: 1e4, eps: 1e-5 };
        let layer = Layer {
            attn_norm: vec![1.0; 64],
            qkv: matrix(1, 64, 64),
            output: matrix(2, 64, 64),
            ffn_norm: vec![1.0; 64],
            gate_up: matrix(3, 192, 64),
            down: matrix(4, 64, 96),
        };
        let err = Llama::new(config, matrix(5, 50, 64), vec![layer], vec![1.0; 64], None).err().unwrap();
        assert!(err.contains("query, key and value"), "{err}");
        let bad = Config { heads: 3, ..config };
        assert!(Llama::new(bad, matrix(5, 50, 64), vec![], vec![1.0; 64], None).is_err());
    }
}
