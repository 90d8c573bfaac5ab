//! Clients that name themselves by URL: the `client_id` is the address of
//! a client ID metadata document (the OAuth draft the MCP specification
//! recommends for registration), a JSON object with the client's name and
//! redirect URIs that Lore reads instead of a registration.
//!
//! Lore reads the document as the crawler reads a page: its address
//! checked (no private, loopback or link-local address unless
//! `ingest.allow_private_addresses` is set), no redirect followed, at most
//! [`MAX_BYTES`] within [`TIMEOUT`]. What it read is kept as the client's
//! row, and read again when its `Cache-Control` says (within
//! [`MIN_KEEP`]..[`MAX_KEEP`]), the next time the client starts a sign-in.
//! A token or revocation request of a client already read uses the row:
//! the redirect URIs that matter were checked when its code was made.

use std::time::Duration;

use chrono::Utc;
use entity::oauth_client;
use sea_orm::sea_query::OnConflict;
use sea_orm::{EntityTrait, Set};
use serde::Deserialize;
use serde_json::json;

use super::flow::{checked_metadata, refused, Client, Outcome, Registration};
use super::OAuthCode;
use crate::audit::Actor;
use crate::Lore;

/// The most a metadata document may weigh (the MCP specification's 5 KB).
pub const MAX_BYTES: usize = 5 * 1024;
/// How long reading one may take.
pub const TIMEOUT: Duration = Duration::from_secs(5);
/// The shortest time a document read is kept, whatever it says.
pub const MIN_KEEP: Duration = Duration::from_secs(60);
/// The longest.
pub const MAX_KEEP: Duration = Duration::from_secs(24 * 3600);
/// How long when its response does not say.
const DEFAULT_KEEP: Duration = Duration::from_secs(10 * 60);
/// Reads of one host's documents a minute, at most.
const READS_PER_MINUTE: u32 = 30;
/// Reads of any documents a minute, at most (a host is the caller's to pick).
const ALL_READS_PER_MINUTE: u32 = 120;

/// Whether `client_id` names a metadata document rather than a
/// registration (whose ids are Lore's own, `lore_oc_…`).
pub fn is_document_id(client_id: &str) -> bool {
    client_id.starts_with("https://") || client_id.starts_with("http://")
}

/// The fields of a metadata document Lore reads (RFC 7591 §2's names).
#[derive(Deserialize)]
pub struct Document {
    client_id: Option<String>,
    client_name: Option<String>,
    #[serde(default)]
    redirect_uris: Vec<String>,
    logo_uri: Option<String>,
    #[serde(default)]
    grant_types: Vec<String>,
    #[serde(default)]
    response_types: Vec<String>,
    token_endpoint_auth_method: Option<String>,
    client_secret: Option<serde_json::Value>,
}

/// The client whose document is at `client_id`: the row read before while
/// it is fresh (or, unless `current` is asked for, whenever there is one),
/// else the document, read now and kept.
pub(super) async fn resolve(lore: &Lore, client_id: &str, current: bool) -> Outcome<Client> {
    let url = document_url(lore, client_id)?;
    let kept = oauth_client::Entity::find_by_id(client_id.to_owned()).one(&lore.db).await?;
    if let Some(row) = &kept {
        let fresh = row.refresh_after.is_some_and(|after| after > Utc::now());
        if fresh || !current {
            return Ok(Client::decode(row.clone()));
        }
    }
    let host = url.host_str().unwrap_or_default().to_ascii_lowercase();
    let admitted = lore.admit(&format!("oauth:document:{host}"), READS_PER_MINUTE)
        && lore.admit("oauth:documents", ALL_READS_PER_MINUTE);
    if !admitted {
        // Someone else's flood does not lock a known client out.
        if let Some(row) = &kept {
            return Ok(Client::decode(row.clone()));
        }
        return Err(refused(
            OAuthCode::TemporarilyUnavailable,
            "metadata documents were read too often; try again in a minute",
        ));
    }
    let (document, keep) = read(lore, &url).await?;
    let client = validate(client_id, document)?;
    let now = Utc::now();
    let refresh_after =
        now + chrono::Duration::from_std(keep).unwrap_or_else(|_| chrono::Duration::minutes(10));
    let row = oauth_client::ActiveModel {
        id: Set(client_id.to_owned()),
        name: Set(client.name.clone()),
        redirect_uris: Set(json!(client.redirect_uris)),
        logo_uri: Set(client.logo_uri.clone()),
        registration: Set("document".to_owned()),
        created_at: Set(kept.as_ref().map_or(now, |row| row.created_at)),
        refresh_after: Set(Some(refresh_after)),
    };
    // An upsert: two first sign-ins of one client at once both store it.
    let txn = crate::store::begin_write(&lore.db).await.map_err(crate::Error::from)?;
    let upsert = OnConflict::column(oauth_client::Column::Id)
        .update_columns([
            oauth_client::Column::Name,
            oauth_client::Column::RedirectUris,
            oauth_client::Column::LogoUri,
            oauth_client::Column::RefreshAfter,
        ])
        .to_owned();
    oauth_client::Entity::insert(row).on_conflict(upsert).exec_without_returning(&txn).await?;
    if kept.is_none() {
        crate::audit::record(
            &txn,
            &Actor::System,
            "oauth.client_registered",
            Some(client_id),
            json!({"name": client.name, "redirect_uris": client.redirect_uris, "by": "metadata document"}),
        )
        .await
        .map_err(crate::Error::from)?;
    }
    txn.commit().await?;
    Ok(client)
}

/// `client_id` as a document's address: `https` (or, where private
/// addresses may be read, `http`), with a path, no fragment, no user
/// name, and in the form a URL parser writes it (so two spellings are
/// never two clients).
fn document_url(lore: &Lore, client_id: &str) -> Outcome<url::Url> {
    let bad = |why: &str| refused(OAuthCode::InvalidClient, format!("client_id `{client_id}`: {why}"));
    if client_id.len() > 2_000 {
        return Err(refused(OAuthCode::InvalidClient, "client_id is longer than 2,000 characters"));
    }
    let url = url::Url::parse(client_id).map_err(|_| bad("not a URL"))?;
    let lab = lore.settings.ingest.allow_private_addresses;
    if url.scheme() != "https" && !(url.scheme() == "http" && lab) {
        return Err(bad("a client ID metadata document is served over https"));
    }
    if url.path().len() < 2 {
        return Err(bad("a client ID metadata document's URL has a path"));
    }
    if url.fragment().is_some() || !url.username().is_empty() || url.password().is_some() {
        return Err(bad("a client ID metadata document's URL has no fragment and no user name"));
    }
    if url.as_str() != client_id {
        return Err(bad("not in its normal form (dot segments, a default port, upper-case host)"));
    }
    Ok(url)
}

/// Reads the document at `url`: its JSON and how long it may be kept.
async fn read(lore: &Lore, url: &url::Url) -> Outcome<(Document, Duration)> {
    let failed = |why: String| {
        refused(
            OAuthCode::InvalidClient,
            format!("the client's metadata document at {url} could not be read: {why}"),
        )
    };
    let fetched = crate::ingest::web::fetch_small(&lore.settings, url, MAX_BYTES, TIMEOUT)
        .await
        .map_err(|err| failed(err.to_string()))?;
    if fetched.status != 200 {
        let why = if (300..400).contains(&fetched.status) {
            "it redirects elsewhere, and a metadata document is read only at its own address".to_owned()
        } else {
            format!("the server answered {}", fetched.status)
        };
        return Err(failed(why));
    }
    let document: Document = serde_json::from_slice(&fetched.body)
        .map_err(|err| failed(format!("it is not a JSON object: {err}")))?;
    let keep = fetched.max_age.unwrap_or(DEFAULT_KEEP).clamp(MIN_KEEP, MAX_KEEP);
    Ok((document, keep))
}

/// The client a document describes, if it describes one Lore can serve:
/// its own address as `client_id`, a public client (no secret, no other
/// authentication), redirect URIs a registration could have, and only the
/// grants Lore offers.
pub fn validate(client_id: &str, document: Document) -> Outcome<Client> {
    let bad = |why: String| {
        refused(OAuthCode::InvalidClientMetadata, format!("the client's metadata document: {why}"))
    };
    if document.client_id.as_deref() != Some(client_id) {
        return Err(bad("its client_id is not the address it is served at".into()));
    }
    if document.client_secret.is_some() {
        return Err(bad("it carries a client_secret, which a published document cannot keep secret".into()));
    }
    if let Some(method) = document.token_endpoint_auth_method.as_deref().filter(|m| *m != "none") {
        return Err(bad(format!("token_endpoint_auth_method `{method}` is not offered (none)")));
    }
    let host =
        url::Url::parse(client_id).ok().and_then(|u| u.host_str().map(str::to_owned)).unwrap_or_default();
    let asked = Registration {
        redirect_uris: document.redirect_uris,
        client_name: document.client_name,
        logo_uri: document.logo_uri,
        grant_types: document.grant_types,
        response_types: document.response_types,
        token_endpoint_auth_method: None,
    };
    let (name, logo_uri) = checked_metadata(&asked, &host).map_err(|err| bad(err.description))?;
    Ok(Client {
        id: client_id.to_owned(),
        name,
        redirect_uris: asked.redirect_uris,
        logo_uri,
        created_at: Utc::now(),
    })
}
