//! The one-time bootstrap sign-in link, for installs with no identity provider.
//!
//! `lore serve` issues a link at start: a random token, stored only as its
//! SHA-256, valid for 15 minutes and once. It is accepted only from loopback,
//! and not through a proxy (a forwarding header means the real client may be
//! anywhere). Issuing a new link invalidates any unused earlier one printed
//! on the same machine; the links of replicas on other machines stay valid.

use std::net::IpAddr;

use chrono::{DateTime, Duration, Utc};
use entity::bootstrap_token;
use sea_orm::sea_query::Expr;
use sea_orm::{ActiveModelTrait, ColumnTrait, Condition, EntityTrait, QueryFilter, Set};

use super::{random_token, sessions, sha256_hex, upsert_account, AuthError, Identity, SessionToken};
use crate::audit::{self, Actor};
use crate::{Corpus, Result};

/// How long a bootstrap link works.
pub const LINK_LIFETIME_MINUTES: i64 = 15;

/// The account the bootstrap link signs in as.
pub const BOOTSTRAP_SUBJECT: &str = "bootstrap";

/// Where a redemption request came from, as the edge saw it.
#[derive(Clone, Copy, Debug)]
pub struct RequestOrigin {
    pub peer: IpAddr,
    /// Whether the request carried `Forwarded` / `X-Forwarded-For` headers.
    pub forwarded: bool,
}

/// Issues a new link token (the raw value, to print once) on this machine.
pub async fn issue(lore: &Corpus, now: DateTime<Utc>) -> Result<String> {
    issue_on(lore, now, &this_machine()).await
}

/// This machine's host name, which names the links it printed.
pub fn this_machine() -> String {
    ["/proc/sys/kernel/hostname", "/etc/hostname"]
        .iter()
        .find_map(|path| std::fs::read_to_string(path).ok())
        .or_else(|| std::env::var("HOSTNAME").ok())
        .map(|name| name.trim().to_owned())
        .filter(|name| !name.is_empty())
        .unwrap_or_else(|| "localhost".to_owned())
}

/// [`issue`] as printed on `machine`: it replaces the unused links printed
/// there (and those of earlier releases, which name no machine), not those
/// of replicas on other machines.
pub async fn issue_on(lore: &Corpus, now: DateTime<Utc>, machine: &str) -> Result<String> {
    if lore.settings.oidc_configured() {
        return Err(AuthError::BootstrapDisabled.into());
    }
    let token = random_token(32);
    let txn = crate::store::begin_write(&lore.db).await?;
    bootstrap_token::Entity::delete_many()
        .filter(bootstrap_token::Column::UsedAt.is_null())
        .filter(
            Condition::any()
                .add(bootstrap_token::Column::IssuedOn.eq(machine))
                .add(bootstrap_token::Column::IssuedOn.is_null()),
        )
        .exec(&txn)
        .await?;
    bootstrap_token::ActiveModel {
        token_hash: Set(sha256_hex(&token)),
        created_at: Set(now),
        expires_at: Set(now + Duration::minutes(LINK_LIFETIME_MINUTES)),
        used_at: Set(None),
        issued_on: Set(Some(machine.to_owned())),
    }
    .insert(&txn)
    .await?;
    txn.commit().await?;
    Ok(token)
}

/// The link to print for a token.
pub fn link(lore: &Corpus, token: &str) -> String {
    format!("{}/auth/bootstrap?token={token}", lore.settings.base_url())
}

/// Redeems a link: exactly once, before it expires, from loopback only.
/// Returns a new admin session.
pub async fn redeem(
    lore: &Corpus,
    token: &str,
    origin: RequestOrigin,
    now: DateTime<Utc>,
) -> Result<SessionToken> {
    if lore.settings.oidc_configured() {
        return Err(AuthError::BootstrapDisabled.into());
    }
    if !origin.peer.is_loopback() || origin.forwarded {
        tracing::warn!(peer = %origin.peer, forwarded = origin.forwarded, "refused a bootstrap link from off the machine");
        return Err(AuthError::BootstrapNotLoopback.into());
    }

    let txn = crate::store::begin_write(&lore.db).await?;
    // One conditional update decides: two concurrent redemptions cannot both win.
    let claimed = bootstrap_token::Entity::update_many()
        .col_expr(bootstrap_token::Column::UsedAt, Expr::value(now))
        .filter(bootstrap_token::Column::TokenHash.eq(sha256_hex(token)))
        .filter(bootstrap_token::Column::UsedAt.is_null())
        .filter(bootstrap_token::Column::ExpiresAt.gt(now))
        .exec(&txn)
        .await?;
    if claimed.rows_affected != 1 {
        return Err(AuthError::BootstrapLinkInvalid.into());
    }
    let account = upsert_account(
        &txn,
        Identity {
            subject: BOOTSTRAP_SUBJECT.to_owned(),
            email: None,
            display_name: Some("Bootstrap admin".to_owned()),
            email_verified: None,
            groups: Vec::new(),
            is_admin: true,
        },
        now,
    )
    .await?;
    audit::record(
        &txn,
        &Actor::Account(account.id.clone()),
        "auth.bootstrap_sign_in",
        None,
        serde_json::json!({}),
    )
    .await?;
    txn.commit().await?;
    sessions::create(lore, &account.id, now).await
}
