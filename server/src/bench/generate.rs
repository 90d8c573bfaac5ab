//! `lore bench generate`: the embedded provider's speed beside llama.cpp's
//! `llama-server` on the same GGUF file and the same number of threads.
//!
//! Three figures for each: prompt tokens/s and time to the first token for
//! a 1,500-token prompt (what an answer with a dozen passages costs before
//! anything is written), and generated tokens/s for a short prompt. The
//! median of `--runs` measurements is reported. llama-server's own timings
//! are read from its reply; Lore's are measured around the same calls the
//! embedded provider makes.

use std::path::PathBuf;
use std::sync::atomic::AtomicBool;
use std::time::{Duration, Instant};

use anyhow::{bail, Context};
use engine::providers::client::Message;
use engine::providers::{embedded, gguf};
use engine::Settings;
use serde_json::json;

use super::write_record;

pub struct GenerateOptions {
    pub model: Option<PathBuf>,
    pub llama_server: Option<PathBuf>,
    pub tokens: u32,
    pub runs: usize,
    pub out: Option<PathBuf>,
}

/// What one side measured (medians).
#[derive(Clone, Copy, Debug, Default)]
struct Speeds {
    prompt_tokens: u64,
    prompt_tokens_per_s: f64,
    first_token_ms: f64,
    generated_tokens: u64,
    generated_tokens_per_s: f64,
}

impl Speeds {
    fn json(&self) -> serde_json::Value {
        json!({
            "prompt_tokens": self.prompt_tokens,
            "prompt_tokens_per_s": round(self.prompt_tokens_per_s),
            "first_token_ms_1500": round(self.first_token_ms),
            "generated_tokens": self.generated_tokens,
            "generated_tokens_per_s": round(self.generated_tokens_per_s),
        })
    }
}

fn round(value: f64) -> f64 {
    (value * 10.0).round() / 10.0
}

fn median(mut values: Vec<f64>) -> f64 {
    values.sort_by(f64::total_cmp);
    values.get(values.len() / 2).copied().unwrap_or(0.0)
}

const LONG_PROMPT_TOKENS: usize = 1500;
const STORY: &str = "Write a long story about a lighthouse keeper who finds a map in a bottle.";

/// A question over passages, grown until its prompt has about 1,500 tokens.
fn long_messages(model: &gguf::Model) -> anyhow::Result<Vec<Message>> {
    let passage = "The backup tool copies the database file while Lore keeps serving: it takes a snapshot, \
        checks its integrity, then writes it to the configured directory with the date in its name. ";
    let mut text = String::from("Passages:\n");
    for n in 1.. {
        text.push_str(&format!("[{n}] {passage}\n"));
        let messages = vec![Message::user(format!("{text}\nQuestion: How do I back up the database?"))];
        if model.prompt(&messages).map_err(|err| anyhow::anyhow!("{err}"))?.len() >= LONG_PROMPT_TOKENS {
            return Ok(messages);
        }
    }
    bail!("the prompt never reached {LONG_PROMPT_TOKENS} tokens")
}

/// The same messages as llama-server's raw prompt (ChatML, as the embedded provider builds it).
fn chatml(messages: &[Message]) -> String {
    let mut prompt = String::new();
    for message in messages {
        prompt.push_str(&format!("<|im_start|>{}\n{}<|im_end|>\n", message.role, message.content));
    }
    prompt.push_str("<|im_start|>assistant\n");
    prompt
}

pub async fn generate(settings: Settings, options: GenerateOptions) -> anyhow::Result<()> {
    let path = match &options.model {
        Some(path) => path.clone(),
        None => {
            let bar = crate::commands::models::FetchBar::new(false);
            let found = embedded::ensure(&settings, embedded::DEFAULT_MODEL, &|f| bar.show(f)).await;
            drop(bar);
            found.map_err(anyhow::Error::msg)?
        }
    };
    let threads = gguf::threads();
    let runs = options.runs.max(1);
    println!("Model {} on {threads} threads, {} runs of each measurement", path.display(), runs);
    let loaded = {
        let path = path.clone();
        tokio::task::spawn_blocking(move || gguf::Model::load(&path)).await?.map_err(anyhow::Error::msg)?
    };
    let long = long_messages(&loaded)?;
    let short = vec![Message::user(STORY)];

    // Lore: the embedded provider's generation, on a blocking thread as it runs in serve.
    let tokens = options.tokens;
    let (long_run, short_run) = (long.clone(), short.clone());
    let (lore, loaded) = tokio::task::spawn_blocking(move || -> anyhow::Result<(Speeds, gguf::Model)> {
        let (long, short) = (long_run, short_run);
        let never = AtomicBool::new(false);
        let far = Instant::now() + Duration::from_secs(3600);
        let run = |messages: &[Message], max: u32| -> anyhow::Result<(gguf::Generated, f64)> {
            let started = Instant::now();
            let generated = loaded
                .generate(messages, max, far, &never, &mut |_| std::ops::ControlFlow::Continue(()))
                .map_err(|err| anyhow::anyhow!("{err}"))?;
            Ok((generated, started.elapsed().as_secs_f64() * 1000.0))
        };
        run(&short, 8)?; // warm-up
        let (mut prompt_rate, mut first, mut gen_rate) = (Vec::new(), Vec::new(), Vec::new());
        let (mut prompt_tokens, mut generated_tokens) = (0, 0);
        for _ in 0..runs {
            let (generated, _) = run(&long, 1)?;
            prompt_tokens = generated.input_tokens;
            prompt_rate.push(generated.input_tokens as f64 / (generated.prompt_ms.max(1) as f64 / 1000.0));
            first.push(generated.first_token_ms as f64);
            let (generated, total_ms) = run(&short, tokens)?;
            generated_tokens = generated.output_tokens;
            let decoding_ms = (total_ms - generated.first_token_ms as f64).max(1.0);
            gen_rate.push(generated.output_tokens.saturating_sub(1) as f64 / (decoding_ms / 1000.0));
        }
        let speeds = Speeds {
            prompt_tokens,
            prompt_tokens_per_s: median(prompt_rate),
            first_token_ms: median(first),
            generated_tokens,
            generated_tokens_per_s: median(gen_rate),
        };
        Ok((speeds, loaded))
    })
    .await??;
    drop(loaded);
    print_row("Lore (embedded)", &lore);

    let peer = match &options.llama_server {
        Some(binary) => {
            let peer = llama_server(binary, &path, threads, &long, &short, tokens, runs).await?;
            print_row("llama.cpp llama-server", &peer);
            Some(peer)
        }
        None => {
            println!(
                "(no --llama-server: the side-by-side run is skipped; scripts/bench-generate gives one)"
            );
            None
        }
    };
    let ratio =
        peer.map(|peer| lore.generated_tokens_per_s / peer.generated_tokens_per_s.max(f64::MIN_POSITIVE));
    if let Some(ratio) = ratio {
        println!("Generation speed: {ratio:.2}x llama-server's (goal: at least 0.8x)");
    }
    let record = json!({
        "benchmark": "generate",
        "model": path.file_name().map(|n| n.to_string_lossy().into_owned()),
        "threads": threads,
        "runs": runs,
        "lore": lore.json(),
        "llama_server": peer.map(|p| p.json()),
        "generation_ratio": ratio.map(|r| (r * 100.0).round() / 100.0),
    });
    let written = write_record(&options.out, "generate.json", &record)?;
    println!("{}", serde_json::to_string_pretty(&record)?);
    println!("Written to {}", written.display());
    Ok(())
}

fn print_row(name: &str, speeds: &Speeds) {
    println!(
        "{name:<26} prompt {:>8.1} tok/s   first token ({} tokens) {:>7.1} ms   generation {:>6.1} tok/s ({} tokens)",
        speeds.prompt_tokens_per_s,
        speeds.prompt_tokens,
        speeds.first_token_ms,
        speeds.generated_tokens_per_s,
        speeds.generated_tokens
    );
}

/// llama-server on `model` with `threads` threads, the same prompts, its own timings.
async fn llama_server(
    binary: &PathBuf,
    model: &PathBuf,
    threads: usize,
    long: &[Message],
    short: &[Message],
    tokens: u32,
    runs: usize,
) -> anyhow::Result<Speeds> {
    let port = std::net::TcpListener::bind("127.0.0.1:0")?.local_addr()?.port();
    let threads_arg = threads.to_string();
    let _child = tokio::process::Command::new(binary)
        .arg("-m")
        .arg(model)
        .args(["--host", "127.0.0.1", "--port", &port.to_string(), "-c", "4096", "-np", "1"])
        .args(["-t", &threads_arg, "-tb", &threads_arg])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .with_context(|| format!("starting {}", binary.display()))?;
    let base = format!("http://127.0.0.1:{port}");
    let client = reqwest::Client::new();
    let deadline = Instant::now() + Duration::from_secs(120);
    while !client.get(format!("{base}/health")).send().await.is_ok_and(|r| r.status().is_success()) {
        if Instant::now() > deadline {
            bail!("llama-server did not become healthy within 120 s");
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
    let complete = |prompt: String, n: u32| {
        let client = client.clone();
        let url = format!("{base}/completion");
        async move {
            let body = json!({"prompt": prompt, "n_predict": n, "temperature": 0.0, "cache_prompt": false});
            let reply: serde_json::Value =
                client.post(url).json(&body).send().await?.error_for_status()?.json().await?;
            let timings = reply["timings"].clone();
            let number = |key: &str| timings[key].as_f64().unwrap_or(0.0);
            anyhow::Ok((
                number("prompt_n"),
                number("prompt_ms"),
                number("predicted_n"),
                number("predicted_per_second"),
            ))
        }
    };
    complete(chatml(short), 8).await?; // warm-up
    let (mut prompt_rate, mut first, mut gen_rate) = (Vec::new(), Vec::new(), Vec::new());
    let (mut prompt_tokens, mut generated_tokens) = (0.0, 0.0);
    for _ in 0..runs {
        let (prompt_n, prompt_ms, _, _) = complete(chatml(long), 1).await?;
        prompt_tokens = prompt_n;
        prompt_rate.push(prompt_n / (prompt_ms.max(1.0) / 1000.0));
        first.push(prompt_ms);
        let (_, _, predicted_n, per_second) = complete(chatml(short), tokens).await?;
        generated_tokens = predicted_n;
        gen_rate.push(per_second);
    }
    Ok(Speeds {
        prompt_tokens: prompt_tokens as u64,
        prompt_tokens_per_s: median(prompt_rate),
        first_token_ms: median(first),
        generated_tokens: generated_tokens as u64,
        generated_tokens_per_s: median(gen_rate),
    })
}
