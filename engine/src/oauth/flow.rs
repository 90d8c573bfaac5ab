//! The authorization server's steps, in the order a client takes them:
//! [`register`] (RFC 7591), [`check`] an authorization request and, once the
//! person agreed, [`consent`] (a code); [`token`] to exchange the code or
//! a refresh token; [`revoke`] (RFC 7009).

use chrono::{Duration, Utc};
use entity::{oauth_client, oauth_grant, oauth_token};
use sea_orm::sea_query::Expr;
use sea_orm::{ColumnTrait, EntityTrait, QueryFilter, Set};
use serde_json::json;
use sha2::{Digest, Sha256};

use super::{
    known_resource, scopes_of, subject_of, OAuthCode, OAuthError, Subject, ACCESS_PREFIX, REFRESH_PREFIX,
};
use crate::audit::Actor;
use crate::Lore;

pub(super) type Outcome<T> = std::result::Result<T, OAuthError>;

pub(super) fn refused(code: OAuthCode, description: impl Into<String>) -> OAuthError {
    OAuthError::new(code, description)
}

/// How long an authorization code lives (RFC 6749 §4.1.2: at most ten minutes).
const CODE_MINUTES: i64 = 10;

/// The most redirect URIs one client registers.
const MAX_REDIRECT_URIS: usize = 10;

/// A client as registered.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Client {
    pub id: String,
    pub name: String,
    pub redirect_uris: Vec<String>,
    pub logo_uri: Option<String>,
    pub created_at: chrono::DateTime<Utc>,
}

impl Client {
    pub(super) fn decode(row: oauth_client::Model) -> Self {
        Client {
            redirect_uris: serde_json::from_value(row.redirect_uris).unwrap_or_default(),
            id: row.id,
            name: row.name,
            logo_uri: row.logo_uri,
            created_at: row.created_at,
        }
    }
}

/// What a client asks to be registered as (RFC 7591 §2): only what Lore
/// uses. Every client is public (`token_endpoint_auth_method` `none`) and
/// uses the authorization code and refresh token grants.
#[derive(Clone, Debug, Default)]
pub struct Registration {
    pub redirect_uris: Vec<String>,
    pub client_name: Option<String>,
    pub logo_uri: Option<String>,
    pub grant_types: Vec<String>,
    pub response_types: Vec<String>,
    pub token_endpoint_auth_method: Option<String>,
}

/// Registers a public client (RFC 7591), within
/// `auth.mcp.registrations_per_minute` for each `requester` (the peer's
/// address). Whatever `token_endpoint_auth_method` it asks for, it is
/// registered as `none` (§3.2.1 lets the server replace what it does not
/// offer; the response says so): clients such as the Python SDK ask for a
/// secret by default and work as public clients.
pub async fn register(lore: &Lore, asked: Registration, requester: &str) -> Outcome<Client> {
    let registered = register_checked(lore, asked, requester).await;
    if let Err(err) = &registered {
        record_refusal(lore, "register", None, err).await;
    }
    registered
}

async fn register_checked(lore: &Lore, asked: Registration, requester: &str) -> Outcome<Client> {
    let bucket = format!("oauth:register:{requester}");
    if !lore.admit(&bucket, lore.settings.auth.mcp.registrations_per_minute) {
        return Err(refused(
            OAuthCode::TemporarilyUnavailable,
            "too many registrations; try again in a minute",
        ));
    }
    let (name, logo_uri) = checked_metadata(&asked, "An MCP client")?;
    let now = Utc::now();
    let row = oauth_client::ActiveModel {
        id: Set(crate::keys::random_key("lore_oc_")),
        name: Set(name),
        redirect_uris: Set(json!(asked.redirect_uris)),
        logo_uri: Set(logo_uri),
        registration: Set("dynamic".to_owned()),
        created_at: Set(now),
        refresh_after: Set(None),
    };
    let txn = crate::store::begin_write(&lore.db).await.map_err(crate::Error::from)?;
    let row = sea_orm::ActiveModelTrait::insert(row, &txn).await?;
    crate::audit::record(
        &txn,
        &Actor::System,
        "oauth.client_registered",
        Some(&row.id),
        json!({"name": row.name, "redirect_uris": row.redirect_uris}),
    )
    .await
    .map_err(crate::Error::from)?;
    txn.commit().await?;
    Ok(Client::decode(row))
}

/// What a client says of itself, registering or in its metadata document,
/// checked as Lore can serve it: 1 to [`MAX_REDIRECT_URIS`] redirect URIs
/// a client may have, only the grants and response type Lore offers, a
/// name of at most 200 characters (`unnamed` when it gives none) and an
/// `https` logo. Its name and logo.
pub(super) fn checked_metadata(asked: &Registration, unnamed: &str) -> Outcome<(String, Option<String>)> {
    if asked.redirect_uris.is_empty() || asked.redirect_uris.len() > MAX_REDIRECT_URIS {
        return Err(refused(
            OAuthCode::InvalidRedirectUri,
            format!("register 1 to {MAX_REDIRECT_URIS} redirect_uris"),
        ));
    }
    for uri in &asked.redirect_uris {
        check_redirect_uri(uri)?;
    }
    let offered = ["authorization_code", "refresh_token"];
    if let Some(grant) = asked.grant_types.iter().find(|g| !offered.contains(&g.as_str())) {
        return Err(refused(
            OAuthCode::InvalidClientMetadata,
            format!("grant type `{grant}` is not offered"),
        ));
    }
    if let Some(kind) = asked.response_types.iter().find(|r| r.as_str() != "code") {
        return Err(refused(
            OAuthCode::InvalidClientMetadata,
            format!("response type `{kind}` is not offered"),
        ));
    }
    let name = asked.client_name.as_deref().map(str::trim).filter(|n| !n.is_empty()).unwrap_or(unnamed);
    if name.chars().count() > 200 {
        return Err(refused(OAuthCode::InvalidClientMetadata, "client_name is longer than 200 characters"));
    }
    let logo_uri = match &asked.logo_uri {
        Some(logo) if url::Url::parse(logo).is_ok_and(|u| u.scheme() == "https") && logo.len() <= 2_000 => {
            Some(logo.clone())
        }
        Some(_) => return Err(refused(OAuthCode::InvalidClientMetadata, "logo_uri must be an https URL")),
        None => None,
    };
    Ok((name.to_owned(), logo_uri))
}

/// A redirect URI a client may register: `https`, `http` on a loopback
/// address (RFC 8252 §7.3), or an app's private-use scheme (§7.1); never
/// with a fragment, never a scheme a browser runs.
pub fn check_redirect_uri(raw: &str) -> Outcome<()> {
    let bad = |why: &str| refused(OAuthCode::InvalidRedirectUri, format!("redirect URI `{raw}`: {why}"));
    if raw.len() > 2_000 {
        return Err(refused(OAuthCode::InvalidRedirectUri, "a redirect URI is longer than 2,000 characters"));
    }
    let url = url::Url::parse(raw).map_err(|_| bad("not an absolute URL"))?;
    if url.fragment().is_some() {
        return Err(bad("a redirect URI has no fragment"));
    }
    match url.scheme() {
        "https" => Ok(()),
        "http" if is_loopback(&url) => Ok(()),
        "http" => Err(bad("plain http only to a loopback address (127.0.0.1, [::1], localhost)")),
        "javascript" | "data" | "file" | "vbscript" | "about" | "blob" => {
            Err(bad("not a scheme to redirect to"))
        }
        _ => Ok(()),
    }
}

fn is_loopback(url: &url::Url) -> bool {
    match url.host() {
        Some(url::Host::Ipv4(ip)) => ip.is_loopback(),
        Some(url::Host::Ipv6(ip)) => ip.is_loopback(),
        Some(url::Host::Domain(name)) => name.eq_ignore_ascii_case("localhost"),
        None => false,
    }
}

/// Whether `given` is one of `registered`: exactly, or for a loopback
/// `http` URI, with any port (RFC 8252 §7.3: a native app listens where it
/// can).
pub fn redirect_matches(registered: &[String], given: &str) -> bool {
    registered.iter().any(|known| {
        if known == given {
            return true;
        }
        let (Ok(mut known), Ok(mut given)) = (url::Url::parse(known), url::Url::parse(given)) else {
            return false;
        };
        if known.scheme() != "http" || !is_loopback(&known) {
            return false;
        }
        // Setting the port cannot fail on an http URL with a host.
        let _ = known.set_port(None);
        let _ = given.set_port(None);
        known == given
    })
}

/// The client `client_id`: registered, or described by the metadata
/// document at that address (read again when `current` is asked for and
/// what was read before has gone stale).
async fn client(lore: &Lore, client_id: &str, current: bool) -> Outcome<Client> {
    if super::documents::is_document_id(client_id) {
        return super::documents::resolve(lore, client_id, current).await;
    }
    oauth_client::Entity::find_by_id(client_id.to_owned())
        .one(&lore.db)
        .await?
        .map(Client::decode)
        .ok_or_else(|| refused(OAuthCode::InvalidClient, "this client is not registered with Lore"))
}

/// An authorization request as the client sent it (RFC 6749 §4.1.1 with
/// PKCE and `resource`).
#[derive(Clone, Debug, Default)]
pub struct AuthorizeRequest {
    pub response_type: Option<String>,
    pub client_id: Option<String>,
    pub redirect_uri: Option<String>,
    pub scope: Option<String>,
    pub state: Option<String>,
    pub code_challenge: Option<String>,
    pub code_challenge_method: Option<String>,
    pub resource: Option<String>,
}

/// An authorization request that checked out: what the consent page shows.
#[derive(Clone, Debug)]
pub struct Checked {
    pub client: Client,
    pub redirect_uri: String,
    pub scopes: Vec<String>,
    pub resource: String,
    pub code_challenge: String,
    pub state: Option<String>,
}

/// Why an authorization request is refused (RFC 6749 §4.1.2.1).
#[derive(Debug)]
pub enum Refusal {
    /// The client or its redirect URI cannot be trusted with a redirect:
    /// the person is told, and the browser goes nowhere.
    Page(OAuthError),
    /// The client may hear of it: `back` is its redirect URI with the error
    /// (and `state` and `iss`), for the person to follow.
    Redirect { error: OAuthError, back: String },
}

/// Checks an authorization request before anyone is asked.
pub async fn check(lore: &Lore, asked: &AuthorizeRequest) -> std::result::Result<Checked, Refusal> {
    let checked = check_request(lore, asked).await;
    if let Err(Refusal::Page(error) | Refusal::Redirect { error, .. }) = &checked {
        record_refusal(lore, "authorize", asked.client_id.as_deref(), error).await;
    }
    checked
}

async fn check_request(lore: &Lore, asked: &AuthorizeRequest) -> std::result::Result<Checked, Refusal> {
    let page = |code, why: &str| Refusal::Page(refused(code, why));
    let client_id =
        asked.client_id.as_deref().ok_or_else(|| page(OAuthCode::InvalidRequest, "client_id is missing"))?;
    let client = client(lore, client_id, true).await.map_err(Refusal::Page)?;
    let redirect_uri = match &asked.redirect_uri {
        Some(given) if redirect_matches(&client.redirect_uris, given) => given.clone(),
        Some(_) => {
            return Err(page(OAuthCode::InvalidRequest, "the redirect URI is not one the client registered"))
        }
        None if client.redirect_uris.len() == 1 => client.redirect_uris[0].clone(),
        None => return Err(page(OAuthCode::InvalidRequest, "redirect_uri is missing")),
    };
    // From here on, the client hears of what is wrong.
    let back = |code: OAuthCode, why: &str| {
        let error = refused(code, why);
        let back = error_redirect(lore, &redirect_uri, asked.state.as_deref(), &error);
        Refusal::Redirect { error, back }
    };
    if asked.response_type.as_deref() != Some("code") {
        return Err(back(OAuthCode::UnsupportedResponseType, "response_type must be `code`"));
    }
    let code_challenge = match (asked.code_challenge.as_deref(), asked.code_challenge_method.as_deref()) {
        (None, _) => {
            return Err(back(OAuthCode::InvalidRequest, "PKCE is required: send code_challenge (S256)"))
        }
        (Some(_), method) if method != Some("S256") => {
            return Err(back(OAuthCode::InvalidRequest, "code_challenge_method must be S256"))
        }
        (Some(challenge), _) if !is_pkce_value(challenge, 43..=43) => {
            return Err(back(OAuthCode::InvalidRequest, "code_challenge is not an S256 challenge"))
        }
        (Some(challenge), _) => challenge.to_owned(),
    };
    let resource = match asked.resource.as_deref() {
        None => return Err(back(OAuthCode::InvalidTarget, "resource is required: the tool server's URL")),
        Some(given) => known_resource(lore, given)
            .ok_or_else(|| back(OAuthCode::InvalidTarget, "resource is not one of Lore's tool servers"))?,
    };
    let needed = super::scope_for(resource.trim_start_matches(&super::issuer(lore))).key();
    let scopes =
        parse_scopes(asked.scope.as_deref(), needed).map_err(|why| back(OAuthCode::InvalidScope, &why))?;
    Ok(Checked { client, redirect_uri, scopes, resource, code_challenge, state: asked.state.clone() })
}

/// The scopes asked for, each one Lore offers, among them `needed` (the
/// tool server's own; it alone when none are named).
fn parse_scopes(raw: Option<&str>, needed: &str) -> std::result::Result<Vec<String>, String> {
    let mut scopes: Vec<String> = raw.unwrap_or(needed).split_whitespace().map(str::to_owned).collect();
    if let Some(unknown) = scopes.iter().find(|s| !super::SCOPES.contains(&s.as_str())) {
        return Err(format!("unknown scope `{unknown}` ({})", super::SCOPES.join(", ")));
    }
    if scopes.is_empty() {
        scopes.push(needed.to_owned());
    }
    if !scopes.iter().any(|s| s == needed) {
        return Err(format!("this tool server needs the scope `{needed}`"));
    }
    scopes.sort();
    scopes.dedup();
    Ok(scopes)
}

/// Whether `value` is a PKCE value (RFC 7636 §4.1): unreserved
/// characters, as many as `lengths` allows (a verifier 43 to 128, an S256
/// challenge exactly 43).
fn is_pkce_value(value: &str, lengths: std::ops::RangeInclusive<usize>) -> bool {
    lengths.contains(&value.len()) && value.chars().all(|c| c.is_ascii_alphanumeric() || "-._~".contains(c))
}

/// The redirect that tells the client an error (with `state` and `iss`).
pub fn error_redirect(lore: &Lore, redirect_uri: &str, state: Option<&str>, error: &OAuthError) -> String {
    with_query(
        redirect_uri,
        &[("error", error.code.key()), ("error_description", &error.description)],
        state,
        &super::issuer(lore),
    )
}

fn with_query(redirect_uri: &str, pairs: &[(&str, &str)], state: Option<&str>, issuer: &str) -> String {
    match url::Url::parse(redirect_uri) {
        Ok(mut url) => {
            {
                let mut query = url.query_pairs_mut();
                for (name, value) in pairs {
                    query.append_pair(name, value);
                }
                if let Some(state) = state {
                    query.append_pair("state", state);
                }
                query.append_pair("iss", issuer);
            }
            url.to_string()
        }
        // Checked at registration: a stored redirect URI parses.
        Err(_) => redirect_uri.to_owned(),
    }
}

/// The person agreed to `granted` (a subset of what was asked; none means
/// a refusal): a code for the client, as the redirect that carries it.
pub async fn consent(
    lore: &Lore,
    checked: &Checked,
    subject: &Subject,
    granted: &[String],
) -> Outcome<String> {
    let granted: Vec<String> = checked.scopes.iter().filter(|s| granted.contains(s)).cloned().collect();
    if granted.is_empty() {
        let denied = refused(OAuthCode::AccessDenied, "the person did not allow access");
        crate::audit::record(
            &lore.db,
            &subject.actor(),
            "oauth.refused",
            Some(&checked.client.id),
            json!({"why": "access denied at the consent page"}),
        )
        .await
        .map_err(crate::Error::from)?;
        return Ok(error_redirect(lore, &checked.redirect_uri, checked.state.as_deref(), &denied));
    }
    let code = crate::keys::random_key("lore_ac_");
    let now = Utc::now();
    let id = uuid::Uuid::new_v4().to_string();
    let row = oauth_grant::ActiveModel {
        id: Set(id.clone()),
        client_id: Set(checked.client.id.clone()),
        subject: Set(serde_json::to_value(subject).map_err(|e| crate::Error::Internal(e.to_string()))?),
        scopes: Set(json!(granted)),
        resource: Set(checked.resource.clone()),
        redirect_uri: Set(checked.redirect_uri.clone()),
        code_hash: Set(crate::keys::hash(&code)),
        code_challenge: Set(checked.code_challenge.clone()),
        code_expires_at: Set(now + Duration::minutes(CODE_MINUTES)),
        code_used_at: Set(None),
        created_at: Set(now),
        last_used_at: Set(None),
        revoked_at: Set(None),
    };
    let txn = crate::store::begin_write(&lore.db).await.map_err(crate::Error::from)?;
    sea_orm::ActiveModelTrait::insert(row, &txn).await?;
    crate::audit::record(
        &txn,
        &subject.actor(),
        "oauth.granted",
        Some(&id),
        json!({"client": checked.client.id, "client_name": checked.client.name, "scopes": granted, "resource": checked.resource}),
    )
    .await
    .map_err(crate::Error::from)?;
    txn.commit().await?;
    Ok(with_query(&checked.redirect_uri, &[("code", &code)], checked.state.as_deref(), &super::issuer(lore)))
}

/// A token request (RFC 6749 §4.1.3 and §6), from a public client.
#[derive(Clone, Debug)]
pub enum TokenRequest {
    Code {
        code: String,
        client_id: String,
        redirect_uri: Option<String>,
        code_verifier: Option<String>,
        resource: Option<String>,
    },
    Refresh {
        refresh_token: String,
        client_id: String,
        resource: Option<String>,
        scope: Option<String>,
    },
}

/// What the token endpoint issues.
#[derive(Clone, Debug)]
pub struct Issued {
    pub access_token: String,
    pub refresh_token: String,
    pub expires_in: i64,
    pub scopes: Vec<String>,
}

/// Exchanges a code or a refresh token for a new pair of tokens.
pub async fn token(lore: &Lore, asked: TokenRequest) -> Outcome<Issued> {
    let (step, client_id) = match &asked {
        TokenRequest::Code { client_id, .. } => ("token", client_id.clone()),
        TokenRequest::Refresh { client_id, .. } => ("refresh", client_id.clone()),
    };
    let issued = exchange(lore, asked).await;
    if let Err(err) = &issued {
        record_refusal(lore, step, Some(&client_id), err).await;
    }
    issued
}

async fn exchange(lore: &Lore, asked: TokenRequest) -> Outcome<Issued> {
    match asked {
        TokenRequest::Code { code, client_id, redirect_uri, code_verifier, resource } => {
            exchange_code(
                lore,
                &code,
                &client_id,
                redirect_uri.as_deref(),
                code_verifier.as_deref(),
                resource.as_deref(),
            )
            .await
        }
        TokenRequest::Refresh { refresh_token, client_id, resource, scope } => {
            refresh(lore, &refresh_token, &client_id, resource.as_deref(), scope.as_deref()).await
        }
    }
}

/// The client of a token or revocation request: RFC 6749 §5.2 and RFC
/// 7009 know only `invalid_client` for one that cannot be used.
async fn known_client(lore: &Lore, client_id: &str) -> Outcome<Client> {
    client(lore, client_id, false).await.map_err(|err| match err.code {
        OAuthCode::ServerError | OAuthCode::InvalidClient => err,
        _ => refused(OAuthCode::InvalidClient, err.description),
    })
}

async fn exchange_code(
    lore: &Lore,
    code: &str,
    client_id: &str,
    redirect_uri: Option<&str>,
    verifier: Option<&str>,
    resource: Option<&str>,
) -> Outcome<Issued> {
    let client = known_client(lore, client_id).await?;
    let invalid = |why: &str| refused(OAuthCode::InvalidGrant, why);
    let grant = oauth_grant::Entity::find()
        .filter(oauth_grant::Column::CodeHash.eq(crate::keys::hash(code)))
        .one(&lore.db)
        .await?
        .ok_or_else(|| invalid("the authorization code is not valid"))?;
    if grant.code_used_at.is_some() {
        // A code used twice was stolen or replayed: what it gave is taken
        // back (RFC 6749 §4.1.2).
        super::revoke_grant(lore, &Actor::System, &grant.id, "its authorization code was used again").await?;
        return Err(invalid("the authorization code was already used; the access it gave is revoked"));
    }
    if grant.revoked_at.is_some() {
        return Err(invalid("the access this code gave was revoked"));
    }
    if grant.code_expires_at <= Utc::now() {
        return Err(invalid("the authorization code has expired"));
    }
    if grant.client_id != client.id {
        return Err(invalid("the authorization code was issued to another client"));
    }
    if redirect_uri != Some(grant.redirect_uri.as_str()) {
        return Err(invalid("redirect_uri does not match the authorization request's"));
    }
    let verifier =
        verifier.ok_or_else(|| refused(OAuthCode::InvalidRequest, "code_verifier is missing (PKCE)"))?;
    if !is_pkce_value(verifier, 43..=128) || s256(verifier) != grant.code_challenge {
        return Err(invalid("code_verifier does not match the code challenge"));
    }
    match resource {
        None => return Err(refused(OAuthCode::InvalidTarget, "resource is required: the tool server's URL")),
        Some(given) if known_resource(lore, given).as_deref() != Some(grant.resource.as_str()) => {
            return Err(refused(OAuthCode::InvalidTarget, "resource is not the one the code was granted for"))
        }
        Some(_) => {}
    }
    still_acts(lore, &grant).await?;
    // Claimed once, in the transaction that issues the tokens: of two
    // exchanges at the same moment one wins, and a failure spends nothing.
    let txn = crate::store::begin_write(&lore.db).await.map_err(crate::Error::from)?;
    let claimed = oauth_grant::Entity::update_many()
        .col_expr(oauth_grant::Column::CodeUsedAt, Expr::value(Utc::now()))
        .filter(oauth_grant::Column::Id.eq(&grant.id))
        .filter(oauth_grant::Column::CodeUsedAt.is_null())
        .exec(&txn)
        .await?;
    if claimed.rows_affected != 1 {
        return Err(invalid("the authorization code was already used"));
    }
    let issued = issue(lore, &txn, &grant, "oauth.token_issued").await?;
    txn.commit().await?;
    Ok(issued)
}

/// The grant's subject may still act: a deactivated or removed user, or an
/// admin no longer authorized, gets no new tokens.
async fn still_acts(lore: &Lore, grant: &oauth_grant::Model) -> Outcome<()> {
    match super::principal_of(lore, &subject_of(grant)?).await {
        Ok(_) => Ok(()),
        Err(crate::Error::Key(_)) => {
            Err(refused(OAuthCode::InvalidGrant, "the person this access acts as may no longer sign in"))
        }
        Err(other) => Err(other.into()),
    }
}

/// How long after a refresh token was rotated its second use is taken for
/// a client's retry (a lost response, two requests racing) and refused
/// without revoking the grant.
const ROTATION_GRACE_SECONDS: i64 = 10;

async fn refresh(
    lore: &Lore,
    raw: &str,
    client_id: &str,
    resource: Option<&str>,
    scope: Option<&str>,
) -> Outcome<Issued> {
    let client = known_client(lore, client_id).await?;
    let invalid = |why: &str| refused(OAuthCode::InvalidGrant, why);
    if !raw.starts_with(REFRESH_PREFIX) {
        return Err(invalid("the refresh token is not valid"));
    }
    let token = oauth_token::Entity::find_by_id(crate::keys::hash(raw))
        .one(&lore.db)
        .await?
        .filter(|t| t.kind == "refresh")
        .ok_or_else(|| invalid("the refresh token is not valid"))?;
    let grant = oauth_grant::Entity::find_by_id(token.grant_id.clone())
        .one(&lore.db)
        .await?
        .ok_or_else(|| invalid("the refresh token is not valid"))?;
    if grant.client_id != client.id {
        return Err(invalid("the refresh token was issued to another client"));
    }
    if grant.revoked_at.is_some() {
        return Err(invalid("the access was revoked"));
    }
    if let Some(rotated) = token.rotated_at {
        if Utc::now() - rotated <= Duration::seconds(ROTATION_GRACE_SECONDS) {
            return Err(invalid("the refresh token was just used; use the one that replaced it"));
        }
        // A refresh token used again: one of two holders is not the client.
        super::revoke_grant(lore, &Actor::System, &grant.id, "a rotated refresh token was used again")
            .await?;
        return Err(invalid("the refresh token was already used; the access it gave is revoked"));
    }
    if token.expires_at <= Utc::now() || grant_ends(lore, &grant) <= Utc::now() {
        return Err(invalid("the refresh token has expired; sign in again"));
    }
    if let Some(given) = resource {
        if known_resource(lore, given).as_deref() != Some(grant.resource.as_str()) {
            return Err(refused(
                OAuthCode::InvalidTarget,
                "resource is not the one the access was granted for",
            ));
        }
    }
    if let Some(asked) = scope {
        let granted = scopes_of(&grant);
        if let Some(extra) = asked.split_whitespace().find(|s| !granted.iter().any(|g| g == s)) {
            return Err(refused(OAuthCode::InvalidScope, format!("scope `{extra}` was not granted")));
        }
    }
    still_acts(lore, &grant).await?;
    let txn = crate::store::begin_write(&lore.db).await.map_err(crate::Error::from)?;
    let rotated = oauth_token::Entity::update_many()
        .col_expr(oauth_token::Column::RotatedAt, Expr::value(Utc::now()))
        .filter(oauth_token::Column::Hash.eq(&token.hash))
        .filter(oauth_token::Column::RotatedAt.is_null())
        .exec(&txn)
        .await?;
    if rotated.rows_affected != 1 {
        // Rotated by a request racing this one: within the grace.
        return Err(invalid("the refresh token was just used; use the one that replaced it"));
    }
    let issued = issue(lore, &txn, &grant, "oauth.refreshed").await?;
    txn.commit().await?;
    Ok(issued)
}

/// A new access and refresh token under `grant`, audited as `action`, in
/// `txn` (the caller commits).
async fn issue(
    lore: &Lore,
    txn: &sea_orm::DatabaseTransaction,
    grant: &oauth_grant::Model,
    action: &str,
) -> Outcome<Issued> {
    let settings = &lore.settings.auth.mcp;
    let now = Utc::now();
    let access = crate::keys::random_key(ACCESS_PREFIX);
    let refresh = crate::keys::random_key(REFRESH_PREFIX);
    let lifetime = Duration::minutes(i64::from(settings.access_token_minutes.max(1)));
    let row = |raw: &str, kind: &str, expires| oauth_token::ActiveModel {
        hash: Set(crate::keys::hash(raw)),
        grant_id: Set(grant.id.clone()),
        kind: Set(kind.to_owned()),
        expires_at: Set(expires),
        rotated_at: Set(None),
        created_at: Set(now),
    };
    let subject = subject_of(grant)?;
    let refresh_ends =
        (now + Duration::days(i64::from(settings.refresh_token_days.max(1)))).min(grant_ends(lore, grant));
    oauth_token::Entity::insert_many([
        row(&access, "access", (now + lifetime).min(grant_ends(lore, grant))),
        row(&refresh, "refresh", refresh_ends),
    ])
    .exec_without_returning(txn)
    .await?;
    crate::audit::record(txn, &subject.actor(), action, Some(&grant.id), json!({"client": grant.client_id}))
        .await
        .map_err(crate::Error::from)?;
    Ok(Issued {
        access_token: access,
        refresh_token: refresh,
        expires_in: lifetime.num_seconds(),
        scopes: scopes_of(grant),
    })
}

/// Refusals the audit log records a minute, at most: past that a flood of
/// bad requests reaches only the log.
const REFUSALS_AUDITED_PER_MINUTE: u32 = 60;

/// Records a refused request (`step`: register, authorize, token, refresh)
/// in the audit log as `oauth.refused`: the client, the RFC's error and
/// why, never a code or token. Lore's own failures are not refusals.
async fn record_refusal(lore: &Lore, step: &str, client_id: Option<&str>, error: &OAuthError) {
    if matches!(error.code, OAuthCode::ServerError | OAuthCode::TemporarilyUnavailable) {
        return;
    }
    let client: Option<String> = client_id.map(|id| id.chars().take(200).collect());
    tracing::info!(
        step,
        client = client.as_deref(),
        error = error.code.key(),
        "an OAuth request was refused"
    );
    if !lore.admit("oauth:refusals", REFUSALS_AUDITED_PER_MINUTE) {
        return;
    }
    let detail = json!({"step": step, "error": error.code.key(), "why": error.description});
    if let Err(err) =
        crate::audit::record(&lore.db, &Actor::System, "oauth.refused", client.as_deref(), detail).await
    {
        tracing::warn!(error = %err, "a refused OAuth request was not recorded in the audit log");
    }
}

/// When a grant ends, refreshes or not (`auth.mcp.grant_days` after it was made).
fn grant_ends(lore: &Lore, grant: &oauth_grant::Model) -> chrono::DateTime<Utc> {
    grant.created_at + Duration::days(i64::from(lore.settings.auth.mcp.grant_days.max(1)))
}

/// BASE64URL(SHA-256(verifier)), unpadded: the S256 challenge.
pub fn s256(verifier: &str) -> String {
    use base64::Engine as _;
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(Sha256::digest(verifier.as_bytes()))
}

/// Revokes the grant `token` (an access or refresh token) belongs to
/// (RFC 7009), for the client it was issued to: its other tokens stop
/// working too. A token Lore does not know, or of another client, is
/// answered the same (§2.2), and changes nothing. A public client names
/// itself (§2.1: the server checks the token was issued to it).
pub async fn revoke(lore: &Lore, token: &str, client_id: &str) -> Outcome<()> {
    known_client(lore, client_id).await?;
    let Some(found) = oauth_token::Entity::find_by_id(crate::keys::hash(token)).one(&lore.db).await? else {
        return Ok(());
    };
    let Some(grant) = oauth_grant::Entity::find_by_id(found.grant_id).one(&lore.db).await? else {
        return Ok(());
    };
    if client_id != grant.client_id {
        return Ok(());
    }
    super::revoke_grant(lore, &Actor::System, &grant.id, "revoked by its client").await?;
    Ok(())
}
