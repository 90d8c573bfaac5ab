//! Typed settings, as the operator contract of DESIGN.md names them.
//!
//! Loading (compiled defaults → `lore.toml` → `LORE_*` environment) happens at
//! the edge, in `server::config`; this module only says what the settings are,
//! what they default to, and how derived values (database URL, base URL, ...)
//! follow from the data directory and the bind address.

use std::collections::BTreeMap;
use std::fmt;
use std::net::SocketAddr;
use std::path::PathBuf;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// Where the embedding model lives by default, below `models.dir`.
pub const DEFAULT_EMBEDDING_MODEL: &str = "sentence-transformers/all-MiniLM-L6-v2";

#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct Settings {
    #[serde(default)]
    pub server: ServerSettings,
    #[serde(default = "default_data_dir")]
    pub data_dir: PathBuf,
    #[serde(default)]
    pub database: DatabaseSettings,
    #[serde(default)]
    pub vectors: VectorSettings,
    #[serde(default)]
    pub models: ModelSettings,
    #[serde(default)]
    pub auth: AuthSettings,
    #[serde(default)]
    pub ingest: IngestSettings,
    #[serde(default)]
    pub providers: ProvidersSettings,
    #[serde(default)]
    pub answer: AnswerSettings,
    #[serde(default)]
    pub mcp: McpSettings,
    #[serde(default)]
    pub appdb: AppDbSettings,
    #[serde(default)]
    pub metrics: MetricsSettings,
    /// `text` (default) or `json` (`LORE_LOG_FORMAT=json`).
    #[serde(default)]
    pub log_format: LogFormat,
    /// 32 bytes, base64: encrypts provider keys and derives the session signing
    /// key. When unset, a key file is created (mode 0600) in the data directory.
    #[serde(default)]
    pub master_key: Option<Secret>,
}

impl Default for Settings {
    fn default() -> Self {
        Self {
            server: ServerSettings::default(),
            data_dir: default_data_dir(),
            database: DatabaseSettings::default(),
            vectors: VectorSettings::default(),
            models: ModelSettings::default(),
            auth: AuthSettings::default(),
            ingest: IngestSettings::default(),
            providers: ProvidersSettings::default(),
            answer: AnswerSettings::default(),
            mcp: McpSettings::default(),
            appdb: AppDbSettings::default(),
            metrics: MetricsSettings::default(),
            log_format: LogFormat::default(),
            master_key: None,
        }
    }
}

impl Settings {
    /// `server.base_url`, or `http://{bind}` when unset. Never ends with `/`.
    pub fn base_url(&self) -> String {
        match &self.server.base_url {
            Some(url) => url.trim_end_matches('/').to_owned(),
            None => format!("http://{}", self.server.bind),
        }
    }

    /// `database.url`, or a SQLite file in the data directory.
    pub fn database_url(&self) -> String {
        match &self.database.url {
            Some(url) => url.expose().to_owned(),
            None => format!("sqlite://{}/lore.db?mode=rwc", self.data_dir.display()),
        }
    }

    /// `vectors.uri`, or a LanceDB directory in the data directory.
    pub fn vectors_uri(&self) -> String {
        match &self.vectors.uri {
            Some(uri) => uri.clone(),
            None => self.data_dir.join("lancedb").display().to_string(),
        }
    }

    /// Where the vectors live: [`Settings::vectors_uri`] with
    /// `vectors.storage_options`.
    pub fn vectors(&self) -> Location {
        Location { uri: self.vectors_uri(), options: self.vectors.storage_options.clone() }
    }

    /// `models.dir`, or the machine's cache of model files, shared by
    /// every data directory as the model hubs' own caches are:
    /// `$XDG_CACHE_HOME/lore/models`, else `~/.cache/lore/models` (and
    /// `models/` in the data directory only when there is no home).
    pub fn models_dir(&self) -> PathBuf {
        match &self.models.dir {
            Some(dir) => dir.clone(),
            None => machine_models_dir(
                std::env::var_os("XDG_CACHE_HOME").map(PathBuf::from),
                std::env::var_os("HOME").map(PathBuf::from),
            )
            .unwrap_or_else(|| self.data_dir.join("models")),
        }
    }

    /// Where earlier versions kept model files: `models/` in the data
    /// directory. Still looked in, so an install that fetched them there
    /// does not fetch them again.
    pub fn legacy_models_dir(&self) -> PathBuf {
        self.data_dir.join("models")
    }

    /// Whether an identity provider is configured (otherwise the bootstrap link
    /// is the way in).
    pub fn oidc_configured(&self) -> bool {
        self.auth.oidc.issuer.is_some()
    }

    /// Problems that make this configuration unable to work as intended, each
    /// a sentence for the Readiness panel. Empty when all is well.
    pub fn integrity_problems(&self) -> Vec<String> {
        let mut problems = Vec::new();
        if let Some(base) = &self.server.base_url {
            match url::Url::parse(base) {
                Ok(url) if matches!(url.scheme(), "http" | "https") => {}
                _ => problems.push(format!("server.base_url must be an http(s) URL, not {base:?}.")),
            }
        }
        let oidc = &self.auth.oidc;
        if oidc.issuer.is_some() {
            if oidc.client_id.is_none() {
                problems.push("auth.oidc.issuer is set but auth.oidc.client_id is not.".into());
            }
            if self.auth.admins.is_empty() && self.auth.admin_groups.is_empty() {
                problems.push(
                    "An identity provider is configured but auth.admins and auth.admin_groups are empty, so nobody can administer Lore."
                        .into(),
                );
            }
        } else if oidc.client_id.is_some() || oidc.client_secret.is_some() {
            problems.push("auth.oidc.client_id is set but auth.oidc.issuer is not.".into());
        }
        let vectors = self.vectors_uri();
        if let Some(scheme) = object_store_scheme(&vectors) {
            if !OBJECT_STORE_SCHEMES.contains(&scheme) {
                problems.push(format!(
                    "vectors.uri names a {scheme}:// store; this build reaches {} and local directories.",
                    OBJECT_STORE_SCHEMES.iter().map(|s| format!("{s}://")).collect::<Vec<_>>().join(", ")
                ));
            }
        }
        if self.auth.session.token_minutes == 0 || self.auth.session.lifetime_hours == 0 {
            problems.push("auth.session durations must be greater than zero.".into());
        }
        problems
    }

    /// The effective settings as shown to an operator (`lore config`): derived
    /// values filled in, secrets and URL passwords redacted.
    pub fn effective_view(&self) -> serde_json::Value {
        let mut view = serde_json::to_value(self).unwrap_or(serde_json::Value::Null);
        if let Some(map) = view.as_object_mut() {
            if let Some(server) = map.get_mut("server").and_then(|v| v.as_object_mut()) {
                server.insert("base_url".into(), self.base_url().into());
            }
            if let Some(db) = map.get_mut("database").and_then(|v| v.as_object_mut()) {
                db.insert("url".into(), redact_url_password(&self.database_url()).into());
            }
            if let Some(vectors) = map.get_mut("vectors").and_then(|v| v.as_object_mut()) {
                vectors.insert("uri".into(), redact_url_password(&self.vectors_uri()).into());
                let options = serde_json::to_value(self.vectors.shown_options()).unwrap_or_default();
                vectors.insert("storage_options".into(), options);
            }
            if let Some(models) = map.get_mut("models").and_then(|v| v.as_object_mut()) {
                models.insert("dir".into(), self.models_dir().display().to_string().into());
            }
            if let (Some(ingest), Some(proxy)) =
                (map.get_mut("ingest").and_then(|v| v.as_object_mut()), &self.ingest.proxy)
            {
                ingest.insert("proxy".into(), redact_url_password(proxy.expose()).into());
            }
        }
        view
    }
}

fn default_data_dir() -> PathBuf {
    PathBuf::from("./data")
}

/// Whether a `vectors.storage_options` key holds a credential.
fn is_secret_option(key: &str) -> bool {
    let key = key.to_ascii_lowercase();
    ["secret", "token", "password", "credential"].iter().any(|part| key.contains(part))
}

/// Replaces the password of a `scheme://user:password@host` URL with `[redacted]`.
pub fn redact_url_password(raw: &str) -> String {
    match url::Url::parse(raw) {
        Ok(mut url) if url.password().is_some() => {
            // set_password only fails for URLs that cannot have one.
            let _ = url.set_password(Some(Secret::REDACTED));
            url.to_string()
        }
        _ => raw.to_owned(),
    }
}

#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct ServerSettings {
    #[serde(default = "default_bind")]
    pub bind: SocketAddr,
    #[serde(default)]
    pub base_url: Option<String>,
    /// Built console assets (`pkg/lore.js`, `pkg/lore_bg.wasm`, `pkg/lore.css`).
    /// Defaults to `site/` next to the directory of the `lore` executable,
    /// which is where `scripts/lib.sh` builds it.
    #[serde(default)]
    pub site_root: Option<PathBuf>,
}

impl Default for ServerSettings {
    fn default() -> Self {
        Self { bind: default_bind(), base_url: None, site_root: None }
    }
}

fn default_bind() -> SocketAddr {
    SocketAddr::from(([127, 0, 0, 1], 3000))
}

#[derive(Clone, Debug, Default, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct DatabaseSettings {
    /// `sqlite://…` or `postgres://…`. May carry a password, hence secret.
    #[serde(default)]
    pub url: Option<Secret>,
}

/// Where LanceDB keeps its tables: a local directory, or an object-store
/// URI (`s3://bucket/prefix`) with the options its client needs.
///
/// For S3 and S3-compatible stores the options are object_store's keys
/// (`aws_endpoint`, `aws_region`, `allow_http`, ...); whatever they leave
/// out is read from the environment as the AWS SDKs read it: `AWS_*`
/// variables first, then the shared config and credentials files, web
/// identity and the instance metadata service. Several processes may write
/// the same tables: on an object store each commit is a conditional write
/// (`If-None-Match: *` on the manifest of the next version), so of two
/// writers committing at once one succeeds and the other retries on top of
/// it; on a local directory the same is an atomic create.
#[derive(Clone, Default, PartialEq, Eq)]
pub struct Location {
    pub uri: String,
    pub options: BTreeMap<String, String>,
}

impl Location {
    /// A location with no options: a local directory, or an object store
    /// configured wholly by the environment.
    pub fn new(uri: impl Into<String>) -> Self {
        Location { uri: uri.into(), options: BTreeMap::new() }
    }

    /// Whether the tables live in an object store rather than a directory.
    pub fn is_object_store(&self) -> bool {
        object_store_scheme(&self.uri).is_some()
    }
}

/// The URI and the options' names: never their values, which hold keys.
impl std::fmt::Debug for Location {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Location").field("uri", &self.uri).field("options", &self.options.keys()).finish()
    }
}

impl From<&str> for Location {
    fn from(uri: &str) -> Self {
        Location::new(uri)
    }
}

/// The scheme of `uri` when it names an object store (`s3` for `s3://...`),
/// `None` for a directory (a path, or a `file://` URL).
pub fn object_store_scheme(uri: &str) -> Option<&str> {
    let (scheme, _) = uri.split_once("://")?;
    let scheme_like =
        !scheme.is_empty() && scheme.chars().all(|c| c.is_ascii_alphanumeric() || "+-.".contains(c));
    (scheme_like && scheme != "file").then_some(scheme)
}

/// The object stores this build can reach: S3 and S3-compatible ones.
pub const OBJECT_STORE_SCHEMES: &[&str] = &["s3"];

#[derive(Clone, Default, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct VectorSettings {
    /// A directory, or an object-store URI (`s3://bucket/prefix`) that
    /// several replicas share (docs/deployment.md).
    #[serde(default)]
    pub uri: Option<String>,
    /// Options for the object store's client, by object_store's names
    /// (`aws_endpoint`, `aws_region`, `allow_http`, ...). What is not set
    /// here is read from the environment as the AWS SDKs read it.
    #[serde(default, deserialize_with = "option_values")]
    pub storage_options: BTreeMap<String, String>,
}

/// Storage options as strings, as the store's client takes them, whatever
/// the source typed them as (`LORE_VECTORS__STORAGE_OPTIONS__ALLOW_HTTP=true`
/// arrives as a boolean).
fn option_values<'de, D: Deserializer<'de>>(deserializer: D) -> Result<BTreeMap<String, String>, D::Error> {
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum Scalar {
        Text(String),
        Flag(bool),
        Whole(i64),
        Number(f64),
    }
    let raw = BTreeMap::<String, Scalar>::deserialize(deserializer)?;
    Ok(raw
        .into_iter()
        .map(|(key, value)| {
            let value = match value {
                Scalar::Text(text) => text,
                Scalar::Flag(flag) => flag.to_string(),
                Scalar::Whole(whole) => whole.to_string(),
                Scalar::Number(number) => number.to_string(),
            };
            (key, value)
        })
        .collect())
}

impl VectorSettings {
    /// `storage_options` with every credential replaced by `[redacted]`.
    fn shown_options(&self) -> BTreeMap<&str, &str> {
        self.storage_options
            .iter()
            .map(|(key, value)| {
                (key.as_str(), if is_secret_option(key) { Secret::REDACTED } else { value.as_str() })
            })
            .collect()
    }
}

impl fmt::Debug for VectorSettings {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("VectorSettings")
            .field("uri", &self.uri.as_deref().map(redact_url_password))
            .field("storage_options", &self.shown_options())
            .finish()
    }
}

#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct ModelSettings {
    #[serde(default)]
    pub dir: Option<PathBuf>,
    /// The on-CPU embedding model (a Hugging Face repository name).
    #[serde(default = "default_embedding_model")]
    pub embedding: String,
    /// How the on-CPU model holds its dense weights for what indexing
    /// stores: `f32` as published, or `q8` (8-bit weights in integer
    /// arithmetic: about twice the throughput, vectors within 0.004 of the
    /// reference in cosine).
    #[serde(default)]
    pub embedding_precision: Precision,
    /// The same for the one query or question embedded at answer time,
    /// where latency counts: `q8` by default.
    #[serde(default = "default_query_precision")]
    pub query_precision: Precision,
    /// Where model files are downloaded from when they are not on disk (a
    /// Hugging Face compatible hub or mirror).
    #[serde(default = "default_hub_url")]
    pub hub_url: String,
}

impl ModelSettings {
    /// The on-CPU model's precisions for documents and for queries.
    pub fn precisions(&self) -> Precisions {
        Precisions { documents: self.embedding_precision, queries: self.query_precision }
    }
}

impl Default for ModelSettings {
    fn default() -> Self {
        Self {
            dir: None,
            embedding: default_embedding_model(),
            embedding_precision: Default::default(),
            query_precision: default_query_precision(),
            hub_url: default_hub_url(),
        }
    }
}

fn default_query_precision() -> Precision {
    Precision::Q8
}

/// How the dense layers' weights are held.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Precision {
    /// The weights as published (f32).
    #[default]
    F32,
    /// 8-bit weights with a scale per output, multiplied in integer
    /// arithmetic (`kernels::int8`): a quarter of the weights' memory
    /// (widened to 16-bit lanes only as they are loaded) and about twice the
    /// multiply rate of f32 (16 products per instruction instead of 8).
    Q8,
}

impl Precision {
    pub fn key(self) -> &'static str {
        match self {
            Precision::F32 => "f32",
            Precision::Q8 => "q8",
        }
    }
}

/// The precisions of the dense weights: for what indexing stores, and for
/// single queries at answer time.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Precisions {
    pub documents: Precision,
    pub queries: Precision,
}

impl Precisions {
    /// The same precision for both.
    pub fn uniform(precision: Precision) -> Self {
        Self { documents: precision, queries: precision }
    }
}

fn default_hub_url() -> String {
    "https://huggingface.co".to_owned()
}

fn default_embedding_model() -> String {
    DEFAULT_EMBEDDING_MODEL.to_owned()
}

#[derive(Clone, Debug, Default, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct AuthSettings {
    #[serde(default)]
    pub oidc: OidcSettings,
    /// Emails of authorized admins. Accepts a list or a comma-separated string
    /// (`LORE_AUTH__ADMINS=a@example.com,b@example.com`).
    #[serde(default, deserialize_with = "list_or_comma_string")]
    pub admins: Vec<String>,
    /// Members of any of these groups (from the ID token's groups claim) are
    /// authorized admins.
    #[serde(default, deserialize_with = "list_or_comma_string")]
    pub admin_groups: Vec<String>,
    /// Let a listed email sign in as admin when the ID token does not say
    /// whether it is verified (no `email_verified` claim). Off: such an email
    /// proves nothing. Set it only for a provider that never sends the claim
    /// and does not let users choose their email.
    #[serde(default)]
    pub accept_unverified_email: bool,
    #[serde(default)]
    pub session: SessionSettings,
    /// The tool server's OAuth authorization server.
    #[serde(default)]
    pub mcp: McpAuthSettings,
}

/// How assistants sign in to the tool server over OAuth 2.1.
#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct McpAuthSettings {
    /// Which application-database user a person who signs in acts as: the
    /// one whose username is their verified `email`, or their identity
    /// provider `subject`. An admin no user matches acts as an admin.
    #[serde(default)]
    pub users_by: UsersBy,
    /// The lifetime of an access token.
    #[serde(default = "default_access_token_minutes")]
    pub access_token_minutes: u32,
    /// The lifetime of a refresh token (each use gives a new one).
    #[serde(default = "default_refresh_token_days")]
    pub refresh_token_days: u32,
    /// The longest a grant lasts, refreshes included: after it the person
    /// signs the assistant in again.
    #[serde(default = "default_grant_days")]
    pub grant_days: u32,
    /// Dynamic client registrations accepted per minute, per process.
    #[serde(default = "default_registrations_per_minute")]
    pub registrations_per_minute: u32,
    /// An external authorization server, by its issuer URL: the tool
    /// servers then accept its JWT access tokens (and no others), and
    /// Lore's own authorization server is off.
    #[serde(default)]
    pub issuer: Option<String>,
    /// The audience the external issuer's tokens must carry; by default
    /// each tool server's own URL (its resource).
    #[serde(default)]
    pub audience: Option<String>,
    /// The claim of an external issuer's token that is a Lore username.
    #[serde(default = "default_user_claim")]
    pub user_claim: String,
}

impl Default for McpAuthSettings {
    fn default() -> Self {
        Self {
            users_by: UsersBy::default(),
            access_token_minutes: default_access_token_minutes(),
            refresh_token_days: default_refresh_token_days(),
            grant_days: default_grant_days(),
            registrations_per_minute: default_registrations_per_minute(),
            issuer: None,
            audience: None,
            user_claim: default_user_claim(),
        }
    }
}

/// See [`McpAuthSettings::users_by`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum UsersBy {
    #[default]
    Email,
    Subject,
}

fn default_access_token_minutes() -> u32 {
    60
}

fn default_refresh_token_days() -> u32 {
    30
}

fn default_grant_days() -> u32 {
    90
}

fn default_registrations_per_minute() -> u32 {
    30
}

fn default_user_claim() -> String {
    "sub".to_owned()
}

#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct OidcSettings {
    #[serde(default)]
    pub issuer: Option<String>,
    #[serde(default)]
    pub client_id: Option<String>,
    /// Absent for a public client (PKCE only).
    #[serde(default)]
    pub client_secret: Option<Secret>,
    /// The ID-token claim that lists the account's groups.
    #[serde(default = "default_groups_claim")]
    pub groups_claim: String,
}

impl Default for OidcSettings {
    fn default() -> Self {
        Self { issuer: None, client_id: None, client_secret: None, groups_claim: default_groups_claim() }
    }
}

fn default_groups_claim() -> String {
    "groups".to_owned()
}

#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct SessionSettings {
    /// Lifetime of the signed cookie token; it is re-issued while the session lives.
    #[serde(default = "default_token_minutes")]
    pub token_minutes: u32,
    /// Absolute lifetime of a console session.
    #[serde(default = "default_lifetime_hours")]
    pub lifetime_hours: u32,
}

impl Default for SessionSettings {
    fn default() -> Self {
        Self { token_minutes: default_token_minutes(), lifetime_hours: default_lifetime_hours() }
    }
}

fn default_token_minutes() -> u32 {
    30
}

fn default_lifetime_hours() -> u32 {
    12
}

#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct IngestSettings {
    /// Lets crawls reach private, loopback and link-local addresses (tests).
    #[serde(default)]
    pub allow_private_addresses: bool,
    /// An HTTP(S) proxy every crawl request goes through, such as
    /// `http://proxy.internal:3128`. Unset (the default), crawls connect
    /// directly and ignore `HTTP_PROXY`/`HTTPS_PROXY`/`ALL_PROXY`, which would
    /// otherwise hide the targets from the private-address check. With a
    /// proxy, Lore still resolves and checks every target itself.
    #[serde(default)]
    pub proxy: Option<Secret>,
    /// A PEM file of further root certificates trusted when Lore fetches
    /// what someone named (crawls, client metadata documents): an
    /// organisation's own certificate authority. The public roots are
    /// always trusted.
    #[serde(default)]
    pub ca_file: Option<std::path::PathBuf>,
    /// The largest file an upload source accepts (default 50 MiB).
    #[serde(default = "default_upload_max_bytes")]
    pub upload_max_bytes: u64,
    /// Pages a crawl fetches at once from one site.
    #[serde(default = "default_crawl_concurrency")]
    pub crawl_concurrency: usize,
    /// A running job whose heartbeat is older than this was cut short (its
    /// process died) and is resumed.
    #[serde(default = "default_job_lease_seconds")]
    pub job_lease_seconds: u64,
}

impl Default for IngestSettings {
    fn default() -> Self {
        Self {
            allow_private_addresses: false,
            proxy: None,
            ca_file: None,
            upload_max_bytes: default_upload_max_bytes(),
            crawl_concurrency: default_crawl_concurrency(),
            job_lease_seconds: default_job_lease_seconds(),
        }
    }
}

/// Model providers.
#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct ProvidersSettings {
    /// A target whose last successful probe is older than this is `stale`
    /// and cannot be bound to a role until probed again.
    #[serde(default = "default_probe_max_age_days")]
    pub probe_max_age_days: u32,
    /// How long one provider call may take (probe, completion, embedding).
    #[serde(default = "default_provider_timeout_seconds")]
    pub request_timeout_seconds: u64,
    /// How many generations the embedded model runs at once; the rest wait
    /// for a permit (within the request timeout). Each one uses every core.
    #[serde(default = "default_embedded_concurrency")]
    pub embedded_concurrency: u32,
}

impl Default for ProvidersSettings {
    fn default() -> Self {
        Self {
            probe_max_age_days: default_probe_max_age_days(),
            request_timeout_seconds: default_provider_timeout_seconds(),
            embedded_concurrency: default_embedded_concurrency(),
        }
    }
}

fn default_embedded_concurrency() -> u32 {
    1
}

fn default_probe_max_age_days() -> u32 {
    7
}

fn default_provider_timeout_seconds() -> u64 {
    120
}

/// The answer pipeline.
#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct AnswerSettings {
    /// The share of a statement's content words its passage must contain
    /// for the grounding check to count it as supported (0 to 1).
    #[serde(default = "default_grounding_min_support")]
    pub grounding_min_support: f32,
    /// Claims the grounding check passes by less than this margin (0 to 1)
    /// go to a model for a second opinion before the answer is served; 0
    /// turns the second opinion off.
    #[serde(default = "default_verification_margin")]
    pub verification_margin: f32,
    /// A statement whose words the grounding check refused is still
    /// supported by a span that keeps its facts, negation and named subject
    /// when the embedding model finds the two at least this similar in
    /// meaning (cosine, 0 to 1). 0, the default, turns it off: MiniLM finds
    /// some wrong statements as close as right ones (`docs/decisions.md`).
    #[serde(default = "default_paraphrase_min_similarity")]
    pub paraphrase_min_similarity: f32,
}

impl Default for AnswerSettings {
    fn default() -> Self {
        Self {
            grounding_min_support: default_grounding_min_support(),
            verification_margin: default_verification_margin(),
            paraphrase_min_similarity: default_paraphrase_min_similarity(),
        }
    }
}

fn default_grounding_min_support() -> f32 {
    0.5
}

fn default_verification_margin() -> f32 {
    0.2
}

fn default_paraphrase_min_similarity() -> f32 {
    0.0
}

impl IngestSettings {
    pub fn job_lease(&self) -> std::time::Duration {
        std::time::Duration::from_secs(self.job_lease_seconds.max(1))
    }
}

fn default_upload_max_bytes() -> u64 {
    50 * 1024 * 1024
}

fn default_crawl_concurrency() -> usize {
    2
}

fn default_job_lease_seconds() -> u64 {
    30
}

/// Prometheus text metrics at `/metrics`: off by default; with a key, a
/// scrape must send `Authorization: Bearer <key>`.
#[derive(Clone, Debug, Default, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct MetricsSettings {
    #[serde(default)]
    pub enabled: bool,
    #[serde(default)]
    pub key: Option<Secret>,
}

/// The file `set_configuration` writes in the data directory: JSON in the
/// configuration file's shape, read at start above the configuration file
/// and below the environment.
pub const OVERLAY_FILE: &str = "configuration.json";

pub fn overlay_path(data_dir: &std::path::Path) -> PathBuf {
    data_dir.join(OVERLAY_FILE)
}

/// The application database: `schema` is the path of the schema file
/// (GraphQL SDL), applied at start and by `lore schema apply`; a relative
/// path is read from the working directory.
#[derive(Clone, Debug, Default, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct AppDbSettings {
    #[serde(default)]
    pub schema: Option<PathBuf>,
}

#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct McpSettings {
    #[serde(default)]
    pub session: McpSessionSettings,
    /// The application profile at `{base_url}/mcp`: on unless `enabled = false`.
    #[serde(default)]
    pub application: McpApplicationSettings,
    /// The operations profile at `{base_url}/operation/mcp`: on when this
    /// block is present (`LORE_MCP__OPERATIONS__ENABLED=true` from the
    /// environment).
    #[serde(default)]
    pub operations: Option<McpOperationsSettings>,
    /// Tool calls a key may make a minute (a key's own rate limit, when
    /// lower, applies too).
    #[serde(rename = "toolCallsPerMinute", alias = "toolcallsperminute", default = "default_tool_calls")]
    pub tool_calls_per_minute: u32,
}

impl Default for McpSettings {
    fn default() -> Self {
        Self {
            session: McpSessionSettings::default(),
            application: McpApplicationSettings::default(),
            operations: None,
            tool_calls_per_minute: default_tool_calls(),
        }
    }
}

fn default_tool_calls() -> u32 {
    600
}

#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct McpApplicationSettings {
    #[serde(default = "yes")]
    pub enabled: bool,
    /// Admit requests with no credentials as anonymous sessions that see and
    /// call the resources' custom tools only, with an empty user (SPEC's
    /// custom tools). Off by default: every session is a user's.
    #[serde(rename = "anonymousCustomTools", alias = "anonymouscustomtools", default)]
    pub anonymous_custom_tools: bool,
}

impl Default for McpApplicationSettings {
    fn default() -> Self {
        Self { enabled: true, anonymous_custom_tools: false }
    }
}

fn yes() -> bool {
    true
}

/// Which operations the operations profile offers: `allow` and `deny` are
/// names or globs with `*` (`describe_*`); `get_*` in `allow` is not a
/// wildcard over the excluded `get_` operations (SPEC).
#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct McpOperationsSettings {
    #[serde(default = "yes")]
    pub enabled: bool,
    #[serde(default = "default_allow", deserialize_with = "list_or_comma_string")]
    pub allow: Vec<String>,
    #[serde(default, deserialize_with = "list_or_comma_string")]
    pub deny: Vec<String>,
}

impl Default for McpOperationsSettings {
    fn default() -> Self {
        Self { enabled: true, allow: default_allow(), deny: Vec::new() }
    }
}

/// SPEC's default allow list of the operations profile.
pub fn default_allow() -> Vec<String> {
    [
        "describe_*",
        "list_*",
        "search_*",
        "get_job",
        "get_status",
        "get_analytics",
        "get_metrics",
        "system_information",
        "read_log",
        "read_audit_log",
    ]
    .map(String::from)
    .to_vec()
}

#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct McpSessionSettings {
    // Environment keys arrive lower-cased (`LORE_MCP__SESSION__IDLETIMEOUTSECONDS`),
    // file keys as the spec spells them.
    #[serde(rename = "idleTimeoutSeconds", alias = "idletimeoutseconds", default = "default_idle_timeout")]
    pub idle_timeout_seconds: u64,
    #[serde(rename = "allowClientDelete", alias = "allowclientdelete", default)]
    pub allow_client_delete: bool,
}

impl Default for McpSessionSettings {
    fn default() -> Self {
        Self { idle_timeout_seconds: default_idle_timeout(), allow_client_delete: false }
    }
}

fn default_idle_timeout() -> u64 {
    1800
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum LogFormat {
    #[default]
    Text,
    Json,
}

/// A string that never prints: `Debug` and `Serialize` show `[redacted]`.
#[derive(Clone, PartialEq, Eq, Deserialize)]
#[serde(transparent)]
pub struct Secret(String);

impl Secret {
    pub const REDACTED: &'static str = "[redacted]";

    pub fn new(value: impl Into<String>) -> Self {
        Self(value.into())
    }

    /// The secret itself, for the one place that must use it.
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(Self::REDACTED)
    }
}

impl Serialize for Secret {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(Self::REDACTED)
    }
}

fn list_or_comma_string<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Vec<String>, D::Error> {
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum ListOrString {
        List(Vec<String>),
        String(String),
    }
    let items = match ListOrString::deserialize(deserializer)? {
        ListOrString::List(items) => items,
        ListOrString::String(joined) => joined.split(',').map(str::to_owned).collect(),
    };
    Ok(items.into_iter().map(|item| item.trim().to_owned()).filter(|item| !item.is_empty()).collect())
}

/// The machine's model cache: below `$XDG_CACHE_HOME` when it is an
/// absolute path (as the XDG rules ask), else below `~/.cache`.
fn machine_models_dir(xdg_cache: Option<PathBuf>, home: Option<PathBuf>) -> Option<PathBuf> {
    let cache = xdg_cache
        .filter(|dir| dir.is_absolute())
        .or_else(|| home.filter(|dir| dir.is_absolute()).map(|home| home.join(".cache")))?;
    Some(cache.join("lore").join("models"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn derived_values_follow_the_data_dir_and_bind() {
        let settings = Settings { data_dir: PathBuf::from("/srv/lore"), ..Settings::default() };
        assert_eq!(settings.base_url(), "http://127.0.0.1:3000");
        assert_eq!(settings.database_url(), "sqlite:///srv/lore/lore.db?mode=rwc");
        assert_eq!(settings.vectors_uri(), "/srv/lore/lancedb");
        assert_eq!(settings.legacy_models_dir(), PathBuf::from("/srv/lore/models"));
        assert!(settings.integrity_problems().is_empty());
    }

    #[test]
    fn model_files_are_kept_once_per_machine() {
        let home = Some(PathBuf::from("/home/ada"));
        assert_eq!(
            machine_models_dir(None, home.clone()),
            Some(PathBuf::from("/home/ada/.cache/lore/models"))
        );
        assert_eq!(
            machine_models_dir(Some(PathBuf::from("/var/cache")), home.clone()),
            Some(PathBuf::from("/var/cache/lore/models"))
        );
        // A relative XDG_CACHE_HOME is ignored, as the XDG rules say.
        assert_eq!(
            machine_models_dir(Some(PathBuf::from("cache")), home),
            Some(PathBuf::from("/home/ada/.cache/lore/models"))
        );
        assert_eq!(machine_models_dir(None, None), None);
        let configured = Settings {
            models: ModelSettings { dir: Some(PathBuf::from("/srv/models")), ..ModelSettings::default() },
            ..Settings::default()
        };
        assert_eq!(configured.models_dir(), PathBuf::from("/srv/models"));
    }

    #[test]
    fn secrets_and_url_passwords_never_print() {
        let mut settings = Settings::default();
        settings.database.url = Some(Secret::new("postgres://lore:hunter2@db/lore"));
        settings.auth.oidc.client_secret = Some(Secret::new("s3cret"));
        settings.master_key = Some(Secret::new("bWFzdGVy"));
        settings.ingest.proxy = Some(Secret::new("http://crawler:pr0xypass@proxy.internal:3128"));
        let shown = settings.effective_view().to_string();
        assert!(!shown.contains("pr0xypass"), "{shown}");
        assert!(!shown.contains("hunter2"), "{shown}");
        assert!(!shown.contains("s3cret"), "{shown}");
        assert!(!shown.contains("bWFzdGVy"), "{shown}");
        assert!(shown.contains("postgres://lore:%5Bredacted%5D@db/lore"), "{shown}");
        assert!(!format!("{settings:?}").contains("hunter2"));
        assert!(!format!("{settings:?}").contains("pr0xypass"));
    }

    #[test]
    fn object_store_credentials_never_print_but_the_endpoint_does() {
        let mut settings = Settings::default();
        settings.vectors.uri = Some("s3://lore-vectors/prod".into());
        settings.vectors.storage_options = BTreeMap::from([
            ("aws_endpoint".to_owned(), "http://minio.internal:9000".to_owned()),
            ("aws_secret_access_key".to_owned(), "wJalrXUtnFEMI".to_owned()),
            ("aws_session_token".to_owned(), "FQoGZXIvYXdz".to_owned()),
        ]);
        let shown = settings.effective_view().to_string();
        let debugged = format!("{settings:?}");
        for printed in [&shown, &debugged] {
            assert!(!printed.contains("wJalrXUtnFEMI"), "{printed}");
            assert!(!printed.contains("FQoGZXIvYXdz"), "{printed}");
            assert!(printed.contains("http://minio.internal:9000"), "{printed}");
        }
        let at = settings.vectors();
        assert!(at.is_object_store());
        assert_eq!(at.options["aws_secret_access_key"], "wJalrXUtnFEMI", "the store itself gets the secret");
        assert!(settings.integrity_problems().is_empty());
    }

    #[test]
    fn an_object_store_this_build_cannot_reach_is_an_integrity_problem() {
        let mut settings = Settings::default();
        settings.vectors.uri = Some("gs://lore-vectors".into());
        let problems = settings.integrity_problems();
        assert_eq!(problems.len(), 1, "{problems:?}");
        assert!(problems[0].contains("gs://") && problems[0].contains("s3://"), "{problems:?}");
        for local in ["/srv/lore/lancedb", "file:///srv/lore/lancedb", "lancedb"] {
            settings.vectors.uri = Some(local.into());
            assert!(!settings.vectors().is_object_store(), "{local}");
            assert!(settings.integrity_problems().is_empty(), "{local}");
        }
    }

    #[test]
    fn a_partial_oidc_block_is_an_integrity_problem() {
        let mut settings = Settings::default();
        settings.auth.oidc.issuer = Some("http://127.0.0.1:9/".into());
        let problems = settings.integrity_problems();
        assert_eq!(problems.len(), 2, "{problems:?}");
        assert!(problems[0].contains("client_id"));
        assert!(problems[1].contains("nobody can administer"));
    }
}
