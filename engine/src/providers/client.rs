//! The OpenAI-compatible protocol: `GET /models`, `POST /chat/completions`,
//! `POST /embeddings` and (llama.cpp, Jina, vLLM) `POST /rerank`, against
//! an endpoint's API base (`…/v1`). Hosted vendors and on-node servers speak
//! the same protocol.
//!
//! The API key travels only in the `Authorization` header of these requests.
//! Error messages carry the endpoint and the provider's own message, never
//! the key: everything the provider or the transport says is passed through
//! [`super::redact::scrub`], with the key the call sent, where it becomes a
//! [`CallError`], so the probe result, the stored `probe_error`, log lines
//! and API responses only ever see redacted text.

use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::redact::scrub;
use crate::settings::Secret;

/// Where to send requests, with the decrypted key for the duration of a call.
#[derive(Clone, Debug)]
pub struct Endpoint {
    /// The API base without a trailing slash.
    pub base: String,
    pub api_key: Option<Secret>,
}

/// Why a provider call failed. Messages are for the admin and carry no key:
/// the provider's text in `reason` and `message` has been scrubbed.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum CallError {
    #[error("cannot reach {endpoint}: {reason}")]
    Unreachable { endpoint: String, reason: String },
    #[error("{endpoint} timed out after {seconds} s")]
    Timeout { endpoint: String, seconds: u64 },
    #[error("{endpoint} refused the API key (HTTP {status}): {message}")]
    Unauthorized { endpoint: String, status: u16, message: String },
    #[error("{endpoint} answered HTTP {status}: {message}")]
    Status { endpoint: String, status: u16, message: String },
    #[error("{endpoint} answered something that is not the OpenAI-compatible format: {reason}")]
    Protocol { endpoint: String, reason: String },
    /// The embedded model cannot run: its file is missing, unreadable or
    /// not a model Lore runs, or the generation failed.
    #[error("{endpoint} cannot run: {reason}")]
    Unusable { endpoint: String, reason: String },
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Message {
    pub role: String,
    pub content: String,
}

impl Message {
    pub fn system(content: impl Into<String>) -> Self {
        Self { role: "system".into(), content: content.into() }
    }
    pub fn user(content: impl Into<String>) -> Self {
        Self { role: "user".into(), content: content.into() }
    }
}

#[derive(Clone, Debug, PartialEq)]
pub struct Completion {
    pub text: String,
    pub input_tokens: u64,
    pub output_tokens: u64,
}

/// A thin client: one `reqwest::Client`, one timeout for every call.
#[derive(Clone)]
pub struct Client {
    http: reqwest::Client,
    timeout: Duration,
}

impl Client {
    pub fn new(timeout: Duration) -> Result<Self, CallError> {
        let http = reqwest::Client::builder()
            .connect_timeout(Duration::from_secs(5))
            .timeout(timeout)
            .build()
            .map_err(|err| CallError::Unreachable {
                endpoint: "(client)".into(),
                reason: scrub(&err.to_string(), &[]),
            })?;
        Ok(Self { http, timeout })
    }

    fn request(&self, method: reqwest::Method, endpoint: &Endpoint, path: &str) -> reqwest::RequestBuilder {
        let request = self.http.request(method, format!("{}/{path}", endpoint.base));
        match &endpoint.api_key {
            Some(key) => request.bearer_auth(key.expose()),
            None => request,
        }
    }

    async fn send<T: for<'de> Deserialize<'de>>(
        &self,
        endpoint: &Endpoint,
        request: reqwest::RequestBuilder,
    ) -> Result<T, CallError> {
        let at = endpoint.base.clone();
        // The key this call sends, so that a reply echoing it is caught even
        // when it looks like no known credential format.
        let sent: Vec<&str> = endpoint.api_key.iter().map(Secret::expose).collect();
        let scrubbed = |text: &str| scrub(text, &sent);
        let response = request.send().await.map_err(|err| {
            if err.is_timeout() {
                CallError::Timeout { endpoint: at.clone(), seconds: self.timeout.as_secs() }
            } else {
                CallError::Unreachable { endpoint: at.clone(), reason: scrubbed(&root_cause(&err)) }
            }
        })?;
        let status = response.status();
        let body = response.bytes().await.map_err(|err| CallError::Unreachable {
            endpoint: at.clone(),
            reason: scrubbed(&root_cause(&err)),
        })?;
        if !status.is_success() {
            let message = scrubbed(&provider_message(&body));
            return Err(if status.as_u16() == 401 || status.as_u16() == 403 {
                CallError::Unauthorized { endpoint: at, status: status.as_u16(), message }
            } else {
                CallError::Status { endpoint: at, status: status.as_u16(), message }
            });
        }
        // serde_json's messages quote the offending value, which is the
        // provider's text too.
        serde_json::from_slice(&body)
            .map_err(|err| CallError::Protocol { endpoint: at, reason: scrubbed(&err.to_string()) })
    }

    /// The model ids the endpoint lists (`GET /models`).
    pub async fn models(&self, endpoint: &Endpoint) -> Result<Vec<String>, CallError> {
        #[derive(Deserialize)]
        struct Listed {
            data: Vec<Model>,
        }
        #[derive(Deserialize)]
        struct Model {
            id: String,
        }
        let listed: Listed =
            self.send(endpoint, self.request(reqwest::Method::GET, endpoint, "models")).await?;
        Ok(listed.data.into_iter().map(|m| m.id).collect())
    }

    /// One non-streaming chat completion.
    pub async fn chat(
        &self,
        endpoint: &Endpoint,
        model: &str,
        messages: &[Message],
        max_tokens: u32,
        temperature: f32,
    ) -> Result<Completion, CallError> {
        #[derive(Deserialize)]
        struct Response {
            choices: Vec<Choice>,
            #[serde(default)]
            usage: Option<Usage>,
        }
        #[derive(Deserialize)]
        struct Choice {
            message: Message,
        }
        #[derive(Deserialize)]
        struct Usage {
            #[serde(default)]
            prompt_tokens: u64,
            #[serde(default)]
            completion_tokens: u64,
        }
        let body = serde_json::json!({
            "model": model,
            "messages": messages,
            "max_tokens": max_tokens,
            "temperature": temperature,
            "stream": false,
        });
        let response: Response = self
            .send(endpoint, self.request(reqwest::Method::POST, endpoint, "chat/completions").json(&body))
            .await?;
        let text =
            response.choices.into_iter().next().map(|choice| choice.message.content).ok_or_else(|| {
                CallError::Protocol { endpoint: endpoint.base.clone(), reason: "no choices".into() }
            })?;
        let usage = response.usage.unwrap_or(Usage { prompt_tokens: 0, completion_tokens: 0 });
        Ok(Completion { text, input_tokens: usage.prompt_tokens, output_tokens: usage.completion_tokens })
    }

    /// Embeddings of `inputs`, in order.
    pub async fn embeddings(
        &self,
        endpoint: &Endpoint,
        model: &str,
        inputs: &[String],
    ) -> Result<Vec<Vec<f32>>, CallError> {
        #[derive(Deserialize)]
        struct Response {
            data: Vec<Item>,
        }
        #[derive(Deserialize)]
        struct Item {
            #[serde(default)]
            index: Option<usize>,
            embedding: Vec<f32>,
        }
        let body = serde_json::json!({"model": model, "input": inputs, "encoding_format": "float"});
        let response: Response = self
            .send(endpoint, self.request(reqwest::Method::POST, endpoint, "embeddings").json(&body))
            .await?;
        if response.data.len() != inputs.len() {
            return Err(CallError::Protocol {
                endpoint: endpoint.base.clone(),
                reason: format!("{} embeddings for {} inputs", response.data.len(), inputs.len()),
            });
        }
        let mut items = response.data;
        items.sort_by_key(|item| item.index.unwrap_or(usize::MAX));
        Ok(items.into_iter().map(|item| item.embedding).collect())
    }

    /// Relevance scores of `documents` for `query`, in the documents' order.
    pub async fn rerank(
        &self,
        endpoint: &Endpoint,
        model: &str,
        query: &str,
        documents: &[String],
    ) -> Result<Vec<f32>, CallError> {
        #[derive(Deserialize)]
        struct Response {
            results: Vec<Item>,
        }
        #[derive(Deserialize)]
        struct Item {
            index: usize,
            relevance_score: f32,
        }
        let body = serde_json::json!({"model": model, "query": query, "documents": documents});
        let response: Response =
            self.send(endpoint, self.request(reqwest::Method::POST, endpoint, "rerank").json(&body)).await?;
        let mut scores = vec![0.0; documents.len()];
        for item in response.results {
            if let Some(score) = scores.get_mut(item.index) {
                *score = item.relevance_score;
            }
        }
        Ok(scores)
    }
}

/// The innermost cause of a transport error (reqwest's own text repeats
/// the URL and hides the useful part, such as "Connection refused").
fn root_cause(err: &(dyn std::error::Error + 'static)) -> String {
    let mut cause = err;
    while let Some(source) = cause.source() {
        cause = source;
    }
    cause.to_string()
}

/// The provider's error message (`{"error": {"message": ...}}` or
/// `{"error": "..."}`), or the body. Not shortened here: a cut made before
/// scrubbing could leave part of an echoed key that no longer matches it;
/// [`scrub`] bounds the length after redacting.
fn provider_message(body: &[u8]) -> String {
    let parsed: Option<serde_json::Value> = serde_json::from_slice(body).ok();
    let message = parsed.as_ref().and_then(|value| {
        value["error"]["message"]
            .as_str()
            .or_else(|| value["error"].as_str())
            .or_else(|| value["message"].as_str())
    });
    match message {
        Some(message) => message.to_owned(),
        None => String::from_utf8_lossy(body).into_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn provider_messages_are_read_from_the_usual_shapes() {
        assert_eq!(provider_message(br#"{"error":{"message":"Incorrect API key"}}"#), "Incorrect API key");
        assert_eq!(provider_message(br#"{"error":"model not found"}"#), "model not found");
        assert_eq!(provider_message(b"Bad Gateway"), "Bad Gateway");
    }
}
