//! A GGUF chat model run by candle on the CPU: the embedded provider's
//! engine room.
//!
//! Supported: the `llama` architecture (SmolLM2, Llama and their
//! fine-tunes) with a byte-level BPE tokenizer (`tokenizer.ggml.model =
//! gpt2`) and a ChatML chat template (`<|im_start|>role … <|im_end|>`),
//! with any quantisation candle reads. Anything else is refused at load
//! time, with the reason: that is what a probe reports.
//!
//! The tokenizer is rebuilt from the file's own vocabulary and merges. The
//! chat markers are inserted as token ids, never parsed out of text: a
//! passage or question that contains `<|im_start|>` stays plain text to
//! the model.

use std::io::{Cursor, Read, Seek};
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;

use candle_core::quantized::gguf_file;
use candle_core::{Device, Tensor};
use candle_transformers::models::quantized_llama::{ModelWeights, MAX_SEQ_LEN};

use super::client::Message;

/// A loaded model: weights with an empty cache, cloned for each generation
/// (the tensors are shared, the key-value cache is each generation's own).
pub struct Model {
    weights: ModelWeights,
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
        let trained = number("llama.context_length").map_or(MAX_SEQ_LEN, |n| n as usize);
        let (content, mut weights_file) = with_fast_kernels(content, reader)?;
        let weights = ModelWeights::from_gguf(content, &mut weights_file, &Device::Cpu)
            .map_err(|err| format!("its weights: {err}"))?;
        Ok(Model { weights, tokenizer, im_start, im_end, stops, context: trained.min(MAX_SEQ_LEN) })
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

    /// Generates a reply to `messages`: greedy (temperature 0: the same
    /// question gets the same answer), at most
    /// `max_tokens`, stopping at the end-of-turn token. Each piece of text
    /// goes to `on_text` as soon as it decodes. Checks `deadline` and
    /// `cancel` between tokens.
    pub fn generate(
        &self,
        messages: &[Message],
        max_tokens: u32,
        deadline: Instant,
        cancel: &AtomicBool,
        on_text: &mut dyn FnMut(&str),
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
        let mut weights = self.weights.clone();
        let input =
            Tensor::new(prompt.as_slice(), &Device::Cpu).and_then(|t| t.unsqueeze(0)).map_err(model_error)?;
        let mut logits = weights.forward(&input, 0).map_err(model_error)?;
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
            let text = self.tokenizer.decode(&reply, true).map_err(model_error)?;
            if text.len() > sent && !text.ends_with('\u{FFFD}') && text.is_char_boundary(sent) {
                on_text(&text[sent..]);
                sent = text.len();
            }
            if step + 1 == max_tokens {
                break;
            }
            let input =
                Tensor::new(&[next], &Device::Cpu).and_then(|t| t.unsqueeze(0)).map_err(model_error)?;
            logits = weights.forward(&input, prompt.len() + step).map_err(model_error)?;
        }
        let text = self.tokenizer.decode(&reply, true).map_err(model_error)?;
        if text.len() > sent && text.is_char_boundary(sent) {
            on_text(&text[sent..]);
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
    fn pick(&self, logits: &Tensor) -> Result<u32, GenerateError> {
        let values: Vec<f32> = logits.squeeze(0).and_then(|l| l.to_vec1()).map_err(model_error)?;
        values
            .iter()
            .enumerate()
            .filter(|(_, v)| v.is_finite())
            .max_by(|a, b| a.1.total_cmp(b.1))
            .map(|(at, _)| at as u32)
            .ok_or_else(|| GenerateError::Model("the model produced no finite logit".into()))
    }
}

/// The threads a generation computes on: candle's pool, one per physical
/// core unless `RAYON_NUM_THREADS` says otherwise.
pub fn threads() -> usize {
    candle_core::utils::get_num_threads()
}

/// The file's tensors, with each one candle has no vectorised CPU kernel
/// for (Q4_1, Q5_0, Q5_1: SmolLM2's default file is Q4_1) quantised again
/// as Q8_0, which it has (AVX2). Q8_0 holds a 4- or 5-bit weight within
/// half a step of 1/254 of its block's largest value, for about 1.7 times
/// the 4-bit weights' memory. Returns the rewritten file, in memory, and
/// its description.
fn with_fast_kernels<R: Read + Seek>(
    content: gguf_file::Content,
    reader: &mut R,
) -> Result<(gguf_file::Content, Cursor<Vec<u8>>), String> {
    use candle_core::quantized::{GgmlDType, QTensor};
    let slow = |dtype: GgmlDType| matches!(dtype, GgmlDType::Q4_1 | GgmlDType::Q5_0 | GgmlDType::Q5_1);
    let mut names: Vec<&String> = content.tensor_infos.keys().collect();
    names.sort();
    let mut tensors = Vec::with_capacity(names.len());
    for name in names {
        let tensor =
            content.tensor(reader, name, &Device::Cpu).map_err(|err| format!("its tensor {name}: {err}"))?;
        let tensor = if slow(tensor.dtype()) {
            tensor
                .dequantize(&Device::Cpu)
                .and_then(|weights| QTensor::quantize(&weights, GgmlDType::Q8_0))
                .map_err(|err| format!("its tensor {name} cannot be quantised again: {err}"))?
        } else {
            tensor
        };
        tensors.push((name.as_str(), tensor));
    }
    let metadata: Vec<(&str, &gguf_file::Value)> =
        content.metadata.iter().map(|(k, v)| (k.as_str(), v)).collect();
    let refs: Vec<(&str, &QTensor)> = tensors.iter().map(|(name, tensor)| (*name, tensor)).collect();
    let mut file = Cursor::new(Vec::new());
    gguf_file::write(&mut file, &metadata, &refs)
        .map_err(|err| format!("its weights cannot be rewritten: {err}"))?;
    file.set_position(0);
    let rewritten =
        gguf_file::Content::read(&mut file).map_err(|err| format!("its rewritten weights: {err}"))?;
    Ok((rewritten, file))
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
