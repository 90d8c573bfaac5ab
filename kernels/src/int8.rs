//! Dense products `x · Wᵀ` with 8-bit weights, in integer arithmetic.
//!
//! - **Weights** are quantised once, at load time: each output's row of `W`
//!   to `i8` with its own scale (`max |w| / 127`), packed in panels of
//!   [`PANEL`] outputs in exactly the order the product reads them. They stay
//!   8-bit in memory and are widened to `i16` as they are loaded
//!   (`vpmovsxbw`): a query's product streams every weight once, so half the
//!   bytes is half the memory traffic.
//! - **Inputs** are quantised per product and per row (token), symmetrically,
//!   to at most ±[`INPUT_LEVELS`]. That is finer than 8 bits, because the
//!   `i16` lanes hold it for free, and it keeps the error of a product down
//!   to the weights' rounding. The bound shrinks for wide inputs, so no `i32`
//!   sum can overflow (see [`Int8Matrix::input_limit`]).
//! - **The product** multiplies pairs of `i16` and adds them into `i32`
//!   (AVX2's `vpmaddwd`): 16 multiply-adds per instruction, twice as many as
//!   an f32 FMA, and exact. Each result is scaled back to f32 once, with the
//!   row's scale times the output's scale.
//!
//! AVX2 without VNNI has no faster integer product that is also exact: its
//! `u8 × i8` instruction (`vpmaddubsw`) saturates at `i16`, and it needs a
//! second multiply to widen to `i32`, so it does no more work per multiply
//! port.
//!
//! The AVX2 code goes through `safe_arch`, which wraps each intrinsic in a
//! safe function compiled only when the build enables its CPU feature (the
//! workspace builds for x86-64-v3). A CPU with AVX-512 VNNI, found at run
//! time, gets the same sums from `std::arch`'s `vpdpwssd` (see `avx512`).
//! Other targets get the same arithmetic in plain Rust, on the same packed
//! layout.

use rayon::prelude::*;

/// Outputs per panel: two vectors of eight `i32` sums.
pub const PANEL: usize = 16;
/// Rows (tokens) multiplied together against one panel: with two vectors of
/// sums per row that is 12 accumulators, plus two weight vectors and one
/// broadcast input pair and a product: AVX2's 16 vector registers, no spills.
const TILE: usize = 6;
/// Tiles per parallel task when the product is split by rows: the task's
/// quantised rows (at most 72 × 1536 × 2 bytes, 221 KB, for MiniLM) stay in
/// L2 while every panel passes over them.
const TILES_PER_TASK: usize = 12;

/// The largest input level: 13 bits. See [`Int8Matrix::input_limit`].
pub const INPUT_LEVELS: i32 = 8191;
const WEIGHT_LEVELS: f32 = 127.0;

/// One input pair for a panel's sixteen outputs, as two halves of sixteen
/// `i8` (outputs 0–7, then 8–15, each output's two weights side by side),
/// each widened to one vector of `i16` on load.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[repr(C, align(32))]
struct Block([[i8; 16]; 2]);

/// A weight matrix `W` (`[outputs, inputs]`) quantised to 8 bits per value.
pub struct Int8Matrix {
    outputs: usize,
    inputs: usize,
    /// Input pairs: `inputs` rounded up to even, halved.
    pairs: usize,
    /// Per panel, per input pair, one block.
    blocks: Vec<Block>,
    /// Per output (padded to whole panels): the weight scale.
    scales: Vec<f32>,
    input_limit: i32,
}

impl Int8Matrix {
    /// Quantises `weights`, row-major `[outputs, inputs]`.
    ///
    /// Returns `None` when the shape does not match the slice, or is empty.
    pub fn quantise(weights: &[f32], outputs: usize, inputs: usize) -> Option<Self> {
        if outputs == 0 || inputs == 0 || outputs.checked_mul(inputs)? != weights.len() {
            return None;
        }
        let pairs = inputs.div_ceil(2);
        let panels = outputs.div_ceil(PANEL);
        let mut scales = vec![0.0_f32; panels * PANEL];
        let mut blocks = vec![Block::default(); panels * pairs];
        for (output, row) in weights.chunks_exact(inputs).enumerate() {
            let top = row.iter().fold(0.0_f32, |m, w| m.max(w.abs()));
            if top == 0.0 {
                continue;
            }
            let scale = top / WEIGHT_LEVELS;
            scales[output] = scale;
            let (panel, lane) = (output / PANEL, output % PANEL);
            let (half, lane) = (lane / 8, lane % 8);
            for (input, &w) in row.iter().enumerate() {
                let (pair, which) = (input / 2, input % 2);
                blocks[panel * pairs + pair].0[half][lane * 2 + which] =
                    (w / scale).round().clamp(-WEIGHT_LEVELS, WEIGHT_LEVELS) as i8;
            }
        }
        Some(Self { outputs, inputs, pairs, blocks, scales, input_limit: Self::input_limit(inputs) })
    }

    pub fn outputs(&self) -> usize {
        self.outputs
    }

    pub fn inputs(&self) -> usize {
        self.inputs
    }

    /// The input level for a product over `inputs` values: at most
    /// [`INPUT_LEVELS`], and small enough that `inputs · 127 · level` (the
    /// largest possible sum) fits in an `i32`. For 1536 inputs that is
    /// 11,008, so MiniLM's layers all get the full 13 bits.
    pub fn input_limit(inputs: usize) -> i32 {
        let widest = (inputs.next_multiple_of(2) as i64) * WEIGHT_LEVELS as i64;
        (i32::MAX as i64 / widest.max(1)).clamp(1, INPUT_LEVELS as i64) as i32
    }

    /// `x · Wᵀ` for `x` row-major `[rows, inputs]`: `[rows, outputs]`.
    ///
    /// Returns `None` when `x` is not a whole number of rows. The inputs are
    /// activations, finite by construction: a NaN counts as zero, and a row
    /// with an infinite value comes out as zeros.
    pub fn product(&self, x: &[f32]) -> Option<Vec<f32>> {
        if !x.len().is_multiple_of(self.inputs) {
            return None;
        }
        let rows = x.len() / self.inputs;
        let mut out = vec![0.0_f32; rows * self.outputs];
        if rows == 0 {
            return Some(out);
        }
        let tiles = rows.div_ceil(TILE);
        let threads = rayon::current_num_threads();
        if tiles >= TILES_PER_TASK * threads || self.outputs <= PANEL {
            // Many rows: each task quantises and multiplies its own rows.
            let rows_per_task = TILE * TILES_PER_TASK;
            out.par_chunks_mut(rows_per_task * self.outputs)
                .zip(x.par_chunks(rows_per_task * self.inputs))
                .for_each(|(out, x)| {
                    let quantised = self.quantise_rows(x);
                    self.multiply(&quantised, 0..self.panels(), out, 0);
                });
        } else {
            // Few rows (a query): quantise them once and split the panels.
            let quantised = self.quantise_rows(x);
            let panels = self.panels();
            let per_task = panels.div_ceil(threads).max(1);
            let parts: Vec<(usize, Vec<f32>)> = (0..panels)
                .into_par_iter()
                .step_by(per_task)
                .map(|first| {
                    let last = (first + per_task).min(panels);
                    let width = (last * PANEL).min(self.outputs) - first * PANEL;
                    let mut part = vec![0.0_f32; rows * width];
                    self.multiply(&quantised, first..last, &mut part, first * PANEL);
                    (first * PANEL, part)
                })
                .collect();
            for (column, part) in parts {
                let width = part.len() / rows;
                for (row, values) in out.chunks_exact_mut(self.outputs).zip(part.chunks_exact(width)) {
                    row[column..column + width].copy_from_slice(values);
                }
            }
        }
        Some(out)
    }

    fn panels(&self) -> usize {
        self.scales.len() / PANEL
    }

    /// Rows of `x` quantised and interleaved by tile: for each tile of
    /// [`TILE`] rows, for each input pair, the rows' pairs side by side (rows
    /// past the end are zero).
    fn quantise_rows(&self, x: &[f32]) -> QuantisedRows {
        let rows = x.len() / self.inputs;
        let tiles = rows.div_ceil(TILE);
        let mut pairs = vec![[0_i32; TILE]; tiles * self.pairs];
        let mut scales = vec![0.0_f32; tiles * TILE];
        let limit = self.input_limit as f32;
        let mut levels = vec![0_i16; self.pairs * 2];
        for (row, values) in x.chunks_exact(self.inputs).enumerate() {
            let top = values.iter().fold(0.0_f32, |m, v| m.max(v.abs()));
            if top == 0.0 || !top.is_finite() {
                continue;
            }
            scales[row] = top / limit;
            let inverse = limit / top;
            for (level, &v) in levels.iter_mut().zip(values) {
                *level = (v * inverse).round() as i16;
            }
            let (tile, lane) = (row / TILE, row % TILE);
            let tile_pairs = &mut pairs[tile * self.pairs..(tile + 1) * self.pairs];
            for (slot, pair) in tile_pairs.iter_mut().zip(levels.chunks_exact(2)) {
                slot[lane] = (pair[0] as u16 as u32 | (pair[1] as u16 as u32) << 16) as i32;
            }
        }
        QuantisedRows { rows, pairs, scales }
    }

    /// Multiplies quantised rows with `panels`, writing `[rows, width]` into
    /// `out`, whose first column is output `first_column`.
    fn multiply(
        &self,
        x: &QuantisedRows,
        panels: std::ops::Range<usize>,
        out: &mut [f32],
        first_column: usize,
    ) {
        let width = out.len() / x.rows;
        for panel in panels {
            let blocks = &self.blocks[panel * self.pairs..(panel + 1) * self.pairs];
            let scales = &self.scales[panel * PANEL..(panel + 1) * PANEL];
            let column = panel * PANEL - first_column;
            let columns = (width - column).min(PANEL);
            for (tile, tile_pairs) in x.pairs.chunks_exact(self.pairs).enumerate() {
                let sums = tile_product(tile_pairs, blocks);
                for (lane, sums) in sums.iter().enumerate() {
                    let row = tile * TILE + lane;
                    if row >= x.rows {
                        break;
                    }
                    let row_scale = x.scales[row];
                    let dest = &mut out[row * width + column..row * width + column + columns];
                    for ((d, &s), &w) in dest.iter_mut().zip(sums).zip(scales) {
                        *d = s as f32 * (row_scale * w);
                    }
                }
            }
        }
    }
}

struct QuantisedRows {
    rows: usize,
    /// `[tiles · pairs][TILE]`, see [`Int8Matrix::quantise_rows`].
    pairs: Vec<[i32; TILE]>,
    scales: Vec<f32>,
}

/// The `i32` sums of one tile of rows against one panel:
/// `[TILE][PANEL]`, with the widest exact product the CPU has.
#[cfg(all(target_arch = "x86_64", target_feature = "avx2"))]
fn tile_product(pairs: &[[i32; TILE]], blocks: &[Block]) -> [[i32; PANEL]; TILE] {
    avx512::tile_product(pairs, blocks).unwrap_or_else(|| tile_product_avx2(pairs, blocks))
}

/// [`tile_product`] in AVX2: per input pair and row, two `vpmaddwd` and two
/// `vpaddd` over the panel's two halves.
#[cfg(all(target_arch = "x86_64", target_feature = "avx2"))]
fn tile_product_avx2(pairs: &[[i32; TILE]], blocks: &[Block]) -> [[i32; PANEL]; TILE] {
    use safe_arch::{
        add_i32_m256i, convert_to_i16_m256i_from_i8_m128i, m128i, mul_i16_horizontal_add_m256i,
        set_splat_i32_m256i, zeroed_m256i,
    };
    let mut sums = [[zeroed_m256i(); 2]; TILE];
    for (rows, Block([low, high])) in pairs.iter().zip(blocks) {
        let low = convert_to_i16_m256i_from_i8_m128i(m128i::from(*low));
        let high = convert_to_i16_m256i_from_i8_m128i(m128i::from(*high));
        for (sum, &pair) in sums.iter_mut().zip(rows) {
            let pair = set_splat_i32_m256i(pair);
            sum[0] = add_i32_m256i(sum[0], mul_i16_horizontal_add_m256i(pair, low));
            sum[1] = add_i32_m256i(sum[1], mul_i16_horizontal_add_m256i(pair, high));
        }
    }
    sums.map(|[low, high]| {
        let (low, high): ([i32; 8], [i32; 8]) = (low.into(), high.into());
        let mut row = [0_i32; PANEL];
        row[..8].copy_from_slice(&low);
        row[8..].copy_from_slice(&high);
        row
    })
}

/// The same sums with AVX-512 VNNI, where the CPU has it (checked at run
/// time: the build assumes only x86-64-v3). A block's 32 weights widen into
/// one 512-bit vector, and `vpdpwssd` multiplies a row's input pair with all
/// sixteen outputs' pairs and adds into the sums in one instruction, where
/// AVX2 takes four. The sums are the same exact integers: `vpdpwssd` wraps
/// like `vpaddd` (it does not saturate), and [`Int8Matrix::input_limit`]
/// keeps every sum in range.
#[cfg(all(target_arch = "x86_64", target_feature = "avx2"))]
mod avx512 {
    use std::arch::x86_64::{
        __m256i, _mm256_set_m128i, _mm512_castsi512_si256, _mm512_cvtepi8_epi16, _mm512_dpwssd_epi32,
        _mm512_extracti64x4_epi64, _mm512_set1_epi32, _mm512_setzero_si512,
    };

    use safe_arch::{m128i, m256i};

    use super::{Block, PANEL, TILE};

    /// Whether this CPU has AVX-512 F, BW and VNNI (std reads the CPU once
    /// and keeps the answer).
    pub(super) fn available() -> bool {
        std::arch::is_x86_feature_detected!("avx512f")
            && std::arch::is_x86_feature_detected!("avx512bw")
            && std::arch::is_x86_feature_detected!("avx512vnni")
    }

    /// The tile's sums, or `None` on a CPU without AVX-512 VNNI.
    // The one `unsafe` in the workspace: calling a function compiled for CPU
    // features the build does not assume.
    #[allow(unsafe_code)]
    pub(super) fn tile_product(pairs: &[[i32; TILE]], blocks: &[Block]) -> Option<[[i32; PANEL]; TILE]> {
        if !available() {
            return None;
        }
        // SAFETY: `sums` needs AVX-512 F, BW and VNNI, and `available` has
        // just read from the CPU that it has all three.
        Some(unsafe { sums(pairs, blocks) })
    }

    #[target_feature(enable = "avx512f,avx512bw,avx512vnni")]
    fn sums(pairs: &[[i32; TILE]], blocks: &[Block]) -> [[i32; PANEL]; TILE] {
        let mut sums = [_mm512_setzero_si512(); TILE];
        for (rows, Block([low, high])) in pairs.iter().zip(blocks) {
            let block: __m256i = _mm256_set_m128i(m128i::from(*high).0, m128i::from(*low).0);
            let weights = _mm512_cvtepi8_epi16(block);
            for (sum, &pair) in sums.iter_mut().zip(rows) {
                *sum = _mm512_dpwssd_epi32(*sum, _mm512_set1_epi32(pair), weights);
            }
        }
        sums.map(|sum| {
            let low: [i32; 8] = m256i(_mm512_castsi512_si256(sum)).into();
            let high: [i32; 8] = m256i(_mm512_extracti64x4_epi64::<1>(sum)).into();
            let mut row = [0_i32; PANEL];
            row[..8].copy_from_slice(&low);
            row[8..].copy_from_slice(&high);
            row
        })
    }
}

/// The same sums in plain Rust, for targets without AVX2.
#[cfg(not(all(target_arch = "x86_64", target_feature = "avx2")))]
fn tile_product(pairs: &[[i32; TILE]], blocks: &[Block]) -> [[i32; PANEL]; TILE] {
    tile_product_portable(pairs, blocks)
}

#[cfg_attr(all(target_arch = "x86_64", target_feature = "avx2", not(test)), allow(dead_code))]
fn tile_product_portable(pairs: &[[i32; TILE]], blocks: &[Block]) -> [[i32; PANEL]; TILE] {
    let mut sums = [[0_i32; PANEL]; TILE];
    for (rows, block) in pairs.iter().zip(blocks) {
        for (sum, &pair) in sums.iter_mut().zip(rows) {
            let (x0, x1) = (pair as i16 as i32, (pair >> 16) as i16 as i32);
            for (lane, s) in sum.iter_mut().enumerate() {
                let weights = &block.0[lane / 8][(lane % 8) * 2..(lane % 8) * 2 + 2];
                *s += x0 * weights[0] as i32 + x1 * weights[1] as i32;
            }
        }
    }
    sums
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::noise;

    fn reference(x: &[f32], w: &[f32], inputs: usize) -> Vec<f64> {
        x.chunks_exact(inputs)
            .flat_map(|row| {
                w.chunks_exact(inputs)
                    .map(|wr| row.iter().zip(wr).map(|(&a, &b)| a as f64 * b as f64).sum::<f64>())
                    .collect::<Vec<_>>()
            })
            .collect()
    }

    /// Integer weights whose largest magnitude per row is 127 and integer
    /// inputs whose largest per row is the input limit quantise with scale
    /// 1: the product must then be exact, whatever the shapes (odd inputs,
    /// outputs off a panel, rows off a tile, one row or many).
    #[test]
    fn integer_values_multiply_exactly() {
        for (rows, outputs, inputs) in [(1, 16, 2), (3, 20, 7), (10, 384, 384), (70, 33, 1536), (257, 48, 5)]
        {
            let limit = Int8Matrix::input_limit(inputs) as f32;
            let mut w: Vec<f32> = noise(1, outputs * inputs).iter().map(|v| (v * 127.0).round()).collect();
            for row in w.chunks_exact_mut(inputs) {
                row[0] = 127.0;
            }
            let mut x: Vec<f32> = noise(2, rows * inputs).iter().map(|v| (v * limit).round()).collect();
            for row in x.chunks_exact_mut(inputs) {
                row[inputs - 1] = -limit;
            }
            let matrix = Int8Matrix::quantise(&w, outputs, inputs).unwrap();
            let got = matrix.product(&x).unwrap();
            let want = reference(&x, &w, inputs);
            assert_eq!(got.len(), want.len());
            for (i, (g, w)) in got.iter().zip(&want).enumerate() {
                // The sums are exact integers; only the f32 result rounds.
                assert!(
                    (*g as f64 - w).abs() <= w.abs() * 1e-7,
                    "{rows}x{outputs}x{inputs} at {i}: {g} vs {w}"
                );
            }
        }
    }

    /// Real-valued weights and inputs: each result within the rounding of
    /// 8-bit weights and 13-bit inputs, relative to the row's scale.
    #[test]
    fn products_are_within_quantisation_error() {
        let (rows, outputs, inputs) = (37, 100, 384);
        let w = noise(3, outputs * inputs);
        let x: Vec<f32> = noise(4, rows * inputs).iter().map(|v| v * 5.0).collect();
        let matrix = Int8Matrix::quantise(&w, outputs, inputs).unwrap();
        let got = matrix.product(&x).unwrap();
        let want = reference(&x, &w, inputs);
        let mut cosine = (0.0, 0.0, 0.0);
        for (g, w) in got.iter().zip(&want) {
            let g = *g as f64;
            cosine = (cosine.0 + g * w, cosine.1 + g * g, cosine.2 + w * w);
            // Each weight is off by at most half a step (1/254 of the row's
            // largest, ≤ 1), each input by half of 5/8191: the sum of those
            // over 384 inputs bounds the error.
            assert!((g - w).abs() <= 384.0 * (5.0 / 254.0 + 0.5 * 5.0 / 8191.0), "{g} vs {w}");
        }
        assert!(cosine.0 / (cosine.1.sqrt() * cosine.2.sqrt()) > 0.9999);
    }

    /// The plain-Rust sums (other targets) equal the vector ones.
    #[test]
    fn portable_sums_equal_the_vector_sums() {
        let inputs = 96;
        let w = noise(5, 16 * inputs);
        let matrix = Int8Matrix::quantise(&w, 16, inputs).unwrap();
        let x: Vec<f32> = noise(6, TILE * inputs);
        let rows = matrix.quantise_rows(&x);
        let blocks = &matrix.blocks[..matrix.pairs];
        let portable = tile_product_portable(&rows.pairs, blocks);
        assert_eq!(tile_product(&rows.pairs, blocks), portable);
        assert!(portable.iter().flatten().any(|&s| s != 0));
    }

    /// Each x86 path gives the portable sums, at the extremes too: every
    /// input at ±the limit against weights at ±127, over MiniLM's widest
    /// product (1536 inputs), where the sums come closest to `i32`'s range.
    #[cfg(all(target_arch = "x86_64", target_feature = "avx2"))]
    #[test]
    fn every_x86_path_gives_the_portable_sums() {
        let inputs = 1536;
        let limit = Int8Matrix::input_limit(inputs) as f32;
        let signs = |seed| noise(seed, 16 * inputs).into_iter().map(|v| if v < 0.0 { -1.0 } else { 1.0 });
        let w: Vec<f32> = signs(7).map(|s| s * 127.0).collect();
        let matrix = Int8Matrix::quantise(&w, 16, inputs).unwrap();
        let mut x: Vec<f32> = signs(8).take(TILE * inputs).map(|s| s * limit).collect();
        x[..inputs].iter_mut().zip(&w).for_each(|(x, w)| *x = w.signum() * limit);
        let rows = matrix.quantise_rows(&x);
        let blocks = &matrix.blocks[..matrix.pairs];
        let portable = tile_product_portable(&rows.pairs, blocks);
        assert_eq!(portable[0][0] as i64, inputs as i64 * 127 * limit as i64);
        assert_eq!(tile_product_avx2(&rows.pairs, blocks), portable);
        match avx512::tile_product(&rows.pairs, blocks) {
            Some(sums) => assert_eq!(sums, portable),
            None => assert!(!avx512::available()),
        }
    }

    #[test]
    fn zero_rows_and_bad_shapes() {
        let matrix = Int8Matrix::quantise(&[0.0; 6], 2, 3).unwrap();
        assert_eq!(matrix.product(&[0.0; 6]).unwrap(), vec![0.0; 4]);
        assert_eq!(matrix.product(&[]).unwrap(), Vec::<f32>::new());
        assert!(matrix.product(&[0.0; 4]).is_none());
        assert!(Int8Matrix::quantise(&[0.0; 5], 2, 3).is_none());
        assert!(Int8Matrix::quantise(&[], 0, 3).is_none());
    }

    #[test]
    fn no_sum_can_overflow() {
        for inputs in [1, 2, 384, 1536, 2064, 4096, 100_000] {
            let limit = Int8Matrix::input_limit(inputs) as i64;
            assert!(inputs.next_multiple_of(2) as i64 * 127 * limit <= i32::MAX as i64, "{inputs}");
        }
        assert_eq!(Int8Matrix::input_limit(1536), INPUT_LEVELS);
    }
}
