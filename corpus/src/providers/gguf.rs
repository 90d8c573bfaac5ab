//! A GGUF chat model run on the CPU: the embedded provider's engine room.
//!
//! Supported: the `llama` architecture (SmolLM2, Llama and their
//! fine-tunes) with a byte-level BPE tokenizer (`tokenizer.ggml.model =
//! gpt2`) and a ChatML chat template (`<|im_start|>role … <|im_end|>`).
//! Anything else is refused at load time, with the reason: that is what a
//! probe reports.
//!
//! candle reads the file (metadata, tensor layout, and any quantisation it
//! knows); the forward pass is `kernels::llama`, which keeps `Q4_1` and
//! `Q8_0` weights in the file's own blocks and stores every other type as
//! `Q8_0`. candle's own quantised llama costs hundreds of tensor operations
//! per generated token, each with its allocation, and ran at a third of
//! llama.cpp's speed on the default model; `bench-results/README.md` has
//! the figures.
//!
//! The tokenizer is rebuilt from the file's own vocabulary and merges. The
//! chat markers are inserted as token ids, never parsed out of text: a
//! passage or question that contains `<|im_start|>` stays plain text to
//! the model.

use std::io::{Read, Seek, SeekFrom};
use std::ops::ControlFlow;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;

use candle_core::quantized::{gguf_file, GgmlDType};
use candle_core::Device;
use kernels::llama::{Config, Layer, Llama};
use kernels::quant::QMatrix;

use super::client::Message;

/// The longest context Lore runs, whatever the file says it was trained
/// for: the key-value cache of a generation is allocated whole.
pub const MAX_CONTEXT: usize = 4096;

/// A loaded model. Each generation has its own key-value cache.
pub struct Model {
    llama: Llama,
    tokenizer: tokenizers::Tokenizer,
    im_start: u32,
    im_end: u32,
    /// Tokens that end a reply.
    stops: Vec<u32>,
    /// Prompt and reply together fit in this many tokens.
    pub context: usize,
}

/// What one generation produced.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Generated {
    pub text: String,
    pub input_tokens: u64,
    pub output_tokens: u64,
    /// Time to the first generated token, and the whole generation.
    pub first_token_ms: u64,
    pub prompt_ms: u64,
}

/// Why a generation stopped early or never started.
#[derive(Debug, thiserror::Error)]
pub enum GenerateError {
    #[error("{0}")]
    Refused(String),
    #[error("the generation passed its deadline")]
    Deadline,
    #[error("the generation was cancelled")]
    Cancelled,
    #[error("the model failed: {0}")]
    Model(String),
}

fn model_error(err: impl std::fmt::Display) -> GenerateError {
    GenerateError::Model(err.to_string())
}

impl Model {
    /// Reads a GGUF file, checking that Lore can run it.
    pub fn load(path: &Path) -> Result<Model, String> {
        let mut file =
            std::fs::File::open(path).map_err(|err| format!("cannot open {}: {err}", path.display()))?;
        Self::read(&mut file).map_err(|why| format!("{} cannot be run: {why}", path.display()))
    }

    fn read<R: Read + Seek>(reader: &mut R) -> Result<Model, String> {
        let content = gguf_file::Content::read(reader).map_err(|err| format!("not a GGUF file ({err})"))?;
        let text = |key: &str| -> Option<String> {
            content.metadata.get(key).and_then(|value| value.to_string().ok()).cloned()
        };
        let number = |key: &str| -> Option<u32> { content.metadata.get(key).and_then(|v| v.to_u32().ok()) };
        let architecture = text("general.architecture").unwrap_or_default();
        if architecture != "llama" {
            return Err(format!(
                "its architecture is `{architecture}`; the embedded provider runs `llama` models (SmolLM2, Llama)"
            ));
        }
        let tokenizer_model = text("tokenizer.ggml.model").unwrap_or_default();
        if tokenizer_model != "gpt2" {
            return Err(format!(
                "its tokenizer is `{tokenizer_model}`; the embedded provider reads byte-level BPE (`gpt2`) tokenizers"
            ));
        }
        let template = text("tokenizer.chat_template").unwrap_or_default();
        if !template.contains("<|im_start|>") {
            return Err("its chat template is not ChatML (<|im_start|> … <|im_end|>)".into());
        }
        let tokens = string_array(&content, "tokenizer.ggml.tokens")?;
        let merges = string_array(&content, "tokenizer.ggml.merges")?;
        let pre = text("tokenizer.ggml.pre").unwrap_or_default();
        let tokenizer = build_tokenizer(&tokens, &merges, &pre)?;
        let id = |token: &str| -> Result<u32, String> {
            tokens
                .iter()
                .position(|t| t == token)
                .map(|at| at as u32)
                .ok_or_else(|| format!("its vocabulary has no {token}"))
        };
        let (im_start, im_end) = (id("<|im_start|>")?, id("<|im_end|>")?);
        let mut stops = vec![im_end];
        stops.extend(number("tokenizer.ggml.eos_token_id"));
        stops.extend(id("<|endoftext|>").ok());
        let trained = number("llama.context_length").map_or(MAX_CONTEXT, |n| n as usize);
        let llama = read_llama(&content, reader)?;
        Ok(Model { llama, tokenizer, im_start, im_end, stops, context: trained.min(MAX_CONTEXT) })
    }

    /// The prompt's token ids: each message in ChatML, then the assistant's
    /// opening.
    pub fn prompt(&self, messages: &[Message]) -> Result<Vec<u32>, GenerateError> {
        let newline = self.encode("\n")?;
        let mut ids = Vec::new();
        for message in messages {
            ids.push(self.im_start);
            ids.extend(self.encode(&format!("{}\n{}", message.role, message.content))?);
            ids.push(self.im_end);
            ids.extend(&newline);
        }
        ids.push(self.im_start);
        ids.extend(self.encode("assistant\n")?);
        Ok(ids)
    }

    fn encode(&self, text: &str) -> Result<Vec<u32>, GenerateError> {
        Ok(self.tokenizer.encode(text, false).map_err(model_error)?.get_ids().to_vec())
    }

    /// The logits for the token after `ids`, from an empty cache.
    pub fn logits(&self, ids: &[u32]) -> Result<Vec<f32>, GenerateError> {
        let mut cache = self.llama.cache(ids.len());
        rayon::scope(|_| self.llama.forward(ids, &mut cache)).map_err(GenerateError::Model)
    }

    /// The text of `ids`.
    pub fn decode(&self, ids: &[u32]) -> Result<String, GenerateError> {
        self.tokenizer.decode(ids, true).map_err(model_error)
    }

    /// Generates a reply to `messages`: greedy (temperature 0: the same
    /// question gets the same answer), at most
    /// `max_tokens`, stopping at the end-of-turn token. Each piece of text
    /// goes to `on_text` as soon as it decodes; the generation ends when
    /// `on_text` says to break. Checks `deadline` and `cancel` between tokens.
    pub fn generate(
        &self,
        messages: &[Message],
        max_tokens: u32,
        deadline: Instant,
        cancel: &AtomicBool,
        on_text: &mut (dyn FnMut(&str) -> ControlFlow<()> + Send),
    ) -> Result<Generated, GenerateError> {
        // The loop runs on one of rayon's threads: each product then
        // splits with a worker that is still awake from the last one,
        // instead of being handed over from outside the pool and waited
        // for on a lock (two context switches per product, 120 products
        // per token).
        rayon::scope(|_| self.generate_on_pool(messages, max_tokens, deadline, cancel, on_text))
    }

    fn generate_on_pool(
        &self,
        messages: &[Message],
        max_tokens: u32,
        deadline: Instant,
        cancel: &AtomicBool,
        on_text: &mut (dyn FnMut(&str) -> ControlFlow<()> + Send),
    ) -> Result<Generated, GenerateError> {
        let started = Instant::now();
        let prompt = self.prompt(messages)?;
        let max_tokens = max_tokens.max(1) as usize;
        if prompt.len() + max_tokens > self.context {
            return Err(GenerateError::Refused(format!(
                "the prompt has {} tokens and the reply may take {max_tokens}; the model's context holds {}",
                prompt.len(),
                self.context
            )));
        }
        let mut cache = self.llama.cache(prompt.len() + max_tokens);
        let mut logits = self.llama.forward(&prompt, &mut cache).map_err(GenerateError::Model)?;
        let prompt_ms = started.elapsed().as_millis() as u64;
        let mut first_token_ms = 0;
        let mut reply: Vec<u32> = Vec::new();
        let mut sent = 0usize;
        for step in 0..max_tokens {
            if cancel.load(Ordering::Relaxed) {
                return Err(GenerateError::Cancelled);
            }
            if Instant::now() >= deadline {
                return Err(GenerateError::Deadline);
            }
            let next = self.pick(&logits)?;
            if step == 0 {
                first_token_ms = started.elapsed().as_millis() as u64;
            }
            if self.stops.contains(&next) {
                break;
            }
            reply.push(next);
            // Decode the whole reply and send what is new: a character
            // split over two tokens is sent once it is whole.
            let text = self.decode(&reply)?;
            if text.len() > sent && !text.ends_with('\u{FFFD}') && text.is_char_boundary(sent) {
                let flow = on_text(&text[sent..]);
                sent = text.len();
                if flow.is_break() {
                    break;
                }
            }
            if step + 1 == max_tokens {
                break;
            }
            logits = self.llama.forward(&[next], &mut cache).map_err(GenerateError::Model)?;
        }
        let text = self.decode(&reply)?;
        if text.len() > sent && text.is_char_boundary(sent) {
            let _ = on_text(&text[sent..]);
        }
        Ok(Generated {
            text: text.trim().to_owned(),
            input_tokens: prompt.len() as u64,
            output_tokens: reply.len() as u64,
            first_token_ms,
            prompt_ms,
        })
    }

    /// The most likely next token (greedy decoding, as an OpenAI-compatible
    /// server does at temperature 0; no repeat penalty: it pushes a small
    /// model off the passage's own words, which a grounded answer is made of).
    fn pick(&self, logits: &[f32]) -> Result<u32, GenerateError> {
        logits
            .iter()
            .enumerate()
            .filter(|(_, v)| v.is_finite())
            .max_by(|a, b| a.1.total_cmp(b.1))
            .map(|(at, _)| at as u32)
            .ok_or_else(|| GenerateError::Model("the model produced no finite logit".into()))
    }
}

/// The threads a generation computes on: rayon's pool (the one the
/// embedding model uses too), one per logical CPU unless
/// `RAYON_NUM_THREADS` says otherwise.
pub fn threads() -> usize {
    rayon::current_num_threads()
}

/// The decoder the file describes: its shape from the metadata, its
/// weights as `kernels` stores them.
fn read_llama<R: Read + Seek>(content: &gguf_file::Content, reader: &mut R) -> Result<Llama, String> {
    let number = |key: &str| -> Result<usize, String> {
        content
            .metadata
            .get(key)
            .and_then(|v| v.to_u32().ok())
            .map(|n| n as usize)
            .ok_or_else(|| format!("its metadata has no {key}"))
    };
    let float =
        |key: &str, default: f32| content.metadata.get(key).and_then(|v| v.to_f32().ok()).unwrap_or(default);
    let config = Config {
        hidden: number("llama.embedding_length")?,
        heads: number("llama.attention.head_count")?,
        kv_heads: number("llama.attention.head_count_kv")?,
        ffn: number("llama.feed_forward_length")?,
        rope_theta: float("llama.rope.freq_base", 10_000.0),
        eps: float("llama.attention.layer_norm_rms_epsilon", 1e-5),
    };
    if number("llama.expert_count").unwrap_or(0) > 0 {
        return Err("it is a mixture of experts, which the embedded provider does not run".into());
    }
    if config.heads == 0 {
        return Err("its metadata says it has no attention heads".into());
    }
    let rotated = number("llama.rope.dimension_count").unwrap_or(config.head_dim());
    if rotated != config.head_dim() {
        return Err(format!(
            "it rotates {rotated} of each head's {} dimensions; the embedded provider rotates them all",
            config.head_dim()
        ));
    }
    let mut tensors = Tensors { content, reader };
    let mut layers = Vec::new();
    for n in 0..number("llama.block_count")? {
        let name = |part: &str| format!("blk.{n}.{part}.weight");
        let qkv = [name("attn_q"), name("attn_k"), name("attn_v")]
            .iter()
            .map(|name| tensors.matrix(name))
            .collect::<Result<Vec<_>, _>>()?;
        let gate_up = [name("ffn_gate"), name("ffn_up")]
            .iter()
            .map(|name| tensors.matrix(name))
            .collect::<Result<Vec<_>, _>>()?;
        layers.push(Layer {
            attn_norm: tensors.vector(&name("attn_norm"))?,
            qkv: QMatrix::stack(&qkv)?,
            output: tensors.matrix(&name("attn_output"))?,
            ffn_norm: tensors.vector(&name("ffn_norm"))?,
            gate_up: QMatrix::stack(&gate_up)?,
            down: tensors.matrix(&name("ffn_down"))?,
        });
    }
    let embedding = tensors.matrix("token_embd.weight")?;
    let head = match content.tensor_infos.contains_key("output.weight") {
        true => Some(tensors.matrix("output.weight")?),
        false => None,
    };
    let norm = tensors.vector("output_norm.weight")?;
    Llama::new(config, embedding, layers, norm, head).map_err(|why| format!("its weights do not fit: {why}"))
}

/// Reads the file's tensors for `kernels`.
struct Tensors<'a, R> {
    content: &'a gguf_file::Content,
    reader: &'a mut R,
}

impl<R: Read + Seek> Tensors<'_, R> {
    /// A weight matrix: `Q4_1` and `Q8_0` blocks as they are in the file,
    /// any other type dequantised by candle and stored as `Q8_0`.
    fn matrix(&mut self, name: &str) -> Result<QMatrix, String> {
        let info = self.content.tensor_infos.get(name).ok_or_else(|| format!("it has no tensor {name}"))?;
        let (rows, cols) = info.shape.dims2().map_err(|_| format!("its tensor {name} is not a matrix"))?;
        let failed = |err: String| format!("its tensor {name}: {err}");
        match info.ggml_dtype {
            GgmlDType::Q4_1 | GgmlDType::Q8_0 => {
                let size = rows * cols / info.ggml_dtype.block_size() * info.ggml_dtype.type_size();
                let mut bytes = vec![0_u8; size];
                self.reader
                    .seek(SeekFrom::Start(self.content.tensor_data_offset + info.offset))
                    .and_then(|_| self.reader.read_exact(&mut bytes))
                    .map_err(|err| failed(err.to_string()))?;
                match info.ggml_dtype {
                    GgmlDType::Q4_1 => QMatrix::from_q4_1(&bytes, rows, cols),
                    _ => QMatrix::from_q8_0(&bytes, rows, cols),
                }
                .map_err(failed)
            }
            _ => QMatrix::quantise(&self.values(name)?, rows, cols).map_err(failed),
        }
    }

    /// A norm's weights.
    fn vector(&mut self, name: &str) -> Result<Vec<f32>, String> {
        self.values(name)
    }

    fn values(&mut self, name: &str) -> Result<Vec<f32>, String> {
        self.content
            .tensor(self.reader, name, &Device::Cpu)
            .and_then(|tensor| tensor.dequantize(&Device::Cpu))
            .and_then(|tensor| tensor.flatten_all())
            .and_then(|tensor| tensor.to_vec1::<f32>())
            .map_err(|err| format!("its tensor {name}: {err}"))
    }
}

fn string_array(content: &gguf_file::Content, key: &str) -> Result<Vec<String>, String> {
    let values = content
        .metadata
        .get(key)
        .and_then(|value| value.to_vec().ok())
        .ok_or_else(|| format!("its metadata has no {key}"))?;
    values
        .iter()
        .map(|value| value.to_string().cloned().map_err(|_| format!("{key} holds something other than text")))
        .collect()
}

/// The byte-level BPE tokenizer the file describes, as a `tokenizers`
/// description: vocabulary and merges from the file, the pre-tokenizer
/// its `tokenizer.ggml.pre` names (SmolLM's splits digits one by one).
fn build_tokenizer(tokens: &[String], merges: &[String], pre: &str) -> Result<tokenizers::Tokenizer, String> {
    let vocab: serde_json::Map<String, serde_json::Value> =
        tokens.iter().enumerate().map(|(id, token)| (token.clone(), serde_json::json!(id))).collect();
    let byte_level = serde_json::json!({
        "type": "ByteLevel", "add_prefix_space": false, "trim_offsets": true, "use_regex": true
    });
    let pre_tokenizer = if pre == "smollm" {
        serde_json::json!({"type": "Sequence", "pretokenizers": [
            {"type": "Digits", "individual_digits": true}, byte_level
        ]})
    } else {
        byte_level.clone()
    };
    let description = serde_json::json!({
        "version": "1.0",
        "truncation": null,
        "padding": null,
        "added_tokens": [],
        "normalizer": null,
        "pre_tokenizer": pre_tokenizer,
        "post_processor": null,
        "decoder": byte_level,
        "model": {
            "type": "BPE", "dropout": null, "unk_token": null, "continuing_subword_prefix": null,
            "end_of_word_suffix": null, "fuse_unk": false, "byte_fallback": false,
            "vocab": vocab, "merges": merges,
        },
    });
    description.to_string().parse().map_err(|err| format!("its tokenizer cannot be built: {err}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_file_that_is_not_gguf_is_refused_with_the_reason() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("broken.gguf");
        std::fs::write(&path, b"this is not a model").unwrap();
        let err = Model::load(&path).err().unwrap();
        assert!(err.contains("not a GGUF file"), "{err}");
        let err = Model::load(&dir.path().join("absent.gguf")).err().unwrap();
        assert!(err.contains("cannot open"), "{err}");
    }

    #[test]
    fn the_tokenizer_round_trips_text_through_byte_level_bpe() {
        // Every byte is a token of its own (GPT-2's byte-to-character map
        // for the printable ASCII range is the identity), one merge.
        let mut tokens: Vec<String> = (b'!'..=b'~').map(|b| (b as char).to_string()).collect();
        tokens.push("Ġ".into());
        tokens.push("ab".into());
        let tokenizer = build_tokenizer(&tokens, &["a b".to_owned()], "smollm").unwrap();
        let ids = tokenizer.encode("ab 12", false).unwrap().get_ids().to_vec();
        let ab = tokens.iter().position(|t| t == "ab").unwrap() as u32;
        assert_eq!(ids[0], ab, "the merge applies");
        assert_eq!(tokenizer.decode(&ids, true).unwrap(), "ab 12");
    }
}
