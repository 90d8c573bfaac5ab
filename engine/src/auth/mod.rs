//! Admin sign-in and console sessions.
//!
//! Two ways in: OIDC (authorization code + PKCE, ID token verified against the
//! issuer's JWKS), or, with no identity provider configured, a one-time
//! bootstrap link printed by `lore serve`. Either ends in a server-side session
//! row and a short-lived signed token naming it; see [`sessions`].

pub mod bootstrap;
pub mod oidc;
pub mod sessions;

use chrono::{DateTime, Utc};
use entity::admin_account;
use sea_orm::{ActiveModelTrait, ColumnTrait, ConnectionTrait, EntityTrait, QueryFilter, Set};

use crate::{Result, Settings};

pub use sessions::{SessionToken, Viewer};

/// Why a sign-in or a session check failed. Each variant has its own stable
/// code at the edge.
#[derive(Debug, thiserror::Error)]
pub enum AuthError {
    /// No session, or one that expired or was revoked.
    #[error("sign in to use the console")]
    Unauthenticated,
    /// Signed in, but not an authorized admin of this Lore.
    #[error("this account is not an authorized admin of this Lore")]
    AdminUnavailable,
    /// The bootstrap link is unknown, already used or expired.
    #[error("this sign-in link is invalid, already used or expired; restart `lore serve` for a new one")]
    BootstrapLinkInvalid,
    /// The bootstrap link was opened from another machine or through a proxy.
    #[error("the one-time sign-in link only works from the machine Lore runs on")]
    BootstrapNotLoopback,
    /// An identity provider is configured, so the bootstrap link is off.
    #[error("an identity provider is configured; sign in through it")]
    BootstrapDisabled,
    /// Sign-in through an identity provider was asked for but none is configured.
    #[error("no identity provider is configured")]
    OidcNotConfigured,
    /// The identity provider's answer did not check out (state, nonce, token...).
    #[error("sign-in failed: {0}")]
    SignInFailed(String),
    /// The identity provider could not be reached or answered nonsense.
    #[error("the identity provider is unavailable: {0}")]
    IdentityProviderUnavailable(String),
}

/// Whether an identity, as its ID token describes it, is an authorized admin:
/// a verified email listed in `auth.admins`, or membership of one of
/// `auth.admin_groups`.
pub fn is_authorized_admin(
    settings: &Settings,
    email: Option<&str>,
    email_verified: Option<bool>,
    groups: &[String],
) -> bool {
    let by_email = match email {
        // An email the provider says is unverified proves nothing.
        Some(email) if email_verified != Some(false) => {
            settings.auth.admins.iter().any(|admin| admin.eq_ignore_ascii_case(email))
        }
        _ => false,
    };
    let by_group =
        groups.iter().any(|group| settings.auth.admin_groups.iter().any(|admin_group| admin_group == group));
    by_email || by_group
}

/// Who signed in, as recorded on the account row.
pub(crate) struct Identity {
    pub subject: String,
    pub email: Option<String>,
    pub display_name: Option<String>,
    pub is_admin: bool,
}

/// Creates or refreshes the account row of an identity that just signed in.
pub(crate) async fn upsert_account(
    db: &impl ConnectionTrait,
    identity: Identity,
    now: DateTime<Utc>,
) -> Result<admin_account::Model> {
    let existing = admin_account::Entity::find()
        .filter(admin_account::Column::Subject.eq(identity.subject.as_str()))
        .one(db)
        .await?;
    let model = match existing {
        Some(existing) => {
            let mut row: admin_account::ActiveModel = existing.into();
            row.email = Set(identity.email);
            row.display_name = Set(identity.display_name);
            row.is_admin = Set(identity.is_admin);
            row.last_sign_in_at = Set(now);
            row.update(db).await?
        }
        None => {
            admin_account::ActiveModel {
                id: Set(uuid::Uuid::new_v4().to_string()),
                subject: Set(identity.subject),
                email: Set(identity.email),
                display_name: Set(identity.display_name),
                is_admin: Set(identity.is_admin),
                created_at: Set(now),
                last_sign_in_at: Set(now),
            }
            .insert(db)
            .await?
        }
    };
    Ok(model)
}

/// A random URL-safe token of `bytes` random bytes.
pub(crate) fn random_token(bytes: usize) -> String {
    use base64::Engine as _;
    use rand::RngCore;
    let mut buf = vec![0u8; bytes];
    rand::rngs::OsRng.fill_bytes(&mut buf);
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(buf)
}

/// Hex SHA-256, for storing tokens without storing the tokens.
pub(crate) fn sha256_hex(value: &str) -> String {
    use sha2::Digest;
    sha2::Sha256::digest(value.as_bytes()).iter().map(|byte| format!("{byte:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn settings(admins: &[&str], groups: &[&str]) -> Settings {
        let mut settings = Settings::default();
        settings.auth.admins = admins.iter().map(|s| s.to_string()).collect();
        settings.auth.admin_groups = groups.iter().map(|s| s.to_string()).collect();
        settings
    }

    #[test]
    fn admins_are_listed_emails_or_group_members() {
        let s = settings(&["Ada@Example.test"], &["lore-admins"]);
        assert!(is_authorized_admin(&s, Some("ada@example.test"), Some(true), &[]));
        assert!(is_authorized_admin(&s, Some("ada@example.test"), None, &[]));
        assert!(!is_authorized_admin(&s, Some("ada@example.test"), Some(false), &[]));
        assert!(!is_authorized_admin(&s, Some("bob@example.test"), Some(true), &[]));
        assert!(is_authorized_admin(&s, None, None, &["lore-admins".into()]));
        assert!(!is_authorized_admin(&s, None, None, &["staff".into()]));
    }
}
