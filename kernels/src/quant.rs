//! Block-quantised weight matrices, as GGUF files carry them, multiplied
//! with activations quantised the same way: the arithmetic of the embedded
//! chat model (`crate::llama`).
//!
//! - **Weights** keep the file's own blocks of [`BLOCK`] values where a
//!   kernel here reads them (`Q4_1`: 4-bit levels with a scale and a
//!   minimum; `Q8_0`: 8-bit levels with a scale), so a 4-bit model streams
//!   4-bit weights. Any other type is handed over as f32 and stored as
//!   `Q8_0`. Scales are widened from f16 once, at load.
//! - **Activations** are quantised per product, per block of 32, to 8 bits
//!   with their own scale (and the scaled sum of their levels, which a
//!   `Q4_1` block's minimum multiplies): the same precision llama.cpp uses.
//! - **The product** of a block is an exact integer sum: AVX2 multiplies
//!   unsigned by signed bytes into `i16` pairs (`vpmaddubsw`, which cannot
//!   saturate here: at most 2 · 127 · 127), adds pairs into `i32`, and
//!   scales once per block in f32 with a fused multiply-add.
//!
//! A product of one row (a generated token) splits the matrix's rows across
//! rayon's pool; a product of many rows (a prompt) splits the rows of `x`,
//! and multiplies each weight row with [`TOKENS`] of them at a time, so a
//! block of weights is unpacked once for four tokens.

use rayon::prelude::*;

/// Values per block.
pub const BLOCK: usize = 32;
/// Rows of `x` multiplied together with one weight row.
const TOKENS: usize = 4;
/// Rows of `x` per parallel task, for a many-row product.
const TOKENS_PER_TASK: usize = 16;
/// Weight rows per parallel task, at least, for a one-row product.
const ROWS_PER_TASK: usize = 32;

/// A `Q8_0` block: `value = level · scale`.
#[derive(Clone, Copy, Debug, PartialEq)]
struct Q8Block {
    scale: f32,
    levels: [i8; BLOCK],
}

/// A `Q4_1` block: `value = level · scale + min`, levels 0–15. Byte `j`
/// holds value `j` in its low half and value `j + 16` in its high half.
#[derive(Clone, Copy, Debug, PartialEq)]
struct Q4Block {
    scale: f32,
    min: f32,
    nibbles: [u8; BLOCK / 2],
}

#[derive(Clone, Debug)]
enum Blocks {
    Q8(Vec<Q8Block>),
    Q4(Vec<Q4Block>),
}

/// A weight matrix `W` (`[rows, cols]`, one row per output), in blocks.
#[derive(Clone, Debug)]
pub struct QMatrix {
    rows: usize,
    cols: usize,
    blocks: Blocks,
}

/// Activations quantised for a product: per block, 8-bit levels, the
/// scale, and `scale · Σ levels`.
pub struct Quantised {
    cols: usize,
    blocks: Vec<ActBlock>,
}

#[derive(Clone, Copy, Debug, Default)]
struct ActBlock {
    levels: [i8; BLOCK],
    scale: f32,
    scaled_sum: f32,
}

/// The value of an IEEE half-precision number.
pub fn f16_to_f32(bits: u16) -> f32 {
    let sign = u32::from(bits & 0x8000) << 16;
    let exponent = u32::from((bits >> 10) & 0x1f);
    let mantissa = u32::from(bits & 0x3ff);
    match exponent {
        0 => {
            // Zero or subnormal: mantissa · 2⁻²⁴.
            let magnitude = mantissa as f32 / 16_777_216.0;
            if sign == 0 {
                magnitude
            } else {
                -magnitude
            }
        }
        31 => f32::from_bits(sign | 0x7f80_0000 | (mantissa << 13)),
        _ => f32::from_bits(sign | ((exponent + 112) << 23) | (mantissa << 13)),
    }
}

fn half(bytes: &[u8], at: usize) -> f32 {
    f16_to_f32(u16::from_le_bytes([bytes[at], bytes[at + 1]]))
}

fn check_shape(rows: usize, cols: usize) -> Result<usize, String> {
    if rows == 0 || cols == 0 || !cols.is_multiple_of(BLOCK) {
        return Err(format!("a {rows} × {cols} matrix is not whole blocks of {BLOCK}"));
    }
    rows.checked_mul(cols / BLOCK).ok_or_else(|| format!("a {rows} × {cols} matrix is too large"))
}

impl QMatrix {
    /// GGUF `Q8_0` data: per block, an f16 scale and 32 `i8` levels.
    pub fn from_q8_0(bytes: &[u8], rows: usize, cols: usize) -> Result<Self, String> {
        const SIZE: usize = 2 + BLOCK;
        let count = check_shape(rows, cols)?;
        if bytes.len() != count * SIZE {
            return Err(format!("Q8_0 data of {} bytes for {rows} × {cols}", bytes.len()));
        }
        let blocks = bytes
            .chunks_exact(SIZE)
            .map(|raw| {
                let mut levels = [0_i8; BLOCK];
                for (level, &byte) in levels.iter_mut().zip(&raw[2..]) {
                    // −128 never comes out of a quantiser (levels are
                    // ±127); clamped, `abs` stays exact in the product.
                    *level = (byte as i8).max(-127);
                }
                Q8Block { scale: half(raw, 0), levels }
            })
            .collect();
        Ok(Self { rows, cols, blocks: Blocks::Q8(blocks) })
    }

    /// GGUF `Q4_1` data: per block, an f16 scale, an f16 minimum and 16
    /// bytes of 4-bit levels.
    pub fn from_q4_1(bytes: &[u8], rows: usize, cols: usize) -> Result<Self, String> {
        const SIZE: usize = 4 + BLOCK / 2;
        let count = check_shape(rows, cols)?;
        if bytes.len() != count * SIZE {
            return Err(format!("Q4_1 data of {} bytes for {rows} × {cols}", bytes.len()));
        }
        let blocks = bytes
            .chunks_exact(SIZE)
            .map(|raw| {
                let mut nibbles = [0_u8; BLOCK / 2];
                nibbles.copy_from_slice(&raw[4..]);
                Q4Block { scale: half(raw, 0), min: half(raw, 2), nibbles }
            })
            .collect();
        Ok(Self { rows, cols, blocks: Blocks::Q4(blocks) })
    }

    /// `values` (row-major `[rows, cols]`) quantised to `Q8_0`.
    pub fn quantise(values: &[f32], rows: usize, cols: usize) -> Result<Self, String> {
        let count = check_shape(rows, cols)?;
        if values.len() != rows * cols {
            return Err(format!("{} values for {rows} × {cols}", values.len()));
        }
        let mut blocks = Vec::with_capacity(count);
        for chunk in values.chunks_exact(BLOCK) {
            let top = chunk.iter().fold(0.0_f32, |m, v| m.max(v.abs()));
            let scale = if top.is_finite() { top / 127.0 } else { 0.0 };
            let inverse = if scale > 0.0 { 1.0 / scale } else { 0.0 };
            let mut levels = [0_i8; BLOCK];
            for (level, v) in levels.iter_mut().zip(chunk) {
                *level = (v * inverse).round().clamp(-127.0, 127.0) as i8;
            }
            blocks.push(Q8Block { scale, levels });
        }
        Ok(Self { rows, cols, blocks: Blocks::Q8(blocks) })
    }

    /// The matrices' rows one after another (`[Σ rows, cols]`): one product
    /// instead of several over the same input. Matrices of different block
    /// types are all stored as `Q8_0`.
    pub fn stack(parts: &[QMatrix]) -> Result<Self, String> {
        let first = parts.first().ok_or("nothing to stack")?;
        let cols = first.cols;
        if parts.iter().any(|p| p.cols != cols) {
            return Err("stacked matrices need the same number of columns".into());
        }
        let rows = parts.iter().map(|p| p.rows).sum();
        let q8 = gather(parts, |b| match b {
            Blocks::Q8(blocks) => Some(blocks),
            Blocks::Q4(_) => None,
        });
        let q4 = gather(parts, |b| match b {
            Blocks::Q4(blocks) => Some(blocks),
            Blocks::Q8(_) => None,
        });
        let blocks = match (q8, q4) {
            (Some(q8), _) => Blocks::Q8(q8),
            (_, Some(q4)) => Blocks::Q4(q4),
            (None, None) => {
                let values: Vec<f32> = parts.iter().flat_map(|p| p.values()).collect();
                return Self::quantise(&values, rows, cols);
            }
        };
        Ok(Self { rows, cols, blocks })
    }

    pub fn rows(&self) -> usize {
        self.rows
    }

    pub fn cols(&self) -> usize {
        self.cols
    }

    /// Row `row`, dequantised (an embedding lookup). `None` past the end.
    pub fn row(&self, row: usize) -> Option<Vec<f32>> {
        if row >= self.rows {
            return None;
        }
        let per_row = self.cols / BLOCK;
        let range = row * per_row..(row + 1) * per_row;
        let mut out = Vec::with_capacity(self.cols);
        match &self.blocks {
            Blocks::Q8(blocks) => {
                for block in &blocks[range] {
                    out.extend(block.levels.iter().map(|&l| f32::from(l) * block.scale));
                }
            }
            Blocks::Q4(blocks) => {
                for block in &blocks[range] {
                    let level = |n: u8| f32::from(n).mul_add(block.scale, block.min);
                    out.extend(block.nibbles.iter().map(|&b| level(b & 0x0f)));
                    out.extend(block.nibbles.iter().map(|&b| level(b >> 4)));
                }
            }
        }
        Some(out)
    }

    /// Every value, row-major.
    fn values(&self) -> Vec<f32> {
        (0..self.rows).flat_map(|r| self.row(r).unwrap_or_default()).collect()
    }

    /// `x · Wᵀ` for `x` row-major `[n, cols]`, into `out` (`[n, rows]`).
    ///
    /// Returns `None` when the lengths do not match the shape.
    pub fn product(&self, x: &[f32], out: &mut [f32]) -> Option<()> {
        if !x.len().is_multiple_of(self.cols) || out.len() != x.len() / self.cols * self.rows {
            return None;
        }
        let quantised = quantise_activations(x, self.cols);
        self.product_quantised(&quantised, out)
    }

    /// The product with activations already quantised (one input, several
    /// matrices).
    pub fn product_quantised(&self, x: &Quantised, out: &mut [f32]) -> Option<()> {
        if x.cols != self.cols {
            return None;
        }
        let per_row = self.cols / BLOCK;
        let n = x.blocks.len() / per_row;
        if out.len() != n * self.rows {
            return None;
        }
        if n == 1 {
            let chunk = self.rows.div_ceil(rayon::current_num_threads() * 4).max(ROWS_PER_TASK);
            out.par_chunks_mut(chunk).enumerate().for_each(|(task, out)| {
                for (i, value) in out.iter_mut().enumerate() {
                    let row = task * chunk + i;
                    *value = self.dot(row, [&x.blocks[..]; 1])[0];
                }
            });
            return Some(());
        }
        out.par_chunks_mut(TOKENS_PER_TASK * self.rows)
            .zip(x.blocks.par_chunks(TOKENS_PER_TASK * per_row))
            .for_each(|(out, x)| {
                let tokens: Vec<&[ActBlock]> = x.chunks_exact(per_row).collect();
                let mut group = tokens.chunks_exact(TOKENS);
                for (first, four) in (&mut group).enumerate() {
                    let four = [four[0], four[1], four[2], four[3]];
                    for row in 0..self.rows {
                        let sums = self.dot(row, four);
                        for (t, sum) in sums.into_iter().enumerate() {
                            out[(first * TOKENS + t) * self.rows + row] = sum;
                        }
                    }
                }
                let done = tokens.len() - group.remainder().len();
                for (t, token) in group.remainder().iter().enumerate() {
                    for row in 0..self.rows {
                        out[(done + t) * self.rows + row] = self.dot(row, [*token; 1])[0];
                    }
                }
            });
        Some(())
    }

    /// Row `row` of `W` times each of `tokens` (each one row of blocks).
    #[inline(always)]
    fn dot<const T: usize>(&self, row: usize, tokens: [&[ActBlock]; T]) -> [f32; T] {
        let per_row = self.cols / BLOCK;
        let range = row * per_row..(row + 1) * per_row;
        match &self.blocks {
            Blocks::Q8(blocks) => dot_q8(&blocks[range], tokens),
            Blocks::Q4(blocks) => dot_q4(&blocks[range], tokens),
        }
    }
}

/// Every part's blocks one after another, when `pick` finds them in each.
fn gather<T: Copy>(parts: &[QMatrix], pick: impl Fn(&Blocks) -> Option<&Vec<T>>) -> Option<Vec<T>> {
    let mut all = Vec::new();
    for part in parts {
        all.extend_from_slice(pick(&part.blocks)?);
    }
    Some(all)
}

/// `x` (`[n, cols]`) quantised to 8-bit blocks.
pub fn quantise_activations(x: &[f32], cols: usize) -> Quantised {
    let mut blocks = vec![ActBlock::default(); x.len() / BLOCK];
    let quantise = |(block, values): (&mut ActBlock, &[f32])| {
        let top = values.iter().fold(0.0_f32, |m, v| m.max(v.abs()));
        if top == 0.0 || !top.is_finite() {
            return;
        }
        let scale = top / 127.0;
        let inverse = 127.0 / top;
        let mut total = 0_i32;
        for (level, v) in block.levels.iter_mut().zip(values) {
            *level = (v * inverse).round() as i8;
            total += i32::from(*level);
        }
        block.scale = scale;
        block.scaled_sum = scale * total as f32;
    };
    if blocks.len() >= 1024 {
        blocks.par_iter_mut().zip(x.par_chunks_exact(BLOCK)).for_each(quantise);
    } else {
        blocks.iter_mut().zip(x.chunks_exact(BLOCK)).for_each(quantise);
    }
    Quantised { cols, blocks }
}

#[cfg(all(target_arch = "x86_64", target_feature = "avx2"))]
#[inline(always)]
fn dot_q8<const T: usize>(weights: &[Q8Block], tokens: [&[ActBlock]; T]) -> [f32; T] {
    use safe_arch::*;
    let mut sums = [zeroed_m256(); T];
    let ones = set_splat_i16_m256i(1);
    for (b, block) in weights.iter().enumerate() {
        let w = m256i::from(block.levels);
        let magnitude = abs_i8_m256i(w);
        for (sum, token) in sums.iter_mut().zip(tokens) {
            let a = &token[b];
            // |w| · (a with w's sign) = w · a, with the unsigned operand first.
            let signed = sign_apply_i8_m256i(m256i::from(a.levels), w);
            let pairs = mul_u8i8_add_horizontal_saturating_m256i(magnitude, signed);
            let quads = mul_i16_horizontal_add_m256i(pairs, ones);
            let scale = set_splat_m256(block.scale * a.scale);
            *sum = fused_mul_add_m256(convert_to_m256_from_i32_m256i(quads), scale, *sum);
        }
    }
    sums.map(horizontal_sum)
}

#[cfg(all(target_arch = "x86_64", target_feature = "avx2"))]
#[inline(always)]
fn dot_q4<const T: usize>(weights: &[Q4Block], tokens: [&[ActBlock]; T]) -> [f32; T] {
    use safe_arch::*;
    let mut sums = [zeroed_m256(); T];
    let mut mins = [0.0_f32; T];
    let ones = set_splat_i16_m256i(1);
    let low_mask = set_splat_i8_m128i(0x0f);
    for (b, block) in weights.iter().enumerate() {
        let bytes = m128i::from(block.nibbles);
        let low = bitand_m128i(bytes, low_mask);
        let high = bitand_m128i(shr_imm_u16_m128i::<4>(bytes), low_mask);
        let w = set_m128i_m256i(high, low);
        for ((sum, min), token) in sums.iter_mut().zip(mins.iter_mut()).zip(tokens) {
            let a = &token[b];
            let pairs = mul_u8i8_add_horizontal_saturating_m256i(w, m256i::from(a.levels));
            let quads = mul_i16_horizontal_add_m256i(pairs, ones);
            let scale = set_splat_m256(block.scale * a.scale);
            *sum = fused_mul_add_m256(convert_to_m256_from_i32_m256i(quads), scale, *sum);
            *min = block.min.mul_add(a.scaled_sum, *min);
        }
    }
    let mut out = sums.map(horizontal_sum);
    for (o, m) in out.iter_mut().zip(mins) {
        *o += m;
    }
    out
}

#[cfg(all(target_arch = "x86_64", target_feature = "avx2"))]
#[inline(always)]
fn horizontal_sum(v: safe_arch::m256) -> f32 {
    let lanes: [f32; 8] = v.into();
    ((lanes[0] + lanes[4]) + (lanes[1] + lanes[5])) + ((lanes[2] + lanes[6]) + (lanes[3] + lanes[7]))
}

#[cfg(not(all(target_arch = "x86_64", target_feature = "avx2")))]
fn dot_q8<const T: usize>(weights: &[Q8Block], tokens: [&[ActBlock]; T]) -> [f32; T] {
    dot_q8_portable(weights, tokens)
}

#[cfg(not(all(target_arch = "x86_64", target_feature = "avx2")))]
fn dot_q4<const T: usize>(weights: &[Q4Block], tokens: [&[ActBlock]; T]) -> [f32; T] {
    dot_q4_portable(weights, tokens)
}

#[cfg_attr(all(target_arch = "x86_64", target_feature = "avx2", not(test)), allow(dead_code))]
fn dot_q8_portable<const T: usize>(weights: &[Q8Block], tokens: [&[ActBlock]; T]) -> [f32; T] {
    tokens.map(|token| {
        weights
            .iter()
            .zip(token)
            .map(|(w, a)| {
                let levels: i32 =
                    w.levels.iter().zip(&a.levels).map(|(&x, &y)| i32::from(x) * i32::from(y)).sum();
                levels as f32 * (w.scale * a.scale)
            })
            .sum()
    })
}

#[cfg_attr(all(target_arch = "x86_64", target_feature = "avx2", not(test)), allow(dead_code))]
fn dot_q4_portable<const T: usize>(weights: &[Q4Block], tokens: [&[ActBlock]; T]) -> [f32; T] {
    tokens.map(|token| {
        weights
            .iter()
            .zip(token)
            .map(|(w, a)| {
                let (low, high) = a.levels.split_at(BLOCK / 2);
                let levels: i32 = w
                    .nibbles
                    .iter()
                    .zip(low.iter().zip(high))
                    .map(|(&n, (&l, &h))| {
                        i32::from(n & 0x0f) * i32::from(l) + i32::from(n >> 4) * i32::from(h)
                    })
                    .sum();
                levels as f32 * (w.scale * a.scale) + w.min * a.scaled_sum
            })
            .sum()
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::noise;

    fn f32_to_f16(v: f32) -> u16 {
        // Exact for the values the tests use (normal, 10-bit mantissas).
        let bits = v.to_bits();
        let sign = ((bits >> 16) & 0x8000) as u16;
        let exponent = ((bits >> 23) & 0xff) as i32 - 127 + 15;
        let mantissa = ((bits >> 13) & 0x3ff) as u16;
        sign | ((exponent as u16) << 10) | mantissa
    }

    /// Q4_1 bytes for `rows × cols` with known levels, scales and minimums.
    fn q4_file(rows: usize, cols: usize, seed: u64) -> (Vec<u8>, Vec<f32>) {
        let mut bytes = Vec::new();
        let mut values = Vec::new();
        let noise = noise(seed, rows * cols / BLOCK * (BLOCK + 2));
        let mut next = noise.iter();
        for _ in 0..rows * cols / BLOCK {
            let scale = f16_to_f32(f32_to_f16(0.01 + next.next().unwrap().abs() * 0.05));
            let min = f16_to_f32(f32_to_f16(-0.3 * next.next().unwrap().abs()));
            bytes.extend(f32_to_f16(scale).to_le_bytes());
            bytes.extend(f32_to_f16(min).to_le_bytes());
            let levels: Vec<u8> = (0..BLOCK).map(|_| ((next.next().unwrap() + 1.0) * 7.99) as u8).collect();
            for j in 0..BLOCK / 2 {
                bytes.push(levels[j] | (levels[j + 16] << 4));
            }
            values.extend(levels.iter().map(|&l| f32::from(l) * scale + min));
        }
        (bytes, values)
    }

    fn reference(x: &[f32], w: &[f32], cols: usize) -> Vec<f64> {
        let mut out = Vec::new();
        for row in x.chunks_exact(cols) {
            for weights in w.chunks_exact(cols) {
                out.push(row.iter().zip(weights).map(|(a, b)| f64::from(*a) * f64::from(*b)).sum());
            }
        }
        out
    }

    fn assert_close(got: &[f32], want: &[f64], tolerance: f64) {
        assert_eq!(got.len(), want.len());
        for (g, w) in got.iter().zip(want) {
            assert!((f64::from(*g) - w).abs() <= tolerance, "{g} vs {w}");
        }
    }

    #[test]
    fn halves_are_read_exactly() {
        assert_eq!(f16_to_f32(0x3c00), 1.0);
        assert_eq!(f16_to_f32(0xc000), -2.0);
        assert_eq!(f16_to_f32(0x3555), 0.333_251_95);
        assert_eq!(f16_to_f32(0x0001), 2.0_f32.powi(-24));
        assert_eq!(f16_to_f32(0x8000), -0.0);
        assert!(f16_to_f32(0x7c00).is_infinite());
    }

    #[test]
    fn q4_1_rows_dequantise_to_the_files_values() {
        let (bytes, values) = q4_file(3, 64, 7);
        let matrix = QMatrix::from_q4_1(&bytes, 3, 64).unwrap();
        let row: Vec<f32> = (0..3).flat_map(|r| matrix.row(r).unwrap()).collect();
        assert_eq!(row, values);
        assert!(matrix.row(3).is_none());
        assert!(QMatrix::from_q4_1(&bytes[1..], 3, 64).is_err());
        assert!(QMatrix::from_q4_1(&bytes, 3, 60).is_err());
    }

    #[test]
    fn products_match_the_exact_sum_within_the_activations_rounding() {
        for (rows, cols, n) in [(37, 96, 1), (40, 64, 7), (19, 128, 33)] {
            let (bytes, w) = q4_file(rows, cols, rows as u64);
            let x = noise(n as u64, n * cols);
            let want = reference(&x, &w, cols);
            // Activations are rounded to 1/254 of each block's largest
            // value; the weights are exact.
            let tolerance = cols as f64 * 0.5 / 127.0 * 0.8;
            for matrix in
                [QMatrix::from_q4_1(&bytes, rows, cols).unwrap(), QMatrix::quantise(&w, rows, cols).unwrap()]
            {
                let mut out = vec![0.0; n * rows];
                matrix.product(&x, &mut out).unwrap();
                assert_close(&out, &want, tolerance * 2.0);
            }
        }
    }

    #[test]
    fn stacked_matrices_give_each_parts_product() {
        let (a, _) = q4_file(5, 64, 1);
        let (b, wb) = q4_file(3, 64, 2);
        let a = QMatrix::from_q4_1(&a, 5, 64).unwrap();
        let b = QMatrix::from_q4_1(&b, 3, 64).unwrap();
        let x = noise(3, 64);
        let (mut whole, mut part) = (vec![0.0; 8], vec![0.0; 3]);
        QMatrix::stack(&[a.clone(), b.clone()]).unwrap().product(&x, &mut whole).unwrap();
        b.product(&x, &mut part).unwrap();
        assert_eq!(&whole[5..], &part[..]);
        // Mixed types are stored as Q8_0, within its rounding.
        let mixed = QMatrix::stack(&[a, QMatrix::quantise(&wb, 3, 64).unwrap()]).unwrap();
        assert!(matches!(mixed.blocks, Blocks::Q8(_)));
        mixed.product(&x, &mut whole).unwrap();
        assert_close(&whole[5..], &reference(&x, &wb, 64), 0.05);
    }

    #[test]
    fn the_vector_kernels_give_the_portable_sums() {
        let (bytes, w) = q4_file(4, 256, 11);
        let x = quantise_activations(&noise(5, 4 * 256), 256);
        let tokens: Vec<&[ActBlock]> = x.blocks.chunks_exact(8).collect();
        let four = [tokens[0], tokens[1], tokens[2], tokens[3]];
        let q4 = QMatrix::from_q4_1(&bytes, 4, 256).unwrap();
        let q8 = QMatrix::quantise(&w, 4, 256).unwrap();
        for matrix in [q4, q8] {
            for row in 0..4 {
                let (fast, slow) = match &matrix.blocks {
                    Blocks::Q4(b) => {
                        (dot_q4(&b[row * 8..][..8], four), dot_q4_portable(&b[row * 8..][..8], four))
                    }
                    Blocks::Q8(b) => {
                        (dot_q8(&b[row * 8..][..8], four), dot_q8_portable(&b[row * 8..][..8], four))
                    }
                };
                for (f, s) in fast.iter().zip(slow) {
                    assert!((f - s).abs() <= 1e-4 * s.abs().max(1.0), "{f} vs {s}");
                }
            }
        }
    }

    #[test]
    fn bad_shapes_are_refused() {
        let m = QMatrix::quantise(&[0.0; 64], 2, 32).unwrap();
        assert!(m.product(&[0.0; 31], &mut [0.0; 2]).is_none());
        assert!(m.product(&[0.0; 32], &mut [0.0; 3]).is_none());
        assert!(QMatrix::quantise(&[0.0; 60], 2, 30).is_err());
    }
}
