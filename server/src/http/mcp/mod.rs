//! The tool server's transport: MCP's Streamable HTTP on `{base_url}/mcp`
//! (application profile) and `{base_url}/operation/mcp` (operations
//! profile), serving both protocol eras on the same endpoints.
//!
//! - A request whose `params._meta` names a protocol version speaks the
//!   sessionless 2026-07-28 revision: it is checked against its
//!   `MCP-Protocol-Version`, `Mcp-Method` and `Mcp-Name` headers and served
//!   on its own; `subscriptions/listen` streams notifications.
//! - Anything else speaks a session-era revision (2025-03-26, 2025-06-18,
//!   2025-11-25): `initialize` opens a session (`Mcp-Session-Id`), later
//!   requests name it, GET opens its push channel, DELETE ends it when
//!   `mcp.session.allowClientDelete` allows.
//!
//! Every request is authenticated (an `x-api-key` with scope `mcp` of a
//! user, or an admin's session) and acts as that user; the crate
//! `lore-toolserver` decides what it sees and runs what it calls. The status
//! codes are DESIGN.md's (docs/mcp.md lists them).

use axum::body::Bytes;
use axum::extract::State;
use axum::http::{header, HeaderMap, HeaderValue, Method, StatusCode};
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use axum::Extension;
use base64::Engine as _;
use engine::appdb::AppDbError;
use engine::auth::Viewer;
use engine::keys::Scope;
use engine::operations::{self, Credentials};
use engine::resources::Caller;
use engine::settings::Secret;
use lore_toolserver::{self as mcp, hub, sessions, Profile, ToolServer};
use serde_json::{json, Map, Value};

pub mod rpc;

use rpc::{Code, Incoming, Reply, RpcError};

use super::error::ApiError;
use super::public::API_KEY_HEADER;
use crate::AppState;

const SESSION_HEADER: &str = "mcp-session-id";
const VERSION_HEADER: &str = "mcp-protocol-version";
const METHOD_HEADER: &str = "mcp-method";
const NAME_HEADER: &str = "mcp-name";
const META_VERSION: &str = "io.modelcontextprotocol/protocolVersion";
const META_CAPABILITIES: &str = "io.modelcontextprotocol/clientCapabilities";
const META_SERVER: &str = "io.modelcontextprotocol/serverInfo";
/// Items per page of a list (DESIGN.md).
pub const PAGE: usize = 200;

pub async fn application(
    State(state): State<AppState>,
    viewer: Option<Extension<Viewer>>,
    method: Method,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    serve(state, Profile::Application, viewer.as_deref(), method, headers, body).await
}

pub async fn operations(
    State(state): State<AppState>,
    viewer: Option<Extension<Viewer>>,
    method: Method,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    serve(state, Profile::Operations, viewer.as_deref(), method, headers, body).await
}

/// A request of either era, as far as the transport goes.
struct Call {
    state: AppState,
    profile: Profile,
    headers: HeaderMap,
}

async fn serve(
    state: AppState,
    profile: Profile,
    viewer: Option<&Viewer>,
    method: Method,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    if !profile.enabled(&state.lore) {
        return ApiError::Engine(
            AppDbError::UnknownResource(format!("{} tool server", profile.key())).into(),
        )
        .into_response();
    }
    if !super::layers::is_same_origin(&headers) {
        return ApiError::CrossOriginRejected.into_response();
    }
    let call = Call { state, profile, headers };
    match method {
        Method::POST => call.post(viewer, body).await,
        Method::GET => call.get(viewer).await,
        Method::DELETE => call.delete(viewer).await,
        _ => call.not_allowed(),
    }
}

fn json_response(status: StatusCode, body: Value) -> Response {
    (status, axum::Json(body)).into_response()
}

/// A JSON-RPC error to request `id`, with an HTTP status of its own.
fn refuse(status: StatusCode, id: Value, error: RpcError) -> Response {
    json_response(status, Reply::error(id, error).to_value())
}

/// What a request's `Accept` allows: JSON, an event stream, or neither.
pub fn accepts(headers: &HeaderMap) -> (bool, bool) {
    let Some(accept) = headers.get(header::ACCEPT).and_then(|v| v.to_str().ok()) else {
        return (true, true);
    };
    let mut json = false;
    let mut sse = false;
    for kind in accept.split(',').map(|k| k.split(';').next().unwrap_or("").trim().to_ascii_lowercase()) {
        match kind.as_str() {
            "*/*" => (json, sse) = (true, true),
            "application/*" | "application/json" => json = true,
            "text/*" | "text/event-stream" => sse = true,
            _ => {}
        }
    }
    (json, sse)
}

fn header_text<'h>(headers: &'h HeaderMap, name: &str) -> Option<&'h str> {
    headers.get(name).and_then(|v| v.to_str().ok())
}

/// Whether a header the 2026-07-28 revision requires (`sent`, as read)
/// repeats the body's `value`; the error says how it does not.
fn repeats(sent: Option<String>, header: &str, value: &str) -> Result<(), String> {
    match sent {
        Some(sent) if sent == value => Ok(()),
        Some(sent) => Err(format!(
            "Header mismatch: {header} header value '{sent}' does not match body value '{value}'"
        )),
        None => Err(format!("the {header} header is required")),
    }
}

/// A header value as 2026-07-28 sends it: `=?base64?…?=` when it is not
/// plain ASCII.
pub fn decode_header(raw: &str) -> Option<String> {
    match raw.strip_prefix("=?base64?").and_then(|r| r.strip_suffix("?=")) {
        Some(encoded) => base64::engine::general_purpose::STANDARD
            .decode(encoded)
            .ok()
            .and_then(|bytes| String::from_utf8(bytes).ok()),
        None => Some(raw.to_owned()),
    }
}

impl Call {
    fn tools(&self) -> &ToolServer {
        &self.state.tools
    }

    fn not_allowed(&self) -> Response {
        let allow = if self.tools().settings.mcp.session.allow_client_delete {
            "GET, POST, DELETE"
        } else {
            "GET, POST"
        };
        let mut response = ApiError::MethodNotAllowed.into_response();
        response.headers_mut().insert(header::ALLOW, HeaderValue::from_static(allow));
        response
    }

    /// Who calls, and the raw key (custom tools check it themselves); with
    /// `mcp.application.anonymousCustomTools`, a request without
    /// credentials on the application profile is an anonymous caller.
    async fn caller(&self, viewer: Option<&Viewer>) -> Result<(Caller, Option<String>), ApiError> {
        let raw = header_text(&self.headers, API_KEY_HEADER);
        let bearer = header_text(&self.headers, "authorization")
            .and_then(|value| value.split_once(' '))
            .filter(|(kind, _)| kind.eq_ignore_ascii_case("bearer"))
            .map(|(_, token)| token.trim());
        let credentials = match (raw, bearer, viewer) {
            (Some(raw), _, _) => Credentials::Key { raw, origin: None },
            (None, Some(token), _) => Credentials::Bearer { token, resource_path: self.profile.path() },
            (None, None, Some(viewer)) => Credentials::Session(viewer),
            (None, None, None) => Credentials::None,
        };
        let oauth = matches!(credentials, Credentials::Bearer { .. });
        if matches!(credentials, Credentials::None) {
            if let Some(anonymous) = mcp::anonymous(self.tools(), self.profile).await? {
                return Ok((anonymous, None));
            }
        }
        let (principal, key_id) = operations::authenticate_for(self.tools(), credentials, Scope::Mcp).await?;
        Ok((Caller { principal: Some(principal), key: raw.map(Secret::new), oauth }, key_id))
    }

    /// The live session a request names, bound to this caller.
    async fn session(&self, caller: &Caller) -> Result<sessions::Session, Response> {
        let Some(id) = header_text(&self.headers, SESSION_HEADER) else {
            let error = RpcError::new(
                Code::InvalidRequest,
                "the Mcp-Session-Id header is required (initialize first)",
            );
            return Err(refuse(StatusCode::BAD_REQUEST, Value::Null, error));
        };
        let (status, text) = match sessions::lookup(self.tools(), self.profile, id, caller).await {
            Ok(sessions::Lookup::Live(session)) => return Ok(*session),
            Ok(sessions::Lookup::Gone) => {
                (StatusCode::NOT_FOUND, "no such session (it ended or expired): initialize again")
            }
            Ok(sessions::Lookup::NotYours) => (StatusCode::FORBIDDEN, "this session belongs to another user"),
            Err(err) => return Err(ApiError::from(err).into_response()),
        };
        Err(refuse(status, Value::Null, RpcError::new(Code::InvalidRequest, text)))
    }

    async fn post(self, viewer: Option<&Viewer>, body: Bytes) -> Response {
        let (json_ok, sse_ok) = accepts(&self.headers);
        if !json_ok && !sse_ok {
            let error = RpcError::new(
                Code::InvalidRequest,
                "Accept must allow application/json or text/event-stream",
            );
            return refuse(StatusCode::NOT_ACCEPTABLE, Value::Null, error);
        }
        let (id, method, params) = match rpc::parse(&body) {
            Ok(Incoming::Call { id, method, params }) => (id, method, params),
            Ok(Incoming::Response) => return StatusCode::ACCEPTED.into_response(),
            Err(refused) => return refuse(StatusCode::BAD_REQUEST, refused.id, refused.error),
        };
        let modern = params.get("_meta").and_then(|m| m.get(META_VERSION)).is_some();
        let (caller, key_id) = match self.caller(viewer).await {
            Ok(found) => found,
            Err(err) => return super::oauth::challenge(&self.state, self.profile.path(), err),
        };
        let response = if modern {
            self.modern(&caller, key_id.as_deref(), id, &method, params, sse_ok && !json_ok).await
        } else {
            self.session_era(&caller, key_id.as_deref(), id, &method, params, sse_ok && !json_ok).await
        };
        if let Some(key_id) = key_id {
            super::operation::count_usage(&self.state, Some(key_id)).await;
        }
        response
    }

    async fn session_era(
        &self,
        caller: &Caller,
        key_id: Option<&str>,
        id: Option<Value>,
        method: &str,
        params: Map<String, Value>,
        sse_only: bool,
    ) -> Response {
        if let Some(version) = header_text(&self.headers, VERSION_HEADER) {
            if !mcp::SESSION_VERSIONS.contains(&version) && method != "initialize" {
                let error = RpcError::new(
                    Code::InvalidRequest,
                    format!("unsupported MCP-Protocol-Version `{version}`"),
                )
                .with_data(json!({"supported": mcp::SESSION_VERSIONS}));
                return refuse(StatusCode::BAD_REQUEST, id.unwrap_or(Value::Null), error);
            }
        }
        if method == "initialize" {
            let Some(id) = id else {
                let error = RpcError::new(Code::InvalidRequest, "initialize is a request (it needs an id)");
                return refuse(StatusCode::BAD_REQUEST, Value::Null, error);
            };
            return self.initialize(caller, id, params).await;
        }
        let session = match self.session(caller).await {
            Ok(session) => session,
            Err(response) => return response,
        };
        if let Err(err) = sessions::touch(self.tools(), &session).await {
            return ApiError::from(err).into_response();
        }
        let Some(id) = id else {
            // notifications/initialized, notifications/cancelled, …
            return StatusCode::ACCEPTED.into_response();
        };
        let outcome = match method {
            "ping" => Ok(json!({})),
            "resources/subscribe" | "resources/unsubscribe" => {
                self.subscribe(caller, &session, method == "resources/subscribe", &params).await
            }
            _ => self.method(caller, key_id, method, &params, false).await,
        };
        reply(id, outcome, false, sse_only)
    }

    async fn initialize(&self, caller: &Caller, id: Value, params: Map<String, Value>) -> Response {
        let Some(requested) = params.get("protocolVersion").and_then(Value::as_str) else {
            return refuse(
                StatusCode::BAD_REQUEST,
                id,
                RpcError::new(Code::InvalidParams, "`protocolVersion` is required"),
            );
        };
        let client =
            json!({"clientInfo": params.get("clientInfo"), "capabilities": params.get("capabilities")});
        let session = match sessions::start(self.tools(), self.profile, caller, requested, client).await {
            Ok(session) => session,
            Err(err) => return ApiError::from(err).into_response(),
        };
        let result = json!({
            "protocolVersion": session.protocol_version,
            "capabilities": mcp::capabilities(),
            "serverInfo": {"name": "lore", "title": "Lore", "version": mcp::SURFACE_VERSION},
            "instructions": instructions(self.profile),
        });
        let mut response = json_response(StatusCode::OK, Reply::result(id, result).to_value());
        if let Ok(value) = HeaderValue::from_str(&session.id) {
            response.headers_mut().insert(SESSION_HEADER, value);
        }
        response
    }

    async fn subscribe(
        &self,
        caller: &Caller,
        session: &sessions::Session,
        on: bool,
        params: &Map<String, Value>,
    ) -> Result<Value, Failure> {
        let uri =
            params.get("uri").and_then(Value::as_str).ok_or_else(|| Failure::params("`uri` is required"))?;
        sessions::subscribe(self.tools(), session, caller, uri, on).await?;
        Ok(json!({}))
    }

    /// The methods both eras share.
    async fn method(
        &self,
        caller: &Caller,
        key_id: Option<&str>,
        method: &str,
        params: &Map<String, Value>,
        modern: bool,
    ) -> Result<Value, Failure> {
        let lore = self.tools();
        match method {
            "tools/list" | "resources/list" | "resources/templates/list" => {
                let surface = mcp::listed(lore, self.profile, caller).await?;
                let (field, items): (&str, Vec<Value>) = match method {
                    "tools/list" => ("tools", surface.tools.iter().map(tool_listing).collect()),
                    "resources/list" => (
                        "resources",
                        surface
                            .resources
                            .iter()
                            .map(|r| {
                                rpc::value(&rpc::ResourceListing {
                                    uri: &r.uri,
                                    name: &r.name,
                                    description: &r.description,
                                    mime_type: r.mime_type,
                                })
                            })
                            .collect(),
                    ),
                    _ => (
                        "resourceTemplates",
                        surface
                            .templates
                            .iter()
                            .map(|t| {
                                rpc::value(&rpc::TemplateListing {
                                    uri_template: &t.uri_template,
                                    name: &t.name,
                                    description: &t.description,
                                    mime_type: t.mime_type,
                                })
                            })
                            .collect(),
                    ),
                };
                page(params, field, items)
            }
            "resources/read" => {
                let uri = params
                    .get("uri")
                    .and_then(Value::as_str)
                    .ok_or_else(|| Failure::params("`uri` is required"))?;
                match mcp::read(lore, self.profile, caller, uri).await {
                    Ok(read) => {
                        let text = serde_json::to_string_pretty(&read.json).unwrap_or_default();
                        let contents = rpc::Contents { uri: read.uri, mime_type: "application/json", text };
                        Ok(rpc::value(&rpc::ReadResult { contents: [contents] }))
                    }
                    Err(engine::Error::AppDb(AppDbError::UnknownResource(_))) => {
                        let code = if modern { Code::InvalidParams } else { Code::ResourceNotFound };
                        let error = RpcError::new(code, format!("no resource at `{uri}`"));
                        Err(Failure::Rpc(error.with_data(json!({"uri": uri}))))
                    }
                    Err(err) => Err(err.into()),
                }
            }
            "tools/call" => self.call_tool(caller, key_id, params).await,
            other => Err(Failure::Rpc(RpcError::new(Code::MethodNotFound, format!("no method `{other}`")))),
        }
    }

    async fn call_tool(
        &self,
        caller: &Caller,
        key_id: Option<&str>,
        params: &Map<String, Value>,
    ) -> Result<Value, Failure> {
        let lore = self.tools();
        let name = params
            .get("name")
            .and_then(Value::as_str)
            .ok_or_else(|| Failure::params("`name` is required"))?;
        let args = params.get("arguments").cloned().unwrap_or(Value::Null);
        mcp::admit_call(lore, caller, key_id)?;
        let result = mcp::call(lore, self.profile, caller, name, args.clone()).await.and_then(tool_response);
        let (reply, outcome) = match result {
            Ok(structured) => (Ok(rpc::value(&rpc::CallResult::new(structured, false))), "ok"),
            // Not offered to this caller: a protocol error, as for any unknown tool.
            Err(engine::Error::AppDb(AppDbError::UnknownTool(tool))) => {
                let failure = Failure::Rpc(
                    RpcError::new(Code::InvalidParams, format!("no tool `{tool}`"))
                        .with_data(json!({"code": "tool_not_found"})),
                );
                (Err(failure), "tool_not_found")
            }
            // Anything the tool refused: a result the model reads and can correct.
            Err(err) => {
                let error = ApiError::from(err);
                let (status, code, message) = error.parts();
                if status.is_server_error() {
                    tracing::warn!(code, tool = name, "a tool call failed");
                }
                let body = json!({"error": {"code": code, "message": message, "details": error.details()}});
                (Ok(rpc::value(&rpc::CallResult::new(body, true))), code)
            }
        };
        mcp::audit_call(lore, self.profile, caller, name, &args, outcome).await;
        reply
    }

    async fn modern(
        &self,
        caller: &Caller,
        key_id: Option<&str>,
        id: Option<Value>,
        method: &str,
        params: Map<String, Value>,
        sse_only: bool,
    ) -> Response {
        let rpc_id = id.clone().unwrap_or(Value::Null);
        let meta = params.get("_meta").cloned().unwrap_or(Value::Null);
        let version = meta.get(META_VERSION).and_then(Value::as_str).unwrap_or_default();
        let mismatch = |text: String| {
            refuse(StatusCode::BAD_REQUEST, rpc_id.clone(), RpcError::new(Code::HeaderMismatch, text))
        };
        let sent = header_text(&self.headers, VERSION_HEADER).map(str::to_owned);
        if let Err(text) = repeats(sent, "MCP-Protocol-Version", version) {
            return mismatch(text);
        }
        if version != mcp::SESSIONLESS_VERSION {
            let mut supported = vec![mcp::SESSIONLESS_VERSION];
            supported.extend(mcp::SESSION_VERSIONS);
            let data = json!({"supported": supported, "requested": version});
            let error =
                RpcError::new(Code::UnsupportedVersion, "Unsupported protocol version").with_data(data);
            return refuse(StatusCode::BAD_REQUEST, rpc_id, error);
        }
        let Some(id) = id else {
            return StatusCode::ACCEPTED.into_response();
        };
        if meta.get(META_CAPABILITIES).is_none() {
            let text = format!("params._meta is missing the required key {META_CAPABILITIES}");
            return refuse(StatusCode::BAD_REQUEST, id, RpcError::new(Code::InvalidParams, text));
        }
        let sent = header_text(&self.headers, METHOD_HEADER).and_then(decode_header);
        if let Err(text) = repeats(sent, "Mcp-Method", method) {
            return mismatch(text);
        }
        let named = match method {
            "tools/call" => params.get("name").and_then(Value::as_str),
            "resources/read" => params.get("uri").and_then(Value::as_str),
            _ => None,
        };
        if let Some(named) = named {
            let sent = header_text(&self.headers, NAME_HEADER).and_then(decode_header);
            if let Err(text) = repeats(sent, "Mcp-Name", named) {
                return mismatch(text);
            }
        }
        let outcome = match method {
            "server/discover" => {
                let mut versions = vec![mcp::SESSIONLESS_VERSION];
                versions.extend(mcp::SESSION_VERSIONS);
                Ok(json!({"supportedVersions": versions, "capabilities": mcp::capabilities(),
                          "instructions": instructions(self.profile), "ttlMs": 3_600_000, "cacheScope": "public"}))
            }
            "subscriptions/listen" => return self.listen(caller, id, &params).await,
            "tools/list" | "resources/list" | "resources/templates/list" | "resources/read" => {
                self.method(caller, key_id, method, &params, true).await.map(|mut result| {
                    // Lists follow the caller's role, which may change at any time.
                    result["ttlMs"] = json!(0);
                    result["cacheScope"] = json!("private");
                    result
                })
            }
            "tools/call" => self.method(caller, key_id, method, &params, true).await,
            other => {
                let error = RpcError::new(Code::MethodNotFound, format!("no method `{other}`"));
                return refuse(StatusCode::NOT_FOUND, id, error);
            }
        };
        reply(id, outcome, true, sse_only)
    }

    /// `subscriptions/listen`: an event stream that first acknowledges what
    /// it will send, then carries this caller's notifications.
    async fn listen(&self, caller: &Caller, id: Value, params: &Map<String, Value>) -> Response {
        let asked = params.get("notifications").cloned().unwrap_or(Value::Null);
        let flag = |name: &str| asked.get(name).and_then(Value::as_bool).unwrap_or(false);
        let updates: Vec<String> = asked
            .get("resourceSubscriptions")
            .and_then(Value::as_array)
            .map(|uris| uris.iter().filter_map(Value::as_str).map(str::to_owned).collect())
            .unwrap_or_default();
        let filter =
            hub::Filter { tools: flag("toolsListChanged"), resources: flag("resourcesListChanged"), updates };
        let mut honoured = Map::new();
        if filter.tools {
            honoured.insert("toolsListChanged".into(), Value::Bool(true));
        }
        if filter.resources {
            honoured.insert("resourcesListChanged".into(), Value::Bool(true));
        }
        if !filter.updates.is_empty() {
            honoured.insert("resourceSubscriptions".into(), json!(filter.updates));
        }
        let mut params = Map::new();
        params.insert("_meta".into(), json!({ rpc::SUBSCRIPTION_ID: id }));
        params.insert("notifications".into(), Value::Object(honoured));
        let ack = rpc::Notification::new("notifications/subscriptions/acknowledged", params).to_value();
        match hub::listen(self.tools(), self.profile, caller, id.clone(), filter).await {
            Ok(channel) => push_stream(Some(ack), channel),
            Err(err) => reply(id, Err(err.into()), true, false),
        }
    }

    /// GET: the push channel of a session.
    async fn get(self, viewer: Option<&Viewer>) -> Response {
        let (_, sse_ok) = accepts(&self.headers);
        if !sse_ok {
            let error = RpcError::new(
                Code::InvalidRequest,
                "the push channel is an event stream: Accept must allow text/event-stream",
            );
            return refuse(StatusCode::NOT_ACCEPTABLE, Value::Null, error);
        }
        let (caller, _) = match self.caller(viewer).await {
            Ok(found) => found,
            Err(err) => return super::oauth::challenge(&self.state, self.profile.path(), err),
        };
        let session = match self.session(&caller).await {
            Ok(session) => session,
            Err(response) => return response,
        };
        if let Err(err) = sessions::touch(self.tools(), &session).await {
            return ApiError::from(err).into_response();
        }
        match hub::session_channel(self.tools(), &session, &caller) {
            Ok(channel) => push_stream(None, channel),
            Err(err) => ApiError::from(err).into_response(),
        }
    }

    /// DELETE: ends a session, when the configuration lets clients do so.
    async fn delete(self, viewer: Option<&Viewer>) -> Response {
        if !self.tools().settings.mcp.session.allow_client_delete {
            return self.not_allowed();
        }
        let (caller, _) = match self.caller(viewer).await {
            Ok(found) => found,
            Err(err) => return super::oauth::challenge(&self.state, self.profile.path(), err),
        };
        let session = match self.session(&caller).await {
            Ok(session) => session,
            Err(response) => return response,
        };
        match sessions::close(self.tools(), &session.id).await {
            Ok(_) => StatusCode::NO_CONTENT.into_response(),
            Err(err) => ApiError::from(err).into_response(),
        }
    }
}

/// An event stream of a push channel: `first` (if any), then what the hub
/// sends, with keep-alive comments; it ends when the channel closes.
fn push_stream(first: Option<Value>, channel: hub::Stream) -> Response {
    use futures::StreamExt as _;
    let rest = futures::stream::unfold(channel, |mut channel| async move {
        channel.messages.recv().await.map(|pushed| (rpc::Notification::pushed(pushed).to_value(), channel))
    });
    let events = futures::stream::iter(first).chain(rest).map(|message| {
        Ok::<_, std::convert::Infallible>(Event::default().event("message").data(message.to_string()))
    });
    let mut response = Sse::new(events).keep_alive(KeepAlive::default()).into_response();
    response.headers_mut().insert("x-accel-buffering", HeaderValue::from_static("no"));
    response
}

/// Why a method failed: a JSON-RPC error, or an engine error to convert.
pub enum Failure {
    Rpc(RpcError),
    Engine(engine::Error),
}

impl Failure {
    fn params(message: &str) -> Self {
        Failure::Rpc(RpcError::new(Code::InvalidParams, message))
    }
}

impl From<engine::Error> for Failure {
    fn from(err: engine::Error) -> Self {
        Failure::Engine(err)
    }
}

/// A reply to request `id`: JSON, or (for a client that takes only event
/// streams) the same message as one event. An engine error becomes a
/// JSON-RPC error carrying Lore's code: -32001 for a refused permission,
/// -32603 for Lore's own failure, -32602 for the rest.
fn reply(id: Value, outcome: Result<Value, Failure>, modern: bool, sse_only: bool) -> Response {
    let (status, body) = match outcome {
        Ok(mut result) => {
            if modern {
                result["resultType"] = json!("complete");
                result["_meta"] = json!({META_SERVER: {"name": "lore", "version": mcp::SURFACE_VERSION}});
            }
            (StatusCode::OK, Reply::result(id, result))
        }
        Err(Failure::Rpc(error)) => {
            let status = if error.code == Code::MethodNotFound && modern {
                StatusCode::NOT_FOUND
            } else {
                StatusCode::OK
            };
            (status, Reply::error(id, error))
        }
        Err(Failure::Engine(err)) => {
            let error = ApiError::from(err);
            let (status, code, message) = error.parts();
            let rpc = match status {
                StatusCode::FORBIDDEN => Code::PermissionDenied,
                s if s.is_server_error() => Code::Internal,
                _ => Code::InvalidParams,
            };
            let mut data = json!({"code": code});
            if let Some(details) = error.details() {
                data["details"] = details;
            }
            if status.is_server_error() {
                tracing::warn!(code, error = ?error, "a tool-server request failed");
            }
            // A JSON-RPC error rides on 200, so clients read it as one; only
            // the rate limit keeps its 429 (clients back off on it).
            let status = if status == StatusCode::TOO_MANY_REQUESTS { status } else { StatusCode::OK };
            (status, Reply::error(id, RpcError::new(rpc, message).with_data(data)))
        }
    };
    let body = body.to_value();
    if sse_only {
        let event = Event::default().event("message").data(body.to_string());
        let mut response =
            Sse::new(futures::stream::iter([Ok::<_, std::convert::Infallible>(event)])).into_response();
        *response.status_mut() = status;
        return response;
    }
    json_response(status, body)
}

/// A tool call's result as its structured content: an object (a list or a
/// value is wrapped as `{"result": ...}`, since the session-era revisions
/// want an object). An operation's, as `POST /operation` answers it.
fn tool_response(output: mcp::Output) -> Result<Value, engine::Error> {
    use engine::resources::ToolOutput;
    let internal = |err: serde_json::Error| engine::Error::Internal(err.to_string());
    let value = match output {
        mcp::Output::Operation(outcome) => app::wire::operation_response(outcome)?,
        mcp::Output::Json(value) | mcp::Output::Custom(ToolOutput::Json(value)) => value,
        mcp::Output::Custom(ToolOutput::Answer(answer)) => {
            let answered = app::wire::AnswerResponse::from(*answer).rated_by_tool("rate_answer");
            serde_json::to_value(answered).map_err(internal)?
        }
        mcp::Output::Custom(ToolOutput::Rated(rated)) => {
            serde_json::to_value(app::wire::FeedbackResponse::from(rated)).map_err(internal)?
        }
        mcp::Output::Custom(ToolOutput::Retrieved(traced)) => {
            serde_json::to_value(app::wire::RetrieveResponse::from(traced)).map_err(internal)?
        }
    };
    Ok(match value {
        Value::Object(_) => value,
        other => json!({ "result": other }),
    })
}

fn tool_listing(tool: &mcp::Tool) -> Value {
    rpc::value(&rpc::ToolListing {
        name: &tool.name,
        description: &tool.description,
        input_schema: &tool.input_schema,
        output_schema: &tool.output_schema,
        annotations: rpc::Annotations { read_only_hint: tool.read_only, destructive_hint: tool.destructive },
    })
}

/// One page of a list: `cursor` is the opaque offset the last page gave.
pub fn page(params: &Map<String, Value>, field: &str, items: Vec<Value>) -> Result<Value, Failure> {
    let offset = match params.get("cursor").and_then(Value::as_str) {
        None => 0,
        Some(cursor) => base64::engine::general_purpose::URL_SAFE_NO_PAD
            .decode(cursor)
            .ok()
            .and_then(|bytes| String::from_utf8(bytes).ok())
            .and_then(|text| text.strip_prefix("o:").and_then(|n| n.parse::<usize>().ok()))
            .filter(|offset| *offset <= items.len())
            .ok_or_else(|| Failure::params("`cursor` is not a cursor this list returned"))?,
    };
    let end = (offset + PAGE).min(items.len());
    let mut result = json!({ field: items[offset..end].to_vec() });
    if end < items.len() {
        result["nextCursor"] =
            json!(base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(format!("o:{end}")));
    }
    Ok(result)
}

fn instructions(profile: Profile) -> &'static str {
    match profile {
        Profile::Application => "Lore answers questions from its indexed content (the answer and retrieve tools) and serves the application database's exported tables (get_, search_, create_, update_, delete_ tools).",
        Profile::Operations => "Lore's operations API: each tool is an operation of POST /operation, with the same arguments and permission checks.",
    }
}
