//! Calls to a provider's API base (`…/v1`) in the protocol its account
//! speaks ([`Protocol`]):
//!
//! - the OpenAI-compatible protocol, which most hosted vendors and every
//!   on-node server speak: `GET /models`, `POST /chat/completions`,
//!   `POST /embeddings` and (llama.cpp, vLLM, Cohere, Jina, Voyage)
//!   `POST /rerank`;
//! - Anthropic's Messages API and Google's Gemini API, whose replies are
//!   streamed ([`super::hosted`], read with [`super::sse`]).
//!
//! The API key travels only in the header each protocol names
//! (`Authorization`, `x-api-key`, `x-goog-api-key`).
//! Error messages carry the endpoint and the provider's own message, never
//! the key: everything the provider or the transport says is passed through
//! [`super::redact::scrub`], with the key the call sent, where it becomes a
//! [`CallError`], so the probe result, the stored `probe_error`, log lines
//! and API responses only ever see redacted text.

use std::ops::ControlFlow;
use std::time::Duration;

use serde::{Deserialize, Serialize};
use tokio::sync::mpsc::UnboundedSender;

use super::hosted::{self, Streamed};
use super::redact::scrub;
use super::repetition::Repetition;
use super::sse;
use crate::settings::Secret;

/// The most a streamed reply may hold in all.
const MAX_STREAM_BYTES: usize = 16 << 20;

/// The wire protocol of an account's endpoint.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Protocol {
    #[default]
    OpenAi,
    Anthropic,
    Gemini,
}

impl Protocol {
    pub fn key(self) -> &'static str {
        match self {
            Protocol::OpenAi => "openai",
            Protocol::Anthropic => "anthropic",
            Protocol::Gemini => "gemini",
        }
    }
}

/// Where to send requests, with the decrypted key for the duration of a call.
#[derive(Clone, Debug)]
pub struct Endpoint {
    /// The API base without a trailing slash.
    pub base: String,
    pub api_key: Option<Secret>,
    pub protocol: Protocol,
}

impl Endpoint {
    /// An OpenAI-compatible endpoint.
    pub fn openai(base: impl Into<String>, api_key: Option<Secret>) -> Self {
        Self { base: base.into(), api_key, protocol: Protocol::OpenAi }
    }
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
    #[error("{endpoint} answered something Lore cannot read: {reason}")]
    Protocol { endpoint: String, reason: String },
    /// A streamed reply that the provider ended with an error, after its
    /// status said success (Anthropic's `error` event, for one).
    #[error("{endpoint} broke off its reply: {message}")]
    Stream { endpoint: String, message: String },
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
    /// The reply began to repeat itself and was cut there (only when the
    /// call asked for it: [`Follow::stop_repeating`]).
    pub repeated: bool,
}

/// How a generation is followed as it is written.
#[derive(Debug, Default)]
pub struct Follow {
    /// Each piece of the reply, as it is written.
    pub tokens: Option<UnboundedSender<String>>,
    /// End the reply as soon as it repeats itself and keep what came before
    /// (see [`super::repetition`]): a small model that loops would otherwise
    /// write until its token budget runs out.
    pub stop_repeating: bool,
}

impl Follow {
    /// A reply watched for repetition, as an answer is.
    pub fn stopping_repetition() -> Self {
        Self { tokens: None, stop_repeating: true }
    }
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
        let mut request = self.http.request(method, format!("{}/{path}", endpoint.base));
        if endpoint.protocol == Protocol::Anthropic {
            request = request.header("anthropic-version", hosted::ANTHROPIC_VERSION);
        }
        let Some(key) = &endpoint.api_key else {
            return request;
        };
        match endpoint.protocol {
            Protocol::OpenAi => request.bearer_auth(key.expose()),
            Protocol::Anthropic => request.header("x-api-key", key.expose()),
            Protocol::Gemini => request.header("x-goog-api-key", key.expose()),
        }
    }

    /// Sends `request`; a reply that is not a success becomes the error.
    async fn open(
        &self,
        endpoint: &Endpoint,
        request: reqwest::RequestBuilder,
    ) -> Result<reqwest::Response, CallError> {
        let at = endpoint.base.clone();
        let sent: Vec<&str> = endpoint.api_key.iter().map(Secret::expose).collect();
        let response = request.send().await.map_err(|err| self.transport(&at, &err, &sent))?;
        let status = response.status();
        if status.is_success() {
            return Ok(response);
        }
        let body = response.bytes().await.map_err(|err| self.transport(&at, &err, &sent))?;
        let message = scrub(&provider_message(&body), &sent);
        // Gemini refuses a bad key with 400 and this reason.
        let refused = matches!(status.as_u16(), 401 | 403)
            || String::from_utf8_lossy(&body).contains("API_KEY_INVALID");
        Err(if refused {
            CallError::Unauthorized { endpoint: at, status: status.as_u16(), message }
        } else {
            CallError::Status { endpoint: at, status: status.as_u16(), message }
        })
    }

    fn transport(&self, at: &str, err: &reqwest::Error, sent: &[&str]) -> CallError {
        if err.is_timeout() {
            CallError::Timeout { endpoint: at.to_owned(), seconds: self.timeout.as_secs() }
        } else {
            CallError::Unreachable { endpoint: at.to_owned(), reason: scrub(&root_cause(err), sent) }
        }
    }

    async fn send<T: for<'de> Deserialize<'de>>(
        &self,
        endpoint: &Endpoint,
        request: reqwest::RequestBuilder,
    ) -> Result<T, CallError> {
        let response = self.open(endpoint, request).await?;
        // The key this call sends, so that a reply echoing it is caught even
        // when it looks like no known credential format.
        let sent: Vec<&str> = endpoint.api_key.iter().map(Secret::expose).collect();
        let body = response.bytes().await.map_err(|err| self.transport(&endpoint.base, &err, &sent))?;
        // serde_json's messages quote the offending value, which is the
        // provider's text too.
        serde_json::from_slice(&body).map_err(|err| CallError::Protocol {
            endpoint: endpoint.base.clone(),
            reason: scrub(&err.to_string(), &sent),
        })
    }

    /// Sends `request` and hands each server-sent event of the reply to
    /// `on_event` as it arrives, until the stream ends or `on_event` fails
    /// (with the provider's message, scrubbed here).
    async fn stream(
        &self,
        endpoint: &Endpoint,
        request: reqwest::RequestBuilder,
        mut on_event: impl FnMut(sse::Event) -> Result<ControlFlow<()>, String>,
    ) -> Result<(), CallError> {
        let mut response = self.open(endpoint, request).await?;
        let sent: Vec<&str> = endpoint.api_key.iter().map(Secret::expose).collect();
        let protocol = |reason: String| CallError::Protocol {
            endpoint: endpoint.base.clone(),
            reason: scrub(&reason, &sent),
        };
        let mut reader = sse::Reader::default();
        let mut total = 0usize;
        while let Some(chunk) =
            response.chunk().await.map_err(|err| self.transport(&endpoint.base, &err, &sent))?
        {
            total += chunk.len();
            if total > MAX_STREAM_BYTES {
                return Err(protocol(format!("the streamed reply is longer than {MAX_STREAM_BYTES} bytes")));
            }
            for event in reader.feed(&chunk).map_err(protocol)? {
                let flow = on_event(event).map_err(|message| CallError::Stream {
                    endpoint: endpoint.base.clone(),
                    message: scrub(&message, &sent),
                })?;
                if flow.is_break() {
                    // Dropping the response closes the connection: the
                    // server stops writing.
                    return Ok(());
                }
            }
        }
        if let Some(event) = reader.finish().map_err(protocol)? {
            // The last event: nothing is left to read, whatever it says.
            let _ = on_event(event).map_err(|message| CallError::Stream {
                endpoint: endpoint.base.clone(),
                message: scrub(&message, &sent),
            })?;
        }
        Ok(())
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
        let request = self.request(reqwest::Method::GET, endpoint, "models");
        if endpoint.protocol == Protocol::Gemini {
            let reply: serde_json::Value = self.send(endpoint, request).await?;
            return hosted::gemini_models(&reply).ok_or_else(|| self.unreadable(endpoint, "no model list"));
        }
        // Anthropic lists its models in the OpenAI-compatible shape.
        let listed: Listed = self.send(endpoint, request).await?;
        Ok(listed.data.into_iter().map(|m| m.id).collect())
    }

    fn unreadable(&self, endpoint: &Endpoint, reason: &str) -> CallError {
        CallError::Protocol { endpoint: endpoint.base.clone(), reason: reason.to_owned() }
    }

    /// One chat completion, followed as `follow` asks: `tokens`, when
    /// given, gets the reply's text piece by piece where the protocol streams
    /// it (the hosted families, and an OpenAI-compatible server when the
    /// reply is watched for repetition), or whole; `stop_repeating` ends the
    /// reply where it began to repeat itself and keeps what came before.
    pub async fn chat(
        &self,
        endpoint: &Endpoint,
        model: &str,
        messages: &[Message],
        max_tokens: u32,
        temperature: f32,
        follow: &Follow,
    ) -> Result<Completion, CallError> {
        let tokens = follow.tokens.as_ref();
        let mut watch = follow.stop_repeating.then(Repetition::default);
        // Each piece goes to the listener, then to the watch: a reply that
        // repeats itself is read no further.
        let mut next = |piece: Option<String>| {
            let repeating = match (&mut watch, &piece) {
                (Some(watch), Some(piece)) => watch.push(piece),
                _ => false,
            };
            forward(tokens, piece);
            if repeating {
                ControlFlow::Break(())
            } else {
                ControlFlow::Continue(())
            }
        };
        let streamed = match endpoint.protocol {
            Protocol::OpenAi if !follow.stop_repeating => {
                let completion = self.openai_chat(endpoint, model, messages, max_tokens, temperature).await?;
                if let Some(tokens) = tokens {
                    let _ = tokens.send(completion.text.clone());
                }
                return Ok(completion);
            }
            Protocol::OpenAi => {
                let body = serde_json::json!({
                    "model": model,
                    "messages": messages,
                    "max_tokens": max_tokens,
                    "temperature": temperature,
                    "stream": true,
                    "stream_options": { "include_usage": true },
                });
                // Not kept for the next call: llama.cpp's server closes a
                // streamed reply's connection after it, and a pooled one it
                // closed fails the next request at once.
                let request = self
                    .request(reqwest::Method::POST, endpoint, "chat/completions")
                    .header(reqwest::header::CONNECTION, "close")
                    .json(&body);
                let mut streamed = Streamed::default();
                self.stream(endpoint, request, |event| {
                    let piece = streamed.openai(&event.data).map_err(|failure| failure.0)?;
                    Ok(next(piece))
                })
                .await?;
                streamed
            }
            Protocol::Anthropic => {
                let body = hosted::anthropic_request(model, messages, max_tokens, temperature);
                let request = self.request(reqwest::Method::POST, endpoint, "messages").json(&body);
                let mut streamed = Streamed::default();
                self.stream(endpoint, request, |event| {
                    let piece = streamed.anthropic(&event.name, &event.data).map_err(|failure| failure.0)?;
                    Ok(next(piece))
                })
                .await?;
                streamed
            }
            Protocol::Gemini => {
                let id = hosted::gemini_model(model).map_err(|reason| self.unreadable(endpoint, &reason))?;
                let body = hosted::gemini_request(messages, max_tokens, temperature);
                let path = format!("models/{id}:streamGenerateContent?alt=sse");
                let request = self.request(reqwest::Method::POST, endpoint, &path).json(&body);
                let mut streamed = Streamed::default();
                self.stream(endpoint, request, |event| {
                    let piece = streamed.gemini(&event.data).map_err(|failure| failure.0)?;
                    Ok(next(piece))
                })
                .await?;
                streamed
            }
        };
        if let Some(kept) = watch.as_ref().and_then(Repetition::kept) {
            // Cut short: the provider never said it was complete, nor
            // (mostly) how many tokens it wrote: each streamed piece is about one.
            return Ok(Completion {
                text: kept.to_owned(),
                input_tokens: streamed.input_tokens,
                output_tokens: streamed.output_tokens.max(streamed.pieces),
                repeated: true,
            });
        }
        if !streamed.complete {
            return Err(self.unreadable(endpoint, "the streamed reply ended before it said it was complete"));
        }
        Ok(Completion {
            text: streamed.text,
            input_tokens: streamed.input_tokens,
            // A server that does not count: about one token a piece.
            output_tokens: if streamed.output_tokens == 0 { streamed.pieces } else { streamed.output_tokens },
            repeated: false,
        })
    }

    async fn openai_chat(
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
        Ok(Completion {
            text,
            input_tokens: usage.prompt_tokens,
            output_tokens: usage.completion_tokens,
            repeated: false,
        })
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
        if endpoint.protocol == Protocol::Gemini {
            let id = hosted::gemini_model(model).map_err(|reason| self.unreadable(endpoint, &reason))?;
            let body = hosted::gemini_embed_request(id, inputs);
            let path = format!("models/{id}:batchEmbedContents");
            let reply: serde_json::Value =
                self.send(endpoint, self.request(reqwest::Method::POST, endpoint, &path).json(&body)).await?;
            let vectors = hosted::gemini_embeddings(&reply)
                .ok_or_else(|| self.unreadable(endpoint, "no embeddings"))?;
            if vectors.len() != inputs.len() {
                return Err(self.unreadable(
                    endpoint,
                    &format!("{} embeddings for {} inputs", vectors.len(), inputs.len()),
                ));
            }
            return Ok(vectors);
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

    /// Relevance scores of `documents` for `query`, in the documents'
    /// order, with the tokens the provider counted when it says (llama.cpp,
    /// Jina and vLLM report `usage`).
    pub async fn rerank(
        &self,
        endpoint: &Endpoint,
        model: &str,
        query: &str,
        documents: &[String],
    ) -> Result<Reranked, CallError> {
        #[derive(Deserialize)]
        struct Response {
            results: Vec<Item>,
            #[serde(default)]
            usage: Option<Usage>,
        }
        #[derive(Deserialize)]
        struct Item {
            index: usize,
            relevance_score: f32,
        }
        #[derive(Deserialize)]
        struct Usage {
            #[serde(default)]
            prompt_tokens: Option<u64>,
            #[serde(default)]
            total_tokens: Option<u64>,
        }
        if endpoint.protocol != Protocol::OpenAi {
            return Err(self.unreadable(endpoint, "this provider offers no reranking"));
        }
        let body = serde_json::json!({"model": model, "query": query, "documents": documents});
        let response: Response =
            self.send(endpoint, self.request(reqwest::Method::POST, endpoint, "rerank").json(&body)).await?;
        let mut scores = vec![None; documents.len()];
        for item in response.results {
            match scores.get_mut(item.index) {
                Some(score) if item.relevance_score.is_finite() => *score = Some(item.relevance_score),
                _ => {
                    return Err(self.unreadable(
                        endpoint,
                        &format!("a score for document {} of {}", item.index, documents.len()),
                    ))
                }
            }
        }
        // A reranker may return only its best: the rest rank below them.
        let scores = scores.into_iter().map(|score| score.unwrap_or(f32::MIN)).collect();
        let input_tokens = response.usage.and_then(|u| u.prompt_tokens.or(u.total_tokens)).unwrap_or(0);
        Ok(Reranked { scores, input_tokens })
    }
}

/// A reranker's verdict on a list of documents.
#[derive(Clone, Debug, PartialEq)]
pub struct Reranked {
    /// One per document, in the documents' order (`f32::MIN` for one the
    /// reranker left out).
    pub scores: Vec<f32>,
    pub input_tokens: u64,
}

/// Sends a streamed piece on, when someone listens.
fn forward(tokens: Option<&UnboundedSender<String>>, piece: Option<String>) {
    if let (Some(tokens), Some(piece)) = (tokens, piece) {
        // A caller that stopped listening does not stop the call.
        let _ = tokens.send(piece);
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
