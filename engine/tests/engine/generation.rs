//! The embedded provider's decoder (`kernels::llama`) against candle's
//! quantised llama, the reference it replaced, on the real default model
//! file (SmolLM2-135M-Instruct, Q4_1). Both multiply the file's 4-bit
//! weights with activations quantised to 8 bits, but not identically:
//! candle rounds each block's activation scale to f16 (as llama.cpp does),
//! Lore keeps it in f32, and float sums run in another order. Over 30
//! layers that moves logits by a few tenths, enough to flip a near tie
//! between two tokens, and no more: a wrong rotation, head mapping or
//! position would scramble them.

use std::path::PathBuf;
use std::sync::atomic::AtomicBool;
use std::time::{Duration, Instant};

use candle_core::quantized::gguf_file;
use candle_core::{Device, Tensor};
use candle_transformers::models::quantized_llama::ModelWeights;
use engine::providers::client::Message;
use engine::providers::gguf::Model;

fn model_file() -> PathBuf {
    std::env::var_os("LORE_TEST_SMOLLM").map(PathBuf::from).unwrap_or_else(|| {
        PathBuf::from(std::env::var_os("HOME").unwrap())
            .join(".cache/lore/models/SmolLM2-135M-Instruct.Q4_1.gguf")
    })
}

fn reference_weights() -> ModelWeights {
    let mut file = std::fs::File::open(model_file()).unwrap();
    let content = gguf_file::Content::read(&mut file).unwrap();
    ModelWeights::from_gguf(content, &mut file, &Device::Cpu).unwrap()
}

/// candle's logits after `tokens` (run from position `at`).
fn reference_logits(weights: &mut ModelWeights, tokens: &[u32], at: usize) -> Vec<f32> {
    let input = Tensor::new(tokens, &Device::Cpu).unwrap().unsqueeze(0).unwrap();
    weights.forward(&input, at).unwrap().squeeze(0).unwrap().to_vec1().unwrap()
}

fn argmax(logits: &[f32]) -> u32 {
    logits.iter().enumerate().max_by(|a, b| a.1.total_cmp(b.1)).unwrap().0 as u32
}

/// The best logit's lead over the second's.
fn margin(logits: &[f32]) -> f32 {
    let mut sorted = logits.to_vec();
    sorted.sort_by(|a, b| b.total_cmp(a));
    sorted[0] - sorted[1]
}

fn top(logits: &[f32], n: usize) -> Vec<usize> {
    let mut ids: Vec<usize> = (0..logits.len()).collect();
    ids.sort_by(|a, b| logits[*b].total_cmp(&logits[*a]));
    ids.truncate(n);
    ids
}

fn correlation(a: &[f32], b: &[f32]) -> f64 {
    let mean = |v: &[f32]| v.iter().map(|x| f64::from(*x)).sum::<f64>() / v.len() as f64;
    let (ma, mb) = (mean(a), mean(b));
    let (mut ab, mut aa, mut bb) = (0.0, 0.0, 0.0);
    for (x, y) in a.iter().zip(b) {
        let (x, y) = (f64::from(*x) - ma, f64::from(*y) - mb);
        ab += x * y;
        aa += x * x;
        bb += y * y;
    }
    ab / (aa * bb).sqrt()
}

fn messages() -> Vec<Message> {
    vec![
        Message::system("Answer from the passages, citing them as [1]."),
        Message::user(
            "Passages:\n[1] The backup tool copies the database file while Lore keeps serving: it takes a \
             snapshot, checks its integrity, then writes it to the configured directory.\n\n\
             Question: How do I back up the database?",
        ),
    ]
}

#[test]
fn the_decoder_gives_candles_logits_within_quantisation_noise() {
    let model = Model::load(&model_file()).unwrap();
    let weights = reference_weights();
    let prompt = model.prompt(&messages()).unwrap();
    for len in [1, 2, 5, 20, prompt.len()] {
        let theirs = reference_logits(&mut weights.clone(), &prompt[..len], 0);
        let ours = model.logits(&prompt[..len]).unwrap();
        assert_eq!(ours.len(), theirs.len());
        let r = correlation(&ours, &theirs);
        assert!(r > 0.995, "after {len} tokens the logits correlate at {r}");
        let (a, b) = (top(&ours, 5), top(&theirs, 5));
        let shared = a.iter().filter(|id| b.contains(id)).count();
        assert!(shared >= 4, "after {len} tokens the top five are {a:?}, candle's {b:?}");
    }
}

#[test]
fn the_decoder_replies_as_candle_does_up_to_the_first_near_tie() {
    let model = Model::load(&model_file()).unwrap();
    let prompt = model.prompt(&messages()).unwrap();
    // candle's greedy reply, as far as each token led the next by a clear
    // margin (half a logit: more than the two differ by).
    let mut weights = reference_weights();
    let mut logits = reference_logits(&mut weights, &prompt, 0);
    let mut clear = Vec::new();
    while margin(&logits) > 0.5 && clear.len() < 24 {
        let next = argmax(&logits);
        clear.push(next);
        logits = reference_logits(&mut weights, &[next], prompt.len() + clear.len() - 1);
    }
    assert!(clear.len() >= 3, "candle's reply has a clear start: {clear:?}");
    let want = model.decode(&clear).unwrap();

    let far = Instant::now() + Duration::from_secs(600);
    let mut pieces = Vec::new();
    let generated = model
        .generate(&messages(), 24, far, &AtomicBool::new(false), &mut |piece| {
            pieces.push(piece.to_owned());
            std::ops::ControlFlow::Continue(())
        })
        .unwrap();
    assert_eq!(generated.input_tokens as usize, prompt.len());
    assert!(generated.output_tokens > clear.len() as u64);
    assert!(generated.text.starts_with(want.trim()), "{:?} starts as candle's {want:?}", generated.text);
    assert_eq!(pieces.concat().trim(), generated.text, "the streamed pieces are the reply");
}
