//! A BERT encoder for sentence embeddings on the CPU, written for inference
//! throughput rather than generality (no dropout, no cross-attention, no
//! gradient bookkeeping):
//!
//! - the texts of a batch are packed one after another, without padding:
//!   every dense layer sees the batch as one `[tokens, features]` matrix (a
//!   single matrix product by candle), and attention runs per sequence, so no
//!   token attends to, or is computed for, padding;
//! - the query, key and value projections are one fused product, and the
//!   attention scale 1/√d is folded into the query weights at load time;
//! - everything between the products (bias and GELU, residual and layer
//!   norm, attention's softmax) is one vectorised pass each, in
//!   the `kernels` crate, run as candle custom ops;
//! - with [`Precision::Q8`] the weights of the dense layers are quantised to
//!   8 bits per value (one scale per output) and multiplied in integer
//!   arithmetic by [`kernels::int8`], with the inputs quantised per token;
//!   attention, layer norms and embeddings stay f32.
//!
//! The arithmetic is BERT's: `candle_transformers::models::bert` is the
//! reference it is tested against (through sentence-transformers' vectors).

use candle_core::{CpuStorage, CustomOp1, Device, InplaceOp1, InplaceOp2, Layout, Result, Shape, Tensor};
use candle_nn::VarBuilder;
use candle_transformers::models::bert::{Config, HiddenAct};

use kernels::{Activation, Norm};

pub use crate::settings::Precision;

/// `x · Wᵀ + b` with W either f32 (held transposed, contiguous) or 8-bit.
struct Dense {
    weight: Weight,
    bias: Vec<f32>,
}

enum Weight {
    /// `[in, out]`.
    Full(Tensor),
    Int8(kernels::int8::Int8Matrix),
}

impl Dense {
    /// From `weight` `[out, in]` and `bias` `[out]` as published.
    fn new(weight: Tensor, bias: Tensor, precision: Precision) -> Result<Self> {
        let weight = match precision {
            Precision::F32 => Weight::Full(weight.t()?.contiguous()?),
            Precision::Q8 => {
                let (outputs, inputs) = weight.dims2()?;
                let values = weight.flatten_all()?.to_vec1::<f32>()?;
                match kernels::int8::Int8Matrix::quantise(&values, outputs, inputs) {
                    Some(matrix) => Weight::Int8(matrix),
                    None => candle_core::bail!("cannot quantise a [{outputs}, {inputs}] weight"),
                }
            }
        };
        Ok(Self { weight, bias: bias.to_vec1::<f32>()? })
    }

    fn load(vb: &VarBuilder, inputs: usize, outputs: usize, precision: Precision) -> Result<Self> {
        Self::new(vb.get((outputs, inputs), "weight")?, vb.get(outputs, "bias")?, precision)
    }

    /// `xs · Wᵀ`, without the bias: `[tokens, in]` → `[tokens, out]`, a
    /// fresh tensor the caller may change in place.
    fn product(&self, xs: &Tensor) -> Result<Tensor> {
        match &self.weight {
            Weight::Full(weight) => xs.matmul(weight),
            Weight::Int8(matrix) => xs.apply_op1_no_bwd(&Int8Product { matrix }),
        }
    }

    /// `activation(xs · Wᵀ + b)`.
    fn forward(&self, xs: &Tensor, activation: Option<Activation>) -> Result<Tensor> {
        let product = self.product(xs)?;
        product.inplace_op1(&BiasActivation { bias: &self.bias, activation })?;
        Ok(product)
    }

    /// `norm(xs · Wᵀ + b + residual)`.
    fn forward_residual_norm(&self, xs: &Tensor, residual: &Tensor, norm: &Norm) -> Result<Tensor> {
        let product = self.product(xs)?;
        product.inplace_op2(residual, &ResidualNorm { bias: Some(&self.bias), norm })?;
        Ok(product)
    }
}

struct Layer {
    /// Query (pre-scaled), key and value in one product: `[tokens, 3·hidden]`.
    qkv: Dense,
    attention_out: Dense,
    attention_norm: Norm,
    intermediate: Dense,
    output: Dense,
    output_norm: Norm,
}

pub struct Encoder {
    word_embeddings: Tensor,
    /// Position embeddings with the (single) token type's embedding added.
    position_embeddings: Tensor,
    embedding_norm: Norm,
    layers: Vec<Layer>,
    heads: usize,
    hidden: usize,
    activation: Activation,
}

fn layer_norm(vb: VarBuilder, size: usize, eps: f64) -> Result<Norm> {
    Ok(Norm {
        gamma: vb.get(size, "weight")?.to_vec1::<f32>()?,
        beta: vb.get(size, "bias")?.to_vec1::<f32>()?,
        eps: eps as f32,
    })
}

impl Encoder {
    pub fn load(vb: VarBuilder, config: &Config, precision: Precision) -> Result<Self> {
        let vb =
            if vb.contains_tensor("bert.embeddings.word_embeddings.weight") { vb.pp("bert") } else { vb };
        let hidden = config.hidden_size;
        let heads = config.num_attention_heads;
        if heads == 0 || !hidden.is_multiple_of(heads) {
            candle_core::bail!("hidden size {hidden} is not a multiple of {heads} attention heads");
        }
        let embeddings = vb.pp("embeddings");
        let word_embeddings = embeddings.get((config.vocab_size, hidden), "word_embeddings.weight")?;
        let token_type =
            embeddings.get((config.type_vocab_size, hidden), "token_type_embeddings.weight")?.get(0)?;
        let position_embeddings = embeddings
            .get((config.max_position_embeddings, hidden), "position_embeddings.weight")?
            .broadcast_add(&token_type)?;
        let embedding_norm = layer_norm(embeddings.pp("LayerNorm"), hidden, config.layer_norm_eps)?;

        let scale = 1.0 / ((hidden / heads) as f64).sqrt();
        let layers = (0..config.num_hidden_layers)
            .map(|i| {
                let vb = vb.pp(format!("encoder.layer.{i}"));
                let attention = vb.pp("attention");
                let part = |name: &str| -> Result<(Tensor, Tensor)> {
                    let vb = attention.pp("self").pp(name);
                    Ok((vb.get((hidden, hidden), "weight")?, vb.get(hidden, "bias")?))
                };
                let ((qw, qb), (kw, kb), (vw, vb_)) = (part("query")?, part("key")?, part("value")?);
                let qkv = Dense::new(
                    Tensor::cat(&[(qw * scale)?, kw, vw], 0)?,
                    Tensor::cat(&[(qb * scale)?, kb, vb_], 0)?,
                    precision,
                )?;
                Ok(Layer {
                    qkv,
                    attention_out: Dense::load(&attention.pp("output.dense"), hidden, hidden, precision)?,
                    attention_norm: layer_norm(
                        attention.pp("output.LayerNorm"),
                        hidden,
                        config.layer_norm_eps,
                    )?,
                    intermediate: Dense::load(
                        &vb.pp("intermediate.dense"),
                        hidden,
                        config.intermediate_size,
                        precision,
                    )?,
                    output: Dense::load(&vb.pp("output.dense"), config.intermediate_size, hidden, precision)?,
                    output_norm: layer_norm(vb.pp("output.LayerNorm"), hidden, config.layer_norm_eps)?,
                })
            })
            .collect::<Result<Vec<_>>>()?;
        let activation = match config.hidden_act {
            HiddenAct::Gelu => Activation::GeluErf,
            HiddenAct::GeluApproximate => Activation::GeluTanh,
            HiddenAct::Relu => Activation::Relu,
        };
        Ok(Self { word_embeddings, position_embeddings, embedding_norm, layers, heads, hidden, activation })
    }

    /// The longest sequence the position embeddings cover.
    pub fn max_positions(&self) -> usize {
        self.position_embeddings.dims().first().copied().unwrap_or(0)
    }

    /// One unit vector per sequence: the last hidden states mean-pooled and
    /// L2-normalised (sentence-transformers' pooling for this family).
    /// `ids` holds the sequences' token ids one after another, with the
    /// lengths in `lengths`.
    pub fn embed(&self, ids: &[u32], lengths: &[usize]) -> Result<Vec<Vec<f32>>> {
        let hidden = self.forward(ids, lengths)?.flatten_all()?.to_vec1::<f32>()?;
        Ok(kernels::mean_pool_normalised(&hidden, lengths, self.hidden))
    }

    /// The last hidden states, `[tokens, hidden]`, of packed sequences.
    pub fn forward(&self, ids: &[u32], lengths: &[usize]) -> Result<Tensor> {
        let tokens: usize = lengths.iter().sum();
        if tokens != ids.len() {
            candle_core::bail!("{} token ids for sequences of {tokens} tokens in all", ids.len());
        }
        if let Some(longest) = lengths.iter().max().filter(|&&l| l > self.max_positions()) {
            candle_core::bail!("a sequence of {longest} tokens exceeds {} positions", self.max_positions());
        }
        let device = Device::Cpu;
        let positions: Vec<u32> = lengths.iter().flat_map(|&length| 0..length as u32).collect();
        let ids = Tensor::from_slice(ids, tokens, &device)?;
        let positions = Tensor::from_vec(positions, tokens, &device)?;
        let mut hidden = self.word_embeddings.index_select(&ids, 0)?;
        hidden.inplace_op2(
            &self.position_embeddings.index_select(&positions, 0)?,
            &ResidualNorm { bias: None, norm: &self.embedding_norm },
        )?;

        for layer in &self.layers {
            let qkv = layer.qkv.forward(&hidden, None)?;
            let context =
                qkv.apply_op1_no_bwd(&Attention { lengths, heads: self.heads, hidden: self.hidden })?;
            let attended =
                layer.attention_out.forward_residual_norm(&context, &hidden, &layer.attention_norm)?;
            let intermediate = layer.intermediate.forward(&attended, Some(self.activation))?;
            hidden = layer.output.forward_residual_norm(&intermediate, &attended, &layer.output_norm)?;
        }
        Ok(hidden)
    }
}

// The custom ops: candle hands over its CPU storage, the kernels do the work.

fn rows<'a>(storage: &'a CpuStorage, layout: &Layout, op: &str) -> Result<&'a [f32]> {
    match (storage, layout.contiguous_offsets()) {
        (CpuStorage::F32(data), Some((start, end))) => Ok(&data[start..end]),
        _ => candle_core::bail!("{op}: expects a contiguous f32 tensor"),
    }
}

fn rows_mut<'a>(storage: &'a mut CpuStorage, layout: &Layout, op: &str) -> Result<&'a mut [f32]> {
    match (storage, layout.contiguous_offsets()) {
        (CpuStorage::F32(data), Some((start, end))) => Ok(&mut data[start..end]),
        _ => candle_core::bail!("{op}: expects a contiguous f32 tensor"),
    }
}

/// In place: `x = activation(x + bias)`.
struct BiasActivation<'a> {
    bias: &'a [f32],
    activation: Option<Activation>,
}

impl InplaceOp1 for BiasActivation<'_> {
    fn name(&self) -> &'static str {
        "bias-activation"
    }

    fn cpu_fwd(&self, storage: &mut CpuStorage, layout: &Layout) -> Result<()> {
        let data = rows_mut(storage, layout, self.name())?;
        kernels::add_bias_activate(data, self.bias, self.activation);
        Ok(())
    }
}

/// In place: `x = norm(x + bias + residual)`.
struct ResidualNorm<'a> {
    bias: Option<&'a [f32]>,
    norm: &'a Norm,
}

impl InplaceOp2 for ResidualNorm<'_> {
    fn name(&self) -> &'static str {
        "residual-norm"
    }

    fn cpu_fwd(&self, s1: &mut CpuStorage, l1: &Layout, s2: &CpuStorage, l2: &Layout) -> Result<()> {
        if l1.shape() != l2.shape() {
            candle_core::bail!("residual-norm: shapes {:?} and {:?} differ", l1.shape(), l2.shape());
        }
        let residual = rows(s2, l2, self.name())?;
        kernels::add_residual_norm(rows_mut(s1, l1, self.name())?, residual, self.bias, self.norm);
        Ok(())
    }
}

/// `[tokens, in]` → `[tokens, out]` with 8-bit weights.
struct Int8Product<'a> {
    matrix: &'a kernels::int8::Int8Matrix,
}

impl CustomOp1 for Int8Product<'_> {
    fn name(&self) -> &'static str {
        "int8-product"
    }

    fn cpu_fwd(&self, storage: &CpuStorage, layout: &Layout) -> Result<(CpuStorage, Shape)> {
        let (inputs, outputs) = (self.matrix.inputs(), self.matrix.outputs());
        let tokens = match layout.shape().dims() {
            &[tokens, width] if width == inputs => tokens,
            dims => candle_core::bail!("int8-product: expects [tokens, {inputs}], got {dims:?}"),
        };
        let Some(product) = self.matrix.product(rows(storage, layout, self.name())?) else {
            candle_core::bail!("int8-product: the input is not [{tokens}, {inputs}]");
        };
        Ok((CpuStorage::F32(product), Shape::from((tokens, outputs))))
    }
}

/// `[tokens, 3·hidden]` (query, key, value) → context `[tokens, hidden]`.
struct Attention<'a> {
    lengths: &'a [usize],
    heads: usize,
    hidden: usize,
}

impl CustomOp1 for Attention<'_> {
    fn name(&self) -> &'static str {
        "packed-attention"
    }

    fn cpu_fwd(&self, storage: &CpuStorage, layout: &Layout) -> Result<(CpuStorage, Shape)> {
        let tokens: usize = self.lengths.iter().sum();
        if layout.shape().dims() != [tokens, 3 * self.hidden] {
            candle_core::bail!(
                "packed-attention: expects [{tokens}, {}], got {:?}",
                3 * self.hidden,
                layout.shape()
            );
        }
        let qkv = rows(storage, layout, self.name())?;
        let context = kernels::attention(qkv, self.lengths, self.heads, self.hidden);
        Ok((CpuStorage::F32(context), Shape::from((tokens, self.hidden))))
    }
}
