//! SeaORM entities: the shape of Lore's admin records as stored.
//!
//! These types stay on the server. Nothing here crosses the wire: the edge maps
//! engine types to the wire types in `app::wire`.

pub mod access_key;
pub mod admin_account;
pub mod admin_session;
pub mod answer_rating;
pub mod answer_run;
pub mod app_database;
pub mod app_role;
pub mod app_table;
pub mod app_user;
pub mod audit_log;
pub mod bootstrap_token;
pub mod cluster_setting;
pub mod cluster_state;
pub mod content_gap;
pub mod document;
pub mod escalation_tier;
pub mod golden_question;
pub mod index_job;
pub mod key_usage;
pub mod mcp_session;
pub mod metric_latency;
pub mod metric_rollup;
pub mod model_target;
pub mod oauth_client;
pub mod oauth_grant;
pub mod oauth_token;
pub mod oidc_login;
pub mod pinned_answer;
pub mod profile;
pub mod profile_version;
pub mod provider_account;
pub mod role_binding;
pub mod rollup_count;
pub mod source;
pub mod stored_upload;
pub mod target_probe;
