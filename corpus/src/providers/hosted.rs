//! The hosted families that do not speak the OpenAI-compatible protocol:
//! Anthropic's Messages API and Google's Gemini API. Each has its request
//! body and the reader of its streamed reply here, as plain functions of
//! JSON; [`super::client`] sends them.
//!
//! - **Anthropic** (`POST {base}/messages`, `x-api-key`, `anthropic-version`):
//!   the system prompt is a top-level field, `max_tokens` is required, and
//!   the stream is named events: `message_start` (with the input tokens),
//!   `content_block_delta` (`text_delta` pieces), `message_delta` (the
//!   output tokens so far), `message_stop`, and `error`, which can arrive
//!   after the HTTP status said 200. Unknown events are skipped, as the
//!   API's versioning policy asks.
//! - **Gemini** (`POST {base}/models/{model}:streamGenerateContent?alt=sse`,
//!   `x-goog-api-key`): `contents` of `user` and `model` turns, a
//!   `systemInstruction`, a `generationConfig`; each streamed chunk is a
//!   `GenerateContentResponse` whose `usageMetadata` holds the counts so
//!   far. Embeddings come from `:batchEmbedContents`.

use serde_json::{json, Value};

use super::client::Message;

/// The `anthropic-version` header Lore speaks.
pub const ANTHROPIC_VERSION: &str = "2023-06-01";

/// The system messages joined, and the rest as turns.
fn split(messages: &[Message]) -> (Option<String>, Vec<&Message>) {
    let system: Vec<&str> =
        messages.iter().filter(|m| m.role == "system").map(|m| m.content.as_str()).collect();
    let turns = messages.iter().filter(|m| m.role != "system").collect();
    ((!system.is_empty()).then(|| system.join("\n\n")), turns)
}

pub fn anthropic_request(model: &str, messages: &[Message], max_tokens: u32, temperature: f32) -> Value {
    let (system, turns) = split(messages);
    let turns: Vec<Value> = turns
        .into_iter()
        .map(|m| {
            let role = if m.role == "assistant" { "assistant" } else { "user" };
            json!({"role": role, "content": m.content})
        })
        .collect();
    let mut body = json!({
        "model": model,
        "max_tokens": max_tokens,
        "temperature": temperature,
        "messages": turns,
        "stream": true,
    });
    if let Some(system) = system {
        body["system"] = json!(system);
    }
    body
}

pub fn gemini_request(messages: &[Message], max_tokens: u32, temperature: f32) -> Value {
    let (system, turns) = split(messages);
    let contents: Vec<Value> = turns
        .into_iter()
        .map(|m| {
            let role = if m.role == "assistant" { "model" } else { "user" };
            json!({"role": role, "parts": [{"text": m.content}]})
        })
        .collect();
    let mut body = json!({
        "contents": contents,
        "generationConfig": {"maxOutputTokens": max_tokens, "temperature": temperature},
    });
    if let Some(system) = system {
        body["systemInstruction"] = json!({"parts": [{"text": system}]});
    }
    body
}

/// A Gemini model's id as its paths want it (`gemini-2.5-flash`, given with
/// or without the `models/` prefix), refused when it would change the path.
pub fn gemini_model(model: &str) -> Result<&str, String> {
    let id = model.strip_prefix("models/").unwrap_or(model);
    if id.is_empty() || !id.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '.' | '_')) {
        return Err(format!("`{model}` is not a Gemini model id (letters, digits, -, . and _)"));
    }
    Ok(id)
}

pub fn gemini_embed_request(model: &str, inputs: &[String]) -> Value {
    let requests: Vec<Value> = inputs
        .iter()
        .map(|text| json!({"model": format!("models/{model}"), "content": {"parts": [{"text": text}]}}))
        .collect();
    json!({ "requests": requests })
}

/// What a stream has said so far.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Streamed {
    pub text: String,
    pub input_tokens: u64,
    pub output_tokens: u64,
    /// The stream said it is complete (`message_stop`; for Gemini and an
    /// OpenAI-compatible server, a chunk with a finish reason).
    pub complete: bool,
    /// How many pieces of text it sent (about one a token).
    pub pieces: u64,
}

/// Why a stream failed after it started: the provider's own message.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StreamFailure(pub String);

fn parse(data: &str) -> Result<Value, StreamFailure> {
    serde_json::from_str(data).map_err(|err| StreamFailure(format!("a streamed event is not JSON: {err}")))
}

fn count(value: &Value) -> u64 {
    value.as_u64().unwrap_or(0)
}

impl Streamed {
    /// Takes one Anthropic event; returns the text piece it added.
    pub fn anthropic(&mut self, name: &str, data: &str) -> Result<Option<String>, StreamFailure> {
        if name == "ping" {
            return Ok(None);
        }
        let event = parse(data)?;
        match event["type"].as_str().unwrap_or(name) {
            "message_start" => {
                let usage = &event["message"]["usage"];
                self.input_tokens = count(&usage["input_tokens"])
                    + count(&usage["cache_creation_input_tokens"])
                    + count(&usage["cache_read_input_tokens"]);
                self.output_tokens = count(&usage["output_tokens"]);
                Ok(None)
            }
            "content_block_delta" if event["delta"]["type"] == "text_delta" => {
                Ok(self.add(event["delta"]["text"].as_str().unwrap_or_default().to_owned()))
            }
            "message_delta" => {
                // Cumulative counts; the input is repeated only by newer
                // versions of the API.
                let usage = &event["usage"];
                if usage["output_tokens"].is_u64() {
                    self.output_tokens = count(&usage["output_tokens"]);
                }
                if usage["input_tokens"].is_u64() {
                    self.input_tokens = count(&usage["input_tokens"])
                        + count(&usage["cache_creation_input_tokens"])
                        + count(&usage["cache_read_input_tokens"]);
                }
                Ok(None)
            }
            "message_stop" => {
                self.complete = true;
                Ok(None)
            }
            "error" => Err(StreamFailure(
                event["error"]["message"].as_str().unwrap_or("the stream reported an error").to_owned(),
            )),
            _ => Ok(None),
        }
    }

    /// Takes one chunk of an OpenAI-compatible server's streamed chat
    /// completion; returns the text piece it added.
    pub fn openai(&mut self, data: &str) -> Result<Option<String>, StreamFailure> {
        if data.trim() == "[DONE]" {
            self.complete = true;
            return Ok(None);
        }
        let chunk = parse(data)?;
        if let Some(message) = chunk["error"]["message"].as_str() {
            return Err(StreamFailure(message.to_owned()));
        }
        let usage = &chunk["usage"];
        if usage.is_object() {
            self.input_tokens = count(&usage["prompt_tokens"]);
            self.output_tokens = count(&usage["completion_tokens"]);
        }
        let choice = &chunk["choices"][0];
        if choice["finish_reason"].is_string() {
            self.complete = true;
        }
        let piece = choice["delta"]["content"].as_str().unwrap_or_default().to_owned();
        Ok(self.add(piece))
    }

    /// Adds a piece of the reply's text; the piece, unless empty.
    fn add(&mut self, piece: String) -> Option<String> {
        if piece.is_empty() {
            return None;
        }
        self.pieces += 1;
        self.text.push_str(&piece);
        Some(piece)
    }

    /// Takes one Gemini chunk; returns the text piece it added.
    pub fn gemini(&mut self, data: &str) -> Result<Option<String>, StreamFailure> {
        let chunk = parse(data)?;
        if let Some(message) = chunk["error"]["message"].as_str() {
            return Err(StreamFailure(message.to_owned()));
        }
        if let Some(blocked) = chunk["promptFeedback"]["blockReason"].as_str() {
            return Err(StreamFailure(format!("the prompt was blocked ({blocked})")));
        }
        let usage = &chunk["usageMetadata"];
        if usage.is_object() {
            self.input_tokens = count(&usage["promptTokenCount"]);
            // Thinking is billed as output.
            self.output_tokens = count(&usage["candidatesTokenCount"]) + count(&usage["thoughtsTokenCount"]);
        }
        let candidate = &chunk["candidates"][0];
        let mut piece = String::new();
        for part in candidate["content"]["parts"].as_array().into_iter().flatten() {
            if part["thought"] == true {
                continue;
            }
            piece.push_str(part["text"].as_str().unwrap_or_default());
        }
        if candidate["finishReason"].is_string() {
            self.complete = true;
        }
        Ok(self.add(piece))
    }
}

/// The vectors of a `:batchEmbedContents` reply, in order.
pub fn gemini_embeddings(reply: &Value) -> Option<Vec<Vec<f32>>> {
    reply["embeddings"]
        .as_array()?
        .iter()
        .map(|e| e["values"].as_array().map(|v| v.iter().map(|x| x.as_f64().unwrap_or(0.0) as f32).collect()))
        .collect()
}

/// The model ids a Gemini `GET models` reply lists (without `models/`).
pub fn gemini_models(reply: &Value) -> Option<Vec<String>> {
    reply["models"]
        .as_array()?
        .iter()
        .map(|m| m["name"].as_str().map(|n| n.strip_prefix("models/").unwrap_or(n).to_owned()))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn messages() -> Vec<Message> {
        vec![Message::system("Be brief."), Message::user("Passages: …\nQuestion: why?")]
    }

    #[test]
    fn the_system_prompt_is_a_top_level_field_in_both_families() {
        let anthropic = anthropic_request("claude-x", &messages(), 320, 0.0);
        assert_eq!(anthropic["system"], "Be brief.");
        assert_eq!(
            anthropic["messages"],
            json!([{"role": "user", "content": "Passages: …\nQuestion: why?"}])
        );
        assert_eq!(anthropic["max_tokens"], 320);
        assert_eq!(anthropic["stream"], true);
        let gemini = gemini_request(&messages(), 320, 0.0);
        assert_eq!(gemini["systemInstruction"]["parts"][0]["text"], "Be brief.");
        assert_eq!(gemini["contents"][0]["role"], "user");
        assert_eq!(gemini["generationConfig"]["maxOutputTokens"], 320);
    }

    #[test]
    fn an_anthropic_stream_gives_its_text_and_usage_and_an_error_event_fails_it() {
        let mut streamed = Streamed::default();
        let start = r#"{"type":"message_start","message":{"usage":{"input_tokens":25,"cache_read_input_tokens":5,"output_tokens":1}}}"#;
        streamed.anthropic("message_start", start).unwrap();
        streamed.anthropic("ping", r#"{"type":"ping"}"#).unwrap();
        let delta = |t: &str| {
            format!(
                r#"{{"type":"content_block_delta","index":0,"delta":{{"type":"text_delta","text":"{t}"}}}}"#
            )
        };
        assert_eq!(streamed.anthropic("content_block_delta", &delta("Hel")).unwrap().as_deref(), Some("Hel"));
        streamed.anthropic("content_block_delta", &delta("lo")).unwrap();
        streamed.anthropic("some_future_event", r#"{"type":"some_future_event"}"#).unwrap();
        streamed
            .anthropic(
                "message_delta",
                r#"{"type":"message_delta","delta":{"stop_reason":"end_turn"},"usage":{"output_tokens":15}}"#,
            )
            .unwrap();
        assert!(!streamed.complete);
        streamed.anthropic("message_stop", r#"{"type":"message_stop"}"#).unwrap();
        assert_eq!(
            streamed,
            Streamed { text: "Hello".into(), input_tokens: 30, output_tokens: 15, complete: true, pieces: 2 }
        );
        let overloaded = r#"{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}"#;
        assert_eq!(
            Streamed::default().anthropic("error", overloaded),
            Err(StreamFailure("Overloaded".into()))
        );
    }

    #[test]
    fn a_gemini_stream_gives_its_text_and_the_last_usage() {
        let mut streamed = Streamed::default();
        let first = r#"{"candidates":[{"content":{"parts":[{"text":"Hel"}],"role":"model"}}],"usageMetadata":{"promptTokenCount":9,"candidatesTokenCount":1}}"#;
        let last = r#"{"candidates":[{"content":{"parts":[{"text":"thinking","thought":true},{"text":"lo"}],"role":"model"},"finishReason":"STOP"}],"usageMetadata":{"promptTokenCount":9,"candidatesTokenCount":2,"thoughtsTokenCount":3}}"#;
        assert_eq!(streamed.gemini(first).unwrap().as_deref(), Some("Hel"));
        streamed.gemini(last).unwrap();
        assert_eq!(
            streamed,
            Streamed { text: "Hello".into(), input_tokens: 9, output_tokens: 5, complete: true, pieces: 2 }
        );
        let blocked = r#"{"promptFeedback":{"blockReason":"SAFETY"}}"#;
        assert!(Streamed::default().gemini(blocked).unwrap_err().0.contains("SAFETY"));
    }

    #[test]
    fn an_openai_compatible_stream_gives_its_text_and_usage() {
        let mut streamed = Streamed::default();
        let piece = |t: &str| format!(r#"{{"choices":[{{"index":0,"delta":{{"content":"{t}"}}}}]}}"#);
        assert_eq!(streamed.openai(&piece("Hel")).unwrap().as_deref(), Some("Hel"));
        assert_eq!(
            streamed.openai(r#"{"choices":[{"index":0,"delta":{"role":"assistant"}}]}"#).unwrap(),
            None
        );
        streamed.openai(&piece("lo")).unwrap();
        assert!(!streamed.complete);
        streamed.openai(r#"{"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}"#).unwrap();
        streamed
            .openai(r#"{"choices":[],"usage":{"prompt_tokens":12,"completion_tokens":2,"total_tokens":14}}"#)
            .unwrap();
        streamed.openai("[DONE]").unwrap();
        assert_eq!(
            streamed,
            Streamed { text: "Hello".into(), input_tokens: 12, output_tokens: 2, complete: true, pieces: 2 }
        );
        let failed = r#"{"error":{"message":"the model is loading"}}"#;
        assert_eq!(Streamed::default().openai(failed), Err(StreamFailure("the model is loading".into())));
    }

    #[test]
    fn gemini_model_ids_cannot_change_the_path() {
        assert_eq!(gemini_model("models/gemini-2.5-flash"), Ok("gemini-2.5-flash"));
        assert!(gemini_model("../files").is_err());
        assert!(gemini_model("x?alt=json").is_err());
    }
}
