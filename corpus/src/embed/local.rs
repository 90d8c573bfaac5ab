//! all-MiniLM-L6-v2 (or any BERT-style sentence-transformers model) on the
//! CPU with candle: tokenise, run the encoder ([`super::bert::Encoder`]) on
//! the batch's texts packed without padding, mean-pool, L2-normalise. Exactly
//! what sentence-transformers does for this model, so vectors match its
//! reference to cosine ≥ 0.999.
//!
//! Inference is CPU-bound: it runs in `spawn_blocking`, behind a semaphore so
//! concurrent callers queue instead of oversubscribing the cores (the matrix
//! products already use every core); each pass runs on one of rayon's workers.
//! Queries that wait together are embedded together: whoever gets the
//! permit takes every query waiting then into one pass, so under load a
//! pass costs little more than one query's.

use std::path::Path;
use std::sync::{Arc, Mutex, PoisonError};

use async_trait::async_trait;
use candle_core::{DType, Device};
use candle_nn::VarBuilder;
use candle_transformers::models::bert::Config;
use tokenizers::{Tokenizer, TruncationParams};
use tokio::sync::{oneshot, OwnedSemaphorePermit, Semaphore};

use super::bert::Encoder;
use super::{EmbedError, Embedder};

pub use crate::settings::Precisions;

/// Texts per forward pass: large enough that the matrix products are
/// efficient, small enough that the activations stay in the caches' reach
/// (there is no padding to limit: texts are packed).
const BATCH_SIZE: usize = 32;

/// sentence-transformers' `max_seq_length` when the model does not say.
const DEFAULT_MAX_TOKENS: usize = 256;

pub struct LocalEmbedder {
    inner: Arc<Inner>,
    permits: Arc<Semaphore>,
    /// Queries waiting for a pass (see [`LocalEmbedder::embed_query`]).
    waiting: Arc<Mutex<Vec<Waiting>>>,
}

/// A query waiting for its vector.
struct Waiting {
    text: String,
    reply: oneshot::Sender<Result<Vec<f32>, EmbedError>>,
}

struct Inner {
    model_name: String,
    encoder: Encoder,
    /// The encoder of single queries, when they run at another precision.
    query_encoder: Option<Encoder>,
    tokenizer: Tokenizer,
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
        tokenizer
            .with_truncation(Some(TruncationParams { max_length: max_tokens, ..TruncationParams::default() }))
            .map_err(|err| model_error("configuring truncation", &err))?;
        tokenizer.with_padding(None);

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
                max_tokens,
            }),
            permits: Arc::new(Semaphore::new(concurrency.max(1))),
            waiting: Arc::new(Mutex::new(Vec::new())),
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
        self.run(texts.to_vec()).await
    }

    /// Waits in line with the other queries: when a permit comes free, its
    /// taker embeds every query waiting then (up to a batch) in one pass, in
    /// a task of its own, so that a caller who stops waiting (a closed
    /// connection) never takes the others' vectors with it.
    async fn embed_query(&self, text: &str) -> Result<Vec<f32>, EmbedError> {
        let (reply, mut answer) = oneshot::channel();
        self.queue().push(Waiting { text: text.to_owned(), reply });
        loop {
            let permit = tokio::select! {
                biased;
                answered = &mut answer => {
                    return answered.map_err(|_| EmbedError::Inference("the embedding task failed".into()))?;
                }
                permit = self.permits.clone().acquire_owned() => {
                    permit.map_err(|_| EmbedError::Inference("the embedder is shutting down".into()))?
                }
            };
            let batch: Vec<Waiting> = {
                let mut waiting = self.queue();
                let taken = waiting.len().min(BATCH_SIZE);
                waiting.drain(..taken).collect()
            };
            // Empty: this query is in a pass another caller started, which
            // answers before it lets its permit go.
            if !batch.is_empty() {
                tokio::spawn(embed_queries(self.inner.clone(), permit, batch));
            }
        }
    }
}

/// One pass over waiting queries; answers each, then frees the permit.
async fn embed_queries(inner: Arc<Inner>, permit: OwnedSemaphorePermit, batch: Vec<Waiting>) {
    let texts: Vec<String> = batch.iter().map(|waiting| waiting.text.clone()).collect();
    let embedded = tokio::task::spawn_blocking(move || {
        let encoder = inner.query_encoder.as_ref().unwrap_or(&inner.encoder);
        // On one of rayon's workers, as in `LocalEmbedder::run`.
        rayon::scope(|_| inner.embed_all(encoder, &texts))
    })
    .await;
    let vectors = match embedded {
        Ok(Ok(vectors)) if vectors.len() == batch.len() => Ok(vectors),
        Ok(Ok(_)) => Err("a vector per query did not come back".to_owned()),
        Ok(Err(err)) => Err(err.to_string()),
        Err(err) => Err(format!("the embedding task failed: {err}")),
    };
    match vectors {
        Ok(vectors) => {
            for (waiting, vector) in batch.into_iter().zip(vectors) {
                let _ = waiting.reply.send(Ok(vector));
            }
        }
        Err(why) => {
            for waiting in batch {
                let _ = waiting.reply.send(Err(EmbedError::Inference(why.clone())));
            }
        }
    }
    drop(permit);
}

impl LocalEmbedder {
    fn queue(&self) -> std::sync::MutexGuard<'_, Vec<Waiting>> {
        // Each change is one push or one drain: a poisoned lock is still whole.
        self.waiting.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Embeds documents' `texts` off the async executor, one batch run at a
    /// time per permit.
    async fn run(&self, texts: Vec<String>) -> Result<Vec<Vec<f32>>, EmbedError> {
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
            // The whole pass runs on one of rayon's workers, so the encoder's
            // parallel loops (a few dozen per pass) are work-stealing tasks
            // on that worker: the other worker joins in when it is free, and
            // none of them waits for a sleeping pool to wake up, as each
            // would if it were sent to the pool from this blocking thread.
            rayon::scope(|_| inner.embed_all(&inner.encoder, &texts))
        })
        .await
        .map_err(|err| EmbedError::Inference(format!("the embedding task failed: {err}")))?
    }
}

impl Inner {
    /// Embeds in batches of [`BATCH_SIZE`] texts, returning vectors in the
    /// order of `texts`.
    fn embed_all(&self, encoder: &Encoder, texts: &[String]) -> Result<Vec<Vec<f32>>, EmbedError> {
        let mut vectors = Vec::with_capacity(texts.len());
        for batch in texts.chunks(BATCH_SIZE) {
            vectors.extend(self.embed_batch(encoder, batch)?);
        }
        Ok(vectors)
    }

    fn embed_batch(&self, encoder: &Encoder, texts: &[String]) -> Result<Vec<Vec<f32>>, EmbedError> {
        let failed = |err: &dyn std::fmt::Display| EmbedError::Inference(err.to_string());
        let inputs: Vec<&str> = texts.iter().map(String::as_str).collect();
        let encodings = self.tokenizer.encode_batch(inputs, true).map_err(|err| failed(&err))?;
        let lengths: Vec<usize> = encodings.iter().map(tokenizers::Encoding::len).collect();
        let ids: Vec<u32> =
            encodings.iter().flat_map(|encoding| encoding.get_ids().iter().copied()).collect();
        encoder.embed(&ids, &lengths).map_err(|err| failed(&err))
    }
}
