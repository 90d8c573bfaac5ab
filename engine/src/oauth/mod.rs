//! Assistants sign in: the tool server as an OAuth 2.1 protected resource
//! (RFC 9728), and Lore as its authorization server (RFC 8414): public
//! clients registered dynamically (RFC 7591), the authorization code grant
//! with PKCE S256 only, the `resource` (RFC 8707) bound into every token,
//! `iss` on the authorization response (RFC 9207), refresh tokens that
//! rotate on use, and revocation (RFC 7009). A client may also name itself
//! by the URL of its metadata document ([`documents`]).
//!
//! A person who signs an assistant in is a Lore user: the consent page's
//! signed-in console account is mapped to an application-database user
//! ([`person`]), and the grant's tokens act as that user, with its role and
//! its per-user tool surface, exactly as a key of that user would. Tokens
//! are random strings stored as SHA-256 hashes; every request reads the
//! grant from the database, so a revocation, or a user deactivated, counts
//! from the next request on every replica.
//!
//! What is on the wire (the metadata documents, the form and JSON bodies,
//! the redirects) is the edge's; this module takes and returns values.

pub mod documents;
pub mod external;
pub mod flow;

use chrono::{DateTime, Duration, Utc};
use entity::{admin_account, oauth_client, oauth_grant, oauth_token};
use sea_orm::{ActiveModelTrait, ColumnTrait, EntityTrait, QueryFilter, QueryOrder, Set};
use serde::{Deserialize, Serialize};

use crate::appdb::users::{self, Principal};
use crate::audit::Actor;
use crate::auth::Viewer;
use crate::keys::{KeyError, Scope};
use crate::settings::UsersBy;
use crate::{Error, Lore, Result};

/// The scopes a token can carry: one per tool server, each the one that
/// tool server needs ([`scope_for`]).
pub const SCOPES: [&str; 2] = ["mcp", "operations"];

/// The prefix of an access token (a key's is `lore_sk_`).
pub const ACCESS_PREFIX: &str = "lore_at_";
/// The prefix of a refresh token.
pub const REFRESH_PREFIX: &str = "lore_rt_";

/// The paths of Lore's protected resources: the two tool servers.
pub const RESOURCE_PATHS: [&str; 2] = ["/mcp", "/operation/mcp"];

/// The scope a token needs at the tool server at `path`: `operations` for
/// the operations API's, `mcp` for the application's.
pub fn scope_for(path: &str) -> Scope {
    if path == RESOURCE_PATHS[1] {
        Scope::Operations
    } else {
        Scope::Mcp
    }
}

/// Lore as an issuer: its base URL (`server.base_url`).
pub fn issuer(lore: &Lore) -> String {
    lore.settings.base_url()
}

/// The resource identifier of the tool server at `path` (one of
/// [`RESOURCE_PATHS`]): its URL.
pub fn resource(lore: &Lore, path: &str) -> String {
    format!("{}{path}", issuer(lore))
}

/// The one of Lore's resources `given` names, compared as URLs (case of
/// the scheme and host, a default port and a trailing `/` aside).
fn known_resource(lore: &Lore, given: &str) -> Option<String> {
    let normal = |raw: &str| url::Url::parse(raw.trim_end_matches('/')).ok();
    let given = normal(given)?;
    RESOURCE_PATHS
        .iter()
        .map(|path| resource(lore, path))
        .find(|known| normal(known).as_ref() == Some(&given))
}

/// An error as the OAuth RFCs name it: the code a client acts on, and a
/// sentence for the person reading it.
#[derive(Debug, thiserror::Error)]
#[error("{description}")]
pub struct OAuthError {
    pub code: OAuthCode,
    pub description: String,
}

/// The error codes of RFC 6749 §4.1.2.1 and §5.2, RFC 7591 §3.2.2 and RFC
/// 8707 §2.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OAuthCode {
    InvalidRequest,
    InvalidClient,
    InvalidGrant,
    UnauthorizedClient,
    UnsupportedGrantType,
    UnsupportedResponseType,
    InvalidScope,
    InvalidTarget,
    AccessDenied,
    InvalidRedirectUri,
    InvalidClientMetadata,
    ServerError,
    TemporarilyUnavailable,
}

impl OAuthCode {
    /// Its name on the wire.
    pub fn key(self) -> &'static str {
        match self {
            OAuthCode::InvalidRequest => "invalid_request",
            OAuthCode::InvalidClient => "invalid_client",
            OAuthCode::InvalidGrant => "invalid_grant",
            OAuthCode::UnauthorizedClient => "unauthorized_client",
            OAuthCode::UnsupportedGrantType => "unsupported_grant_type",
            OAuthCode::UnsupportedResponseType => "unsupported_response_type",
            OAuthCode::InvalidScope => "invalid_scope",
            OAuthCode::InvalidTarget => "invalid_target",
            OAuthCode::AccessDenied => "access_denied",
            OAuthCode::InvalidRedirectUri => "invalid_redirect_uri",
            OAuthCode::InvalidClientMetadata => "invalid_client_metadata",
            OAuthCode::ServerError => "server_error",
            OAuthCode::TemporarilyUnavailable => "temporarily_unavailable",
        }
    }
}

impl OAuthError {
    pub fn new(code: OAuthCode, description: impl Into<String>) -> Self {
        OAuthError { code, description: description.into() }
    }
}

/// A failure of Lore's own (the database, say) as the RFCs' `server_error`,
/// or `temporarily_unavailable` when the store was busy: logged, the client
/// told no more.
impl From<Error> for OAuthError {
    fn from(err: Error) -> Self {
        let busy = matches!(&err, Error::Database(db) if crate::store::is_busy(db));
        tracing::warn!(error = %err, "an OAuth request failed on Lore's side");
        if busy {
            OAuthError::new(OAuthCode::TemporarilyUnavailable, "Lore is busy; try again")
        } else {
            OAuthError::new(OAuthCode::ServerError, "Lore could not complete the request")
        }
    }
}

impl From<sea_orm::DbErr> for OAuthError {
    fn from(err: sea_orm::DbErr) -> Self {
        Error::from(err).into()
    }
}

/// Who a grant's tokens act as, stored as a session stores its principal:
/// `{"user": name}` or `{"admin": account_id}`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Subject {
    User(String),
    Admin(String),
}

impl Subject {
    /// How the console and the audit log name it.
    pub fn label(&self) -> String {
        match self {
            Subject::User(name) => format!("user {name}"),
            Subject::Admin(_) => "an admin".to_owned(),
        }
    }

    fn actor(&self) -> Actor {
        match self {
            Subject::User(name) => Actor::User(name.clone()),
            Subject::Admin(account) => Actor::Account(account.clone()),
        }
    }
}

/// Why a signed-in person cannot sign an assistant in.
#[derive(Debug, thiserror::Error)]
pub enum PersonRefused {
    #[error("{0}")]
    Unmapped(String),
    #[error(transparent)]
    Failed(#[from] Error),
}

/// The Lore user a signed-in person acts as ([`crate::settings::McpAuthSettings::users_by`]):
/// the active application-database user whose username is their verified
/// e-mail (or identity provider subject); else, for an authorized admin,
/// the admin. Anyone else is refused with a sentence saying why.
pub async fn person(lore: &Lore, viewer: &Viewer) -> std::result::Result<Subject, PersonRefused> {
    let account = admin_account::Entity::find_by_id(viewer.account_id.clone())
        .one(&lore.db)
        .await
        .map_err(Error::from)?
        .ok_or_else(|| PersonRefused::Unmapped("your sign-in is no longer known; sign in again".into()))?;
    let name = match lore.settings.auth.mcp.users_by {
        UsersBy::Email => account.email.clone().filter(|_| account.email_verified == Some(true)),
        UsersBy::Subject => account.subject.rsplit_once('#').map(|(_, sub)| sub.to_owned()),
    };
    lore.appdb_cache().refresh(&lore.db).await?;
    if let Some(name) = &name {
        let found = users::users(lore).await?.into_iter().find(|u| u.username.eq_ignore_ascii_case(name));
        if let Some(user) = found {
            if !user.active {
                return Err(PersonRefused::Unmapped(format!(
                    "the Lore user `{}` you sign in as is deactivated",
                    user.username
                )));
            }
            return Ok(Subject::User(user.username));
        }
    }
    if viewer.is_admin {
        return Ok(Subject::Admin(account.id));
    }
    let by = match lore.settings.auth.mcp.users_by {
        UsersBy::Email => "verified e-mail address",
        UsersBy::Subject => "identity provider subject",
    };
    Err(PersonRefused::Unmapped(format!(
        "no Lore user has your {by} as their username; ask an admin to add one"
    )))
}

/// The principal a grant's subject is now: an inactive or removed user, or
/// an admin no longer authorized, is an invalid token.
pub(crate) async fn principal_of(lore: &Lore, subject: &Subject) -> Result<Principal> {
    match subject {
        Subject::User(name) => match users::principal(lore, name).await {
            Ok(principal) => Ok(principal),
            Err(Error::AppDb(_)) => {
                Err(KeyError::InvalidToken("its user is deactivated or gone".into()).into())
            }
            Err(other) => Err(other),
        },
        Subject::Admin(account_id) => {
            let account = admin_account::Entity::find_by_id(account_id.clone()).one(&lore.db).await?;
            match account {
                Some(account) if crate::auth::account_is_admin(&lore.settings, &account) => {
                    Ok(Principal::Admin { account_id: account.id })
                }
                _ => Err(KeyError::InvalidToken("its admin is no longer authorized".into()).into()),
            }
        }
    }
}

/// Who a bearer token at the tool server at `resource_path` acts as.
/// Refused, as an invalid token, when it is unknown, expired, revoked, for
/// another resource, or its user is gone or deactivated; as an
/// insufficient scope when its grant lacks the tool server's scope
/// ([`scope_for`]). With an external issuer, its tokens are judged
/// instead ([`external`]).
pub async fn authenticate(lore: &Lore, token: &str, resource_path: &str) -> Result<Principal> {
    if let Some(issuer) = external::issuer(lore) {
        return external::authenticate(lore, &issuer, token, resource_path).await;
    }
    let scope = scope_for(resource_path);
    let invalid = |why: &str| Error::from(KeyError::InvalidToken(why.to_owned()));
    if !token.starts_with(ACCESS_PREFIX) || token.len() > 100 {
        return Err(invalid("it is not an access token of Lore's"));
    }
    let now = Utc::now();
    let found = oauth_token::Entity::find_by_id(crate::keys::hash(token)).one(&lore.db).await?;
    let token = found.filter(|t| t.kind == "access").ok_or_else(|| invalid("it is unknown"))?;
    if token.expires_at <= now {
        return Err(invalid("it has expired"));
    }
    let grant = oauth_grant::Entity::find_by_id(token.grant_id.clone())
        .one(&lore.db)
        .await?
        .ok_or_else(|| invalid("its grant is gone"))?;
    if grant.revoked_at.is_some() {
        return Err(invalid("its grant was revoked"));
    }
    if grant.resource != resource(lore, resource_path) {
        return Err(invalid("it was issued for another resource"));
    }
    if !scopes_of(&grant).iter().any(|s| s == scope.key()) {
        return Err(KeyError::Scope(scope.key()).into());
    }
    // The caller refreshed the application database's cache for this
    // request (`operations::authenticate_for`).
    let principal = principal_of(lore, &subject_of(&grant)?).await?;
    // Last used to the minute: one write a minute per grant, not per call.
    if grant.last_used_at.is_none_or(|at| now - at > Duration::minutes(1)) {
        let touched = oauth_grant::ActiveModel {
            id: Set(grant.id.clone()),
            last_used_at: Set(Some(now)),
            ..Default::default()
        };
        if let Err(err) = touched.update(&lore.db).await {
            tracing::warn!(grant = %grant.id, error = %err, "a grant's last use was not recorded");
        }
    }
    Ok(principal)
}

fn scopes_of(grant: &oauth_grant::Model) -> Vec<String> {
    serde_json::from_value(grant.scopes.clone()).unwrap_or_default()
}

fn subject_of(grant: &oauth_grant::Model) -> Result<Subject> {
    serde_json::from_value(grant.subject.clone())
        .map_err(|err| Error::Internal(format!("grant {}: its subject is unreadable: {err}", grant.id)))
}

/// A connected client, as the Access screen lists it: one live grant.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Connection {
    pub grant_id: String,
    pub client_id: String,
    pub client_name: String,
    pub logo_uri: Option<String>,
    pub subject: Subject,
    pub scopes: Vec<String>,
    pub resource: String,
    pub created_at: DateTime<Utc>,
    pub last_used_at: Option<DateTime<Utc>>,
}

/// Every live grant (its code exchanged, not revoked), newest first.
pub async fn connections(lore: &Lore) -> Result<Vec<Connection>> {
    let grants = oauth_grant::Entity::find()
        .filter(oauth_grant::Column::CodeUsedAt.is_not_null())
        .filter(oauth_grant::Column::RevokedAt.is_null())
        .order_by_desc(oauth_grant::Column::CreatedAt)
        .all(&lore.db)
        .await?;
    let clients = oauth_client::Entity::find().all(&lore.db).await?;
    grants
        .into_iter()
        .map(|grant| {
            let client = clients.iter().find(|c| c.id == grant.client_id);
            Ok(Connection {
                subject: subject_of(&grant)?,
                scopes: scopes_of(&grant),
                client_name: client.map_or_else(|| grant.client_id.clone(), |c| c.name.clone()),
                logo_uri: client.and_then(|c| c.logo_uri.clone()),
                grant_id: grant.id,
                client_id: grant.client_id,
                resource: grant.resource,
                created_at: grant.created_at,
                last_used_at: grant.last_used_at,
            })
        })
        .collect()
}

/// Revokes a grant: its tokens are refused from the next request.
pub async fn revoke_grant(lore: &Lore, actor: &Actor, grant_id: &str, why: &str) -> Result<()> {
    let revoked = oauth_grant::Entity::update_many()
        .col_expr(oauth_grant::Column::RevokedAt, sea_orm::sea_query::Expr::value(Utc::now()))
        .filter(oauth_grant::Column::Id.eq(grant_id))
        .filter(oauth_grant::Column::RevokedAt.is_null())
        .exec(&lore.db)
        .await?;
    if revoked.rows_affected > 0 {
        crate::audit::record(
            &lore.db,
            actor,
            "oauth.revoked",
            Some(grant_id),
            serde_json::json!({"why": why}),
        )
        .await?;
    }
    Ok(())
}
