//! JSON-RPC 2.0 as the tool server speaks it, and MCP's shapes on top of
//! it: a client's message is read once into an [`Incoming`]; every reply
//! is a [`Reply`], every error an [`RpcError`] with one of the [`Code`]s
//! below; lists, resource contents and tool results are the typed shapes
//! at the end. Nothing else in the transport writes a JSON-RPC envelope.

use lore_toolserver::hub::{Notice, Pushed};
use serde::{Serialize, Serializer};
use serde_json::{json, Map, Value};

/// The key of `_meta` that tags a listen stream's notifications.
pub const SUBSCRIPTION_ID: &str = "io.modelcontextprotocol/subscriptionId";

/// The error codes the tool server answers with.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Code {
    /// The body is not JSON.
    ParseError,
    /// Not a request Lore serves (a batch, a missing header, …).
    InvalidRequest,
    MethodNotFound,
    /// The request's parameters are wrong, or what it asked was refused
    /// for a reason that is the caller's (`data.code` says which).
    InvalidParams,
    /// Lore's own failure.
    Internal,
    /// Lore's own: the caller's permissions refuse it (`data.code` says more).
    PermissionDenied,
    /// Session era: no resource at that URI.
    ResourceNotFound,
    /// 2026-07-28: a header disagrees with the body.
    HeaderMismatch,
    /// 2026-07-28: a protocol version Lore does not speak.
    UnsupportedVersion,
}

impl Code {
    pub const fn value(self) -> i64 {
        match self {
            Code::ParseError => -32700,
            Code::InvalidRequest => -32600,
            Code::MethodNotFound => -32601,
            Code::InvalidParams => -32602,
            Code::Internal => -32603,
            Code::PermissionDenied => -32001,
            Code::ResourceNotFound => -32002,
            Code::HeaderMismatch => -32020,
            Code::UnsupportedVersion => -32022,
        }
    }
}

impl Serialize for Code {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_i64(self.value())
    }
}

/// A JSON-RPC error object.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct RpcError {
    pub code: Code,
    pub message: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub data: Option<Value>,
}

impl RpcError {
    pub fn new(code: Code, message: impl Into<String>) -> Self {
        Self { code, message: message.into(), data: None }
    }

    pub fn with_data(self, data: Value) -> Self {
        Self { data: Some(data), ..self }
    }
}

/// The only JSON-RPC version there is.
const JSONRPC: &str = "2.0";

/// A reply to request `id` (`null` when the request's id is not known).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Reply {
    jsonrpc: &'static str,
    id: Value,
    #[serde(flatten)]
    outcome: Outcome,
}

#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "lowercase")]
enum Outcome {
    Result(Value),
    Error(RpcError),
}

impl Reply {
    pub fn result(id: Value, result: Value) -> Self {
        Self { jsonrpc: JSONRPC, id, outcome: Outcome::Result(result) }
    }

    pub fn error(id: Value, error: RpcError) -> Self {
        Self { jsonrpc: JSONRPC, id, outcome: Outcome::Error(error) }
    }

    pub fn to_value(&self) -> Value {
        serde_json::to_value(self).unwrap_or(Value::Null)
    }
}

/// A notification Lore sends.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Notification {
    jsonrpc: &'static str,
    method: &'static str,
    #[serde(skip_serializing_if = "Map::is_empty")]
    params: Map<String, Value>,
}

impl Notification {
    pub fn new(method: &'static str, params: Map<String, Value>) -> Self {
        Self { jsonrpc: JSONRPC, method, params }
    }

    /// What a push channel tells: on a listen stream, tagged with its
    /// subscription's id.
    pub fn pushed(pushed: Pushed) -> Self {
        let mut params = Map::new();
        if let Some(id) = pushed.subscription {
            params.insert("_meta".into(), json!({ SUBSCRIPTION_ID: id }));
        }
        let method = match pushed.notice {
            Notice::ToolsListChanged => "notifications/tools/list_changed",
            Notice::ResourcesListChanged => "notifications/resources/list_changed",
            Notice::ResourceUpdated(uri) => {
                params.insert("uri".into(), Value::String(uri));
                "notifications/resources/updated"
            }
        };
        Self::new(method, params)
    }

    pub fn to_value(&self) -> Value {
        serde_json::to_value(self).unwrap_or(Value::Null)
    }
}

/// What a client sent.
#[derive(Clone, Debug, PartialEq)]
pub enum Incoming {
    /// A request (`id` given, `null` included) or a notification (none).
    Call { id: Option<Value>, method: String, params: Map<String, Value> },
    /// A client's response to a request of Lore's: Lore sends none, so there
    /// is nothing to do with it.
    Response,
}

/// A message that cannot be served: the error, and the id to answer it
/// under (`null` when there is none).
#[derive(Debug)]
pub struct Refused {
    pub id: Value,
    pub error: RpcError,
}

fn refused(id: Value, error: RpcError) -> Box<Refused> {
    Box::new(Refused { id, error })
}

/// Reads a POST body: one JSON-RPC message (batches are refused).
pub fn parse(body: &[u8]) -> Result<Incoming, Box<Refused>> {
    let invalid = |text: &str| refused(Value::Null, RpcError::new(Code::InvalidRequest, text));
    let message: Value = serde_json::from_slice(body).map_err(|err| {
        refused(Value::Null, RpcError::new(Code::ParseError, format!("the body is not JSON: {err}")))
    })?;
    let batch = message.is_array();
    let Value::Object(message) = message else {
        return Err(if batch {
            invalid("batches are not supported: send one message per request")
        } else {
            invalid("the body must be a JSON-RPC message")
        });
    };
    let id = message.get("id").cloned();
    let Some(method) = message.get("method").and_then(Value::as_str).map(str::to_owned) else {
        if id.is_some() && (message.contains_key("result") || message.contains_key("error")) {
            return Ok(Incoming::Response);
        }
        return Err(invalid("not a JSON-RPC request"));
    };
    let answer_to = id.clone().unwrap_or(Value::Null);
    if message.get("jsonrpc").and_then(Value::as_str) != Some("2.0") {
        return Err(refused(answer_to, RpcError::new(Code::InvalidRequest, "`jsonrpc` must be \"2.0\"")));
    }
    let params = match message.get("params") {
        None | Some(Value::Null) => Map::new(),
        Some(Value::Object(params)) => params.clone(),
        Some(_) => {
            return Err(refused(answer_to, RpcError::new(Code::InvalidParams, "`params` must be an object")))
        }
    };
    Ok(Incoming::Call { id, method, params })
}

// MCP's shapes.

/// A tool as `tools/list` lists it.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolListing<'a> {
    pub name: &'a str,
    pub description: &'a str,
    pub input_schema: &'a Value,
    pub output_schema: &'a Value,
    pub annotations: Annotations,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Annotations {
    pub read_only_hint: bool,
    pub destructive_hint: bool,
}

/// A resource as `resources/list` lists it.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ResourceListing<'a> {
    pub uri: &'a str,
    pub name: &'a str,
    pub description: &'a str,
    pub mime_type: &'a str,
}

/// A template as `resources/templates/list` lists it.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct TemplateListing<'a> {
    pub uri_template: &'a str,
    pub name: &'a str,
    pub description: &'a str,
    pub mime_type: &'a str,
}

/// What `resources/read` returns: one JSON document as text.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ReadResult {
    pub contents: [Contents; 1],
}

#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Contents {
    pub uri: String,
    pub mime_type: &'static str,
    pub text: String,
}

/// What `tools/call` returns: the structured result and the same as text;
/// `is_error` for what the tool refused (a result the model reads and can
/// correct, not a protocol error).
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct CallResult {
    pub content: [TextContent; 1],
    pub structured_content: Value,
    pub is_error: bool,
}

impl CallResult {
    pub fn new(structured: Value, is_error: bool) -> Self {
        let text = serde_json::to_string(&structured).unwrap_or_default();
        Self { content: [TextContent { kind: "text", text }], structured_content: structured, is_error }
    }
}

#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct TextContent {
    #[serde(rename = "type")]
    pub kind: &'static str,
    pub text: String,
}

/// Serialises one of the shapes above (they cannot fail to).
pub fn value<T: Serialize>(shape: &T) -> Value {
    serde_json::to_value(shape).unwrap_or(Value::Null)
}
