//! The Access screen: access keys as listed, a new key's one showing of its
//! raw value, and the request that creates one.

use serde::{Deserialize, Serialize};

/// An access key as listed (never its raw value).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct KeyView {
    pub id: String,
    pub name: String,
    /// `secret` or `widget`.
    pub kind: String,
    /// The first characters of the raw key.
    pub prefix: String,
    pub scopes: Vec<String>,
    /// `active` or `revoked`.
    pub status: String,
    pub origins: Vec<String>,
    pub rate_limit_per_minute: Option<i64>,
    pub created_at: String,
    pub last_used_at: Option<String>,
    pub revoked_at: Option<String>,
    pub queries_7d: i64,
    pub estimated_cost_7d: f64,
    /// Its answers of the same 7 days rated helpful, and unhelpful, by
    /// whoever asked them.
    #[serde(default)]
    pub helpful_7d: i64,
    #[serde(default)]
    pub unhelpful_7d: i64,
    /// The application-database user the key acts for (none for keys made
    /// before users existed: they serve `/answer` and `/retrieve` only).
    #[serde(default)]
    pub user: Option<String>,
}

/// A new key: the raw value appears here once and never again.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct CreatedKey {
    pub key: KeyView,
    pub raw_key: String,
    /// For a widget key: the `<script>` tag to paste into a page, loading
    /// the widget from `server.base_url` (the address visitors reach).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub snippet: Option<String>,
    /// For a key with the `mcp` scope: an MCP client's configuration (the
    /// tool server's URL and this key's header), ready to paste.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub assistant_config: Option<String>,
}

/// `POST /admin/keys`. A secret key lists its scopes; a widget key its
/// origins and rate limit.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CreateKeyRequest {
    pub name: String,
    /// `secret` or `widget`.
    pub kind: String,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub scopes: Vec<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub origins: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rate_limit_per_minute: Option<u32>,
    /// The user the key acts for; the `operations` and `mcp` scopes need one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub user: Option<String>,
}

/// An assistant signed in over OAuth, as the Access screen lists it: one
/// live grant (never a token).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ConnectionView {
    pub grant_id: String,
    pub client_id: String,
    /// The name the client registered under (its own claim).
    pub client_name: String,
    pub logo_uri: Option<String>,
    /// Whom its tokens act as: `user NAME` or `an admin`.
    pub acts_as: String,
    pub scopes: Vec<String>,
    /// The tool server its tokens are for.
    pub resource: String,
    pub created_at: String,
    pub last_used_at: Option<String>,
}

#[cfg(feature = "ssr")]
mod from_engine {
    use super::*;
    use crate::wire::time;

    impl From<engine::keys::KeySummary> for KeyView {
        fn from(summary: engine::keys::KeySummary) -> Self {
            let key = summary.key;
            Self {
                id: key.id,
                name: key.name,
                kind: key.kind.key().to_owned(),
                prefix: key.prefix,
                scopes: key.scopes.iter().map(|scope| scope.key().to_owned()).collect(),
                status: key.status.key().to_owned(),
                origins: key.origins,
                rate_limit_per_minute: key.rate_limit_per_minute.map(i64::from),
                created_at: time(key.created_at),
                last_used_at: key.last_used_at.map(time),
                revoked_at: key.revoked_at.map(time),
                queries_7d: summary.queries_7d,
                estimated_cost_7d: summary.estimated_cost_7d,
                helpful_7d: summary.helpful_7d,
                unhelpful_7d: summary.unhelpful_7d,
                user: key.user,
            }
        }
    }

    impl From<engine::oauth::Connection> for ConnectionView {
        fn from(c: engine::oauth::Connection) -> Self {
            Self {
                acts_as: c.subject.label(),
                grant_id: c.grant_id,
                client_id: c.client_id,
                client_name: c.client_name,
                logo_uri: c.logo_uri,
                scopes: c.scopes,
                resource: c.resource,
                created_at: time(c.created_at),
                last_used_at: c.last_used_at.map(time),
            }
        }
    }

    impl From<engine::keys::Issued> for CreatedKey {
        fn from(issued: engine::keys::Issued) -> Self {
            Self {
                key: issued.summary.into(),
                raw_key: issued.raw_key,
                snippet: issued.snippet,
                assistant_config: issued.assistant_config,
            }
        }
    }

    impl From<CreateKeyRequest> for engine::keys::NewKey {
        fn from(r: CreateKeyRequest) -> Self {
            Self {
                name: r.name,
                kind: r.kind,
                scopes: r.scopes,
                origins: r.origins,
                rate_limit_per_minute: r.rate_limit_per_minute,
                user: r.user,
            }
        }
    }
}
