//! Shapes that cross the wire, seen by the server (which fills them from engine
//! types) and the browser (which reads them). SeaORM models never appear here.

use serde::{Deserialize, Serialize};

/// `GET /admin/setup-state/`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SetupState {
    /// One entry per concern, in display order: configuration, embedding,
    /// provider, indexing, content, profile_version.
    pub checks: Vec<ReadinessCheck>,
    /// The server's verdict (SPEC.md's `canAnswer`); the answer runtime
    /// enforces exactly this.
    #[serde(rename = "canAnswer")]
    pub can_answer: bool,
    /// The same verdict under its old name, `can_answer`, sent for one more
    /// release so that existing scripts keep working. Deprecated: read
    /// `canAnswer`.
    #[serde(rename = "can_answer", default, skip_deserializing)]
    pub can_answer_deprecated: bool,
    /// Why not (empty when `canAnswer`).
    pub reasons: Vec<String>,
    pub active_profile_version: Option<i64>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ReadinessCheck {
    pub name: String,
    /// `ok`, `pending`, `missing` or `failing`.
    pub status: String,
    pub detail: String,
}

/// Who is signed in, as the console needs to know it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ViewerInfo {
    pub display_name: String,
    pub email: Option<String>,
    pub is_admin: bool,
}

/// How an admin can sign in to this install.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SignInOptions {
    /// An identity provider is configured (otherwise: the bootstrap link).
    pub oidc: bool,
}

/// A knowledge source (`GET /admin/sources/`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SourceView {
    pub id: String,
    pub name: String,
    /// `upload` or `website`.
    pub kind: String,
    pub enabled: bool,
    /// `empty`, `queued`, `indexing`, `ready` or `failed`.
    pub status: String,
    /// Kind-specific configuration (a website's start URL, patterns, limits).
    pub config: serde_json::Value,
    /// `static`, `low`, `medium` or `high`.
    pub volatility: String,
    pub document_count: i64,
    pub chunk_count: i64,
    pub last_error: Option<String>,
    /// RFC 3339, UTC.
    pub created_at: String,
    pub last_synced_at: Option<String>,
    pub next_sync_at: Option<String>,
    /// Within its volatility's re-sync interval (`None`: never synced).
    pub fresh: Option<bool>,
    /// The latest indexing run, with its live progress.
    pub latest_job: Option<JobView>,
}

/// One indexing run.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct JobView {
    pub id: String,
    pub source_id: Option<String>,
    pub full: bool,
    /// `queued`, `running`, `succeeded`, `failed` or `cancelled`.
    pub status: String,
    pub trigger: String,
    pub progress: ProgressView,
    pub errors: Vec<DocumentErrorView>,
    pub message: Option<String>,
    /// More than 1: resumed after a restart.
    pub attempts: i64,
    pub created_at: String,
    pub started_at: Option<String>,
    pub finished_at: Option<String>,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ProgressView {
    pub discovered: u64,
    pub fetched: u64,
    pub extracted: u64,
    pub chunked: u64,
    pub embedded: u64,
    pub unchanged: u64,
    pub failed: u64,
    pub duplicates: u64,
    pub skipped: u64,
    pub removed: u64,
    pub done: u64,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct DocumentErrorView {
    pub uri: String,
    pub error: String,
}

/// A document of a source.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct DocumentView {
    pub id: String,
    pub uri: String,
    pub title: String,
    pub url: Option<String>,
    /// `pending`, `indexed` or `failed`.
    pub status: String,
    pub chunk_count: i64,
    pub error: Option<String>,
    pub indexed_at: Option<String>,
}

/// `POST /admin/sources/{id}/files`: the stored file and the run indexing it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct UploadReceipt {
    pub document: DocumentView,
    pub job: JobView,
}

/// `POST /admin/search`: hybrid retrieval with each mode's raw score.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SearchResults {
    pub results: Vec<SearchHit>,
    pub candidates: usize,
    pub below_cutoff: usize,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SearchHit {
    pub chunk_id: String,
    pub source_id: String,
    pub document_id: String,
    pub title: String,
    pub url: Option<String>,
    pub heading: Option<String>,
    pub text: String,
    /// The fused score that orders results and meets the cutoff.
    pub score: f32,
    /// Cosine similarity to the query.
    pub vector_score: f32,
    /// Raw BM25 score (absent: not a full-text match).
    pub text_score: Option<f32>,
}

/// The error body of every JSON endpoint:
/// `{"error": {"code": "...", "message": "...", "details": {...}}}`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "ssr", derive(schemars::JsonSchema))]
pub struct ErrorBody {
    pub error: ErrorDetail,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "ssr", derive(schemars::JsonSchema))]
pub struct ErrorDetail {
    pub code: String,
    pub message: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub details: Option<serde_json::Value>,
}

impl ErrorDetail {
    /// What a `not_answerable` error lists as missing (`details.reasons`).
    pub fn reasons(&self) -> Vec<String> {
        let listed = self.details.as_ref().and_then(|d| d.get("reasons")).and_then(|r| r.as_array());
        listed
            .map(|list| list.iter().filter_map(|r| r.as_str().map(str::to_owned)).collect())
            .unwrap_or_default()
    }

    /// The error as the console shows it: the message, the stable code and,
    /// when it lists them, what is missing.
    pub fn shown(&self) -> String {
        let reasons = self.reasons();
        if reasons.is_empty() {
            format!("{} ({})", self.message, self.code)
        } else {
            format!("{} ({}): {}", self.message, self.code, reasons.join(" "))
        }
    }
}

/// A provider type the console offers (`GET /admin/providers/`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ProviderPresetView {
    pub key: String,
    pub name: String,
    /// `None` for custom.
    pub endpoint: Option<String>,
    /// `on_node`, `off_node`, or `None` (custom: either).
    pub placement: Option<String>,
    pub needs_key: bool,
}

/// A provider account. The API key itself never crosses the wire.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct AccountView {
    pub id: String,
    pub name: String,
    pub kind: String,
    pub placement: String,
    pub endpoint: String,
    /// Whether a key is stored (its value is never sent).
    pub has_api_key: bool,
    pub created_at: String,
    pub updated_at: String,
}

/// A model target with its probe state.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TargetView {
    pub id: String,
    pub account_id: String,
    pub capability: String,
    pub model: String,
    pub enabled: bool,
    /// `ready`, `disabled`, `unprobed`, `blocked` or `stale`.
    pub state: String,
    /// Why it is not ready (`None` when ready).
    pub state_reason: Option<String>,
    pub probe_latency_ms: Option<i64>,
    pub probe_error: Option<String>,
    pub probed_at: Option<String>,
    pub input_price_per_mtok: Option<f64>,
    pub output_price_per_mtok: Option<f64>,
}

/// An execution role and its binding.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RoleView {
    /// `generation`, `escalation`, `embedding` or `rerank`.
    pub role: String,
    pub capability: String,
    pub target_id: Option<String>,
    pub model: Option<String>,
    /// The bound target's state, or `None` when unbound.
    pub state: Option<String>,
    pub state_reason: Option<String>,
    /// What an unbound role means.
    pub unbound_means: String,
}

/// The Providers screen in one response.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ProvidersOverview {
    pub presets: Vec<ProviderPresetView>,
    pub accounts: Vec<AccountView>,
    pub targets: Vec<TargetView>,
    pub roles: Vec<RoleView>,
}

/// The result of a quick add.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct QuickAddResult {
    pub account: AccountView,
    pub target: TargetView,
}

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
}

/// A persona of the catalogue.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PersonaView {
    pub key: String,
    pub name: String,
    pub summary: String,
}

/// Optional details that tailor the persona's prompt.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ProfileDetails {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub organisation: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub product: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub audience: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub extra_instructions: Option<String>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct BehaviorSettings {
    /// `neutral`, `friendly`, `formal` or `technical`.
    pub tone: String,
    /// `brief`, `standard` or `detailed`.
    pub length: String,
    /// `inline` or `footnotes`.
    pub citation_style: String,
    pub refusal: String,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct CacheGateSettings {
    pub enabled: bool,
    pub min_similarity: f32,
    pub max_age_seconds: u64,
    pub grounded_only: bool,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RetrievalSettingsView {
    pub top_k: usize,
    pub score_cutoff: f32,
    pub vector_weight: f32,
    pub text_weight: f32,
}

/// A complete serving snapshot (what one profile version holds).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ProfileSnapshot {
    pub persona: String,
    #[serde(default)]
    pub details: ProfileDetails,
    pub prompt: String,
    pub behavior: BehaviorSettings,
    pub cache: CacheGateSettings,
    pub retrieval: RetrievalSettingsView,
}

/// One profile version.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ProfileVersionView {
    pub version: i64,
    pub based_on: Option<i64>,
    pub active: bool,
    pub note: Option<String>,
    pub created_by: String,
    pub created_at: String,
    pub evals: Option<serde_json::Value>,
    pub snapshot: ProfileSnapshot,
}

/// The Prompt screen: the personas, the active version and the history.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ProfileOverview {
    pub personas: Vec<PersonaView>,
    /// `None` until the first index starts.
    pub active: Option<ProfileVersionView>,
    /// Newest first, the active one included.
    pub versions: Vec<ProfileVersionView>,
}

/// `POST /admin/profile/versions`: a save from the editor.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SaveProfileRequest {
    /// The version the editor started from.
    pub base_version: i64,
    pub snapshot: ProfileSnapshot,
    #[serde(default)]
    pub note: Option<String>,
}

/// `POST /answer` and the Playground's answer mode: the answer, its
/// citations, the cache outcome and the trace (which is also the run's cost
/// funnel).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "ssr", derive(schemars::JsonSchema))]
pub struct AnswerResponse {
    pub answer: String,
    /// True when Lore declined: nothing retrievable answers, or no grounded answer was written.
    pub refused: bool,
    pub grounded: bool,
    pub citations: Vec<CitationView>,
    pub cache: CacheView,
    pub profile_version: i32,
    pub trace: TraceView,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "ssr", derive(schemars::JsonSchema))]
pub struct CitationView {
    /// The passage number the answer cites as `[n]`.
    pub index: usize,
    pub chunk_id: String,
    pub source_id: String,
    pub document_id: String,
    pub title: String,
    pub url: Option<String>,
    pub snippet: String,
    pub score: f32,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "ssr", derive(schemars::JsonSchema))]
pub struct CacheView {
    /// `hit`, `miss` or `bypass`.
    pub status: String,
    /// `exact` or `semantic` on a hit.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kind: Option<String>,
    /// Similarity of the nearest cached question.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub similarity: Option<f32>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "ssr", derive(schemars::JsonSchema))]
pub struct StageView {
    pub stage: String,
    pub decision: String,
    pub reason: String,
    pub duration_ms: f64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cost_usd: Option<f64>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "ssr", derive(schemars::JsonSchema))]
pub struct TracePassageView {
    pub index: usize,
    pub chunk_id: String,
    pub title: String,
    pub score: f32,
    pub vector_score: f32,
    pub text_score: Option<f32>,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "ssr", derive(schemars::JsonSchema))]
pub struct UsageView {
    pub input_tokens: u64,
    pub output_tokens: u64,
    pub estimated_cost_usd: f64,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "ssr", derive(schemars::JsonSchema))]
pub struct TraceView {
    pub id: String,
    pub stages: Vec<StageView>,
    pub retrieval: Vec<TracePassageView>,
    pub model: Option<String>,
    pub usage: UsageView,
}

/// The Playground's profile-retrieval mode: the active version's resolved
/// scope and settings, and what they retrieve.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ProfileRetrievalView {
    pub profile_version: Option<i32>,
    pub settings: RetrievalSettingsView,
    /// The enabled sources retrieval searches (name and id).
    pub sources: Vec<(String, String)>,
    pub results: SearchResults,
}

/// `POST /admin/observability/`: the range of the Dashboard. Either `hours`
/// back from now (default 24), or `from` and `to` (RFC 3339, UTC).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "ssr", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct ObservabilityRequest {
    #[serde(default)]
    pub hours: Option<u32>,
    #[serde(default)]
    pub from: Option<String>,
    #[serde(default)]
    pub to: Option<String>,
}

/// Sums over a bucket, a surface or the whole range. Spend and savings are
/// estimates from the configured model pricing.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "ssr", derive(schemars::JsonSchema))]
pub struct MetricTotals {
    pub queries: i64,
    pub cache_hits: i64,
    pub hit_rate: f64,
    pub refusals: i64,
    pub estimated_spend_usd: f64,
    pub estimated_savings_usd: f64,
    /// Upper edge of the 10%-wide latency slot holding the 95th percentile.
    pub p95_ms: f64,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "ssr", derive(schemars::JsonSchema))]
pub struct MetricPoint {
    /// The bucket's start (RFC 3339, UTC).
    pub bucket: String,
    #[serde(flatten)]
    pub totals: MetricTotals,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "ssr", derive(schemars::JsonSchema))]
pub struct SurfaceMetrics {
    /// `playground`, `api`, `widget`, `mcp` or `cli`.
    pub surface: String,
    #[serde(flatten)]
    pub totals: MetricTotals,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "ssr", derive(schemars::JsonSchema))]
pub struct QueryCountView {
    /// The normalised question.
    pub query: String,
    pub count: i64,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "ssr", derive(schemars::JsonSchema))]
pub struct KeyUsageView {
    /// Absent for traffic no access key made (Playground, CLI).
    pub key_id: Option<String>,
    pub name: String,
    pub queries: i64,
    pub estimated_spend_usd: f64,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "ssr", derive(schemars::JsonSchema))]
pub struct FunnelStageView {
    pub stage: String,
    pub decision: String,
    pub reason: String,
    pub count: i64,
    /// What the stage's model calls cost (generation and escalation).
    pub estimated_spend_usd: f64,
}

/// The Dashboard's aggregates for a range, computed from rollups only.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "ssr", derive(schemars::JsonSchema))]
pub struct ObservabilityResponse {
    pub from: String,
    pub to: String,
    /// `hour` or `day`: the width of each point of `series`.
    pub granularity: String,
    pub totals: MetricTotals,
    pub series: Vec<MetricPoint>,
    pub surfaces: Vec<SurfaceMetrics>,
    pub top_queries: Vec<QueryCountView>,
    /// Refused questions, most asked first.
    pub content_gaps: Vec<QueryCountView>,
    pub keys: Vec<KeyUsageView>,
    /// Cache stages and the cost funnel: every (stage, decision) runs reached.
    pub funnel: Vec<FunnelStageView>,
}

/// A value as Advanced tuning shows it: effective, and whether an admin set
/// it (`stored`) or it is the default.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct EffectiveValue<T> {
    pub value: T,
    pub stored: bool,
}

/// `GET /admin/tuning`: the effective values of Advanced tuning.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TuningView {
    pub embedding_model: EffectiveValue<String>,
    /// Why retrieval is failing closed (until a full reindex), when it is.
    pub failing_closed: Option<String>,
    pub chunk_size: EffectiveValue<usize>,
    pub chunk_overlap: EffectiveValue<usize>,
    /// The profile version the retrieval and cache values come from.
    pub profile_version: Option<i32>,
    pub top_k: EffectiveValue<usize>,
    pub score_cutoff: EffectiveValue<f32>,
    pub vector_weight: EffectiveValue<f32>,
    pub text_weight: EffectiveValue<f32>,
    pub cache_enabled: EffectiveValue<bool>,
    pub cache_min_similarity: EffectiveValue<f32>,
    pub cache_max_age_seconds: EffectiveValue<u64>,
}

/// `PUT /admin/tuning`: absent (or null) fields keep their values.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TuningChange {
    #[serde(default)]
    pub chunk_size: Option<usize>,
    #[serde(default)]
    pub chunk_overlap: Option<usize>,
    #[serde(default)]
    pub top_k: Option<usize>,
    #[serde(default)]
    pub score_cutoff: Option<f32>,
    #[serde(default)]
    pub vector_weight: Option<f32>,
    #[serde(default)]
    pub text_weight: Option<f32>,
    #[serde(default)]
    pub cache_enabled: Option<bool>,
    #[serde(default)]
    pub cache_min_similarity: Option<f32>,
    #[serde(default)]
    pub cache_max_age_seconds: Option<u64>,
    /// Needed when a chunking change re-embeds an indexed corpus.
    #[serde(default)]
    pub acknowledge_reindex: bool,
}

/// What `PUT /admin/tuning` did, and the values now in effect.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TuningApplied {
    /// The new profile version, when retrieval or cache values changed.
    pub profile_version: Option<i32>,
    /// The full reindex a chunking change queued.
    pub reindex_job: Option<String>,
    pub tuning: TuningView,
}

/// `GET /admin/setup/`: where the setup wizard is and what its steps made.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SetupWizardView {
    /// `persona`, `source`, `provider`, `advanced`, `index`, `question` or `complete`.
    pub step: String,
    /// Every step, in order.
    pub steps: Vec<String>,
    /// The chosen persona's key, once chosen.
    pub persona: Option<String>,
    pub source: Option<SourceView>,
    /// The model that answers, once the provider step bound one.
    pub generation_model: Option<String>,
    /// The first index run, with its live progress.
    pub job: Option<JobView>,
    /// The first question got an answer.
    pub answered: bool,
}

/// A time on the wire: RFC 3339 in UTC, to the second.
#[cfg(feature = "ssr")]
pub fn time(at: chrono::DateTime<chrono::Utc>) -> String {
    at.to_rfc3339_opts(chrono::SecondsFormat::Secs, true)
}

#[cfg(feature = "ssr")]
mod from_engine {
    use super::*;
    use engine::readiness;

    impl From<readiness::SetupState> for SetupState {
        fn from(state: readiness::SetupState) -> Self {
            Self {
                checks: state
                    .checks
                    .into_iter()
                    .map(|check| ReadinessCheck {
                        name: check.concern.key().to_owned(),
                        status: check.status.key().to_owned(),
                        detail: check.detail,
                    })
                    .collect(),
                can_answer: state.can_answer,
                can_answer_deprecated: state.can_answer,
                reasons: state.reasons,
                active_profile_version: state.active_profile_version,
            }
        }
    }

    /// Retrieval results with each mode's raw score, as the console and
    /// `lore search` show them.
    impl From<engine::retrieve::Retrieval> for SearchResults {
        fn from(found: engine::retrieve::Retrieval) -> Self {
            Self {
                candidates: found.candidates,
                below_cutoff: found.below_cutoff,
                results: found
                    .results
                    .into_iter()
                    .map(|r| SearchHit {
                        chunk_id: r.chunk.id,
                        source_id: r.chunk.source_id,
                        document_id: r.chunk.document_id,
                        title: r.chunk.title,
                        url: r.chunk.url,
                        heading: r.chunk.heading,
                        text: r.chunk.text,
                        score: r.score,
                        vector_score: r.vector_score,
                        text_score: r.text_score,
                    })
                    .collect(),
            }
        }
    }

    impl From<engine::search::ProfileRetrieval> for ProfileRetrievalView {
        fn from(p: engine::search::ProfileRetrieval) -> Self {
            Self {
                profile_version: p.profile_version,
                settings: RetrievalSettingsView::from(p.settings),
                sources: p.sources,
                results: SearchResults::from(p.found),
            }
        }
    }

    impl From<engine::ingest::jobs::Job> for JobView {
        fn from(job: engine::ingest::jobs::Job) -> Self {
            Self {
                id: job.id,
                source_id: job.source_id,
                full: job.full,
                status: job.status,
                trigger: job.trigger,
                progress: job.progress.into(),
                errors: job.errors.into_iter().map(Into::into).collect(),
                message: job.message,
                attempts: job.attempts.into(),
                created_at: time(job.created_at),
                started_at: job.started_at.map(time),
                finished_at: job.finished_at.map(time),
            }
        }
    }

    impl From<engine::ingest::lifecycle::Overview> for SourceView {
        fn from(overview: engine::ingest::lifecycle::Overview) -> Self {
            let source = overview.source;
            Self {
                fresh: overview.fresh,
                id: source.id,
                name: source.name,
                kind: source.kind,
                enabled: source.enabled,
                status: source.status,
                config: source.config,
                volatility: source.volatility,
                document_count: source.document_count.into(),
                chunk_count: source.chunk_count.into(),
                last_error: source.last_error,
                created_at: time(source.created_at),
                last_synced_at: source.last_synced_at.map(time),
                next_sync_at: source.next_sync_at.map(time),
                latest_job: overview.latest_job.map(JobView::from),
            }
        }
    }

    impl From<engine::keys::KeySummary> for KeyView {
        fn from(summary: engine::keys::KeySummary) -> Self {
            let key = summary.key;
            Self {
                id: key.id,
                name: key.name,
                kind: key.kind,
                prefix: key.prefix,
                scopes: summary.scopes,
                status: key.status,
                origins: summary.origins,
                rate_limit_per_minute: key.rate_limit_per_minute.map(i64::from),
                created_at: time(key.created_at),
                last_used_at: key.last_used_at.map(time),
                revoked_at: key.revoked_at.map(time),
                queries_7d: summary.queries_7d,
                estimated_cost_7d: summary.estimated_cost_7d,
            }
        }
    }

    impl From<engine::keys::Issued> for CreatedKey {
        fn from(issued: engine::keys::Issued) -> Self {
            Self { key: issued.summary.into(), raw_key: issued.raw_key, snippet: issued.snippet }
        }
    }

    impl From<engine::providers::Account> for AccountView {
        fn from(account: engine::providers::Account) -> Self {
            Self {
                has_api_key: account.api_key_sealed.is_some(),
                id: account.id,
                name: account.name,
                kind: account.kind,
                placement: account.placement,
                endpoint: account.endpoint,
                created_at: time(account.created_at),
                updated_at: time(account.updated_at),
            }
        }
    }

    impl From<engine::providers::TargetStatus> for TargetView {
        fn from(status: engine::providers::TargetStatus) -> Self {
            let target = status.target;
            Self {
                id: target.id,
                account_id: target.account_id,
                capability: target.capability,
                model: target.model,
                enabled: target.enabled,
                state: status.state.key().to_owned(),
                state_reason: status.reason,
                probe_latency_ms: target.probe_latency_ms.map(i64::from),
                probe_error: target.probe_error,
                probed_at: target.probed_at.map(time),
                input_price_per_mtok: target.input_price_per_mtok,
                output_price_per_mtok: target.output_price_per_mtok,
            }
        }
    }

    impl From<engine::providers::Overview> for ProvidersOverview {
        fn from(overview: engine::providers::Overview) -> Self {
            let presets = overview
                .presets
                .iter()
                .map(|p| ProviderPresetView {
                    key: p.key.to_owned(),
                    name: p.name.to_owned(),
                    endpoint: p.endpoint.map(str::to_owned),
                    placement: p.placement.map(|pl| pl.key().to_owned()),
                    needs_key: p.needs_key,
                })
                .collect();
            let roles = overview
                .bindings
                .into_iter()
                .map(|binding| RoleView {
                    role: binding.role.key().to_owned(),
                    capability: binding.role.capability().key().to_owned(),
                    target_id: binding.target.as_ref().map(|t| t.id.clone()),
                    model: binding.target.as_ref().map(|t| t.model.clone()),
                    state: binding.state.as_ref().map(|(s, _)| s.key().to_owned()),
                    state_reason: binding.state.and_then(|(_, reason)| reason),
                    unbound_means: binding.role.unbound_means().to_owned(),
                })
                .collect();
            Self {
                presets,
                accounts: overview.accounts.into_iter().map(AccountView::from).collect(),
                targets: overview.targets.into_iter().map(TargetView::from).collect(),
                roles,
            }
        }
    }

    impl From<engine::ingest::Progress> for ProgressView {
        fn from(progress: engine::ingest::Progress) -> Self {
            let engine::ingest::Progress {
                discovered,
                fetched,
                extracted,
                chunked,
                embedded,
                unchanged,
                failed,
                duplicates,
                skipped,
                removed,
                done,
            } = progress;
            Self {
                discovered,
                fetched,
                extracted,
                chunked,
                embedded,
                unchanged,
                failed,
                duplicates,
                skipped,
                removed,
                done,
            }
        }
    }

    impl From<engine::ingest::DocumentError> for DocumentErrorView {
        fn from(error: engine::ingest::DocumentError) -> Self {
            Self { uri: error.uri, error: error.error }
        }
    }

    impl From<&engine::auth::Viewer> for ViewerInfo {
        fn from(viewer: &engine::auth::Viewer) -> Self {
            Self {
                display_name: viewer
                    .display_name
                    .clone()
                    .or_else(|| viewer.email.clone())
                    .unwrap_or_else(|| "Admin".to_owned()),
                email: viewer.email.clone(),
                is_admin: viewer.is_admin,
            }
        }
    }

    impl From<engine::answer::Stage> for StageView {
        fn from(s: engine::answer::Stage) -> Self {
            Self {
                stage: s.stage.key().to_owned(),
                decision: s.decision,
                reason: s.reason,
                duration_ms: s.duration_ms,
                cost_usd: s.cost_usd,
            }
        }
    }

    impl From<engine::answer::Answer> for AnswerResponse {
        fn from(a: engine::answer::Answer) -> Self {
            use engine::answer::CacheStatus;
            Self {
                answer: a.answer,
                refused: a.refused,
                grounded: a.grounded,
                citations: a
                    .citations
                    .into_iter()
                    .map(|c| CitationView {
                        index: c.index,
                        chunk_id: c.chunk_id,
                        source_id: c.source_id,
                        document_id: c.document_id,
                        title: c.title,
                        url: c.url,
                        snippet: c.snippet,
                        score: c.score,
                    })
                    .collect(),
                cache: CacheView {
                    status: match a.cache.status {
                        CacheStatus::Hit => "hit",
                        CacheStatus::Miss => "miss",
                        CacheStatus::Bypass => "bypass",
                    }
                    .to_owned(),
                    kind: a.cache.kind,
                    similarity: a.cache.similarity,
                },
                profile_version: a.profile_version,
                trace: TraceView {
                    id: a.trace.id,
                    stages: a.trace.stages.into_iter().map(StageView::from).collect(),
                    retrieval: a
                        .trace
                        .retrieval
                        .into_iter()
                        .map(|p| TracePassageView {
                            index: p.index,
                            chunk_id: p.chunk_id,
                            title: p.title,
                            score: p.score,
                            vector_score: p.vector_score,
                            text_score: p.text_score,
                        })
                        .collect(),
                    model: a.trace.model,
                    usage: UsageView {
                        input_tokens: a.trace.usage.input_tokens,
                        output_tokens: a.trace.usage.output_tokens,
                        estimated_cost_usd: a.trace.usage.estimated_cost_usd,
                    },
                },
            }
        }
    }

    impl From<engine::retrieve::RetrievalSettings> for RetrievalSettingsView {
        fn from(s: engine::retrieve::RetrievalSettings) -> Self {
            Self {
                top_k: s.top_k,
                score_cutoff: s.score_cutoff,
                vector_weight: s.vector_weight,
                text_weight: s.text_weight,
            }
        }
    }

    impl From<engine::metrics::Totals> for MetricTotals {
        fn from(t: engine::metrics::Totals) -> Self {
            Self {
                queries: t.queries,
                cache_hits: t.cache_hits,
                hit_rate: t.hit_rate,
                refusals: t.refusals,
                estimated_spend_usd: t.spend_usd,
                estimated_savings_usd: t.savings_usd,
                p95_ms: t.p95_ms,
            }
        }
    }

    impl From<engine::metrics::Dashboard> for ObservabilityResponse {
        fn from(d: engine::metrics::Dashboard) -> Self {
            let counts = |list: Vec<engine::metrics::QueryCount>| {
                list.into_iter().map(|c| QueryCountView { query: c.query, count: c.count }).collect()
            };
            Self {
                from: time(d.from),
                to: time(d.to),
                granularity: d.granularity.key().to_owned(),
                totals: d.totals.into(),
                series: d
                    .series
                    .into_iter()
                    .map(|p| MetricPoint { bucket: time(p.bucket), totals: p.totals.into() })
                    .collect(),
                surfaces: d
                    .surfaces
                    .into_iter()
                    .map(|s| SurfaceMetrics { surface: s.surface, totals: s.totals.into() })
                    .collect(),
                top_queries: counts(d.top_queries),
                content_gaps: counts(d.content_gaps),
                keys: d
                    .keys
                    .into_iter()
                    .map(|k| KeyUsageView {
                        key_id: k.key_id,
                        name: k.name,
                        queries: k.queries,
                        estimated_spend_usd: k.spend_usd,
                    })
                    .collect(),
                funnel: d
                    .funnel
                    .into_iter()
                    .map(|f| FunnelStageView {
                        stage: f.stage,
                        decision: f.decision,
                        reason: f.reason,
                        count: f.count,
                        estimated_spend_usd: f.spend_usd,
                    })
                    .collect(),
            }
        }
    }
    impl<T> From<engine::tuning::Effective<T>> for EffectiveValue<T> {
        fn from(e: engine::tuning::Effective<T>) -> Self {
            Self { value: e.value, stored: e.stored }
        }
    }

    impl From<engine::tuning::Overview> for TuningView {
        fn from(o: engine::tuning::Overview) -> Self {
            Self {
                embedding_model: o.embedding_model.into(),
                failing_closed: o.failing_closed,
                chunk_size: o.chunk_size.into(),
                chunk_overlap: o.chunk_overlap.into(),
                profile_version: o.profile_version,
                top_k: o.top_k.into(),
                score_cutoff: o.score_cutoff.into(),
                vector_weight: o.vector_weight.into(),
                text_weight: o.text_weight.into(),
                cache_enabled: o.cache_enabled.into(),
                cache_min_similarity: o.cache_min_similarity.into(),
                cache_max_age_seconds: o.cache_max_age_seconds.into(),
            }
        }
    }

    impl From<TuningChange> for engine::tuning::Change {
        fn from(c: TuningChange) -> Self {
            Self {
                chunk_size: c.chunk_size,
                chunk_overlap: c.chunk_overlap,
                top_k: c.top_k,
                score_cutoff: c.score_cutoff,
                vector_weight: c.vector_weight,
                text_weight: c.text_weight,
                cache_enabled: c.cache_enabled,
                cache_min_similarity: c.cache_min_similarity,
                cache_max_age_seconds: c.cache_max_age_seconds,
                acknowledge_reindex: c.acknowledge_reindex,
            }
        }
    }
}
