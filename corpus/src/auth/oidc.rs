//! OIDC sign-in: authorization code flow with PKCE (S256).
//!
//! `begin` records the attempt (state, nonce, PKCE verifier and a browser
//! binding) and returns the provider's authorization URL. `complete` consumes
//! the attempt exactly once, exchanges the code, verifies the ID token against
//! the issuer's JWKS (signature, issuer, audience, expiry, nonce) and starts a
//! session. Discovery and JWKS are fetched per sign-in: sign-ins are rare, and
//! a key rotation at the provider is then picked up without a cache to expire.

use chrono::{DateTime, Duration, Utc};
use entity::oidc_login;
use jsonwebtoken::jwk::JwkSet;
use jsonwebtoken::{Algorithm, DecodingKey, Validation};
use oauth2::basic::{
    BasicErrorResponse, BasicRevocationErrorResponse, BasicTokenIntrospectionResponse, BasicTokenType,
};
use oauth2::{
    AuthUrl, AuthorizationCode, ClientId, ClientSecret, CsrfToken, ExtraTokenFields, PkceCodeChallenge,
    PkceCodeVerifier, RedirectUrl, Scope, StandardRevocableToken, StandardTokenResponse, TokenUrl,
};
use sea_orm::{ActiveModelTrait, ColumnTrait, EntityTrait, QueryFilter, Set};
use serde::{Deserialize, Serialize};

use super::{is_authorized_admin, random_token, sessions, upsert_account, AuthError, Identity, SessionToken};
use crate::audit::{self, Actor};
use crate::settings::Secret;
use crate::{Corpus, Error, Result, Settings};

/// The algorithms an issuer's token may be signed with: asymmetric ones
/// only, since an HMAC "signature" (keyed by a secret the client holds too),
/// or none at all, proves nothing about the issuer. For ID tokens here and
/// for an external authorization server's access tokens alike.
pub const SIGNING_ALGORITHMS: [Algorithm; 9] = [
    Algorithm::RS256,
    Algorithm::RS384,
    Algorithm::RS512,
    Algorithm::PS256,
    Algorithm::PS384,
    Algorithm::PS512,
    Algorithm::ES256,
    Algorithm::ES384,
    Algorithm::EdDSA,
];

/// The key of `jwks` a token's `kid` names, or the only key when it names
/// none.
pub fn signing_key<'k>(jwks: &'k JwkSet, kid: Option<&str>) -> Option<&'k jsonwebtoken::jwk::Jwk> {
    match kid {
        Some(kid) => jwks.find(kid),
        None if jwks.keys.len() == 1 => jwks.keys.first(),
        None => None,
    }
}

/// How long a started sign-in may take before its callback is refused.
const ATTEMPT_LIFETIME_MINUTES: i64 = 10;

/// The callback path the provider redirects to.
pub const CALLBACK_PATH: &str = "/auth/oidc/callback";

/// What the engine keeps of the OIDC configuration.
pub struct OidcClient {
    config: Option<OidcConfig>,
    http: reqwest::Client,
}

struct OidcConfig {
    issuer: String,
    client_id: String,
    client_secret: Option<Secret>,
    redirect_uri: String,
    groups_claim: String,
}

/// A started sign-in: send the browser to `authorize_url`, and keep
/// `browser_binding` in a short-lived cookie for the callback.
pub struct Started {
    pub authorize_url: String,
    pub browser_binding: String,
}

/// A finished sign-in.
pub struct Completed {
    pub session: SessionToken,
    pub return_to: String,
    pub is_admin: bool,
}

#[derive(Debug, Deserialize)]
struct Discovery {
    issuer: String,
    authorization_endpoint: String,
    token_endpoint: String,
    jwks_uri: String,
}

#[derive(Clone, Debug, Deserialize, Serialize)]
struct IdTokenFields {
    id_token: Option<String>,
}

impl ExtraTokenFields for IdTokenFields {}

type TokenResponse = StandardTokenResponse<IdTokenFields, BasicTokenType>;
type OAuthClient = oauth2::Client<
    BasicErrorResponse,
    TokenResponse,
    BasicTokenIntrospectionResponse,
    StandardRevocableToken,
    BasicRevocationErrorResponse,
    oauth2::EndpointSet,
    oauth2::EndpointNotSet,
    oauth2::EndpointNotSet,
    oauth2::EndpointNotSet,
    oauth2::EndpointSet,
>;

#[derive(Debug, Deserialize)]
struct IdClaims {
    sub: String,
    nonce: Option<String>,
    email: Option<String>,
    email_verified: Option<bool>,
    name: Option<String>,
    #[serde(flatten)]
    other: serde_json::Map<String, serde_json::Value>,
}

impl OidcClient {
    pub fn new(settings: &Settings) -> Result<Self> {
        let oidc = &settings.auth.oidc;
        let config = match (&oidc.issuer, &oidc.client_id) {
            (Some(issuer), Some(client_id)) => Some(OidcConfig {
                issuer: issuer.trim_end_matches('/').to_owned(),
                client_id: client_id.clone(),
                client_secret: oidc.client_secret.clone(),
                redirect_uri: format!("{}{CALLBACK_PATH}", settings.base_url()),
                groups_claim: oidc.groups_claim.clone(),
            }),
            // A partial block is reported by Readiness' configuration check.
            _ => None,
        };
        // The token endpoint must never be followed through a redirect (the
        // code and verifier would travel to wherever it points). No idle
        // connection is kept: sign-ins are seconds apart, and a provider that
        // closes idle connections sooner than the pool forgets them (Node's
        // default is 5 s) would otherwise now and then fail a sign-in on a
        // connection it closed just as it was reused.
        let http = reqwest::Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            .pool_max_idle_per_host(0)
            .timeout(std::time::Duration::from_secs(15))
            .build()
            .map_err(|err| Error::Internal(format!("building the OIDC HTTP client: {err}")))?;
        Ok(Self { config, http })
    }

    fn config(&self) -> std::result::Result<&OidcConfig, AuthError> {
        self.config.as_ref().ok_or(AuthError::OidcNotConfigured)
    }

    async fn discover(&self, config: &OidcConfig) -> std::result::Result<Discovery, AuthError> {
        let url = format!("{}/.well-known/openid-configuration", config.issuer);
        let discovery: Discovery = self.get_json(&url).await?;
        if discovery.issuer.trim_end_matches('/') != config.issuer {
            return Err(AuthError::IdentityProviderUnavailable(format!(
                "the discovery document names issuer {:?}, not the configured one",
                discovery.issuer
            )));
        }
        Ok(discovery)
    }

    async fn get_json<T: serde::de::DeserializeOwned>(&self, url: &str) -> std::result::Result<T, AuthError> {
        let unavailable =
            |err: reqwest::Error| AuthError::IdentityProviderUnavailable(format!("{url}: {err}"));
        self.http
            .get(url)
            .send()
            .await
            .and_then(reqwest::Response::error_for_status)
            .map_err(unavailable)?
            .json()
            .await
            .map_err(unavailable)
    }

    /// See [`issuer_keys`].
    async fn issuer_keys(&self, issuer: &str) -> std::result::Result<(String, JwkSet), AuthError> {
        #[derive(Deserialize)]
        struct Keys {
            issuer: String,
            jwks_uri: String,
        }
        let bare = issuer.trim_end_matches('/');
        let found: Keys = match self.get_json(&rfc8414_metadata_url(bare)).await {
            Ok(found) => found,
            Err(_) => self.get_json(&format!("{bare}/.well-known/openid-configuration")).await?,
        };
        if found.issuer.trim_end_matches('/') != bare {
            return Err(AuthError::IdentityProviderUnavailable(format!(
                "the discovery document names issuer {:?}, not {issuer:?}",
                found.issuer
            )));
        }
        let jwks: JwkSet = self.get_json(&found.jwks_uri).await?;
        Ok((found.issuer, jwks))
    }

    fn oauth_client(
        config: &OidcConfig,
        discovery: &Discovery,
    ) -> std::result::Result<OAuthClient, AuthError> {
        let bad = |what: &str| AuthError::IdentityProviderUnavailable(format!("invalid {what} URL"));
        let mut client = oauth2::Client::new(ClientId::new(config.client_id.clone()))
            .set_auth_uri(
                AuthUrl::new(discovery.authorization_endpoint.clone()).map_err(|_| bad("authorization"))?,
            )
            .set_token_uri(TokenUrl::new(discovery.token_endpoint.clone()).map_err(|_| bad("token"))?)
            .set_redirect_uri(RedirectUrl::new(config.redirect_uri.clone()).map_err(|_| bad("redirect"))?);
        if let Some(secret) = &config.client_secret {
            client = client.set_client_secret(ClientSecret::new(secret.expose().to_owned()));
        }
        Ok(client)
    }
}

/// An issuer's signing keys, where its discovery document (RFC 8414's, else
/// OpenID's) points: the issuer as the document names it (it must be
/// `issuer`, a trailing `/` aside), and its JWKS. For an external
/// authorization server's access tokens (the engine's `oauth::external`).
pub async fn issuer_keys(lore: &Corpus, issuer: &str) -> std::result::Result<(String, JwkSet), AuthError> {
    lore.oidc.issuer_keys(issuer).await
}

/// Where RFC 8414 §3.1 puts an issuer's metadata: the well-known segment
/// between its host and its path.
fn rfc8414_metadata_url(issuer: &str) -> String {
    match url::Url::parse(issuer) {
        Ok(url) if url.path().len() > 1 => {
            let origin = url.origin().ascii_serialization();
            format!("{origin}/.well-known/oauth-authorization-server{}", url.path().trim_end_matches('/'))
        }
        _ => format!("{issuer}/.well-known/oauth-authorization-server"),
    }
}

/// Starts a sign-in. `return_to` must be a path on this server; anything else
/// becomes `/`, so the flow cannot be used as an open redirect.
pub async fn begin(lore: &Corpus, return_to: &str, now: DateTime<Utc>) -> Result<Started> {
    let config = lore.oidc.config()?;
    let discovery = lore.oidc.discover(config).await?;
    let client = OidcClient::oauth_client(config, &discovery)?;

    let state = random_token(24);
    let nonce = random_token(24);
    let browser_binding = random_token(24);
    let (challenge, verifier) = PkceCodeChallenge::new_random_sha256();
    let (url, _) = client
        .authorize_url(|| CsrfToken::new(state.clone()))
        .add_scope(Scope::new("openid".into()))
        .add_scope(Scope::new("email".into()))
        .add_scope(Scope::new("profile".into()))
        .add_extra_param("nonce", nonce.clone())
        .set_pkce_challenge(challenge)
        .url();

    // Abandoned attempts are swept whenever a new one starts.
    oidc_login::Entity::delete_many()
        .filter(oidc_login::Column::CreatedAt.lt(now - Duration::minutes(ATTEMPT_LIFETIME_MINUTES)))
        .exec(&lore.db)
        .await?;
    oidc_login::ActiveModel {
        state: Set(state),
        nonce: Set(nonce),
        pkce_verifier: Set(verifier.secret().clone()),
        browser_binding: Set(browser_binding.clone()),
        return_to: Set(safe_return_path(return_to)),
        created_at: Set(now),
    }
    .insert(&lore.db)
    .await?;

    Ok(Started { authorize_url: url.to_string(), browser_binding })
}

/// Finishes a sign-in from the provider's callback.
pub async fn complete(
    lore: &Corpus,
    code: &str,
    state: &str,
    browser_binding: Option<&str>,
    now: DateTime<Utc>,
) -> Result<Completed> {
    let config = lore.oidc.config()?;
    let failed = |why: &str| Error::from(AuthError::SignInFailed(why.to_owned()));

    // Consume the attempt first: a state value works once, whatever follows.
    let attempt = oidc_login::Entity::find_by_id(state).one(&lore.db).await?;
    let deleted = oidc_login::Entity::delete_by_id(state).exec(&lore.db).await?;
    let attempt = match attempt {
        Some(attempt) if deleted.rows_affected == 1 => attempt,
        _ => return Err(failed("unknown or already used state")),
    };
    if now - attempt.created_at > Duration::minutes(ATTEMPT_LIFETIME_MINUTES) {
        return Err(failed("the sign-in took too long; start again"));
    }
    let bound = browser_binding
        .map(|presented| {
            subtle::ConstantTimeEq::ct_eq(presented.as_bytes(), attempt.browser_binding.as_bytes()).into()
        })
        .unwrap_or(false);
    if !bound {
        return Err(failed("the sign-in was started in another browser"));
    }

    let discovery = lore.oidc.discover(config).await?;
    let client = OidcClient::oauth_client(config, &discovery)?;
    let token = client
        .exchange_code(AuthorizationCode::new(code.to_owned()))
        .set_pkce_verifier(PkceCodeVerifier::new(attempt.pkce_verifier.clone()))
        .request_async(&lore.oidc.http)
        .await
        .map_err(|err| AuthError::SignInFailed(format!("the code exchange failed: {err}")))?;
    let id_token =
        token.extra_fields().id_token.clone().ok_or_else(|| failed("the provider returned no ID token"))?;

    let claims = verify_id_token(lore, config, &discovery, &id_token).await?;
    if claims.nonce.as_deref() != Some(attempt.nonce.as_str()) {
        return Err(failed("the ID token's nonce does not match"));
    }

    let groups: Vec<String> = claims
        .other
        .get(&config.groups_claim)
        .and_then(serde_json::Value::as_array)
        .map(|items| items.iter().filter_map(|g| g.as_str().map(str::to_owned)).collect())
        .unwrap_or_default();
    let is_admin =
        is_authorized_admin(&lore.settings, claims.email.as_deref(), claims.email_verified, &groups);

    let txn = crate::store::begin_write(&lore.db).await?;
    let account = upsert_account(
        &txn,
        Identity {
            subject: format!("oidc:{}#{}", discovery.issuer.trim_end_matches('/'), claims.sub),
            email: claims.email.clone(),
            display_name: claims.name.clone().or_else(|| claims.email.clone()),
            email_verified: claims.email_verified,
            groups,
            is_admin,
        },
        now,
    )
    .await?;
    audit::record(
        &txn,
        &Actor::Account(account.id.clone()),
        "auth.oidc_sign_in",
        None,
        serde_json::json!({ "is_admin": is_admin }),
    )
    .await?;
    txn.commit().await?;

    let session = sessions::create(lore, &account.id, now).await?;
    Ok(Completed { session, return_to: attempt.return_to, is_admin })
}

async fn verify_id_token(
    lore: &Corpus,
    config: &OidcConfig,
    discovery: &Discovery,
    id_token: &str,
) -> Result<IdClaims> {
    let failed = |why: String| Error::from(AuthError::SignInFailed(why));
    let header =
        jsonwebtoken::decode_header(id_token).map_err(|err| failed(format!("malformed ID token: {err}")))?;
    if !SIGNING_ALGORITHMS.contains(&header.alg) {
        return Err(failed(format!("ID token algorithm {:?} is not accepted", header.alg)));
    }
    let jwks: JwkSet = lore.oidc.get_json(&discovery.jwks_uri).await?;
    let jwk = signing_key(&jwks, header.kid.as_deref())
        .ok_or_else(|| failed("the ID token is signed with a key the issuer does not publish".into()))?;
    let key = DecodingKey::from_jwk(jwk).map_err(|err| failed(format!("unusable issuer key: {err}")))?;

    let mut validation = Validation::new(header.alg);
    validation.set_issuer(&[discovery.issuer.as_str()]);
    validation.set_audience(&[config.client_id.as_str()]);
    validation.set_required_spec_claims(&["exp", "iss", "aud", "sub"]);
    let data = jsonwebtoken::decode::<IdClaims>(id_token, &key, &validation)
        .map_err(|err| failed(format!("the ID token does not verify: {err}")))?;
    Ok(data.claims)
}

/// Keeps `return_to` on this server: a single leading `/`, no scheme, no host,
/// and no whitespace or control character (browsers drop tabs and line breaks
/// from a `Location`, so `/\t/evil.example` would arrive as `//evil.example`).
fn safe_return_path(return_to: &str) -> String {
    let local = return_to.starts_with('/')
        && !return_to.starts_with("//")
        && !return_to.contains('\\')
        && !return_to.chars().any(|c| c.is_whitespace() || c.is_control());
    if local {
        return_to.to_owned()
    } else {
        "/".to_owned()
    }
}

#[cfg(test)]
mod tests {
    use super::safe_return_path;

    #[test]
    fn rfc_8414_puts_the_well_known_segment_before_the_issuers_path() {
        assert_eq!(
            super::rfc8414_metadata_url("https://id.example/tenant/a"),
            "https://id.example/.well-known/oauth-authorization-server/tenant/a"
        );
        assert_eq!(
            super::rfc8414_metadata_url("https://id.example"),
            "https://id.example/.well-known/oauth-authorization-server"
        );
    }

    #[test]
    fn return_paths_stay_on_this_server() {
        assert_eq!(safe_return_path("/sources?x=1"), "/sources?x=1");
        assert_eq!(safe_return_path("//evil.example/"), "/");
        assert_eq!(safe_return_path("https://evil.example/"), "/");
        assert_eq!(safe_return_path("/\\evil.example"), "/");
        assert_eq!(safe_return_path(""), "/");
        assert_eq!(safe_return_path("/\t/evil.example"), "/");
        assert_eq!(safe_return_path("/\n/evil.example"), "/");
        assert_eq!(safe_return_path("/ /evil.example"), "/");
        assert_eq!(safe_return_path("/sources/%09x"), "/sources/%09x", "percent-encoded stays a path");
    }
}
