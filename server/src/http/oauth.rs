//! The tool server's OAuth 2.1 surface (the flows are `engine::oauth`'s):
//! the protected resource metadata (RFC 9728) and the authorization
//! server's (RFC 8414), dynamic registration, the authorization page with
//! its consent form, the token and revocation endpoints, and the
//! `WWW-Authenticate` challenge the tool server answers a request without
//! valid credentials with.

use axum::extract::rejection::FormRejection;
use axum::extract::{ConnectInfo, Form, Query, State};
use axum::http::{header, HeaderMap, HeaderValue, Method, StatusCode};
use axum::middleware::Next;
use axum::response::{Html, IntoResponse, Redirect, Response};
use axum::{Extension, Json};
use engine::auth::Viewer;
use engine::keys::KeyError;
use engine::oauth::flow::{self, AuthorizeRequest, Checked, Refusal, Registration, TokenRequest};
use engine::oauth::{self, OAuthCode, OAuthError, PersonRefused};
use serde::Deserialize;
use serde_json::json;

use super::error::ApiError;
use crate::AppState;

/// Where the protected resource metadata of the resource at `path` is
/// (RFC 9728 §3.1: the well-known prefix before the resource's path).
pub fn metadata_url(state: &AppState, path: &str) -> String {
    format!("{}/.well-known/oauth-protected-resource{path}", oauth::issuer(&state.lore))
}

/// A refused request to the tool server at `path`, with the challenge that
/// tells an OAuth client where to sign in: 401 for missing or invalid
/// credentials, 403 for a scope they lack (RFC 6750 §3).
pub fn challenge(state: &AppState, path: &str, err: ApiError) -> Response {
    let metadata = metadata_url(state, path);
    let needed = oauth::scope_for(path).key();
    let value = match &err {
        ApiError::Engine(engine::Error::Key(KeyError::Missing)) => {
            format!("Bearer resource_metadata=\"{metadata}\", scope=\"{needed}\"")
        }
        ApiError::Engine(engine::Error::Key(
            KeyError::InvalidToken(_) | KeyError::Unknown | KeyError::Revoked,
        )) => format!("Bearer error=\"invalid_token\", resource_metadata=\"{metadata}\", scope=\"{needed}\""),
        ApiError::Engine(engine::Error::Key(KeyError::Scope(scope))) => {
            format!(
                "Bearer error=\"insufficient_scope\", scope=\"{scope}\", resource_metadata=\"{metadata}\""
            )
        }
        _ => return err.into_response(),
    };
    let mut response = err.into_response();
    if let Ok(value) = HeaderValue::from_str(&value) {
        response.headers_mut().insert(header::WWW_AUTHENTICATE, value);
    }
    response
}

/// `GET /.well-known/oauth-protected-resource/mcp` (and `…/operation/mcp`):
/// each tool server is a resource of its own, with its own scope.
pub async fn protected_resource(State(state): State<AppState>, uri: axum::http::Uri) -> Response {
    let path = uri.path().trim_start_matches("/.well-known/oauth-protected-resource");
    if !path.is_empty() && !oauth::RESOURCE_PATHS.contains(&path) {
        return ApiError::Engine(engine::appdb::AppDbError::UnknownResource(path.to_owned()).into())
            .into_response();
    }
    // The bare well-known URL describes the application's tool server,
    // the one an assistant is given.
    let path = if path.is_empty() { oauth::RESOURCE_PATHS[0] } else { path };
    let issuer = oauth::issuer(&state.lore);
    let authorization_server = oauth::external::issuer(&state.lore).unwrap_or_else(|| issuer.clone());
    Json(json!({
        "resource": oauth::resource(&state.lore, path),
        "authorization_servers": [authorization_server],
        "scopes_supported": [oauth::scope_for(path).key()],
        "bearer_methods_supported": ["header"],
        "resource_name": "Lore",
        "resource_documentation": format!("{issuer}/openapi.json"),
    }))
    .into_response()
}

/// Lore's own authorization server answers only when no external one is
/// configured (`auth.mcp.issuer`): otherwise its documents and endpoints
/// are not found, and clients follow the protected resource metadata to
/// the external issuer.
pub async fn own_server_only(
    State(state): State<AppState>,
    request: axum::extract::Request,
    next: Next,
) -> Response {
    match oauth::external::issuer(&state.lore) {
        None => next.run(request).await,
        Some(issuer) => {
            let body = json!({
                "error": "not_found",
                "error_description": format!("Lore's authorization server is off: assistants sign in at {issuer}"),
            });
            (StatusCode::NOT_FOUND, Json(body)).into_response()
        }
    }
}

/// `GET /.well-known/oauth-authorization-server`.
pub async fn authorization_server(State(state): State<AppState>) -> Response {
    let issuer = oauth::issuer(&state.lore);
    Json(json!({
        "issuer": issuer,
        "authorization_endpoint": format!("{issuer}/oauth/authorize"),
        "token_endpoint": format!("{issuer}/oauth/token"),
        "registration_endpoint": format!("{issuer}/oauth/register"),
        "revocation_endpoint": format!("{issuer}/oauth/revoke"),
        "scopes_supported": oauth::SCOPES,
        "response_types_supported": ["code"],
        "response_modes_supported": ["query"],
        "grant_types_supported": ["authorization_code", "refresh_token"],
        "code_challenge_methods_supported": ["S256"],
        "token_endpoint_auth_methods_supported": ["none"],
        "revocation_endpoint_auth_methods_supported": ["none"],
        "authorization_response_iss_parameter_supported": true,
        "client_id_metadata_document_supported": true,
    }))
    .into_response()
}

/// The RFCs' error body: `{"error", "error_description"}`, 401 for an
/// unknown client, 503 when Lore is busy, 500 for its own failures, 400
/// otherwise.
fn oauth_error(err: OAuthError) -> Response {
    let status = match err.code {
        OAuthCode::InvalidClient => StatusCode::UNAUTHORIZED,
        OAuthCode::ServerError => StatusCode::INTERNAL_SERVER_ERROR,
        OAuthCode::TemporarilyUnavailable => StatusCode::SERVICE_UNAVAILABLE,
        _ => StatusCode::BAD_REQUEST,
    };
    let body = json!({"error": err.code.key(), "error_description": err.description});
    (status, [(header::CACHE_CONTROL, "no-store")], Json(body)).into_response()
}

/// What a client sends to register (RFC 7591 §2), the fields Lore reads.
#[derive(Deserialize)]
pub struct RegistrationBody {
    #[serde(default)]
    redirect_uris: Vec<String>,
    client_name: Option<String>,
    logo_uri: Option<String>,
    #[serde(default)]
    grant_types: Vec<String>,
    #[serde(default)]
    response_types: Vec<String>,
    token_endpoint_auth_method: Option<String>,
}

/// `POST /oauth/register` (RFC 7591), limited per peer address.
pub async fn register(
    State(state): State<AppState>,
    ConnectInfo(peer): ConnectInfo<std::net::SocketAddr>,
    body: axum::body::Bytes,
) -> Response {
    let body: RegistrationBody = match serde_json::from_slice(&body) {
        Ok(body) => body,
        Err(err) => {
            return oauth_error(OAuthError::new(
                OAuthCode::InvalidClientMetadata,
                format!("the registration is not the JSON RFC 7591 describes: {err}"),
            ))
        }
    };
    let asked = Registration {
        redirect_uris: body.redirect_uris,
        client_name: body.client_name,
        logo_uri: body.logo_uri,
        grant_types: body.grant_types,
        response_types: body.response_types,
        token_endpoint_auth_method: body.token_endpoint_auth_method,
    };
    match flow::register(&state.lore, asked, &peer.ip().to_string()).await {
        Ok(client) => {
            let mut registered = json!({
                "client_id": client.id,
                "client_id_issued_at": client.created_at.timestamp(),
                "client_name": client.name,
                "redirect_uris": client.redirect_uris,
                "grant_types": ["authorization_code", "refresh_token"],
                "response_types": ["code"],
                "token_endpoint_auth_method": "none",
            });
            // Absent, not null: clients validate it as a URL when present.
            if let Some(logo) = client.logo_uri {
                registered["logo_uri"] = json!(logo);
            }
            (StatusCode::CREATED, [(header::CACHE_CONTROL, "no-store")], Json(registered)).into_response()
        }
        Err(err) => oauth_error(err),
    }
}

/// An authorization request's query (or the consent form's fields).
#[derive(Clone, Debug, Default, Deserialize)]
pub struct AuthorizeQuery {
    response_type: Option<String>,
    client_id: Option<String>,
    redirect_uri: Option<String>,
    scope: Option<String>,
    state: Option<String>,
    code_challenge: Option<String>,
    code_challenge_method: Option<String>,
    resource: Option<String>,
}

impl AuthorizeQuery {
    fn request(&self) -> AuthorizeRequest {
        AuthorizeRequest {
            response_type: self.response_type.clone(),
            client_id: self.client_id.clone(),
            redirect_uri: self.redirect_uri.clone(),
            scope: self.scope.clone(),
            state: self.state.clone(),
            code_challenge: self.code_challenge.clone(),
            code_challenge_method: self.code_challenge_method.clone(),
            resource: self.resource.clone(),
        }
    }
}

/// `GET /oauth/authorize`: checks the request, signs the person in (the
/// console's sign-in, which comes back here), and asks for consent.
pub async fn authorize(
    State(state): State<AppState>,
    viewer: Option<Extension<Viewer>>,
    uri: axum::http::Uri,
    Query(query): Query<AuthorizeQuery>,
) -> Response {
    let checked = match flow::check(&state.lore, &query.request()).await {
        Ok(checked) => checked,
        Err(refusal) => return refusal_response(refusal),
    };
    let Some(Extension(viewer)) = viewer else {
        let here = uri.path_and_query().map(|pq| pq.as_str()).unwrap_or("/oauth/authorize");
        let next = url::form_urlencoded::byte_serialize(here.as_bytes()).collect::<String>();
        return Redirect::to(&format!("/signin?next={next}")).into_response();
    };
    match oauth::person(&state.lore, &viewer).await {
        Ok(subject) => framed_out(Html(consent_page(&checked, &subject, &query)).into_response()),
        Err(PersonRefused::Unmapped(why)) => {
            page(StatusCode::FORBIDDEN, "Lore cannot sign you in here", &why)
        }
        Err(PersonRefused::Failed(err)) => ApiError::from(err).into_response(),
    }
}

/// The consent form: the request again, what the person allows, and their
/// decision.
struct ConsentForm {
    query: AuthorizeQuery,
    /// `allow` or `deny`.
    decision: String,
    /// The scopes allowed (one `granted` field per ticked box).
    granted: Vec<String>,
}

/// `POST /oauth/authorize`: the person's decision. Checked again from the
/// start: the form is the person's browser's, not Lore's memory.
pub async fn decide(
    State(state): State<AppState>,
    viewer: Option<Extension<Viewer>>,
    form: Result<Form<Vec<(String, String)>>, FormRejection>,
) -> Response {
    let form = match form.ok().and_then(|Form(pairs)| consent_form(pairs)) {
        Some(form) => form,
        None => {
            return page(StatusCode::BAD_REQUEST, "Not a consent form", "Start again from your assistant.")
        }
    };
    let checked = match flow::check(&state.lore, &form.query.request()).await {
        Ok(checked) => checked,
        Err(refusal) => return refusal_response(refusal),
    };
    let Some(Extension(viewer)) = viewer else {
        return page(
            StatusCode::UNAUTHORIZED,
            "Signed out",
            "Sign in to Lore, then start again from your assistant.",
        );
    };
    let subject = match oauth::person(&state.lore, &viewer).await {
        Ok(subject) => subject,
        Err(PersonRefused::Unmapped(why)) => {
            return page(StatusCode::FORBIDDEN, "Lore cannot sign you in here", &why)
        }
        Err(PersonRefused::Failed(err)) => return ApiError::from(err).into_response(),
    };
    let granted = if form.decision == "allow" { form.granted } else { Vec::new() };
    match flow::consent(&state.lore, &checked, &subject, &granted).await {
        Ok(target) => Redirect::to(&target).into_response(),
        Err(err) => oauth_error(err),
    }
}

/// The form's fields (a scope checkbox repeats `granted`).
fn consent_form(pairs: Vec<(String, String)>) -> Option<ConsentForm> {
    let mut query = AuthorizeQuery::default();
    let mut decision = None;
    let mut granted = Vec::new();
    for (name, value) in pairs {
        match name.as_str() {
            "response_type" => query.response_type = Some(value),
            "client_id" => query.client_id = Some(value),
            "redirect_uri" => query.redirect_uri = Some(value),
            "scope" => query.scope = Some(value),
            "state" => query.state = Some(value),
            "code_challenge" => query.code_challenge = Some(value),
            "code_challenge_method" => query.code_challenge_method = Some(value),
            "resource" => query.resource = Some(value),
            "decision" => decision = Some(value),
            "granted" => granted.push(value),
            _ => {}
        }
    }
    Some(ConsentForm { query, decision: decision?, granted })
}

/// A refused authorization request is shown to the person, never sent on
/// by itself: a client anyone may register would otherwise make Lore a
/// redirector to any address (RFC 9700 §4.11.2). When the client may hear
/// of it, the page links back to it with the error.
fn refusal_response(refusal: Refusal) -> Response {
    match refusal {
        Refusal::Redirect { error, back } => {
            let body = format!(
                "<h1>This sign-in request is not valid</h1><p class=\"why\">{} ({})</p>\
                 <p><a class=\"back\" href=\"{}\">Return to the application</a></p>",
                escape(&error.description),
                error.code.key(),
                escape(&back)
            );
            framed_out((StatusCode::BAD_REQUEST, Html(shell("Not valid", &body))).into_response())
        }
        Refusal::Page(err) => page(
            StatusCode::BAD_REQUEST,
            "This sign-in request is not valid",
            &format!("{} ({})", err.description, err.code.key()),
        ),
    }
}

/// A page of the sign-in flow: never in a frame (a click on "Allow" must
/// be the person's own), never cached.
fn framed_out(mut response: Response) -> Response {
    let headers = response.headers_mut();
    headers.insert(header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
    headers.insert(header::CONTENT_SECURITY_POLICY, HeaderValue::from_static("frame-ancestors 'none'"));
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    response
}

/// Text for HTML.
fn escape(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
        .replace('\'', "&#39;")
}

fn shell(title: &str, body: &str) -> String {
    format!(
        "<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\"><meta name=\"viewport\" content=\"width=device-width\">\
         <title>{title} · Lore</title><style>body{{font:16px system-ui,sans-serif;max-width:34rem;margin:3rem auto;padding:0 1rem;color:#1d2430}}\
         h1{{font-size:1.4rem}}.scopes label{{display:block;margin:.4rem 0}}button{{font:inherit;padding:.5rem 1.2rem;margin-right:.6rem}}\
         .host{{font-family:monospace}}</style></head><body>{body}</body></html>",
        title = escape(title)
    )
}

fn page(status: StatusCode, title: &str, text: &str) -> Response {
    let body = format!("<h1>{}</h1><p class=\"why\">{}</p>", escape(title), escape(text));
    framed_out((status, Html(shell(title, &body))).into_response())
}

/// What each scope lets an assistant do, for the consent page.
fn scope_meaning(scope: &str) -> &'static str {
    match scope {
        "mcp" => "use Lore's tools and resources as you",
        "answer" => "ask Lore questions as you",
        "retrieve" => "search Lore's knowledge base as you",
        "operations" => "run application-database operations as you",
        _ => "",
    }
}

fn consent_page(checked: &Checked, subject: &oauth::Subject, query: &AuthorizeQuery) -> String {
    let host = url::Url::parse(&checked.redirect_uri)
        .ok()
        .and_then(|u| u.host_str().map(str::to_owned).or_else(|| Some(u.scheme().to_owned())))
        .unwrap_or_default();
    let hidden: String = [
        ("response_type", &query.response_type),
        ("client_id", &query.client_id),
        ("redirect_uri", &query.redirect_uri),
        ("scope", &query.scope),
        ("state", &query.state),
        ("code_challenge", &query.code_challenge),
        ("code_challenge_method", &query.code_challenge_method),
        ("resource", &query.resource),
    ]
    .iter()
    .filter_map(|(name, value)| {
        value.as_ref().map(|v| format!("<input type=\"hidden\" name=\"{name}\" value=\"{}\">", escape(v)))
    })
    .collect();
    let scopes: String = checked
        .scopes
        .iter()
        .map(|scope| {
            format!(
                "<label><input type=\"checkbox\" name=\"granted\" value=\"{s}\" checked> <b>{s}</b>: {}</label>",
                scope_meaning(scope),
                s = escape(scope)
            )
        })
        .collect();
    // A client named by its metadata document is known by that address:
    // the page names it beside the name the document gives.
    let document = if oauth::documents::is_document_id(&checked.client.id) {
        format!(
            "<p class=\"document\">It describes itself at <span class=\"host\">{}</span>.</p>",
            escape(&checked.client.id)
        )
    } else {
        String::new()
    };
    let body = format!(
        "<h1>Allow {client} to use Lore?</h1>\
         <p>It will act as <b>{who}</b> at <span class=\"host\">{resource}</span>, and you will be sent back to \
         <span class=\"host\">{host}</span> (<span class=\"host\">{redirect}</span>).</p>\
         {document}<p class=\"note\">The name is the one the application gave itself: allow only if you started this \
         from it and you know the address it sends you back to.</p>\
         <form method=\"post\" action=\"/oauth/authorize\">{hidden}<div class=\"scopes\">{scopes}</div>\
         <p><button type=\"submit\" name=\"decision\" value=\"allow\">Allow</button>\
         <button type=\"submit\" name=\"decision\" value=\"deny\">Deny</button></p></form>",
        client = escape(&checked.client.name),
        who = escape(&subject.label()),
        resource = escape(&checked.resource),
        redirect = escape(&checked.redirect_uri),
        host = escape(&host),
        document = document,
    );
    shell("Allow access", &body)
}

/// The token endpoint's form (RFC 6749 §4.1.3 and §6).
#[derive(Deserialize)]
pub struct TokenForm {
    grant_type: Option<String>,
    code: Option<String>,
    redirect_uri: Option<String>,
    client_id: Option<String>,
    code_verifier: Option<String>,
    refresh_token: Option<String>,
    resource: Option<String>,
    scope: Option<String>,
}

/// `POST /oauth/token`.
pub async fn token(State(state): State<AppState>, form: Result<Form<TokenForm>, FormRejection>) -> Response {
    let Ok(Form(form)) = form else {
        return oauth_error(OAuthError::new(
            OAuthCode::InvalidRequest,
            "send the request as application/x-www-form-urlencoded",
        ));
    };
    let missing =
        |what: &str| oauth_error(OAuthError::new(OAuthCode::InvalidRequest, format!("{what} is missing")));
    let Some(client_id) = form.client_id else { return missing("client_id") };
    let asked = match form.grant_type.as_deref() {
        Some("authorization_code") => {
            let Some(code) = form.code else { return missing("code") };
            TokenRequest::Code {
                code,
                client_id,
                redirect_uri: form.redirect_uri,
                code_verifier: form.code_verifier,
                resource: form.resource,
            }
        }
        Some("refresh_token") => {
            let Some(refresh_token) = form.refresh_token else { return missing("refresh_token") };
            TokenRequest::Refresh { refresh_token, client_id, resource: form.resource, scope: form.scope }
        }
        Some(other) => {
            return oauth_error(OAuthError::new(
                OAuthCode::UnsupportedGrantType,
                format!("grant_type `{other}` is not offered (authorization_code, refresh_token)"),
            ))
        }
        None => return missing("grant_type"),
    };
    match flow::token(&state.lore, asked).await {
        Ok(issued) => (
            [(header::CACHE_CONTROL, "no-store"), (header::PRAGMA, "no-cache")],
            Json(json!({
                "access_token": issued.access_token,
                "token_type": "Bearer",
                "expires_in": issued.expires_in,
                "refresh_token": issued.refresh_token,
                "scope": issued.scopes.join(" "),
            })),
        )
            .into_response(),
        Err(err) => oauth_error(err),
    }
}

#[derive(Deserialize)]
pub struct RevokeForm {
    token: Option<String>,
    client_id: Option<String>,
}

/// `POST /oauth/revoke` (RFC 7009): 200 whether or not the token was known.
pub async fn revoke(
    State(state): State<AppState>,
    form: Result<Form<RevokeForm>, FormRejection>,
) -> Response {
    let Ok(Form(RevokeForm { token: Some(token), client_id: Some(client_id) })) = form else {
        return oauth_error(OAuthError::new(OAuthCode::InvalidRequest, "token and client_id are required"));
    };
    match flow::revoke(&state.lore, &token, &client_id).await {
        Ok(()) => StatusCode::OK.into_response(),
        Err(err) => oauth_error(err),
    }
}

/// Lets a client in a browser page read the metadata and call the
/// registration, token and revocation endpoints from its own origin: they
/// take no cookie, so any origin may (answers preflights itself).
pub async fn open_cors(request: axum::extract::Request, next: Next) -> Response {
    let preflight = request.method() == Method::OPTIONS;
    let mut response =
        if preflight { StatusCode::NO_CONTENT.into_response() } else { next.run(request).await };
    let headers: &mut HeaderMap = response.headers_mut();
    headers.insert(header::ACCESS_CONTROL_ALLOW_ORIGIN, HeaderValue::from_static("*"));
    if preflight {
        headers.insert(header::ACCESS_CONTROL_ALLOW_METHODS, HeaderValue::from_static("GET, POST, OPTIONS"));
        headers.insert(
            header::ACCESS_CONTROL_ALLOW_HEADERS,
            HeaderValue::from_static("content-type, authorization, mcp-protocol-version"),
        );
        headers.insert(header::ACCESS_CONTROL_MAX_AGE, HeaderValue::from_static("600"));
    }
    response
}
