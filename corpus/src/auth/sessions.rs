//! Console sessions.
//!
//! A session is a row (revocable, with an absolute expiry) plus a short-lived
//! HS256 token naming it, which the edge keeps in an HttpOnly cookie. A token
//! is only as good as its row: signing out revokes the row, and every request
//! checks it. While a session lives, a token past half its life is re-issued.

use chrono::{DateTime, Duration, Utc};
use entity::{admin_account, admin_session};
use jsonwebtoken::{Algorithm, DecodingKey, EncodingKey, Header, Validation};
use sea_orm::{ActiveModelTrait, EntityTrait, Set};
use serde::{Deserialize, Serialize};

use super::AuthError;
use crate::{Corpus, Result};

/// The signed value the browser holds.
#[derive(Clone, Debug)]
pub struct SessionToken {
    pub value: String,
    /// When the session itself ends (the cookie may live that long).
    pub session_expires_at: DateTime<Utc>,
}

/// The signed-in account behind a request.
#[derive(Clone, Debug)]
pub struct Viewer {
    pub session_id: String,
    pub account_id: String,
    pub email: Option<String>,
    pub display_name: Option<String>,
    /// Whether the account is an authorized admin under the settings in force
    /// now ([`super::account_is_admin`]).
    pub is_admin: bool,
    /// A fresh token when the presented one is past half its life.
    pub refreshed: Option<SessionToken>,
}

impl Viewer {
    /// The viewer, if an authorized admin; `AdminUnavailable` otherwise.
    pub fn require_admin(&self) -> std::result::Result<&Self, AuthError> {
        if self.is_admin {
            Ok(self)
        } else {
            Err(AuthError::AdminUnavailable)
        }
    }
}

#[derive(Debug, Serialize, Deserialize)]
struct Claims {
    sid: String,
    iat: i64,
    exp: i64,
}

/// How often `last_seen_at` is written, at most.
const LAST_SEEN_GRANULARITY_SECS: i64 = 60;

/// Starts a session for an account that just signed in.
pub async fn create(lore: &Corpus, account_id: &str, now: DateTime<Utc>) -> Result<SessionToken> {
    let lifetime = Duration::hours(i64::from(lore.settings.auth.session.lifetime_hours));
    let row = admin_session::ActiveModel {
        id: Set(uuid::Uuid::new_v4().to_string()),
        account_id: Set(account_id.to_owned()),
        created_at: Set(now),
        expires_at: Set(now + lifetime),
        last_seen_at: Set(now),
        revoked_at: Set(None),
    }
    .insert(&lore.db)
    .await?;
    sign(lore, &row, now)
}

/// Checks a presented token and its session row. Any failure is
/// `Unauthenticated`: the browser only learns that it must sign in again.
pub async fn authenticate(lore: &Corpus, token: &str, now: DateTime<Utc>) -> Result<Viewer> {
    let mut validation = Validation::new(Algorithm::HS256);
    validation.leeway = 0;
    validation.required_spec_claims = ["exp"].into_iter().map(str::to_owned).collect();
    let key = DecodingKey::from_secret(&lore.keys.session_signing);
    let claims = jsonwebtoken::decode::<Claims>(token, &key, &validation)
        .map_err(|_| AuthError::Unauthenticated)?
        .claims;
    if claims.exp <= now.timestamp() {
        return Err(AuthError::Unauthenticated.into());
    }

    let Some((session, Some(account))) = admin_session::Entity::find_by_id(claims.sid.as_str())
        .find_also_related(admin_account::Entity)
        .one(&lore.db)
        .await?
    else {
        return Err(AuthError::Unauthenticated.into());
    };
    if session.revoked_at.is_some() || session.expires_at <= now {
        return Err(AuthError::Unauthenticated.into());
    }
    if !super::claims_recorded(&account) {
        // Signed in before Lore kept the token's claims: rights cannot be
        // re-derived, so the holder signs in again.
        return Err(AuthError::Unauthenticated.into());
    }

    let token_life = i64::from(lore.settings.auth.session.token_minutes) * 60;
    let refreshed =
        if claims.exp - now.timestamp() < token_life / 2 { Some(sign(lore, &session, now)?) } else { None };
    if (now - session.last_seen_at).num_seconds() >= LAST_SEEN_GRANULARITY_SECS {
        let mut row: admin_session::ActiveModel = session.clone().into();
        row.last_seen_at = Set(now);
        row.update(&lore.db).await?;
    }

    let is_admin = super::account_is_admin(&lore.settings, &account);
    Ok(Viewer {
        session_id: session.id,
        account_id: account.id,
        email: account.email,
        display_name: account.display_name,
        is_admin,
        refreshed,
    })
}

/// Ends a session: its tokens stop working at once, wherever they are.
pub async fn revoke(lore: &Corpus, session_id: &str, now: DateTime<Utc>) -> Result<()> {
    if let Some(session) = admin_session::Entity::find_by_id(session_id).one(&lore.db).await? {
        if session.revoked_at.is_none() {
            let mut row: admin_session::ActiveModel = session.into();
            row.revoked_at = Set(Some(now));
            row.update(&lore.db).await?;
        }
    }
    Ok(())
}

fn sign(lore: &Corpus, session: &admin_session::Model, now: DateTime<Utc>) -> Result<SessionToken> {
    let token_life = Duration::minutes(i64::from(lore.settings.auth.session.token_minutes));
    // A token never outlives its session.
    let exp = (now + token_life).min(session.expires_at);
    let claims = Claims { sid: session.id.clone(), iat: now.timestamp(), exp: exp.timestamp() };
    let value = jsonwebtoken::encode(
        &Header::new(Algorithm::HS256),
        &claims,
        &EncodingKey::from_secret(&lore.keys.session_signing),
    )
    .map_err(|err| crate::Error::Internal(format!("signing a session token: {err}")))?;
    Ok(SessionToken { value, session_expires_at: session.expires_at })
}
