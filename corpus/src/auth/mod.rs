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
///
/// "Verified" means the token said `email_verified: true`. A token without the
/// claim proves nothing about the email (a provider may let users type any
/// address), so it counts only when `auth.accept_unverified_email` is set, for
/// providers that never send the claim. An explicit `false` never counts.
pub fn is_authorized_admin(
    settings: &Settings,
    email: Option<&str>,
    email_verified: Option<bool>,
    groups: &[String],
) -> bool {
    let verified = match email_verified {
        Some(verified) => verified,
        None => settings.auth.accept_unverified_email,
    };
    let by_email = match email {
        Some(email) if verified => settings.auth.admins.iter().any(|admin| admin.eq_ignore_ascii_case(email)),
        _ => false,
    };
    let by_group =
        groups.iter().any(|group| settings.auth.admin_groups.iter().any(|admin_group| admin_group == group));
    by_email || by_group
}

/// Whether a signed-in account is an authorized admin under the settings in
/// force now, not those of its sign-in: every console request asks, so a
/// session does not outlive its holder's removal from `auth.admins` (at the
/// next restart, which is when settings change).
///
/// The bootstrap account is an admin only while no identity provider is
/// configured; an identity provider's account only while that provider is
/// the configured one, and then by what its ID token said at sign-in.
pub fn account_is_admin(settings: &Settings, account: &admin_account::Model) -> bool {
    if account.subject == bootstrap::BOOTSTRAP_SUBJECT {
        return !settings.oidc_configured();
    }
    if !claims_recorded(account) {
        return false;
    }
    let Some(issuer) = settings.auth.oidc.issuer.as_deref() else {
        return false;
    };
    let from_this_issuer = account
        .subject
        .strip_prefix("oidc:")
        .and_then(|rest| rest.strip_prefix(issuer.trim_end_matches('/')))
        .is_some_and(|rest| rest.starts_with('#'));
    // Unreadable groups fail closed: no admin rights from a corrupt row.
    let groups: Vec<String> = match account.groups.clone().map(|g| crate::store::decode("account groups", g))
    {
        None => Vec::new(),
        Some(Ok(groups)) => groups,
        Some(Err(err)) => {
            tracing::warn!(account = %account.id, %err, "an account's recorded groups cannot be read: not an admin");
            return false;
        }
    };
    from_this_issuer
        && is_authorized_admin(settings, account.email.as_deref(), account.email_verified, &groups)
}

/// Whether the account row holds what its last ID token said. Rows written
/// before Lore kept the claims have none (`groups` is NULL): their rights
/// cannot be re-derived, and reading the missing `email_verified` as "the
/// token had no such claim" could make an admin of an account whose token
/// said `false`. Such an account signs in again.
pub(crate) fn claims_recorded(account: &admin_account::Model) -> bool {
    account.subject == bootstrap::BOOTSTRAP_SUBJECT || account.groups.is_some()
}

/// Who signed in, as recorded on the account row.
pub(crate) struct Identity {
    pub subject: String,
    pub email: Option<String>,
    pub display_name: Option<String>,
    pub email_verified: Option<bool>,
    pub groups: Vec<String>,
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
            row.email_verified = Set(identity.email_verified);
            row.groups = Set(Some(serde_json::json!(identity.groups)));
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
                email_verified: Set(identity.email_verified),
                groups: Set(Some(serde_json::json!(identity.groups))),
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
    fn admins_are_listed_verified_emails_or_group_members() {
        let s = settings(&["Ada@Example.test"], &["lore-admins"]);
        assert!(is_authorized_admin(&s, Some("ada@example.test"), Some(true), &[]));
        assert!(!is_authorized_admin(&s, Some("ada@example.test"), Some(false), &[]));
        assert!(!is_authorized_admin(&s, Some("bob@example.test"), Some(true), &[]));
        assert!(is_authorized_admin(&s, None, None, &["lore-admins".into()]));
        assert!(!is_authorized_admin(&s, None, None, &["staff".into()]));
    }

    #[test]
    fn an_email_without_a_verification_claim_counts_only_when_accepted() {
        let mut s = settings(&["ada@example.test"], &[]);
        assert!(!is_authorized_admin(&s, Some("ada@example.test"), None, &[]));
        s.auth.accept_unverified_email = true;
        assert!(is_authorized_admin(&s, Some("ada@example.test"), None, &[]));
        // A provider that says "unverified" is believed either way.
        assert!(!is_authorized_admin(&s, Some("ada@example.test"), Some(false), &[]));
    }

    fn account(subject: &str, email: &str, groups: &[&str]) -> admin_account::Model {
        admin_account::Model {
            id: "a1".into(),
            subject: subject.into(),
            email: Some(email.into()),
            display_name: None,
            is_admin: true,
            created_at: Utc::now(),
            last_sign_in_at: Utc::now(),
            email_verified: Some(true),
            groups: Some(serde_json::json!(groups)),
        }
    }

    #[test]
    fn admin_rights_follow_the_settings_in_force_not_those_of_the_sign_in() {
        let mut s = settings(&["ada@example.test"], &["lore-admins"]);
        s.auth.oidc.issuer = Some("https://id.example.test/".into());
        let ada = account("oidc:https://id.example.test#ada", "ada@example.test", &[]);
        let bob = account("oidc:https://id.example.test#bob", "bob@example.test", &["lore-admins"]);
        assert!(account_is_admin(&s, &ada) && account_is_admin(&s, &bob));

        // Removed from the lists: no longer admins, whatever the row says.
        s.auth.admins.clear();
        s.auth.admin_groups.clear();
        assert!(!account_is_admin(&s, &ada) && !account_is_admin(&s, &bob));

        // Another identity provider's account with the same email is not this one's.
        let s = {
            let mut s = settings(&["ada@example.test"], &[]);
            s.auth.oidc.issuer = Some("https://other.example.test".into());
            s
        };
        assert!(!account_is_admin(&s, &ada));
        let prefix_trick = account("oidc:https://other.example.test.evil#ada", "ada@example.test", &[]);
        assert!(!account_is_admin(&s, &prefix_trick));

        // With no identity provider, only the bootstrap account is an admin...
        let plain = settings(&["ada@example.test"], &[]);
        let bootstrap = account(bootstrap::BOOTSTRAP_SUBJECT, "", &[]);
        assert!(account_is_admin(&plain, &bootstrap) && !account_is_admin(&plain, &ada));
        // ...and once one is configured, the bootstrap account is not.
        assert!(!account_is_admin(&s, &bootstrap));

        // An account recorded before the claims were kept is no admin, even
        // when unverified emails are accepted: its token may have said `false`.
        let mut s = settings(&["ada@example.test"], &[]);
        s.auth.oidc.issuer = Some("https://id.example.test".into());
        s.auth.accept_unverified_email = true;
        let old = admin_account::Model { email_verified: None, groups: None, ..ada.clone() };
        assert!(account_is_admin(
            &s,
            &admin_account::Model { groups: Some(serde_json::json!([])), ..old.clone() }
        ));
        assert!(!claims_recorded(&old) && !account_is_admin(&s, &old));
    }
}
