//! all-MiniLM-L6-v2 (or any BERT-style sentence-transformers model) on the
//! CPU with candle: tokenise, run the encoder ([`super::bert::Encoder`]),
//! mean-pool over real tokens (padding masked out), L2-normalise. Exactly
//! what sentence-transformers does for this model, so vectors match its
//! reference to cosine ≥ 0.999.
//!
//! Inference is CPU-bound: it runs in `spawn_blocking`, behind a semaphore so
//! concurrent callers queue instead of oversubscribing the cores (candle's
//! matrix multiplications already use every core).

use std::path::Path;
use std::sync::Arc;

use async_trait::async_trait;
use candle_core::{DType, Device, Tensor};
use candle_nn::VarBuilder;
use candle_transformers::models::bert::Config;
use tokenizers::{PaddingParams, PaddingStrategy, Tokenizer, TruncationParams};
use tokio::sync::Semaphore;

use super::bert::{self, Encoder, Precision};
use super::{EmbedError, Embedder};

/// The precisions of the dense weights: for what indexing stores, and for
/// single queries at answer time.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Precisions {
    pub documents: Precision,
    pub queries: Precision,
}

impl Precisions {
    /// The same precision for both.
    pub fn uniform(precision: Precision) -> Self {
        Self { documents: precision, queries: precision }
    }
}

/// Texts per forward pass: large enough to amortise overhead, small enough
/// that padding to the longest text in a batch stays cheap.
const BATCH_SIZE: usize = 32;

/// sentence-transformers' `max_seq_length` when the model does not say.
const DEFAULT_MAX_TOKENS: usize = 256;

pub struct LocalEmbedder {
    inner: Arc<Inner>,
    permits: Arc<Semaphore>,
}

struct Inner {
    model_name: String,
    encoder: Encoder,
    /// The encoder of single queries, when they run at another precision.
    query_encoder: Option<Encoder>,
    tokenizer: Tokenizer,
    device: Device,
    dimensions: usize,
    max_tokens: usize,
}

impl LocalEmbedder {
    /// Loads `config.json`, `tokenizer.json` and `model.safetensors` from
    /// `dir`, holding the dense weights at `precisions.documents` (and, for
    /// [`Embedder::embed_query`], at `precisions.queries`). `concurrency`
    /// bounds how many batches run at once.
    pub fn load(
        dir: &Path,
        model_name: &str,
        precisions: Precisions,
        concurrency: usize,
    ) -> Result<Self, EmbedError> {
        let model_error =
            |what: &str, err: &dyn std::fmt::Display| EmbedError::Model(format!("{what}: {err}"));
        let config_text = std::fs::read_to_string(dir.join("config.json"))
            .map_err(|err| model_error("reading config.json", &err))?;
        let config: Config =
            serde_json::from_str(&config_text).map_err(|err| model_error("parsing config.json", &err))?;
        let max_tokens = read_max_seq_length(dir).unwrap_or(DEFAULT_MAX_TOKENS);

        let mut tokenizer = Tokenizer::from_file(dir.join("tokenizer.json"))
            .map_err(|err| model_error("loading tokenizer.json", &err))?;
        let pad_id = tokenizer.token_to_id("[PAD]").unwrap_or(0);
        tokenizer
            .with_truncation(Some(TruncationParams { max_length: max_tokens, ..TruncationParams::default() }))
            .map_err(|err| model_error("configuring truncation", &err))?;
        tokenizer.with_padding(Some(PaddingParams {
            strategy: PaddingStrategy::BatchLongest,
            pad_id,
            pad_token: "[PAD]".to_owned(),
            ..PaddingParams::default()
        }));

        let device = Device::Cpu;
        // Read into memory rather than mmap: mapping a file is `unsafe` (another
        // process could change it underneath), and 90 MB is affordable.
        let weights = std::fs::read(dir.join("model.safetensors"))
            .map_err(|err| model_error("reading model.safetensors", &err))?;
        let vars = VarBuilder::from_buffered_safetensors(weights, DType::F32, &device)
            .map_err(|err| model_error("parsing model.safetensors", &err))?;
        let build = |precision| {
            Encoder::load(vars.clone(), &config, precision)
                .map_err(|err| model_error("building the model", &err))
        };
        let encoder = build(precisions.documents)?;
        let query_encoder =
            if precisions.queries == precisions.documents { None } else { Some(build(precisions.queries)?) };

        Ok(Self {
            inner: Arc::new(Inner {
                model_name: model_name.to_owned(),
                dimensions: config.hidden_size,
                encoder,
                query_encoder,
                tokenizer,
                device,
                max_tokens,
            }),
            permits: Arc::new(Semaphore::new(concurrency.max(1))),
        })
    }
}

/// `max_seq_length` from sentence-transformers' `sentence_bert_config.json`.
fn read_max_seq_length(dir: &Path) -> Option<usize> {
    let text = std::fs::read_to_string(dir.join("sentence_bert_config.json")).ok()?;
    let value: serde_json::Value = serde_json::from_str(&text).ok()?;
    usize::try_from(value.get("max_seq_length")?.as_u64()?).ok()
}

#[async_trait]
impl Embedder for LocalEmbedder {
    fn model(&self) -> &str {
        &self.inner.model_name
    }

    fn dimensions(&self) -> usize {
        self.inner.dimensions
    }

    fn max_tokens(&self) -> usize {
        self.inner.max_tokens
    }

    fn count_tokens(&self, text: &str) -> usize {
        self.inner.tokenizer.encode_fast(text, false).map(|encoding| encoding.len()).unwrap_or(0)
    }

    async fn embed(&self, texts: &[String]) -> Result<Vec<Vec<f32>>, EmbedError> {
        self.run(texts.to_vec(), false).await
    }

    async fn embed_query(&self, text: &str) -> Result<Vec<f32>, EmbedError> {
        self.run(vec![text.to_owned()], true)
            .await?
            .pop()
            .ok_or_else(|| EmbedError::Inference("no vector came back for the query".into()))
    }
}

impl LocalEmbedder {
    /// Embeds `texts` off the async executor, one batch run at a time per
    /// permit; `query` picks the query encoder when there is one.
    async fn run(&self, texts: Vec<String>, query: bool) -> Result<Vec<Vec<f32>>, EmbedError> {
        if texts.is_empty() {
            return Ok(Vec::new());
        }
        let _permit = self
            .permits
            .clone()
            .acquire_owned()
            .await
            .map_err(|_| EmbedError::Inference("the embedder is shutting down".into()))?;
        let inner = self.inner.clone();
        tokio::task::spawn_blocking(move || {
            let encoder = match (&inner.query_encoder, query) {
                (Some(query_encoder), true) => query_encoder,
                _ => &inner.encoder,
            };
            inner.embed_all(encoder, &texts)
        })
        .await
        .map_err(|err| EmbedError::Inference(format!("the embedding task failed: {err}")))?
    }
}

impl Inner {
    /// Embeds in batches of similar length (less padding), returning vectors
    /// in the order of `texts`.
    fn embed_all(&self, encoder: &Encoder, texts: &[String]) -> Result<Vec<Vec<f32>>, EmbedError> {
        let mut order: Vec<usize> = (0..texts.len()).collect();
        order.sort_by_key(|&i| texts[i].len());
        let mut vectors = vec![Vec::new(); texts.len()];
        for batch in order.chunks(BATCH_SIZE) {
            let inputs: Vec<&str> = batch.iter().map(|&i| texts[i].as_str()).collect();
            for (&i, vector) in batch.iter().zip(self.embed_batch(encoder, &inputs)?) {
                vectors[i] = vector;
            }
        }
        Ok(vectors)
    }

    fn embed_batch(&self, encoder: &Encoder, texts: &[&str]) -> Result<Vec<Vec<f32>>, EmbedError> {
        let failed = |err: &dyn std::fmt::Display| EmbedError::Inference(err.to_string());
        let encodings = self.tokenizer.encode_batch(texts.to_vec(), true).map_err(|err| failed(&err))?;
        let rows = encodings.len();
        let width = encodings.first().map_or(0, |encoding| encoding.len());
        let flatten = |field: fn(&tokenizers::Encoding) -> &[u32]| -> Vec<u32> {
            encodings.iter().flat_map(|encoding| field(encoding).iter().copied()).collect()
        };
        let ids = Tensor::from_vec(flatten(tokenizers::Encoding::get_ids), (rows, width), &self.device)
            .map_err(|err| failed(&err))?;
        let mask =
            Tensor::from_vec(flatten(tokenizers::Encoding::get_attention_mask), (rows, width), &self.device)
                .map_err(|err| failed(&err))?;
        let pooled = encoder
            .forward(&ids, &mask)
            .and_then(|hidden| bert::pool(&hidden, &mask))
            .map_err(|err| failed(&err))?;
        pooled.to_vec2::<f32>().map_err(|err| failed(&err))
    }
}
