//! Or an external authorization server (`auth.mcp.issuer`): the tool
//! servers then accept its JWT access tokens instead of Lore's own, and
//! Lore's authorization server is off.
//!
//! A token is accepted when its signature verifies with a key the issuer
//! publishes (its JWKS, found through its RFC 8414 or OpenID discovery
//! document), its `iss` is the issuer's, its `aud` is the tool server's
//! resource URL (or `auth.mcp.audience`), it has not expired, its `scope`
//! (or `scp`) holds the tool server's scope, and its `auth.mcp.user_claim`
//! names an active application-database user, whom it acts as. The keys
//! are kept [`KEYS_KEPT`]; a token signed with a key not among them has
//! them read again (at most every [`REREAD_AT_MOST`]), so a rotation at
//! the issuer is picked up with the first token it signs.

use std::time::{Duration, Instant};

use jsonwebtoken::jwk::JwkSet;
use jsonwebtoken::{DecodingKey, Validation};

use crate::appdb::users::Principal;
use crate::auth::oidc;
use crate::keys::KeyError;
use crate::{Error, Lore, Result};

/// How long the issuer's keys are used before they are read again.
pub const KEYS_KEPT: Duration = Duration::from_secs(10 * 60);
/// The shortest time between two readings of the keys.
pub const REREAD_AT_MOST: Duration = Duration::from_secs(1);

/// The external issuer, when one is configured, as it is written (its
/// metadata's `issuer` is compared with it exactly, RFC 8414 §3.3).
pub fn issuer(lore: &Lore) -> Option<String> {
    lore.settings
        .auth
        .mcp
        .issuer
        .as_deref()
        .map(|issuer| issuer.trim().to_owned())
        .filter(|issuer| !issuer.is_empty())
}

/// The issuer's keys as last read, kept for every request of this Lore.
/// One reading at a time: requests that need the keys while they are read
/// wait for that reading rather than start their own.
#[derive(Default)]
pub(crate) struct Keys {
    read: tokio::sync::Mutex<Held>,
}

#[derive(Default)]
struct Held {
    keys: Option<Read>,
    /// When the keys were last asked for, read or not: a failed reading
    /// counts too, so an issuer that is down is not asked on every request.
    tried: Option<Instant>,
}

struct Read {
    /// The issuer as its discovery document names it.
    issuer: String,
    jwks: JwkSet,
    at: Instant,
}

fn invalid(why: impl Into<String>) -> Error {
    KeyError::InvalidToken(why.into()).into()
}

/// Who the external issuer's `token` acts as at the tool server at
/// `resource_path`.
pub(super) async fn authenticate(
    lore: &Lore,
    issuer: &str,
    token: &str,
    resource_path: &str,
) -> Result<Principal> {
    let header = jsonwebtoken::decode_header(token).map_err(|_| invalid("it is not a JWT access token"))?;
    if !oidc::SIGNING_ALGORITHMS.contains(&header.alg) {
        return Err(invalid(format!("its algorithm {:?} is not accepted", header.alg)));
    }
    let (keys, _) = lore.extension(Keys::default);
    let (key, named_issuer) = keys.key(lore, issuer, header.kid.as_deref()).await?;
    let settings = &lore.settings.auth.mcp;
    let audience = settings.audience.clone().unwrap_or_else(|| super::resource(lore, resource_path));
    let mut validation = Validation::new(header.alg);
    validation.set_issuer(&[named_issuer.as_str()]);
    validation.set_audience(&[audience.as_str()]);
    validation.set_required_spec_claims(&["exp", "iss", "aud"]);
    let claims = jsonwebtoken::decode::<serde_json::Map<String, serde_json::Value>>(token, &key, &validation)
        .map_err(|err| invalid(format!("it does not verify: {err}")))?
        .claims;
    let needed = super::scope_for(resource_path).key();
    let scopes: Vec<&str> = match (claims.get("scope"), claims.get("scp")) {
        (Some(serde_json::Value::String(scope)), _) => scope.split_whitespace().collect(),
        (_, Some(serde_json::Value::Array(scp))) => scp.iter().filter_map(|s| s.as_str()).collect(),
        (_, Some(serde_json::Value::String(scp))) => scp.split_whitespace().collect(),
        _ => Vec::new(),
    };
    if !scopes.contains(&needed) {
        return Err(KeyError::Scope(needed).into());
    }
    let user = claims
        .get(&settings.user_claim)
        .and_then(|value| value.as_str())
        .ok_or_else(|| invalid(format!("it has no `{}` claim to name a Lore user", settings.user_claim)))?;
    super::principal_of(lore, &super::Subject::User(user.to_owned())).await
}

impl Keys {
    /// The key `kid` names (or the only key), with the keys read again when
    /// they are old or do not have it (at most every [`REREAD_AT_MOST`]);
    /// and the issuer as its discovery names it. When a reading fails, the
    /// keys read before still serve; with none, the issuer is unavailable.
    async fn key(&self, lore: &Lore, issuer: &str, kid: Option<&str>) -> Result<(DecodingKey, String)> {
        let mut held = self.read.lock().await;
        let find = |read: &Read| {
            oidc::signing_key(&read.jwks, kid)
                .and_then(|jwk| DecodingKey::from_jwk(jwk).ok())
                .map(|key| (key, read.issuer.clone()))
        };
        let kept = held.keys.as_ref().and_then(find);
        let fresh = held.keys.as_ref().is_some_and(|read| read.at.elapsed() < KEYS_KEPT);
        let may_read = held.tried.is_none_or(|tried| tried.elapsed() >= REREAD_AT_MOST);
        if let Some(found) = kept.as_ref().filter(|_| fresh || !may_read) {
            return Ok(found.clone());
        }
        if !may_read {
            return Err(invalid("it is signed with a key its issuer does not publish"));
        }
        held.tried = Some(Instant::now());
        match oidc::issuer_keys(lore, issuer).await {
            Ok((named, jwks)) => {
                let read = Read { issuer: named, jwks, at: Instant::now() };
                let found = find(&read);
                held.keys = Some(read);
                found.ok_or_else(|| invalid("it is signed with a key its issuer does not publish"))
            }
            Err(why) => {
                tracing::warn!(issuer, error = %why, "the authorization server's keys could not be read");
                // The keys read before still verify what they verified.
                kept.ok_or_else(|| why.into())
            }
        }
    }
}
